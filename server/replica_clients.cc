// Client requests: writes through the log, reads after ReadIndex, keepalives, local requests.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/negative_controls.h"
#include "server/replica.h"
#include "server/request_codec.h"
#include "statemachine/codec.h"

namespace raftlock::server {

namespace sm = statemachine;

namespace {

// Reply bytes one turn of the loop builds for confirmed Redis reads; the rest are served in later
// turns. Thirty clients pipelining GETs of a 4 MiB value without reading made one turn copy about
// a gigabyte while every other client and the Raft ticks waited (issue 16, row 2); 16 MiB is a few
// milliseconds of copying. Serving a read later is still linearizable: the state only moves
// forward from the read index, and the read has not been answered yet. A connection's reads and
// writes stay in order because the frontend dispatches a write only after its reads are answered.
constexpr size_t kRedisReplyBytesPerTurn = size_t{16} << 20;

size_t approximate_bytes(const sm::redis::Value& v) {
    size_t n = v.text.size() + 16;  // and the RESP framing
    for (const sm::redis::Value& item : v.items) {
        n += approximate_bytes(item);
    }
    return n;
}

}  // namespace

void Replica::on_client_open(net::ConnectionId id, const std::string& remote) {
    Connection& c = connections_[id];
    c.remote = remote;
    c.opened_ms = clock_.steady_ms();
}

void Replica::on_client_close(net::ConnectionId id) {
    auto c = connections_.find(id);
    if (c == connections_.end()) {
        return;
    }
    watches_.remove_watcher(id);
    for (uint64_t session : c->second.sessions) {
        auto conns = session_connections_.find(session);
        if (conns != session_connections_.end()) {
            conns->second.erase(id);
            if (conns->second.empty()) {
                session_connections_.erase(conns);
            }
        }
    }
    // Waits stay in the state machine until granted, timed out or cancelled.
    drop_pending_writes(id);
    std::erase_if(waiting_, [id](const auto& w) { return w.second.conn == id; });
    connections_.erase(c);
}

// Writes already submitted still apply (the client may retry them elsewhere); only the reply has
// nowhere to go.
void Replica::drop_pending_writes(net::ConnectionId id) {
    for (auto it = pending_writes_.begin(); it != pending_writes_.end();) {
        if (it->second.conn == id) {
            forward_tags_.erase(it->second.forward_tag);
            it = pending_writes_.erase(it);
        } else {
            ++it;
        }
    }
}

void Replica::on_client_request(net::ConnectionId id, proto::Request&& request) {
    auto c = connections_.find(id);
    if (c == connections_.end()) {
        return;
    }
    ++metrics_.client_requests_total;
    const ClientRef client{id, request.request_id()};
    if (!c->second.rate.admit(clock_.steady_ms(), config_.requests_per_second_per_connection_max)) {
        proto::ServerMessage message;
        proto::Response* r = message.mutable_response();
        r->set_request_id(request.request_id());
        r->set_code(proto::TOO_MANY_REQUESTS);
        r->set_message(
            fmt::format("more than {} requests a second on this connection "
                        "(--max-requests-per-second)",
                        config_.requests_per_second_per_connection_max));
        ++metrics_.rate_limited_total;
        ++metrics_.client_errors_total;
        clients_.send(id, message);
        return;
    }
    if (c->second.pending >= config_.pending_requests_per_connection_max) {
        proto::ServerMessage message;
        proto::Response* r = message.mutable_response();
        r->set_request_id(request.request_id());
        r->set_code(proto::TOO_MANY_REQUESTS);
        r->set_message(fmt::format("more than {} requests pending on this connection",
                                   config_.pending_requests_per_connection_max));
        ++metrics_.client_errors_total;
        clients_.send(id, message);
        return;
    }
    ++c->second.pending;
    if (shutting_down_) {
        respond_error(client, proto::SHUTTING_DOWN);
        return;
    }
    if (std::optional<std::string> refused = request_refusal(id, request)) {
        ++metrics_.permission_denied_total;
        respond_error(client, proto::PERMISSION_DENIED, std::move(*refused));
        schedule_flush();
        return;
    }
    switch (kind_of(request)) {
        case RequestKind::kWrite:
            submit_write(id, request);
            break;
        case RequestKind::kRead:
            add_read(id, std::move(request));
            break;
        case RequestKind::kKeepAlive:
            add_keepalive(id, request);
            break;
        case RequestKind::kLocal:
            answer_local(id, request);
            break;
        case RequestKind::kMembership:
            if (request.has_transfer_leadership()) {
                transfer_leadership(id, request);
            } else {
                change_member(id, request);
            }
            break;
        case RequestKind::kAuthenticate:
            authenticate(client, request);
            break;
        case RequestKind::kInvalid:
            respond_error(client, proto::BAD_REQUEST, "the request has no body (unknown request?)");
            break;
    }
    schedule_flush();
}

void Replica::submit_write(net::ConnectionId conn, proto::Request& request) {
    const ClientRef client{conn, request.request_id()};
    if (request.has_attach_session()) {
        if (std::optional<std::string> error = attach_request_error(request)) {
            respond_error(client, proto::BAD_ARGUMENTS, *error);
            return;
        }
        submit_attach(conn, request.request_id(), request.session_id(), 1);
        return;
    }
    Result<sm::Command, std::string> command = to_command(request, next_nonce_++);
    if (!command.ok()) {
        respond_error(client, proto::BAD_ARGUMENTS, command.error());
        return;
    }
    command->user = user_of(conn);
    if (std::optional<sm::Response> refused = write_refusal(*command)) {
        ++metrics_.permission_denied_total;
        respond_error(client, to_proto(refused->code), std::move(refused->message));
        return;
    }
    if (command->client_id != sm::kNoSession) {
        note_session(conn, command->client_id);
    }
    const WriteKey key{command->client_id, command->seq};
    auto [it, inserted] = pending_writes_.try_emplace(key);
    if (!inserted) {
        // A retry of a write still pending here: the newest request gets the reply.
        forward_tags_.erase(it->second.forward_tag);
        respond_error(ClientRef{it->second.conn, it->second.request_id}, proto::TIMEOUT,
                      "superseded by a retry of the same (session, seq)");
    }
    const bool maybe_proposed = !inserted && may_commit(it->second);
    const int64_t now_us = clock_.steady_us();
    it->second = PendingWrite{conn,
                              request.request_id(),
                              std::move(command).value(),
                              now_us,
                              now_us / 1000 + config_.request_timeout_ms,
                              0};
    it->second.maybe_proposed = maybe_proposed;
    route_write(key, it->second);
}

void Replica::submit_attach(net::ConnectionId conn,
                            uint64_t request_id,
                            uint64_t session,
                            int attempt) {
    RL_ASSERT(session != sm::kNoSession && attempt >= 1);
    // A lagging replica may know fewer of the session's writes than the leader applies before
    // this entry: the entry is then refused, and retried from what this node has applied by then.
    const uint64_t highest = sm_.highest_seq_used(session).value_or(0);
    if (highest > UINT64_MAX - sm::kAttachSeqGap - 1) {
        // Seqs are the client's choice: one that numbered a write near the top of the range
        // left no first seq above it (and must not stop this node).
        respond_error(ClientRef{conn, request_id}, proto::LIMIT_EXCEEDED,
                      "the session's sequence numbers are used up to the top of their range; "
                      "open a new session");
        return;
    }
    // Keyed by the nonce alone (client_id 0): the entry must not take one of the session's seqs.
    sm::Command command;
    command.seq = next_nonce_++;
    command.op = sm::AttachSession{session, highest + sm::kAttachSeqGap + 1};
    command.user = user_of(conn);
    RL_ASSERT(sm::validate_command(command) == sm::ErrorCode::kOk);  // every field chosen here
    if (std::optional<sm::Response> refused = write_refusal(command)) {
        ++metrics_.permission_denied_total;
        respond_error(ClientRef{conn, request_id}, to_proto(refused->code),
                      std::move(refused->message));
        return;
    }
    note_session(conn, session);
    const WriteKey key{sm::kNoSession, command.seq};
    const int64_t now_us = clock_.steady_us();
    auto [it, inserted] = pending_writes_.try_emplace(
        key, PendingWrite{conn, request_id, std::move(command), now_us,
                          now_us / 1000 + config_.request_timeout_ms, 0, attempt});
    RL_ASSERT(inserted);  // nonces are unique
    route_write(key, it->second);
}

bool Replica::add_pending_write(net::ConnectionId conn, uint64_t request_id, sm::Command command) {
    const WriteKey key{command.client_id, command.seq};
    const int64_t now_us = clock_.steady_us();
    auto [it, inserted] = pending_writes_.try_emplace(
        key, PendingWrite{conn, request_id, std::move(command), now_us,
                          now_us / 1000 + config_.request_timeout_ms, 0});
    if (!inserted) {
        return false;
    }
    route_write(key, it->second);
    schedule_flush();
    return true;
}

// Whether a copy of the write may still commit: one was proposed here, or one was forwarded and
// its leader has not refused it (an unanswered copy may sit in the old leader's log, which a new
// leader can commit).
bool Replica::may_commit(const PendingWrite& pending) {
    return pending.maybe_proposed || pending.forward_tag != 0;
}

// Proposes the write (leader) or forwards it to the leader. With no leader known it waits: the
// next leader gets it (resubmit_after_leader_change) or the request times out.
void Replica::route_write(const WriteKey& key, PendingWrite& pending) {
    pending.maybe_proposed = may_commit(pending);
    forward_tags_.erase(pending.forward_tag);
    pending.forward_tag = 0;
    if (is_leader()) {
        if (propose_command(pending.command)) {
            pending.maybe_proposed = true;
        } else if (!pending.maybe_proposed) {
            const ClientRef client{pending.conn, pending.request_id};
            pending_writes_.erase(key);
            respond_error(client, proto::UNAVAILABLE,
                          "the leader cannot take proposals now (leadership transfer or overload)");
        }
        // Else an earlier copy may commit: "not applied" could be false (a client that retries
        // would apply the write twice). It waits for that copy's fate: applied and answered here,
        // resubmitted to the next leader (exactly-once answers a copy with the first's result),
        // or TIMEOUT, which says the outcome is unknown.
        return;
    }
    if (soft_.leader == raft::kNoNode) {
        return;
    }
    Result<std::string, sm::ErrorCode> bytes = sm::encode_command(pending.command);
    RL_ASSERT_MSG(bytes.ok(), "a validated command does not encode");
    proto::PeerFrame frame;
    pending.forward_tag = ++next_tag_;
    frame.mutable_forward_write()->set_tag(pending.forward_tag);
    frame.mutable_forward_write()->set_command(std::move(bytes).value());
    forward_tags_[pending.forward_tag] = key;
    ++metrics_.forwarded_writes_total;
    peers_.send(soft_.leader, frame);
}

bool Replica::propose_command(sm::Command command) {
    RL_ASSERT(is_leader());
    command.time_ms = cluster_now_ms();
    Result<std::string, sm::ErrorCode> bytes = sm::encode_command(command);
    RL_ASSERT_MSG(bytes.ok(), "a validated command does not encode");
    const raft::Status status = raw_->propose(std::move(bytes).value());
    if (!status.ok()) {
        ++metrics_.proposals_dropped_total;
        return false;
    }
    ++metrics_.proposals_total;
    schedule_flush();
    return true;
}

void Replica::add_read(net::ConnectionId conn, proto::Request&& request) {
    const ClientRef client{conn, request.request_id()};
    if (request.local_read() && serves_local_reads()) {
        ++metrics_.local_reads_total;
        serve_read(client, request);
        return;
    }
#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
    if (negative_controls::on(negative_controls::Control::kLocalReads)) {
        serve_read(client, request);
        return;
    }
#endif
    next_batch_.reads.emplace_back(client, std::move(request));
}

void Replica::add_keepalive(net::ConnectionId conn, const proto::Request& request) {
    const ClientRef client{conn, request.request_id()};
    const uint64_t session = request.session_id();
    if (session == sm::kNoSession) {
        respond_error(client, proto::BAD_REQUEST, "keep_alive needs session_id");
        return;
    }
    note_session(conn, session);
    if (is_leader()) {
        if (tracker_.touch(session, clock_.steady_ms()) == SessionTracker::Touch::kExpiring) {
            respond_error(client, proto::SESSION_EXPIRED);
            return;
        }
#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
        if (negative_controls::on(negative_controls::Control::kKeepAliveWithoutReadIndex)) {
            respond_error(client, proto::OK);
            return;
        }
#endif
        next_batch_.keepalives.emplace_back(client, session);
        return;
    }
    if (soft_.leader == raft::kNoNode) {
        respond_error(client, proto::UNAVAILABLE, "no leader to record the keepalive; retry");
        return;
    }
    next_keepalive_forward_.emplace_back(client, session);
}

void Replica::answer_local(net::ConnectionId conn, const proto::Request& request) {
    const ClientRef client{conn, request.request_id()};
    proto::Response response;
    if (request.has_node_status()) {
        fill_status(*response.mutable_node_status());
        respond(client, response);
        return;
    }
    if (request.has_auth_status()) {
        fill_auth_status(conn, *response.mutable_auth_status());
        respond(client, response);
        return;
    }
    if (request.has_remove_watch()) {
        remove_watch(client, request.remove_watch());
        return;
    }
    RL_ASSERT(request.has_add_watch());
    const std::string& path = request.add_watch().path();
    const sm::WatchKind kind = request.add_watch().recursive() ? sm::WatchKind::kPersistentRecursive
                                                               : sm::WatchKind::kPersistent;
    const proto::Code added = add_watch(conn, path, kind);
    respond_error(client, added,
                  added == proto::LIMIT_EXCEEDED ? "too many watches on this connection" : "");
}

void Replica::remove_watch(const ClientRef& client, const proto::RemoveWatch& request) {
    std::vector<sm::WatchKind> kinds;
    if (request.kinds().empty()) {
        kinds.push_back(request.recursive() ? sm::WatchKind::kPersistentRecursive
                                            : sm::WatchKind::kPersistent);
    }
    for (int kind : request.kinds()) {
        switch (static_cast<proto::WatchKind>(kind)) {
            case proto::WATCH_DATA:
                kinds.push_back(sm::WatchKind::kData);
                break;
            case proto::WATCH_CHILDREN:
                kinds.push_back(sm::WatchKind::kChildren);
                break;
            case proto::WATCH_PERSISTENT:
                kinds.push_back(sm::WatchKind::kPersistent);
                break;
            case proto::WATCH_PERSISTENT_RECURSIVE:
                kinds.push_back(sm::WatchKind::kPersistentRecursive);
                break;
            default:
                respond_error(client, proto::BAD_ARGUMENTS, "unknown watch kind");
                return;
        }
    }
    bool found = false;
    for (sm::WatchKind kind : kinds) {
        found = (request.check_only() ? watches_.has(client.conn, request.path(), kind)
                                      : watches_.remove(client.conn, request.path(), kind)) ||
                found;
    }
    respond_error(client, found ? proto::OK : proto::NO_NODE,
                  found ? "" : "no such watch on this connection");
}

void Replica::serve_batch(ReadBatch& batch) {
    for (const auto& [client, request] : batch.reads) {
        serve_read(client, request);
    }
    for (const auto& [client, session] : batch.keepalives) {
        respond_error(client, sm_.session(session) ? proto::OK : proto::SESSION_EXPIRED);
    }
    if (!batch.redis_reads.empty()) {
        redis_reads_ready_.insert(redis_reads_ready_.end(),
                                  std::make_move_iterator(batch.redis_reads.begin()),
                                  std::make_move_iterator(batch.redis_reads.end()));
        if (!redis_reads_posted_) {
            redis_reads_posted_ = true;
            post_([this] { serve_redis_reads(); });
        }
    }
    for (const auto& [client, statement] : batch.sql_reads) {
        if (pg_frontend_ != nullptr && pg_conns_.contains(client.conn)) {
            const sql::StatementResult result = sm_.sql_query(statement.first, statement.second);
            metrics_.sql_statements_over_budget_total += sql::spent_row_budget(result) ? 1 : 0;
            pg_frontend_->on_result(client.conn, client.request_id, result);
        }
    }
    for (const ForwardedKeepAlive& f : batch.forwarded) {
        proto::PeerFrame frame;
        proto::ForwardReply* reply = frame.mutable_forward_reply();
        reply->set_tag(f.tag);
        reply->set_status(proto::FORWARD_OK);
        reply->set_leader(soft_.leader);
        for (uint64_t session : f.expiring) {
            reply->add_expired_sessions(session);
        }
        for (uint64_t session : f.sessions) {
            if (!sm_.session(session)) {
                reply->add_expired_sessions(session);
            }
        }
        peers_.send(f.from, frame);
    }
}

void Replica::serve_redis_reads() {
    RL_ASSERT(redis_reads_posted_);
    redis_reads_posted_ = false;
    size_t reply_bytes = 0;
    while (!redis_reads_ready_.empty() && reply_bytes < kRedisReplyBytesPerTurn) {
        const auto [client, argv] = std::move(redis_reads_ready_.front());
        redis_reads_ready_.pop_front();
        // A closed connection's reads are not run: its reply (perhaps megabytes) would be dropped.
        if (redis_frontend_ != nullptr && redis_frontend_->awaits_reply(client.conn)) {
            const sm::redis::Value reply =
                argv.size() == 1 && argv[0] == kRedisWatchRead
                    ? sm::redis::Value::integer_of(static_cast<int64_t>(sm_.last_applied()))
                    : sm_.redis_query(argv);
            reply_bytes += approximate_bytes(reply);
            redis_reply(client, reply);
        }
    }
    if (!redis_reads_ready_.empty()) {
        // The rest waits for the next turn, behind whatever else is queued on the loop.
        ++metrics_.redis_reads_deferred_total;
        redis_reads_posted_ = true;
        post_([this] { serve_redis_reads(); });
    }
}

void Replica::note_session(net::ConnectionId conn, uint64_t session) {
    auto c = connections_.find(conn);
    if (c == connections_.end()) {
        return;
    }
    if (c->second.sessions.insert(session).second) {
        session_connections_[session].insert(conn);
    }
}

void Replica::respond(const ClientRef& client, proto::Response& response) {
    if (is_pg(client.conn)) {
        sql_error(client, response.code(), response.message());
        return;
    }
    if (is_redis(client.conn)) {
        // Only errors reach here for a Redis connection (timeouts, shutdown, no leader).
        RL_ASSERT(response.code() != proto::OK);
        redis_error(client, response.code(), response.message());
        return;
    }
    auto c = connections_.find(client.conn);
    if (c == connections_.end()) {
        return;
    }
    RL_ASSERT(c->second.pending > 0);
    --c->second.pending;
    response.set_request_id(client.request_id);
    response.set_applied_index(applied_index_);
    response.set_node_id(config_.node_id);
    response.set_leader_hint(soft_.leader);
    if (response.code() != proto::OK) {
        ++metrics_.client_errors_total;
        if (response.message().empty()) {
            response.set_message(describe(response.code()));
        }
    }
    proto::ServerMessage message;
    *message.mutable_response() = std::move(response);
    clients_.send(client.conn, message);
}

void Replica::respond_error(const ClientRef& client, proto::Code code, std::string message) {
    proto::Response response;
    response.set_code(code);
    response.set_message(std::move(message));
    respond(client, response);
}

}  // namespace raftlock::server
