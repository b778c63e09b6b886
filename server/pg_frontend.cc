// The PostgreSQL front end: connection lifecycle, startup and authentication, the message queue,
// and the simple query protocol. The extended protocol is in pg_frontend_extended.cc, SET and
// SHOW in pg_frontend_settings.cc.

#include "server/pg_frontend.h"

#include <algorithm>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "base/assert.h"
#include "base/digest.h"
#include "statemachine/sql/parser.h"

namespace raftlock::server {

namespace {

// A reader that ignores pause_reading is closed when its queue reaches this many times
// options.pipeline_max (see the header).
constexpr size_t kPipelineOverrunFactor = 2;

// The type byte of each alternative of net::PgFrontendMessage, in its order; startup packets
// have none. For "expected password response, got message type %d".
constexpr char kMessageTypes[] = {0,   0,   0,   0,   'Q', 'P', 'B', 'D', 'E',
                                  'S', 'H', 'C', 'X', 'p', 'p', 'd', 'c', 'f'};
static_assert(std::size(kMessageTypes) == std::variant_size_v<net::PgFrontendMessage>);

net::PgTransactionStatus wire_status(sql::TxStatus status) {
    switch (status) {
        case sql::TxStatus::kIdle:
            return net::PgTransactionStatus::kIdle;
        case sql::TxStatus::kInBlock:
            return net::PgTransactionStatus::kInTransaction;
        case sql::TxStatus::kFailed:
            return net::PgTransactionStatus::kFailedTransaction;
    }
    RL_PANIC("unknown transaction status");
}

// Compares without an early exit, so the time taken does not tell how much of a guess was right.
// The length may show: an md5 answer always has 35 characters.
bool equal_constant_time(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    uint8_t diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        diff |= static_cast<uint8_t>(a[i] ^ b[i]);
    }
    return diff == 0;
}

uint32_t first_u32(const base::Md5Digest& d) {
    return (uint32_t{d[0]} << 24) | (uint32_t{d[1]} << 16) | (uint32_t{d[2]} << 8) | d[3];
}

// The byte offset of 1-based character `pos` of `s`, which is valid UTF-8 (the parser checked).
size_t byte_offset(std::string_view s, uint32_t pos) {
    RL_ASSERT(pos >= 1);
    uint32_t chars = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        const auto byte = static_cast<uint8_t>(s[i]);
        if ((byte & 0xC0) != 0x80 && ++chars == pos) {
            return i;
        }
    }
    RL_PANIC("a statement position beyond the end of its query");
}

// A statement's slice of the query ends where the next statement starts: what follows its last
// token is whitespace, comments and semicolons, and the trailing ones are not worth replicating.
std::string_view trim_statement_end(std::string_view s) {
    while (!s.empty() && (s.back() == ';' || s.back() == ' ' || s.back() == '\t' ||
                          s.back() == '\n' || s.back() == '\r' || s.back() == '\f')) {
        s.remove_suffix(1);
    }
    return s;
}

sql::ParseLimits parse_limits() {
    sql::ParseLimits limits;
    limits.query_bytes_max = sql::kStatementBytesMax;
    limits.params_max = static_cast<uint32_t>(sql::kParamsMax);
    return limits;
}

}  // namespace

bool PgFrontend::runs_locally(const sql::Statement& statement) {
    return std::holds_alternative<sql::SetVar>(statement) ||
           std::holds_alternative<sql::Show>(statement);
}

PgFrontend::PgFrontend(PgFrontendOptions options, PgOutput& output, SqlBackend& backend)
    : options_(std::move(options)), output_(output), backend_(backend) {
    RL_ASSERT(options_.auth_method == "md5" || options_.auth_method == "password");
    RL_ASSERT(options_.pipeline_max > 0);
}

size_t PgFrontend::connection_count() const {
    return conns_.size();
}

// --- listener events -------------------------------------------------------------------------

void PgFrontend::on_pg_open(uint64_t id, const std::string& remote) {
    const auto [it, inserted] = conns_.try_emplace(id);
    RL_ASSERT(inserted);
    it->second.remote = remote;
}

void PgFrontend::on_pg_certificate(uint64_t id, const std::string& common_name) {
    if (!options_.certificate_user) {
        return;
    }
    Conn& c = conns_.at(id);
    RL_ASSERT(c.phase == Phase::kStartup);
    c.certificate_user = common_name;
}

void PgFrontend::on_pg_message(uint64_t id, net::PgFrontendMessage&& message) {
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.closing) {
        return;
    }
    Conn& c = it->second;
    if (c.inbox.size() >= options_.pipeline_max * kPipelineOverrunFactor) {
        fatal(c, "54000",
              fmt::format("too many pipelined messages (more than {})", c.inbox.size()));
        flush(id, c);
        return;
    }
    c.inbox.push_back(std::move(message));
    pump(id, c);
}

void PgFrontend::on_pg_close(uint64_t id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) {
        return;
    }
    const uint64_t session = it->second.session;
    conns_.erase(it);
    backend_.sql_closed(id, session);
}

// --- backend answers -------------------------------------------------------------------------

void PgFrontend::on_session_opened(uint64_t id, uint64_t session) {
    auto it = conns_.find(id);
    if (it == conns_.end()) {
        return;
    }
    Conn& c = it->second;
    RL_ASSERT(c.waiting == Waiting::kSession);
    RL_ASSERT(session != 0);
    c.waiting = Waiting::kNothing;
    c.session = session;  // even when closing: sql_closed must name it
    if (c.closing) {
        return;
    }
    c.phase = Phase::kReady;
    c.process_id = sql::backend_pid(session);
    // The cancel key only has to be hard to guess for another client: derived from the secret
    // seed, since the front end draws no randomness itself. It must differ from the pid, which
    // the client shows freely.
    const std::string seed =
        fmt::format("cancel {} {} {} {}", options_.secret_seed, options_.node_id, id, session);
    c.secret_key = first_u32(base::md5(seed));
    if (c.secret_key == static_cast<uint32_t>(c.process_id)) {
        c.secret_key ^= 1;
    }
    net::encode_authentication_ok(c.out);
    report_changes(c);  // every reported setting, as PostgreSQL sends them at startup
    net::encode_backend_key_data(c.process_id, c.secret_key, c.out);
    ready_for_query(c);
    pump(id, c);
}

void PgFrontend::on_session_failed(uint64_t id, const std::string& message) {
    auto it = conns_.find(id);
    if (it == conns_.end()) {
        return;
    }
    Conn& c = it->second;
    RL_ASSERT(c.waiting == Waiting::kSession);
    c.waiting = Waiting::kNothing;
    if (!c.closing) {
        fatal(c, "08006", message);
    }
    pump(id, c);
}

void PgFrontend::on_result(uint64_t id, uint64_t seq, const sql::StatementResult& result) {
    auto it = conns_.find(id);
    if (it == conns_.end()) {
        return;
    }
    Conn& c = it->second;
    if (c.closing) {
        c.waiting = Waiting::kNothing;  // a FATAL error closed it meanwhile: nobody to tell
        return;
    }
    RL_ASSERT(c.waiting == Waiting::kStatement || c.waiting == Waiting::kFailingBlock);
    RL_ASSERT(c.waiting_seq == seq);
    const bool failing_block = c.waiting == Waiting::kFailingBlock;
    c.waiting = Waiting::kNothing;
    c.tx_status = result.tx_status;
    if (failing_block) {
        // Nothing of this result goes to the client: it saw its own error already.
        if (c.ready_after_block_failure) {
            c.ready_after_block_failure = false;
            ready_for_query(c);
        }
        pump(id, c);
        return;
    }
    if (c.query) {
        RL_ASSERT(c.query->next > 0);
        const uint32_t offset = c.query->pieces[c.query->next - 1].offset_chars;
        if (!emit_query_result(c, result, offset)) {
            c.query.reset();  // an error skips the rest of the query
            ready_for_query(c);
        }
    } else {
        executed(c, result);
    }
    pump(id, c);
}

// A syntax error, a bad setting or a bad parameter inside a transaction block fails the block in
// PostgreSQL, so that a later COMMIT rolls back. Only the engine can record that, and it does for
// any statement it rejects: the session sends it one it always rejects (an unknown function;
// kFailBlockStatement), the client having seen its own error already.
void PgFrontend::fail_block(uint64_t id, Conn& c) {
    RL_ASSERT(c.waiting == Waiting::kNothing);
    c.block_failure_pending = false;
    sql::StatementRequest request;
    request.text = std::string(kFailBlockStatement);
    const uint64_t seq = c.next_seq++;
    c.waiting = Waiting::kFailingBlock;
    c.waiting_seq = seq;
    backend_.sql_statement(id, c.session, seq, std::move(request), /*read_only=*/false);
}

void PgFrontend::on_session_ended(uint64_t id) {
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.closing) {
        return;
    }
    Conn& c = it->second;
    fatal(c, "57P01", "terminating connection: its session expired on the cluster");
    pump(id, c);
}

// --- processing ------------------------------------------------------------------------------

// Processes queued messages, one at a time, until one waits for the backend or none is left,
// then sends what they produced. A backend that answers from inside its call re-enters through
// on_result, which only records the answer: this loop carries on.
void PgFrontend::pump(uint64_t id, Conn& c) {
    if (c.pumping) {
        return;
    }
    c.pumping = true;
    while (!c.closing && c.waiting == Waiting::kNothing) {
        if (c.block_failure_pending) {
            fail_block(id, c);
            continue;
        }
        if (c.query) {
            step_query(id, c);
            continue;
        }
        if (c.inbox.empty()) {
            break;
        }
        net::PgFrontendMessage message = std::move(c.inbox.front());
        c.inbox.pop_front();
        handle(id, c, std::move(message));
    }
    c.pumping = false;
    flush(id, c);
}

void PgFrontend::flush(uint64_t id, Conn& c) {
    if (!c.out.empty()) {
        output_.send(id, std::exchange(c.out, {}));
    }
    if (c.closing) {
        if (!c.close_sent) {
            c.close_sent = true;
            output_.close(id);
        }
        return;
    }
    if (!c.paused && c.inbox.size() >= options_.pipeline_max) {
        c.paused = true;
        output_.pause_reading(id, true);
    } else if (c.paused && c.inbox.size() <= options_.pipeline_max / 2) {
        c.paused = false;
        output_.pause_reading(id, false);
    }
}

void PgFrontend::fatal(Conn& c, std::string_view sqlstate, std::string message) {
    net::PgDiagnostic d;
    d.severity = net::PgSeverity::kFatal;
    d.sqlstate = std::string(sqlstate);
    d.message = std::move(message);
    net::encode_error_response(d, c.out);
    c.closing = true;
    c.inbox.clear();
    c.query.reset();
}

void PgFrontend::handle(uint64_t id, Conn& c, net::PgFrontendMessage&& message) {
    switch (c.phase) {
        case Phase::kStartup:
            if (std::holds_alternative<net::PgSslRequest>(message) ||
                std::holds_alternative<net::PgGssEncRequest>(message)) {
                c.out += net::kPgEncryptionRefused;
            } else if (const auto* m = std::get_if<net::PgCancelRequest>(&message)) {
                cancel(*m);
                c.closing = true;  // PostgreSQL never answers a cancel request
            } else if (const auto* m = std::get_if<net::PgStartup>(&message)) {
                startup(id, c, *m);
            } else {
                fatal(c, net::PgProtocolError::kSqlstate, "expected a startup packet");
            }
            return;
        case Phase::kAuthenticating:
            if (c.scram_step > 0) {
                scram_step(id, c, message);
            } else if (const auto* m = std::get_if<net::PgPassword>(&message)) {
                authenticate(id, c, *m);
            } else {
                fatal(c, net::PgProtocolError::kSqlstate,
                      fmt::format("expected password response, got message type {}",
                                  static_cast<int>(kMessageTypes[message.index()])));
            }
            return;
        case Phase::kOpening:
            RL_PANIC("a message processed while the session opens");
        case Phase::kReady:
            handle_ready(id, c, std::move(message));
            return;
    }
}

void PgFrontend::handle_ready(uint64_t id, Conn& c, net::PgFrontendMessage&& message) {
    if (std::holds_alternative<net::PgTerminate>(message)) {
        c.closing = true;
        c.inbox.clear();
        return;
    }
    if (c.skip_until_sync && !std::holds_alternative<net::PgSync>(message)) {
        return;  // the protocol's rule after an error in an extended-query batch
    }
    if (auto* m = std::get_if<net::PgQuery>(&message)) {
        simple_query(c, *m);
    } else if (auto* m = std::get_if<net::PgParse>(&message)) {
        parse(c, std::move(*m));
    } else if (auto* m = std::get_if<net::PgBind>(&message)) {
        bind(c, std::move(*m));
    } else if (auto* m = std::get_if<net::PgDescribe>(&message)) {
        describe(c, *m);
    } else if (auto* m = std::get_if<net::PgExecute>(&message)) {
        execute(id, c, *m);
    } else if (auto* m = std::get_if<net::PgClose>(&message)) {
        close_target(c, *m);
    } else if (std::holds_alternative<net::PgSync>(message)) {
        sync(c);
    } else if (std::holds_alternative<net::PgFlush>(message)) {
        // Nothing to do: everything is sent as soon as it is ready.
    } else if (std::holds_alternative<net::PgPassword>(message) ||
               std::holds_alternative<net::PgSaslMessage>(message)) {
        fatal(c, net::PgProtocolError::kSqlstate,
              "a password message is only valid during authentication");
    } else if (std::holds_alternative<net::PgCopyData>(message) ||
               std::holds_alternative<net::PgCopyDone>(message) ||
               std::holds_alternative<net::PgCopyFail>(message)) {
        extended_error(c, sql::SqlError{"0A000", "COPY is not supported in the SQL mode"});
    } else {
        fatal(c, net::PgProtocolError::kSqlstate, "unexpected startup packet");
    }
}

// --- startup and authentication --------------------------------------------------------------

void PgFrontend::startup(uint64_t id, Conn& c, const net::PgStartup& m) {
    const std::optional<std::string_view> user = m.parameter("user");
    if (!user || user->empty()) {
        fatal(c, "28000", "no PostgreSQL user name specified in startup packet");
        return;
    }
    c.user = std::string(*user);
    for (const auto& [name, value] : m.parameters) {
        const std::string key = sql::ascii_lower(name);
        if (key == "user" || key == "database" || key == "options" || key == "replication") {
            continue;
        }
        if (auto ok = set(c, key, value); !ok) {
            fatal(c, ok.error().sqlstate, ok.error().message);
            return;
        }
    }
    c.startup_settings = c.settings;
    if (c.certificate_user) {
        const bool same = *c.certificate_user == c.user;
        backend_.sql_login_done(same);
        if (!same) {
            fatal(c, "28000",
                  fmt::format("certificate authentication failed for user \"{}\"", c.user));
            return;
        }
        c.logged_in = true;
        open_session(id, c);
        return;
    }
    if (backend_.sql_users_enabled()) {
        // The cluster's users (docs/security.md): SCRAM-SHA-256, as PostgreSQL's own.
        c.phase = Phase::kAuthenticating;
        c.scram_step = 1;
        net::encode_authentication_sasl_scram(c.out);
        return;
    }
    if (options_.password.empty()) {
        open_session(id, c);
        return;
    }
    c.phase = Phase::kAuthenticating;
    if (options_.auth_method == "password") {
        net::encode_authentication_cleartext_password(c.out);
        return;
    }
    // Pure code has no randomness: the salt is derived from what makes it unique in this
    // process (node, connection, a counter), so no two authentications share one.
    const std::string seed = fmt::format("salt {} {} {} {}", options_.secret_seed, options_.node_id,
                                         id, salts_issued_++);
    const uint32_t salt = first_u32(base::md5(seed));
    c.salt = {static_cast<uint8_t>(salt >> 24), static_cast<uint8_t>(salt >> 16),
              static_cast<uint8_t>(salt >> 8), static_cast<uint8_t>(salt)};
    net::encode_authentication_md5_password(c.salt, c.out);
}

void PgFrontend::authenticate(uint64_t id, Conn& c, const net::PgPassword& m) {
    const std::string expected = options_.auth_method == "md5"
                                     ? net::pg_md5_password(options_.password, c.user, c.salt)
                                     : options_.password;
    if (!equal_constant_time(m.password, expected)) {
        fatal(c, "28P01", fmt::format("password authentication failed for user \"{}\"", c.user));
        return;
    }
    open_session(id, c);
}

// The two SASL messages of a SCRAM-SHA-256 login. PostgreSQL ignores the user name inside SCRAM
// (libpq sends none) and takes the startup packet's; so do we.
void PgFrontend::scram_step(uint64_t id, Conn& c, const net::PgFrontendMessage& message) {
    const auto* sasl = std::get_if<net::PgSaslMessage>(&message);
    if (sasl == nullptr) {
        fatal(c, net::PgProtocolError::kSqlstate,
              fmt::format("expected SASL response, got message type {}",
                          static_cast<int>(kMessageTypes[message.index()])));
        return;
    }
    auto failed = [&] {
        backend_.sql_login_done(false);
        fatal(c, "28P01", fmt::format("password authentication failed for user \"{}\"", c.user));
    };
    if (c.scram_step == 1) {
        auto initial = net::parse_sasl_initial_response(sasl->body);
        if (!initial.ok()) {
            fatal(c, net::PgProtocolError::kSqlstate, initial.error());
            return;
        }
        if (initial->mechanism != "SCRAM-SHA-256") {
            fatal(c, "28000", "client selected an invalid SASL authentication mechanism");
            return;
        }
        auto first = base::scram::parse_client_first(initial->data);
        if (!first.ok()) {
            fatal(c, net::PgProtocolError::kSqlstate, first.error().message);
            return;
        }
        // An unknown user gets a decoy exchange that fails as a wrong password does.
        std::optional<base::scram::Verifier> verifier = backend_.sql_verifier(c.user);
        if (!verifier) {
            verifier = base::scram::decoy_verifier(
                c.user, fmt::format("decoy {:016x} {}", options_.secret_seed, options_.node_id));
        }
        c.scram = std::make_unique<base::scram::ServerExchange>(std::move(first).value(), *verifier,
                                                                base::scram::random_nonce());
        c.scram_step = 2;
        net::encode_authentication_sasl_continue(c.scram->server_first(), c.out);
        return;
    }
    RL_ASSERT(c.scram_step == 2 && c.scram != nullptr);
    auto last = c.scram->client_final(sasl->body);
    c.scram.reset();
    c.scram_step = 0;
    if (!last.ok()) {
        failed();
        return;
    }
    backend_.sql_login_done(true);
    c.logged_in = true;
    net::encode_authentication_sasl_final(*last, c.out);
    open_session(id, c);
}

void PgFrontend::open_session(uint64_t id, Conn& c) {
    c.phase = Phase::kOpening;
    c.waiting = Waiting::kSession;  // before the call: the backend may answer from inside it
    backend_.sql_open(id, c.logged_in ? c.user : std::string());
}

void PgFrontend::cancel(const net::PgCancelRequest& m) {
    for (const auto& [id, other] : conns_) {
        if (other.session != 0 && other.process_id == m.process_id &&
            other.secret_key == m.secret_key) {
            backend_.sql_cancel(other.session);
            return;
        }
    }
}

// --- the simple query protocol ---------------------------------------------------------------

Result<std::vector<PgFrontend::Piece>, sql::SqlError> PgFrontend::split(std::string_view query) {
    auto parsed = sql::parse(query, parse_limits());
    if (!parsed.ok()) {
        const sql::SyntaxError& e = parsed.error();
        return sql::SqlError{e.sqlstate, e.message, {}, {}, e.pos};
    }
    std::vector<sql::ParsedStatement>& statements = parsed.value();
    std::vector<Piece> pieces;
    pieces.reserve(statements.size());
    for (size_t i = 0; i < statements.size(); ++i) {
        const uint32_t pos = statements[i].pos;
        const size_t begin = byte_offset(query, pos);
        const size_t end =
            i + 1 < statements.size() ? byte_offset(query, statements[i + 1].pos) : query.size();
        RL_ASSERT(begin < end);
        const std::string_view text = trim_statement_end(query.substr(begin, end - begin));
        RL_ASSERT(!text.empty());
        pieces.push_back(Piece{std::move(statements[i]), std::string(text), pos - 1});
    }
    return pieces;
}

void PgFrontend::simple_query(Conn& c, const net::PgQuery& m) {
    // PostgreSQL drops the unnamed statement and portal when a simple query runs.
    erase_statement(c, "");
    c.portals.erase("");
    auto pieces = split(m.sql);
    if (!pieces.ok()) {
        emit_error(c, pieces.error(), 0);
        ready_for_query(c);
        return;
    }
    if (pieces.value().empty()) {
        net::encode_empty_query_response(c.out);
        ready_for_query(c);
        return;
    }
    // Statement by statement, each in its own transaction unless a BEGIN opened a block:
    // PostgreSQL would wrap the whole query in one implicit transaction (see the header).
    c.query = SimpleQuery{std::move(pieces.value()), 0};
}

// Starts the query's next statement, or ends the query when none is left.
void PgFrontend::step_query(uint64_t id, Conn& c) {
    SimpleQuery& q = *c.query;
    if (q.next == q.pieces.size()) {
        c.query.reset();
        ready_for_query(c);
        return;
    }
    const Piece& piece = q.pieces[q.next++];
    if (runs_locally(piece.parsed.statement)) {
        if (!emit_query_result(c, run_local(c, piece.parsed.statement), piece.offset_chars)) {
            c.query.reset();
            ready_for_query(c);
        }
        return;
    }
    submit(id, c, piece, {});
}

// Sends one statement to the backend. Nothing of `piece` is used after the call, which may
// answer from inside and so end the query that owns it.
void PgFrontend::submit(uint64_t id, Conn& c, const Piece& piece, std::vector<sql::Value> params) {
    sql::StatementRequest request;
    request.text = piece.text;
    request.params = std::move(params);
    request.lock_timeout_ms =
        std::min<statemachine::TimeMs>(c.lock_timeout_ms, sql::kLockWaitMsMax);
    const bool read_only = sql::is_read_only(piece.parsed.statement);
    const uint64_t seq = c.next_seq++;
    c.waiting = Waiting::kStatement;
    c.waiting_seq = seq;
    backend_.sql_statement(id, c.session, seq, std::move(request), read_only);
}

// A simple-query statement's messages; false when it failed.
bool PgFrontend::emit_query_result(Conn& c,
                                   const sql::StatementResult& result,
                                   uint32_t offset_chars) {
    emit_notices(c, result);
    if (result.error) {
        emit_error(c, *result.error, offset_chars);
        return false;
    }
    if (result.returns_rows) {
        const std::vector<net::PgField> f = fields(result.columns, {});
        net::encode_row_description(f, c.out);
        std::vector<std::optional<std::string>> values;
        for (const std::vector<sql::Value>& row : result.rows) {
            values.clear();
            for (const sql::Value& value : row) {
                values.push_back(sql::to_text(value));
            }
            net::encode_data_row(values, c.out);
        }
    }
    net::encode_command_complete(result.tag, c.out);
    return true;
}

void PgFrontend::ready_for_query(Conn& c) {
    if (c.block_failure_pending) {
        // The status is 'E' only once the block has failed in the replicated state.
        c.ready_after_block_failure = true;
        return;
    }
    report_changes(c);  // PostgreSQL reports changed settings just before ReadyForQuery
    net::encode_ready_for_query(wire_status(c.tx_status), c.out);
}

// --- results ---------------------------------------------------------------------------------

void PgFrontend::emit_error(Conn& c, const sql::SqlError& error, uint32_t offset_chars) {
    // An engine's error arrives with the block already failed (its status is kFailed); only an
    // error found here leaves the block "in progress" where PostgreSQL would have failed it.
    if (c.tx_status == sql::TxStatus::kInBlock) {
        c.block_failure_pending = true;
    }
    net::PgDiagnostic d;
    d.severity = net::PgSeverity::kError;
    d.sqlstate = error.sqlstate;
    d.message = error.message;
    d.detail = error.detail;
    d.hint = error.hint;
    d.position = error.pos == 0 ? 0 : error.pos + offset_chars;
    net::encode_error_response(d, c.out);
}

void PgFrontend::emit_notices(Conn& c, const sql::StatementResult& result) {
    for (const sql::Notice& notice : result.notices) {
        net::PgDiagnostic d;
        d.severity =
            notice.severity == "WARNING" ? net::PgSeverity::kWarning : net::PgSeverity::kNotice;
        d.sqlstate = notice.sqlstate;
        d.message = notice.message;
        net::encode_notice_response(d, c.out);
    }
}

uint32_t PgFrontend::oid_of(sql::Type type) {
    switch (type) {
        case sql::Type::kBool:
            return net::kPgOidBool;
        case sql::Type::kInt4:
            return net::kPgOidInt4;
        case sql::Type::kInt8:
            return net::kPgOidInt8;
        case sql::Type::kTimestamptz:
            return net::kPgOidTimestamptz;
        case sql::Type::kText:
        case sql::Type::kUnknown:  // an untyped literal is shown as text, as PostgreSQL does
            return net::kPgOidText;
    }
    RL_PANIC("unknown SQL type");
}

net::PgFormat PgFrontend::format_at(const std::vector<net::PgFormat>& formats, size_t i) {
    if (formats.empty()) {
        return net::PgFormat::kText;
    }
    if (formats.size() == 1) {
        return formats[0];
    }
    RL_ASSERT(i < formats.size());
    return formats[i];
}

std::vector<net::PgField> PgFrontend::fields(const std::vector<sql::ResultColumn>& columns,
                                             const std::vector<net::PgFormat>& formats) {
    std::vector<net::PgField> out;
    out.reserve(columns.size());
    for (size_t i = 0; i < columns.size(); ++i) {
        out.push_back(
            net::pg_field(columns[i].name, oid_of(columns[i].type), format_at(formats, i)));
    }
    return out;
}

}  // namespace raftlock::server
