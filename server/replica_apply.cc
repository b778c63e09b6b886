// Committed entries -> the state machine -> replies to this node's clients and pushes (watch
// events, lock grants, ended sessions).

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "raft/conf_change.h"
#include "server/replica.h"
#include "server/request_codec.h"
#include "statemachine/codec.h"
#include "statemachine/redis/lua_script.h"

namespace raftlock::server {

namespace sm = statemachine;

void Replica::apply_entries(const std::vector<raft::Entry>& entries) {
    if (entries.empty()) {
        return;
    }
    const int64_t start_us = clock_.steady_us();
    for (const raft::Entry& e : entries) {
        RL_ASSERT(e.index == applied_index_ + 1);
        applied_index_ = e.index;
        ++metrics_.applied_entries_total;
        if (e.type == raft::EntryType::kConfChange) {
            // The core switched configurations when it appended the entry; the applied
            // configuration is what a snapshot at this index must carry.
            auto record = raft::decode_conf_change(e.data);
            RL_ASSERT_MSG(record.ok(), "a committed configuration entry does not decode");
            on_conf_applied(e, record->conf_state);
            continue;
        }
        settle_member_change(e, nullptr);
        if (e.data.empty()) {
            (void)sm_.apply(e.index, e.data);  // a leader's term-start entry
            continue;
        }
        Result<sm::Command, sm::ErrorCode> command = sm::decode_command(e.data);
        if (!command.ok()) {
            // Leaders propose only commands that encode and validate, so this entry comes from a
            // newer format (a rolling upgrade run backwards) or a bug. Skipping it would leave
            // this replica diverged from those that apply it (DESIGN.md: never skipped).
            const std::string message = fmt::format(
                "entry {} (term {}) does not decode as a command: written by a newer raftlockd? "
                "Stopping rather than skipping it; run a version that reads it",
                e.index, e.term);
            spdlog::critical("{}", message);
            RL_PANIC(message.c_str());
        }
        const sm::ApplyResult result = sm_.apply_command(e.index, *command);
        on_applied(*command, result);
    }
    // The Ready loop hands over committed entries only, contiguous with what was applied.
    RL_ASSERT(applied_index_ == entries.back().index);
    RL_ASSERT(applied_index_ <= raw_->status().hard_state.commit);
    metrics_.apply_batch_latency.record_us(static_cast<uint64_t>(clock_.steady_us() - start_us));
    serve_confirmed_reads();
}

void Replica::apply_snapshot(const raft::Snapshot& snapshot) {
    // Only a snapshot ahead of what this replica applied is ever installed (the core refuses
    // older ones): applying never goes back.
    RL_ASSERT(snapshot.metadata.index > applied_index_);
    // The entries the snapshot skips would have fired this node's watches: compare the watched
    // nodes before and after instead (found by the server simulator's watchers: a follower cut
    // off long enough to be sent a snapshot lost the events of its clients' watches).
    const sm::WatchedView watched_before = watched_view();
    const sm::ErrorCode rc = sm_.restore(snapshot.data);
    // The store checked the snapshot's checksum; a leader's snapshot that does not restore is a
    // bug on the leader, and going on would leave this replica diverged.
    RL_ASSERT_MSG(rc == sm::ErrorCode::kOk, "a snapshot from the leader does not restore");
    applied_index_ = snapshot.metadata.index;
    applied_conf_ = snapshot.metadata.conf_state;
    snapshot_index_ = snapshot.metadata.index;
    ++metrics_.snapshots_installed_total;
    spdlog::info("installed a snapshot at index {} from the leader", snapshot.metadata.index);
    push_watch_events(
        sm::restore_triggers(watched_before, watched_view(), snapshot.metadata.index));
    resolve_waits_after_restore();
    serve_confirmed_reads();
}

// The nodes this node's watches are on (each recursive watch's whole subtree), as they are now.
sm::WatchedView Replica::watched_view() const {
    sm::WatchedView view;
    for (const std::string& path : watches_.watched_paths()) {
        if (std::optional<sm::Stat> stat = sm_.exists(path)) {
            view.emplace(path, *stat);
        }
    }
    std::vector<std::string> pending = watches_.recursive_roots();
    while (!pending.empty()) {
        std::string path = std::move(pending.back());
        pending.pop_back();
        std::optional<sm::Stat> stat = sm_.exists(path);
        if (!stat) {
            continue;
        }
        auto children = sm_.children(path);
        RL_ASSERT(children.ok());  // it exists
        for (const std::string& name : *children) {
            pending.push_back(path == "/" ? "/" + name : path + "/" + name);
        }
        view.emplace(std::move(path), *stat);
    }
    return view;
}

void Replica::on_applied(const sm::Command& command, const sm::ApplyResult& result) {
    RL_ASSERT(result.index == applied_index_);  // the entry just applied
    note_console_events(command, result);
    if (const auto* open = std::get_if<sm::OpenSession>(&command.op)) {
        if (result.response.code == sm::ErrorCode::kOk && is_leader()) {
            tracker_.add(result.response.session, open->timeout_ms, clock_.steady_ms());
        }
    }
    if (const auto* expire = std::get_if<sm::ExpireSession>(&command.op)) {
        // Entries replayed at start were logged by the previous incarnation.
        if (result.response.code == sm::ErrorCode::kOk && result.index > replayed_through_) {
            spdlog::info("session {} ended by expiry at index {}", expire->session, result.index);
        }
    }
    const auto over_budget = [](const redis::Value& reply) {
        return reply.is_error() && reply.text == redis::kScriptInstructionLimitError;
    };
    if (std::holds_alternative<sm::RedisCommand>(command.op) &&
        over_budget(result.response.redis)) {
        ++metrics_.redis_scripts_over_budget_total;
    }
    if (std::holds_alternative<sm::RedisTransaction>(command.op)) {
        for (const redis::Value& item : result.response.redis.items) {
            metrics_.redis_scripts_over_budget_total += over_budget(item) ? 1 : 0;
        }
    }
    if (std::holds_alternative<sm::SqlStatement>(command.op) &&
        sql::spent_row_budget(result.response.sql)) {
        ++metrics_.sql_statements_over_budget_total;
    }
    for (const sql::StatementDone& done : result.sql_done) {
        metrics_.sql_statements_over_budget_total += sql::spent_row_budget(done.result) ? 1 : 0;
    }
    // Publications reach this node's subscribers in log order, and before the reply to the
    // PUBLISH (in Redis too, a connection subscribed to its own channel reads the message first).
    const std::vector<size_t> receivers = deliver_publications(result.published, result.index);
    answer_write(command, result, receivers);
    push_watch_events(result.triggers);
    for (const sm::LockGrant& grant : result.grants) {
        auto it = waiting_.find(WaitKey{grant.session, grant.name, grant.owner_tag});
        if (it == waiting_.end()) {
            continue;  // the waiter's connection is on another node (or gone)
        }
        proto::Response response;
        response.set_code(proto::OK);
        response.mutable_lock()->set_outcome(proto::LOCK_GRANTED);
        response.mutable_lock()->set_token(grant.token);
        response.mutable_lock()->set_hold_count(1);
        const ClientRef client{it->second.conn, it->second.request_id};
        waiting_.erase(it);
        ++metrics_.lock_grants_pushed_total;
        respond(client, response);
    }
    for (const sm::WaitTimeout& timeout : result.wait_timeouts) {
        auto it = waiting_.find(WaitKey{timeout.session, timeout.name, timeout.owner_tag});
        if (it != waiting_.end()) {
            const ClientRef client{it->second.conn, it->second.request_id};
            waiting_.erase(it);
            respond_error(client, proto::WAIT_TIMEOUT);
        }
    }
    // A Cancel took the wait away, or found none: an acquire still waiting here for that
    // (session, lock, owner) ends now with WAIT_TIMEOUT (it certainly holds nothing). Left in
    // place, the grant of a later acquire of the same owner would be pushed to this older
    // request (found by the server simulator, seed 2343).
    if (const auto* cancel = std::get_if<sm::Cancel>(&command.op);
        cancel != nullptr && result.response.code == sm::ErrorCode::kOk &&
        result.response.lock != sm::LockOutcome::kGranted) {
        auto it = waiting_.find(WaitKey{command.client_id, cancel->name, cancel->owner_tag});
        if (it != waiting_.end()) {
            const ClientRef client{it->second.conn, it->second.request_id};
            waiting_.erase(it);
            respond_error(client, proto::WAIT_TIMEOUT);
        }
    }
    sql_push_done(result);
    for (const sm::HoldRevoked& revoked : result.holds_revoked) {
        push_hold_revoked(revoked);
    }
    for (const sm::SessionEnded& ended : result.sessions_ended) {
        end_session(ended.session, ended.reason == sm::SessionEnd::kExpired);
    }
}

void Replica::push_hold_revoked(const sm::HoldRevoked& revoked) {
    RL_ASSERT(revoked.session != sm::kNoSession && revoked.token != 0);
    auto conns = session_connections_.find(revoked.session);
    if (conns == session_connections_.end()) {
        return;  // the session's connections are on other nodes (or it has none now)
    }
    proto::ServerMessage message;
    message.mutable_lock_revoked()->set_session_id(revoked.session);
    message.mutable_lock_revoked()->set_name(revoked.name);
    message.mutable_lock_revoked()->set_token(revoked.token);
    for (net::ConnectionId conn : conns->second) {
        clients_.send(conn, message);
    }
}

// The reply to the write this entry carries, if this node's client is waiting for it.
void Replica::answer_write(const sm::Command& command,
                           const sm::ApplyResult& result,
                           const std::vector<size_t>& receivers) {
    auto it = pending_writes_.find(WriteKey{result.client_id, result.seq});
    if (it == pending_writes_.end() || result.seq == 0) {
        return;
    }
    PendingWrite pending = std::move(it->second);
    pending_writes_.erase(it);
    forward_tags_.erase(pending.forward_tag);
    metrics_.commit_latency.record_us(
        static_cast<uint64_t>(clock_.steady_us() - pending.submitted_us));
    const ClientRef client{pending.conn, pending.request_id};
    if (pending.conn == 0) {
        return;  // proposed by this node for itself (replica_sql.cc): nobody waits for it
    }
    if (is_pg(pending.conn)) {
        sql_answer(command, result, client);
        return;
    }
    if (const auto* op = std::get_if<sm::RedisCommand>(&command.op)) {
        if (!op->argv.empty() && redis::lower(op->argv.front()) == "publish" &&
            !result.response.redis.is_error()) {
            // The state machine cannot know who listens here: PUBLISH answers this node's count
            // (as a Redis Cluster node counts only its own clients).
            RL_ASSERT(result.published.size() == 1 && receivers.size() == 1);
            redis_reply(client, redis::Value::integer_of(static_cast<int64_t>(receivers[0])));
            return;
        }
        redis_reply(client, result.response.redis);
        return;
    }
    if (std::holds_alternative<sm::RedisTransaction>(command.op)) {
        // Each PUBLISH among the transaction's commands answers this node's count, as alone.
        redis::Value reply = result.response.redis;
        RL_ASSERT(receivers.size() == result.published.size());
        for (size_t i = 0; i < result.published.size(); ++i) {
            if (const std::optional<size_t> item = result.published[i].exec_item) {
                RL_ASSERT(reply.kind == redis::Value::Kind::kArray && *item < reply.items.size());
                reply.items[*item] = redis::Value::integer_of(static_cast<int64_t>(receivers[i]));
            }
        }
        redis_reply(client, reply);
        return;
    }
    if (result.response.session != sm::kNoSession) {
        note_session(pending.conn, result.response.session);
    }
    if (const auto* attach = std::get_if<sm::AttachSession>(&command.op);
        attach && result.response.code == sm::ErrorCode::kResultDiscarded &&
        pending.attempt < kAttachAttemptsMax) {
        // Another write of the session applied first (this node had not applied it when it chose
        // the first seq): it has now, so the next choice is above it.
        submit_attach(pending.conn, pending.request_id, attach->session, pending.attempt + 1);
        schedule_flush();
        return;
    }
    if (const auto* acquire = std::get_if<sm::Acquire>(&command.op);
        acquire && result.response.code == sm::ErrorCode::kOk &&
        result.response.lock == sm::LockOutcome::kQueued) {
        register_wait(WaitKey{command.client_id, acquire->name, acquire->owner_tag}, client);
        return;
    }
    // A queued multi-lock waits under its first lock's name: the set is granted, times out or is
    // cancelled on every lock in one entry, so that name's grant or end answers for the set, and
    // the client cancels by that name (client/client_locks.cc).
    if (const auto* many = std::get_if<sm::AcquireMany>(&command.op);
        many && result.response.code == sm::ErrorCode::kOk &&
        result.response.lock == sm::LockOutcome::kQueued) {
        RL_ASSERT(!many->locks.empty());
        register_wait(WaitKey{command.client_id, many->locks.front().name, many->owner_tag},
                      client);
        return;
    }
    proto::Response response;
    fill_write_response(command, result.response, response);
    if (const auto* attach = std::get_if<sm::AttachSession>(&command.op);
        attach && result.response.code == sm::ErrorCode::kOk) {
        // The session exists: the entry just found it.
        const std::optional<sm::SessionInfo> session = sm_.session(attach->session);
        RL_ASSERT(session.has_value());
        response.mutable_attach_session()->set_timeout_ms(session->timeout_ms);
    }
    respond(client, response);
}

// A queued acquire waits for its grant. After a replay (a retry of a queued acquire) or a snapshot,
// the wait may already have ended: the lock's current state says how.
void Replica::register_wait(const WaitKey& key, const ClientRef& client) {
    const auto& [session, name, owner_tag] = key;
    const std::optional<sm::LockInfo> info = sm_.describe_lock(name);
    if (info) {
        for (const sm::HolderInfo& h : info->holders) {
            if (h.session == session && h.owner_tag == owner_tag) {
                proto::Response response;
                response.set_code(proto::OK);
                response.mutable_lock()->set_outcome(proto::LOCK_GRANTED);
                response.mutable_lock()->set_token(h.token);
                response.mutable_lock()->set_hold_count(h.count);
                respond(client, response);
                return;
            }
        }
        for (const sm::WaiterInfo& w : info->waiters) {
            if (w.session == session && w.owner_tag == owner_tag) {
                auto [it, inserted] =
                    waiting_.insert_or_assign(key, Waiting{client.conn, client.request_id});
                (void)it;
                (void)inserted;
                return;
            }
        }
    }
    respond_error(client, sm_.session(session) ? proto::WAIT_TIMEOUT : proto::SESSION_EXPIRED);
}

void Replica::resolve_waits_after_restore() {
    sql_resolve_after_restore();
    std::map<WaitKey, Waiting> waits = std::move(waiting_);
    waiting_.clear();
    for (const auto& [key, w] : waits) {
        register_wait(key, ClientRef{w.conn, w.request_id});
    }
}

void Replica::push_watch_events(const std::vector<sm::WatchTrigger>& triggers) {
    if (triggers.empty()) {
        return;
    }
    for (const sm::WatchEvent& event : watches_.dispatch(triggers)) {
        send_watch_event(event);
    }
}

void Replica::send_watch_event(const sm::WatchEvent& event) {
    proto::ServerMessage message;
    proto::WatchEvent* w = message.mutable_watch_event();
    w->set_path(event.path);
    w->set_type(static_cast<proto::EventType>(event.type));
    w->set_zxid(event.zxid);
    ++metrics_.watch_events_total;
    clients_.send(event.watcher, message);
}

void Replica::end_session(uint64_t session, bool expired) {
    // The state machine ended it in the entry just applied: it is gone on every replica.
    RL_ASSERT(session != sm::kNoSession && !sm_.session(session));
    tracker_.remove(session);
    sql_session_lost(session);
    for (auto it = waiting_.lower_bound(WaitKey{session, {}, {}});
         it != waiting_.end() && std::get<0>(it->first) == session;) {
        const ClientRef client{it->second.conn, it->second.request_id};
        it = waiting_.erase(it);
        respond_error(client, proto::SESSION_EXPIRED);
    }
    auto conns = session_connections_.find(session);
    if (conns == session_connections_.end()) {
        return;
    }
    for (net::ConnectionId conn : conns->second) {
        proto::ServerMessage message;
        message.mutable_session_ended()->set_session_id(session);
        message.mutable_session_ended()->set_expired(expired);
        clients_.send(conn, message);
        if (auto c = connections_.find(conn); c != connections_.end()) {
            c->second.sessions.erase(session);
        }
    }
    session_connections_.erase(conns);
    RL_ASSERT(!tracker_.contains(session));
}

}  // namespace raftlock::server
