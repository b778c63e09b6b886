#pragma once

// The PostgreSQL front end (docs/sql-mode.md, decision 0006): one pg-wire connection's protocol
// state — startup, authentication, the simple and extended query protocols, connection settings
// (SET/SHOW), ReadyForQuery's transaction status — over a raftlock session that the backend (the
// Replica) opens for the connection and closes with it.
//
// Statements: the front end parses each query with the SQL mode's parser (statemachine/sql/
// parser.h) to split and classify it, answers SET, SHOW and the empty query itself, and sends
// every other statement to the backend, one at a time per connection: a statement's result must
// reflect every earlier statement of the connection. Read-only statements (sql::is_read_only)
// are marked so the backend can serve them after ReadIndex instead of through the log.
//
// No sockets: the runtime feeds it decoded messages (net::PgHandler) and it answers through
// PgOutput; statements go to a SqlBackend (the Replica) and come back via on_result.

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/scram.h"
#include "net/pg_codec.h"
#include "net/pg_listener.h"
#include "statemachine/sql/engine.h"

namespace raftlock::server {

namespace sql = statemachine::sql;

// Where the front end sends bytes (net::PgListener in the server).
class PgOutput {
public:
    virtual ~PgOutput() = default;
    virtual void send(uint64_t id, std::string bytes) = 0;
    virtual void close(uint64_t id) = 0;  // after what was sent is flushed
    virtual void pause_reading(uint64_t id, bool paused) = 0;
};

// Runs a connection's session and statements (the Replica). Every call is answered exactly once
// through the PgFrontend method named, unless the connection closed first (sql_closed).
class SqlBackend {
public:
    virtual ~SqlBackend() = default;
    // Opens a session for connection `id`: answered by on_session_opened or on_session_failed.
    // `user`: the cluster user the connection logged in as (SCRAM), empty when none; its
    // statements are that user's.
    virtual void sql_open(uint64_t id, const std::string& user) = 0;
    // The cluster's users (docs/security.md): while enabled, a connection logs in with
    // SCRAM-SHA-256 against `user`'s verifier (nullopt: no such user, or one without a password).
    virtual bool sql_users_enabled() const { return false; }
    virtual std::optional<base::scram::Verifier> sql_verifier(const std::string& /*user*/) const {
        return std::nullopt;
    }
    // A login ended (counted in /metrics).
    virtual void sql_login_done(bool /*succeeded*/) {}
    // Runs statement number `seq` (1, 2, 3, ... per session, one at a time) of `session`:
    // answered by on_result(id, seq, ...). `read_only`: sql::is_read_only held for it.
    virtual void sql_statement(uint64_t id,
                               uint64_t session,
                               uint64_t seq,
                               sql::StatementRequest&& request,
                               bool read_only) = 0;
    // The extended protocol's Describe, from the node's current schema (no round trip).
    virtual Result<sql::Description, sql::SqlError> sql_describe(
        std::string_view statement) const = 0;
    // A CancelRequest for the connection with this backend key: ends its waiting statement.
    virtual void sql_cancel(uint64_t session) = 0;
    // The connection is gone: its session ends (its locks are released, its transaction rolls
    // back). `session` is 0 when none was opened. No more calls for `id` follow.
    virtual void sql_closed(uint64_t id, uint64_t session) = 0;
};

struct PgFrontendOptions {
    // Authentication: empty password = trust (any user); else "md5" or "password" (cleartext).
    std::string password;
    std::string auth_method = "md5";
    size_t pipeline_max = 1000;           // messages queued per connection before reading pauses
    std::string server_version = "15.0";  // the ParameterStatus server_version we report
    uint64_t node_id = 0;
    // Secret input of the md5 salts and cancel keys (raftlockd draws it at random when it starts):
    // without it they would be predictable from the node and connection ids, and a recorded md5
    // answer could be replayed.
    uint64_t secret_seed = 0;
    // --tls-client-cert-user on: a client certificate's common name is the only user its
    // connection may start as, without a password (PostgreSQL's `cert` method in pg_hba.conf).
    bool certificate_user = false;
};

// Differences from PostgreSQL that a client can notice (docs/sql-mode.md lists them all):
// - A simple Query with several statements runs them one by one, each in its own transaction
//   unless a BEGIN opened a block: PostgreSQL runs them in one implicit transaction. Likewise the
//   statements of an extended-protocol batch are not one implicit transaction up to Sync.
// - SET is not transactional (a ROLLBACK does not undo it); statement_timeout and the other
//   settings the SQL mode does not use are stored and shown, not enforced; SET of a name
//   PostgreSQL does not know is accepted and stored (PostgreSQL refuses it with 42704).
// - lock_timeout is capped at sql::kLockWaitMsMax (24 hours) when a statement carries it.
// - Only UTF8 (client_encoding), UTC (TimeZone) and ISO dates (DateStyle) are accepted.
// - The "options" startup parameter (-c name=value) is ignored.
//
// Order and backpressure: a connection's messages are processed strictly one at a time in
// arrival order; while a statement is with the backend, later messages wait in a queue. When the
// queue reaches options.pipeline_max the front end pauses reading (PgOutput::pause_reading) and
// resumes when it is down to half; a reader that ignores the pause and lets the queue reach twice
// the limit gets FATAL 54000 and is closed.
//
// Re-entrancy: the backend may answer from inside its own call (sql_open, sql_statement); the
// front end records the answer and carries on. PgOutput must not call back into the front end
// (net::PgListener calls on_pg_close from its own turn of the event loop, never from close()).
// The statement a session sends to fail its transaction block after an error found by the front
// end itself: the engine rejects it (no such function), which fails the block.
inline constexpr std::string_view kFailBlockStatement = "SELECT raftlock_fail_transaction_block()";

class PgFrontend final : public net::PgHandler {
public:
    // Precondition: options.auth_method is "md5" or "password"; options.pipeline_max > 0.
    PgFrontend(PgFrontendOptions options, PgOutput& output, SqlBackend& backend);

    // From the listener (net::PgHandler).
    void on_pg_open(uint64_t id, const std::string& remote) override;
    // With options.certificate_user: the startup's user must be the one the certificate names,
    // and then needs no password (PostgreSQL's `cert` method).
    void on_pg_certificate(uint64_t id, const std::string& common_name) override;
    void on_pg_message(uint64_t id, net::PgFrontendMessage&& message) override;
    void on_pg_close(uint64_t id) override;

    // From the backend.
    void on_session_opened(uint64_t id, uint64_t session);
    void on_session_failed(uint64_t id, const std::string& message);
    void on_result(uint64_t id, uint64_t seq, const sql::StatementResult& result);
    // The session ended under the connection (expired: its node lost the leader for longer than
    // the session timeout): the connection gets a FATAL error and is closed.
    void on_session_ended(uint64_t id);

    size_t connection_count() const;

private:
    enum class Phase : uint8_t {
        kStartup,         // waiting for the StartupMessage (after any SSLRequest)
        kAuthenticating,  // an authentication request went out; waiting for the password
        kOpening,         // sql_open was called; waiting for on_session_opened or _failed
        kReady,           // the session is open: queries
    };
    // The backend call a connection waits for; its later messages wait with it.
    // kFailingBlock: the statement that records, in the replicated state, that the transaction
    // block failed with an error this front end found itself (see fail_block_statement()).
    enum class Waiting : uint8_t { kNothing, kSession, kStatement, kFailingBlock };

    // One statement of a query string, as it goes to the backend.
    struct Piece {
        sql::ParsedStatement parsed;
        std::string text;           // the statement's own text, from its first token
        uint32_t offset_chars = 0;  // characters before it in the query: added to error positions
    };
    // A prepared statement (Parse). Shared with the portals bound from it, which outlive a Close.
    struct Prepared {
        std::optional<Piece> piece;        // nullopt: the empty query
        std::vector<uint32_t> param_oids;  // one per parameter; 0: not declared
        size_t text_bytes = 0;             // counted against kPreparedBytesMax
    };
    struct Portal {
        std::shared_ptr<const Prepared> statement;
        std::vector<sql::Value> params;
        std::vector<net::PgFormat> result_formats;   // 0, 1 or one per column (checked at Bind)
        std::optional<sql::StatementResult> result;  // once executed: its rows, until all are sent
        size_t rows_sent = 0;
        bool complete = false;  // every row was sent, and CommandComplete
    };
    // A simple Query whose statements are still running, in order.
    struct SimpleQuery {
        std::vector<Piece> pieces;
        size_t next = 0;  // the first not yet started
    };
    struct Conn {
        std::string remote;
        Phase phase = Phase::kStartup;
        // The user the client certificate names, with options.certificate_user.
        std::optional<std::string> certificate_user;
        Waiting waiting = Waiting::kNothing;
        uint64_t waiting_seq = 0;  // Waiting::kStatement: the statement's seq
        bool pumping = false;      // inside pump(): a synchronous answer must not recurse
        bool closing = false;      // FATAL or Terminate: nothing more is processed
        bool close_sent = false;
        bool paused = false;
        bool skip_until_sync = false;  // an extended-protocol error: discard until Sync
        // An error found here (not by the engine) inside a transaction block: the block must
        // fail in the replicated state before anything else runs, and ReadyForQuery waits for it.
        bool block_failure_pending = false;
        bool ready_after_block_failure = false;
        std::string user;
        bool logged_in = false;  // as `user`, a cluster user (SCRAM or certificate)
        int scram_step = 0;      // 1, 2: the SASL message expected next; 0: no SCRAM login
        std::unique_ptr<base::scram::ServerExchange> scram;
        std::array<uint8_t, 4> salt{};
        uint64_t session = 0;
        int32_t process_id = 0;
        uint32_t secret_key = 0;
        uint64_t next_seq = 1;
        sql::TxStatus tx_status = sql::TxStatus::kIdle;
        std::deque<net::PgFrontendMessage> inbox;  // waiting to be processed
        std::string out;                           // encoded, sent at the end of pump()
        std::optional<SimpleQuery> query;
        std::string executing_portal;  // Waiting::kStatement without a query: its Execute
        int32_t executing_max_rows = 0;
        std::map<std::string, std::shared_ptr<const Prepared>> statements;
        size_t statements_bytes = 0;
        std::map<std::string, Portal> portals;
        // Settings, by lower-case name: what SET (or the startup packet) gave; defaults elsewhere.
        std::map<std::string, std::string> settings;
        std::map<std::string, std::string> startup_settings;  // what RESET returns to
        std::map<std::string, std::string> reported;  // ParameterStatus values the client has
        int64_t lock_timeout_ms = 0;
    };

    // Connection lifecycle and dispatch (pg_frontend.cc).
    void pump(uint64_t id, Conn& c);
    void flush(uint64_t id, Conn& c);
    void handle(uint64_t id, Conn& c, net::PgFrontendMessage&& message);
    void handle_ready(uint64_t id, Conn& c, net::PgFrontendMessage&& message);
    void fatal(Conn& c, std::string_view sqlstate, std::string message);
    void startup(uint64_t id, Conn& c, const net::PgStartup& m);
    void authenticate(uint64_t id, Conn& c, const net::PgPassword& m);
    void scram_step(uint64_t id, Conn& c, const net::PgFrontendMessage& message);
    void open_session(uint64_t id, Conn& c);
    void cancel(const net::PgCancelRequest& m);
    void simple_query(Conn& c, const net::PgQuery& m);
    void fail_block(uint64_t id, Conn& c);
    void step_query(uint64_t id, Conn& c);
    void submit(uint64_t id, Conn& c, const Piece& piece, std::vector<sql::Value> params);
    bool emit_query_result(Conn& c, const sql::StatementResult& result, uint32_t offset_chars);
    void ready_for_query(Conn& c);
    static void emit_error(Conn& c, const sql::SqlError& error, uint32_t offset_chars);
    static void emit_notices(Conn& c, const sql::StatementResult& result);
    // Splits a query into its statements; a syntax error's position is in the whole query.
    static Result<std::vector<Piece>, sql::SqlError> split(std::string_view query);
    static uint32_t oid_of(sql::Type type);
    // The format of column i by the protocol's 0/1/n rule.
    static net::PgFormat format_at(const std::vector<net::PgFormat>& formats, size_t i);
    static std::vector<net::PgField> fields(const std::vector<sql::ResultColumn>& columns,
                                            const std::vector<net::PgFormat>& formats);

    // The extended query protocol (pg_frontend_extended.cc).
    void parse(Conn& c, net::PgParse&& m);
    void bind(Conn& c, net::PgBind&& m);
    void describe(Conn& c, const net::PgDescribe& m);
    void describe_statement(Conn& c, const std::string& name);
    void describe_portal(Conn& c, const std::string& name);
    void execute(uint64_t id, Conn& c, const net::PgExecute& m);
    void close_target(Conn& c, const net::PgClose& m);
    static void erase_statement(Conn& c, const std::string& name);
    void sync(Conn& c);
    void extended_error(Conn& c, const sql::SqlError& error, uint32_t offset_chars = 0);
    void executed(Conn& c, const sql::StatementResult& result);
    void send_portal_rows(Conn& c, const std::string& name, Portal& portal, int32_t max_rows);
    Result<sql::Description, sql::SqlError> describe_piece(const Conn& c, const Piece& p) const;
    Result<std::vector<sql::Value>, sql::SqlError> bind_params(const Prepared& statement,
                                                               const net::PgBind& m) const;

    // SET, RESET and SHOW (pg_frontend_settings.cc): answered here, never sent to the backend.
    static bool runs_locally(const sql::Statement& statement);
    sql::StatementResult run_local(Conn& c, const sql::Statement& statement);
    Result<bool, sql::SqlError> set(Conn& c,
                                    const std::string& name,
                                    const std::optional<std::string>& value);
    std::optional<std::string> setting(const Conn& c, std::string_view name) const;
    sql::StatementResult show(const Conn& c, const std::string& name) const;
    void report_changes(Conn& c);

    PgFrontendOptions options_;
    PgOutput& output_;
    SqlBackend& backend_;
    std::map<uint64_t, Conn> conns_;
    uint64_t salts_issued_ = 0;  // with the connection id, makes every md5 salt distinct
};

}  // namespace raftlock::server
