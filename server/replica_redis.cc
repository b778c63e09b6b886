// The Redis port's requests (docs/redis-mode.md): reads after ReadIndex, writes through the log as
// RedisCommand entries, answered by the node holding the connection when it applies them.

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"
#include "server/negative_controls.h"
#include "server/replica.h"
#include "server/request_codec.h"
#include "statemachine/codec.h"

namespace raftlock::server {

namespace sm = statemachine;

// What every request of the Redis port passes first: false (and the request answered) when the
// node is shutting down, the connection is over its rate, or the user lacks the access.
bool Replica::redis_admit(const ClientRef& client, bool read, const std::string& user) {
    ++metrics_.client_requests_total;
    if (shutting_down_) {
        respond_error(client, proto::SHUTTING_DOWN);
        return false;
    }
    if (!redis_rates_[client.conn].admit(clock_.steady_ms(),
                                         config_.requests_per_second_per_connection_max)) {
        ++metrics_.rate_limited_total;
        redis_reply(client, redis::Value::error(fmt::format(
                                "ERR raftlock: more than {} requests a second on this connection "
                                "(--max-requests-per-second)",
                                config_.requests_per_second_per_connection_max)));
        return false;
    }
    // A read is checked only here (it does not go through the log); a write again where it
    // applies (the user may lose the permission meanwhile): here so that a write the state
    // machine would refuse does not take a log entry.
    const sm::Need needed{read ? sm::Access::kRead : sm::Access::kWrite, sm::Space::kRedis, ""};
    if (!sm_.auth().permits(user, needed)) {
        ++metrics_.permission_denied_total;
        redis_reply(client, redis::Value::error("NOPERM " + sm::lacks_message(user, needed)));
        return false;
    }
    return true;
}

void Replica::redis_command(net::ConnectionId id,
                            uint64_t ticket,
                            redis::Argv&& argv,
                            const std::string& user) {
    RL_ASSERT(is_redis(id));
    const ClientRef client{id, ticket};
    const bool read = redis::route_of(argv) == redis::Route::kRead;
    if (!redis_admit(client, read, user)) {
        return;
    }
    if (read) {
#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
        if (negative_controls::on(negative_controls::Control::kLocalReads)) {
            redis_reply(client, sm_.redis_query(argv));
            return;
        }
#endif
        next_batch_.redis_reads.emplace_back(client, std::move(argv));
        schedule_flush();
        return;
    }
    static_assert(ServerConfig::kScriptInstructionsCeiling == sm::kScriptInstructionsMax);
    // Built in one expression: GCC 12's -Wmaybe-uninitialized (at -O1, the sanitizer builds)
    // took the argv of a command assigned member by member for uninitialized when moved.
    sm::Command command{
        .seq = next_nonce_++,
        .user = user,
        .op = sm::RedisCommand{.origin = redis_origin_,
                               .argv = std::move(argv),
                               .script_instructions_max = config_.script_instructions_max}};
    if (sm::validate_command(command) != sm::ErrorCode::kOk) {
        redis_reply(client, redis::Value::error(fmt::format(
                                "ERR raftlock: a command may carry at most {} arguments and {} "
                                "bytes",
                                sm::kRedisArgsMax, sm::kRedisCommandBytesMax)));
        return;
    }
    // Keyed like an OpenSession: (no session, this server's sequence number). Resubmitting it to
    // a new leader is safe: the keyspace applies each (origin, seq) at most once.
    const bool added = add_pending_write(id, ticket, std::move(command));
    RL_ASSERT(added);
}

// WATCH: a read of nothing, answered with the applied index it was served at (after ReadIndex, so
// every write acknowledged before the WATCH is at or below it).
void Replica::redis_watch(net::ConnectionId id, uint64_t ticket, const std::string& user) {
    RL_ASSERT(is_redis(id));
    const ClientRef client{id, ticket};
    if (!redis_admit(client, true, user)) {
        return;
    }
#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
    if (negative_controls::on(negative_controls::Control::kLocalReads)) {
        redis_reply(client, redis::Value::integer_of(static_cast<int64_t>(sm_.last_applied())));
        return;
    }
#endif
    next_batch_.redis_reads.emplace_back(client, redis::Argv{std::string(kRedisWatchRead)});
    schedule_flush();
}

// WAIT: every write this node has applied (the connection's included: each was answered after
// this node applied it) is the one to count.
void Replica::redis_wait(net::ConnectionId id,
                         uint64_t ticket,
                         int64_t numreplicas,
                         int64_t timeout_ms) {
    RL_ASSERT(is_redis(id) && timeout_ms >= 0);
    const ClientRef client{id, ticket};
    const raft::Index index = applied_index_;
    const int64_t holding = replicas_holding(raw_->status(), index);
    // A follower cannot see the others' logs: it answers at once what it can vouch for, rather
    // than wait for what it would never learn (with timeout 0, forever).
    if (holding >= numreplicas || !is_leader()) {
        redis_reply(client, redis::Value::integer_of(holding));
        return;
    }
    // Bounded by the connections and their pipelines; dropped when the connection closes.
    redis_waits_.push_back(RedisWait{client, index, numreplicas,
                                     timeout_ms == 0 ? 0 : clock_.steady_ms() + timeout_ms});
}

int64_t Replica::redis_replicas_holding() const {
    return replicas_holding(raw_->status(), applied_index_);
}

int64_t Replica::replicas_holding(const raft::NodeStatus& st, raft::Index index) const {
    if (st.soft_state.role == raft::Role::kLeader) {
        int64_t holding = 0;
        for (const raft::PeerStatus& p : st.peers) {
            holding += p.id != config_.node_id && p.match >= index ? 1 : 0;
        }
        return holding;
    }
    if (st.hard_state.commit < index) {
        return 0;
    }
    // Committed: a majority of the voters hold it, this node perhaps among them.
    const auto quorum = static_cast<int64_t>(st.conf_state.voters.size() / 2 + 1);
    return quorum - 1;
}

void Replica::check_redis_waits() {
    if (redis_waits_.empty()) {
        return;
    }
    const int64_t now = clock_.steady_ms();
    const raft::NodeStatus st = raw_->status();  // (copies the peers: once per tick, not per wait)
    std::erase_if(redis_waits_, [&](const RedisWait& w) {
        const int64_t holding = replicas_holding(st, w.index);
        if (holding < w.numreplicas && is_leader() && (w.deadline_ms == 0 || now < w.deadline_ms)) {
            return false;
        }
        redis_reply(w.client, redis::Value::integer_of(holding));
        return true;
    });
}

void Replica::redis_transaction(net::ConnectionId id,
                                uint64_t ticket,
                                redis::Transaction&& transaction,
                                const std::string& user) {
    RL_ASSERT(is_redis(id));
    const ClientRef client{id, ticket};
    const bool writes =
        std::any_of(transaction.commands.begin(), transaction.commands.end(), redis::may_write);
    if (!redis_admit(client, !writes, user)) {
        return;
    }
    sm::Command command{
        .seq = next_nonce_++,
        .user = user,
        .op = sm::RedisTransaction{.origin = redis_origin_,
                                   .transaction = std::move(transaction),
                                   .script_instructions_max = config_.script_instructions_max}};
    if (sm::validate_command(command) != sm::ErrorCode::kOk) {
        redis_reply(client,
                    redis::Value::error(fmt::format(
                        "ERR raftlock: a transaction may carry at most {} arguments and {} bytes, "
                        "and watch at most {} keys",
                        sm::kRedisArgsMax, sm::kRedisCommandBytesMax, sm::kRedisWatchedKeysMax)));
        return;
    }
    // At most once, as a lone write (redis_command).
    const bool added = add_pending_write(id, ticket, std::move(command));
    RL_ASSERT(added);
}

bool Replica::redis_users_enabled() const {
    return sm_.auth().enabled();
}

bool Replica::redis_login(const std::string& user, const std::string& password) {
    const std::optional<sm::Credentials> stored = sm_.auth().credentials(user);
    // One key derivation either way, so that the time taken does not tell who exists.
    static const base::scram::Verifier kDecoy = base::scram::make_verifier(
        "", std::string(base::scram::kSaltBytes, 's'), base::scram::kIterationsMin);
    const bool known = stored && stored->has_password();
    const bool matches =
        base::scram::password_matches(known ? sm::to_verifier(*stored) : kDecoy, password) && known;
    ++(matches ? metrics_.auth_logins_total : metrics_.auth_failures_total);
    return matches;
}

std::optional<std::string> Replica::redis_read_refusal(const std::string& user) const {
    const sm::Need needed{sm::Access::kRead, sm::Space::kRedis, ""};
    if (sm_.auth().permits(user, needed)) {
        return std::nullopt;
    }
    return "NOPERM " + sm::lacks_message(user, needed);
}

std::vector<size_t> Replica::deliver_publications(const std::vector<redis::Publication>& published,
                                                  raft::Index index) {
    std::vector<size_t> receivers;
    receivers.reserve(published.size());
    // What was committed before this process first knew a leader was published before it could
    // have subscribers that count (and perhaps delivered by the process before it): at most once,
    // as in Redis, rather than a channel's history again to whoever subscribed to a node that just
    // restarted (its port opens before it catches up). The commit index a node persisted may lag
    // what it applied, so its own replay alone is not the bound.
    const bool replayed = !publications_from_ || index < *publications_from_;
    for (const redis::Publication& p : published) {
        ++metrics_.redis_publications_total;
        receivers.push_back(redis_frontend_ == nullptr || replayed
                                ? 0
                                : redis_frontend_->publish(p.channel, p.message));
        metrics_.redis_messages_delivered_total += receivers.back();
    }
    return receivers;
}

void Replica::redis_closed(net::ConnectionId id) {
    redis_rates_.erase(id);
    drop_pending_writes(id);
    std::erase_if(redis_waits_, [id](const RedisWait& w) { return w.client.conn == id; });
}

std::string Replica::redis_replication_info() const {
    return fmt::format("role:{}\r\nraftlock_leader_id:{}\r\nraftlock_applied_index:{}\r\n",
                       is_leader() ? "master" : "slave", soft_.leader, applied_index_);
}

size_t Replica::redis_key_count() const {
    return sm_.redis_key_count();
}

void Replica::redis_reply(const ClientRef& client, const redis::Value& value) {
    if (redis_frontend_ != nullptr) {
        redis_frontend_->on_reply(client.conn, client.request_id, value);
    }
}

// Failures of the request path itself, in Redis's words: TRYAGAIN for what a retry may fix.
void Replica::redis_error(const ClientRef& client, proto::Code code, const std::string& message) {
    ++metrics_.client_errors_total;
    std::string text;
    switch (code) {
        case proto::TIMEOUT:
            text = "TRYAGAIN raftlock: timed out; a write may or may not have been applied";
            break;
        case proto::UNAVAILABLE:
            text = "TRYAGAIN raftlock: no leader can take the request now; retry";
            break;
        case proto::SHUTTING_DOWN:
            text =
                "TRYAGAIN raftlock: this node is shutting down; a write may or may not have "
                "been applied";
            break;
        default:
            text = "ERR raftlock: " + describe(code);
            break;
    }
    if (!message.empty()) {
        text += " (" + message + ")";
    }
    redis_reply(client, redis::Value::error(std::move(text)));
}

}  // namespace raftlock::server
