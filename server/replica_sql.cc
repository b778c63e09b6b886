// The PostgreSQL port's requests (docs/sql-mode.md, decision 0006): each connection's session,
// kept alive by this node; its statements, reads after ReadIndex and the rest through the log as
// SqlStatement entries, answered by this node when it applies them — or, for a statement that
// waits for a lock, when it applies the entry that ends the wait.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/assert.h"
#include "server/negative_controls.h"
#include "server/replica.h"
#include "server/request_codec.h"
#include "statemachine/codec.h"

namespace raftlock::server {

namespace sm = statemachine;

void Replica::sql_open(uint64_t id, const std::string& user) {
    RL_ASSERT(is_pg(id));
    if (shutting_down_) {
        pg_frontend_->on_session_failed(id, "this node is shutting down");
        return;
    }
    pg_conns_[id] = PgConn{.user = user};
    sm::Command command;
    command.seq = next_nonce_++;
    command.user = user;
    command.op = sm::OpenSession{config_.pg_session_timeout_ms};
    if (std::optional<sm::Response> refused = write_refusal(command)) {
        ++metrics_.permission_denied_total;
        pg_frontend_->on_session_failed(id, refused->message);
        return;
    }
    const uint64_t nonce = command.seq;
    const bool added = add_pending_write(id, nonce, std::move(command));
    RL_ASSERT(added);
}

bool Replica::sql_users_enabled() const {
    return sm_.auth().enabled();
}

std::optional<base::scram::Verifier> Replica::sql_verifier(const std::string& user) const {
    const std::optional<sm::Credentials> stored = sm_.auth().credentials(user);
    if (!stored || !stored->has_password()) {
        return std::nullopt;
    }
    return sm::to_verifier(*stored);
}

void Replica::sql_login_done(bool succeeded) {
    ++(succeeded ? metrics_.auth_logins_total : metrics_.auth_failures_total);
}

// A result the request path made up itself (no leader, a timeout, a limit) carries the session's
// transaction status as this node last applied it, so ReadyForQuery still says "in a block".
sql::StatementResult Replica::sql_failure(uint64_t session,
                                          std::string sqlstate,
                                          std::string message) const {
    sql::StatementResult r;
    r.error = sql::SqlError{std::move(sqlstate), std::move(message), {}, {}, 0};
    r.tx_status = sm_.sql_tx_status(session);
    return r;
}

void Replica::sql_statement(
    uint64_t id, uint64_t session, uint64_t seq, sql::StatementRequest&& request, bool read_only) {
    RL_ASSERT(is_pg(id) && seq > 0);
    auto conn = pg_conns_.find(id);
    RL_ASSERT(conn != pg_conns_.end() && conn->second.session == session);
    RL_ASSERT(seq > conn->second.last_seq);
    conn->second.last_seq = seq;
    const ClientRef client{id, seq};
    ++metrics_.client_requests_total;
    if (shutting_down_) {
        sql_error(client, proto::SHUTTING_DOWN, "");
        return;
    }
    if (!conn->second.rate.admit(clock_.steady_ms(),
                                 config_.requests_per_second_per_connection_max)) {
        ++metrics_.rate_limited_total;
        pg_frontend_->on_result(
            id, seq,
            sql_failure(session, "53400",
                        fmt::format("more than {} statements a second on this connection "
                                    "(--max-requests-per-second)",
                                    config_.requests_per_second_per_connection_max)));
        return;
    }
    static_assert(ServerConfig::kSqlRowsCeiling == sql::kRowsTouchedMax);
    // Stamped here, read or write, so that the statement stops at the same row wherever it runs.
    request.rows_max = config_.sql_rows_max;
    // Inside a transaction block even a read goes through the log: if it fails, the block must
    // fail with it (PostgreSQL's rule), and only an entry can record that. This node applied the
    // session's every earlier statement, so the status it sees is the session's own.
    const std::string& user = conn->second.user;
    if (read_only && sm_.sql_tx_status(session) == sql::TxStatus::kIdle) {
        // A read is checked here (it does not go through the log); a write where it applies.
        if (const sm::Need needed{sm::Access::kRead, sm::Space::kSql, ""};
            !sm_.auth().permits(user, needed)) {
            ++metrics_.permission_denied_total;
            pg_frontend_->on_result(id, seq,
                                    sql_failure(session, "42501", sm::lacks_message(user, needed)));
            return;
        }
#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
        if (negative_controls::on(negative_controls::Control::kLocalReads)) {
            pg_frontend_->on_result(id, seq, sm_.sql_query(session, request));
            return;
        }
#endif
        next_batch_.sql_reads.emplace_back(client, std::pair{session, std::move(request)});
        schedule_flush();
        return;
    }
    sm::Command command;
    command.client_id = session;
    command.seq = seq;
    command.ack_seq = seq - 1;  // one statement at a time: every earlier result was received
    command.user = user;
    command.op = sm::SqlStatement{std::move(request)};
    if (sm::validate_command(command) != sm::ErrorCode::kOk) {
        pg_frontend_->on_result(id, seq,
                                sql_failure(session, "54000",
                                            "the statement or its parameters are larger than the "
                                            "SQL mode's limits"));
        return;
    }
    if (std::optional<sm::Response> refused = write_refusal(command)) {
        ++metrics_.permission_denied_total;
        pg_frontend_->on_result(id, seq, sql_failure(session, "42501", refused->message));
        return;
    }
    const bool added = add_pending_write(id, seq, std::move(command));
    RL_ASSERT(added);  // seqs only grow, so no write of this (session, seq) is pending
}

Result<sql::Description, sql::SqlError> Replica::sql_describe(std::string_view statement) const {
    return sm_.sql_describe(statement);
}

void Replica::sql_cancel(uint64_t session) {
    sm::Command command;
    command.seq = next_nonce_++;
    // The cancel key proved the right to cancel: the entry acts as the session's own user.
    if (auto conn = pg_sessions_.find(session); conn != pg_sessions_.end()) {
        command.user = pg_conns_.at(conn->second).user;
    }
    command.op = sm::SqlCancel{session};
    propose_unanswered(std::move(command));
}

void Replica::sql_closed(uint64_t id, uint64_t session) {
    auto conn = pg_conns_.find(id);
    if (conn == pg_conns_.end()) {
        return;
    }
    const uint64_t last_seq = conn->second.last_seq;
    const std::string user = conn->second.user;
    pg_conns_.erase(conn);
    drop_pending_writes(id);
    if (session == sm::kNoSession || !pg_sessions_.contains(session)) {
        return;  // never opened, or it ended under the connection
    }
    pg_sessions_.erase(session);
    for (auto it = sql_waits_.lower_bound({session, 0});
         it != sql_waits_.end() && it->first.first == session;) {
        it = sql_waits_.erase(it);
    }
    // Ending the session releases its locks and rolls its transaction back at once, rather than
    // after its timeout. If this proposal is lost (no leader), the session still expires.
    sm::Command command;
    command.client_id = session;
    command.seq = last_seq + 1;
    command.ack_seq = last_seq;
    command.user = user;
    command.op = sm::CloseSession{};
    propose_unanswered(std::move(command));
}

// A write nobody waits for (connection 0 answers nowhere): proposed, or forwarded to the leader,
// and resubmitted to new leaders like any pending write until it applies or times out. The same
// request already on its way is not sent twice.
void Replica::propose_unanswered(sm::Command command) {
    (void)add_pending_write(0, 0, std::move(command));
}

// The applied entry of a pending write from the PostgreSQL port: an OpenSession or a statement.
void Replica::sql_answer(const sm::Command& command,
                         const sm::ApplyResult& result,
                         const ClientRef& client) {
    auto conn = pg_conns_.find(client.conn);
    if (conn == pg_conns_.end() || pg_frontend_ == nullptr) {
        return;
    }
    const sm::Response& response = result.response;
    if (std::holds_alternative<sm::OpenSession>(command.op)) {
        if (response.code != sm::ErrorCode::kOk) {
            pg_frontend_->on_session_failed(client.conn, response.message.empty()
                                                             ? describe(to_proto(response.code))
                                                             : response.message);
            return;
        }
        conn->second.session = response.session;
        pg_sessions_[response.session] = client.conn;
        pg_frontend_->on_session_opened(client.conn, response.session);
        return;
    }
    RL_ASSERT(std::holds_alternative<sm::SqlStatement>(command.op));
    if (response.code == sm::ErrorCode::kSessionExpired) {
        sql_session_lost(command.client_id);
        return;
    }
    if (response.code == sm::ErrorCode::kPermissionDenied) {
        // Refused where it applied (the user lost the permission after this node checked):
        // response.sql carries SQLSTATE 42501 and the message.
        sql::StatementResult refused = response.sql;
        refused.tx_status = sm_.sql_tx_status(command.client_id);
        pg_frontend_->on_result(client.conn, client.request_id, refused);
        return;
    }
    if (response.code != sm::ErrorCode::kOk) {
        pg_frontend_->on_result(client.conn, client.request_id,
                                sql_failure(command.client_id, "XX000",
                                            "raftlock: " + describe(to_proto(response.code))));
        return;
    }
    if (response.sql_waiting) {
        sql_waits_[WriteKey{command.client_id, command.seq}] = client;
        return;
    }
    pg_frontend_->on_result(client.conn, client.request_id, response.sql);
}

// Statements that waited for a lock and finished in this entry.
void Replica::sql_push_done(const sm::ApplyResult& result) {
    for (const sql::StatementDone& done : result.sql_done) {
        auto it = sql_waits_.find(WriteKey{done.session, done.ticket});
        if (it == sql_waits_.end()) {
            continue;  // the connection is on another node (or gone)
        }
        const ClientRef client = it->second;
        sql_waits_.erase(it);
        if (pg_frontend_ != nullptr && pg_conns_.contains(client.conn)) {
            pg_frontend_->on_result(client.conn, client.request_id, done.result);
        }
    }
}

// Failures of the request path itself (no leader, timeouts, shutdown), in PostgreSQL's terms.
void Replica::sql_error(const ClientRef& client, proto::Code code, const std::string& message) {
    auto conn = pg_conns_.find(client.conn);
    if (conn == pg_conns_.end() || pg_frontend_ == nullptr) {
        return;
    }
    if (client.request_id == 0) {  // one of this node's keepalives for the connection's session
        if (code == proto::SESSION_EXPIRED) {
            sql_session_lost(conn->second.session);
        }
        return;
    }
    const std::string detail = message.empty() ? "" : " (" + message + ")";
    if (conn->second.session == sm::kNoSession) {
        pg_frontend_->on_session_failed(client.conn, describe(code) + detail);
        return;
    }
    ++metrics_.client_errors_total;
    switch (code) {
        case proto::SESSION_EXPIRED:
            sql_session_lost(conn->second.session);
            return;
        case proto::TIMEOUT:
            pg_frontend_->on_result(
                client.conn, client.request_id,
                sql_failure(conn->second.session, "08006",
                            "raftlock: the cluster did not answer in time; the statement may or "
                            "may not have been applied" +
                                detail));
            return;
        default:
            // No leader, leadership moving, this node shutting down: nothing was applied, and a
            // retry may succeed (57P03 cannot_connect_now is what clients retry on).
            pg_frontend_->on_result(
                client.conn, client.request_id,
                sql_failure(conn->second.session, "57P03", "raftlock: " + describe(code) + detail));
            return;
    }
}

// The session under a connection ended (expired while this node could not keep it alive): the
// connection cannot go on, since its locks and transaction are gone.
void Replica::sql_session_lost(uint64_t session) {
    auto it = pg_sessions_.find(session);
    if (it == pg_sessions_.end()) {
        return;
    }
    const net::ConnectionId id = it->second;
    pg_sessions_.erase(it);
    for (auto w = sql_waits_.lower_bound({session, 0});
         w != sql_waits_.end() && w->first.first == session;) {
        w = sql_waits_.erase(w);
    }
    if (pg_frontend_ != nullptr) {
        pg_frontend_->on_session_ended(id);
    }
}

// Keeps every session of this node's PostgreSQL connections alive, three times per timeout,
// through the same paths as a client's keepalive (the leader records it; a follower relays it).
void Replica::sql_keepalives() {
    const int64_t now_ms = clock_.steady_ms();
    if (pg_sessions_.empty() || now_ms < pg_keepalive_due_ms_) {
        return;
    }
    pg_keepalive_due_ms_ = now_ms + config_.pg_session_timeout_ms / 3;
    if (soft_.leader == raft::kNoNode) {
        return;
    }
    for (const auto& [session, conn] : pg_sessions_) {
        const ClientRef client{conn, 0};
        if (is_leader()) {
            if (tracker_.touch(session, now_ms) != SessionTracker::Touch::kExpiring) {
                next_batch_.keepalives.emplace_back(client, session);
            }
        } else {
            next_keepalive_forward_.emplace_back(client, session);
        }
    }
    schedule_flush();
}

// After a snapshot replaced the state, a waiting statement may have finished in the entries the
// snapshot covers: its saved reply says so.
void Replica::sql_resolve_after_restore() {
    for (auto it = sql_waits_.begin(); it != sql_waits_.end();) {
        const auto& [session, seq] = it->first;
        const std::optional<sm::Response> saved = sm_.saved_response(session, seq);
        if (saved && saved->sql_waiting) {
            ++it;
            continue;
        }
        const ClientRef client = it->second;
        it = sql_waits_.erase(it);
        if (pg_frontend_ == nullptr || !pg_conns_.contains(client.conn)) {
            continue;
        }
        if (saved) {
            pg_frontend_->on_result(client.conn, client.request_id, saved->sql);
        } else if (sm_.session(session)) {
            pg_frontend_->on_result(client.conn, client.request_id,
                                    sql_failure(session, "XX000",
                                                "raftlock: the statement's result was discarded "
                                                "before it could be sent"));
        } else {
            sql_session_lost(session);
        }
    }
}

}  // namespace raftlock::server
