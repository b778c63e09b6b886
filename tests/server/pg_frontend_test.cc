// The PostgreSQL front end's protocol logic: startup and authentication, the simple and the
// extended query protocols, settings, cancel routing, ordering under pipelining and the
// connection's end. The backend here only records calls and lets the test answer them; what the
// front end sends is decoded back into a compact list of messages, e.g. `R0 S(a=b) K(42) Z(I)`,
// so tests compare exact message sequences.

#include "server/pg_frontend.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "tests/net/net_test_util.h"

namespace raftlock::server {
namespace {

using sql::Type;
using sql::Value;

constexpr uint64_t kConn = net::kPgConnectionBit | 1;
constexpr uint64_t kOther = net::kPgConnectionBit | 2;
constexpr uint64_t kSession = 42;

// --- the fakes ---------------------------------------------------------------------------------

struct Output final : PgOutput {
    void send(uint64_t id, std::string bytes) override { sent[id] += bytes; }
    void close(uint64_t id) override { closed.insert(id); }
    void pause_reading(uint64_t id, bool p) override { paused[id] = p; }
    std::map<uint64_t, std::string> sent;
    std::set<uint64_t> closed;
    std::map<uint64_t, bool> paused;
};

struct Backend final : SqlBackend {
    struct Statement {
        uint64_t id = 0;
        uint64_t session = 0;
        uint64_t seq = 0;
        sql::StatementRequest request;
        bool read_only = false;
    };
    void sql_open(uint64_t id, const std::string& user) override {
        opens.push_back(id);
        open_users.push_back(user);
    }
    void sql_statement(uint64_t id,
                       uint64_t session,
                       uint64_t seq,
                       sql::StatementRequest&& request,
                       bool read_only) override {
        statements.push_back(Statement{id, session, seq, std::move(request), read_only});
    }
    Result<sql::Description, sql::SqlError> sql_describe(
        std::string_view statement) const override {
        described.emplace_back(statement);
        if (auto it = describe_errors.find(std::string(statement)); it != describe_errors.end()) {
            return it->second;
        }
        if (auto it = descriptions.find(std::string(statement)); it != descriptions.end()) {
            return it->second;
        }
        return sql::Description{};
    }
    void sql_cancel(uint64_t session) override { cancels.push_back(session); }
    void sql_closed(uint64_t id, uint64_t session) override { closes.emplace_back(id, session); }
    bool sql_users_enabled() const override { return !verifiers.empty(); }
    std::optional<base::scram::Verifier> sql_verifier(const std::string& user) const override {
        auto it = verifiers.find(user);
        return it == verifiers.end() ? std::nullopt : std::optional(it->second);
    }
    void sql_login_done(bool succeeded) override { logins.push_back(succeeded); }

    std::map<std::string, base::scram::Verifier> verifiers;  // not empty: users are enabled
    std::vector<bool> logins;
    std::vector<uint64_t> opens;
    std::vector<std::string> open_users;  // the user each sql_open named ("": none)
    std::vector<Statement> statements;
    std::map<std::string, sql::Description> descriptions;
    std::map<std::string, sql::SqlError> describe_errors;
    mutable std::vector<std::string> described;
    std::vector<uint64_t> cancels;
    std::vector<std::pair<uint64_t, uint64_t>> closes;
};

// --- a decoder of what the server sends ----------------------------------------------------------

struct Msg {
    char type = 0;
    std::vector<std::optional<std::string>> fields;
};

struct Body {
    std::string_view bytes;
    size_t at = 0;

    uint32_t u32() {
        REQUIRE(at + 4 <= bytes.size());
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            v = (v << 8) | static_cast<uint8_t>(bytes[at++]);
        }
        return v;
    }
    int16_t i16() {
        REQUIRE(at + 2 <= bytes.size());
        const auto hi = static_cast<uint8_t>(bytes[at]);
        const auto lo = static_cast<uint8_t>(bytes[at + 1]);
        at += 2;
        return static_cast<int16_t>((hi << 8) | lo);
    }
    std::string cstring() {
        const size_t end = bytes.find('\0', at);
        REQUIRE(end != std::string_view::npos);
        std::string s(bytes.substr(at, end - at));
        at = end + 1;
        return s;
    }
    std::string raw(size_t n) {
        REQUIRE(at + n <= bytes.size());
        std::string s(bytes.substr(at, n));
        at += n;
        return s;
    }
};

Msg decode_one(char type, std::string_view bytes) {
    Body b{bytes};
    Msg m{type, {}};
    switch (type) {
        case 'R': {
            const uint32_t code = b.u32();
            m.fields.push_back(std::to_string(code));
            if (code == 5) {
                m.fields.push_back(b.raw(4));  // the salt
            } else if (code == 10 || code == 11 || code == 12) {
                m.fields.push_back(b.raw(b.bytes.size() - b.at));  // SASL mechanisms or data
            }
            break;
        }
        case 'S':
            m.fields.push_back(b.cstring());
            m.fields.push_back(b.cstring());
            break;
        case 'K':
            m.fields.push_back(std::to_string(static_cast<int32_t>(b.u32())));
            m.fields.push_back(std::to_string(b.u32()));
            break;
        case 'Z':
            m.fields.push_back(b.raw(1));
            break;
        case 'C':
            m.fields.push_back(b.cstring());
            break;
        case 'T':
            for (int16_t n = b.i16(); n > 0; --n) {
                const std::string name = b.cstring();
                b.u32();  // table
                b.i16();  // attnum
                const uint32_t oid = b.u32();
                b.i16();  // size
                b.u32();  // modifier
                const int16_t format = b.i16();
                m.fields.push_back(fmt::format("{}:{}{}", name, oid, format == 1 ? "/b" : ""));
            }
            break;
        case 'D':
            for (int16_t n = b.i16(); n > 0; --n) {
                const auto len = static_cast<int32_t>(b.u32());
                m.fields.push_back(len < 0 ? std::nullopt
                                           : std::optional(b.raw(static_cast<size_t>(len))));
            }
            break;
        case 't':
            for (int16_t n = b.i16(); n > 0; --n) {
                m.fields.push_back(std::to_string(b.u32()));
            }
            break;
        case 'E':
        case 'N':
            while (b.at < bytes.size() && bytes[b.at] != '\0') {
                const char code = bytes[b.at++];
                m.fields.push_back(std::string(1, code) + b.cstring());
            }
            b.at += 1;
            break;
        default:
            break;  // '1', '2', '3', 'n', 's', 'I': no body
    }
    REQUIRE(b.at == bytes.size());
    return m;
}

std::vector<Msg> decode(std::string_view bytes) {
    std::vector<Msg> out;
    size_t at = 0;
    while (at < bytes.size()) {
        REQUIRE(bytes.size() - at >= 5);
        Body header{bytes, at + 1};
        const uint32_t len = header.u32();
        REQUIRE(len >= 4);
        REQUIRE(at + 1 + len <= bytes.size());
        out.push_back(decode_one(bytes[at], bytes.substr(at + 5, len - 4)));
        at += 1 + len;
    }
    return out;
}

std::string printable(const std::string& s) {
    for (char ch : s) {
        if (ch < ' ' || ch > '~') {
            std::string hex = "\\x";
            for (char b : s) {
                hex += fmt::format("{:02x}", static_cast<uint8_t>(b));
            }
            return hex;
        }
    }
    return s;
}

// The diagnostic field with this code, or "".
std::string field(const Msg& m, char code) {
    for (const auto& f : m.fields) {
        if (f && !f->empty() && (*f)[0] == code) {
            return f->substr(1);
        }
    }
    return "";
}

std::string show_one(const Msg& m) {
    const auto joined = [&](std::string_view sep) {
        std::string s;
        for (size_t i = 0; i < m.fields.size(); ++i) {
            s += (i == 0 ? "" : std::string(sep)) +
                 (m.fields[i] ? printable(*m.fields[i]) : std::string("NULL"));
        }
        return s;
    };
    switch (m.type) {
        case 'R':
            return "R" + *m.fields[0];
        case 'S':
            return fmt::format("S({}={})", *m.fields[0], *m.fields[1]);
        case 'K':
            return fmt::format("K({})", *m.fields[0]);
        case 'Z':
        case 'C':
        case 'T':
        case 'D':
        case 't':
            return fmt::format("{}({})", m.type, joined(","));
        case 'E':
        case 'N': {
            std::string s =
                fmt::format("{}({} {} {}", m.type, field(m, 'V'), field(m, 'C'), field(m, 'M'));
            if (const std::string p = field(m, 'P'); !p.empty()) {
                s += " P=" + p;
            }
            return s + ")";
        }
        default:
            return std::string(1, m.type);
    }
}

std::string show(const std::vector<Msg>& messages) {
    std::string s;
    for (const Msg& m : messages) {
        s += (s.empty() ? "" : " ") + show_one(m);
    }
    return s;
}

// --- messages and results ------------------------------------------------------------------------

net::PgStartup startup(std::string user,
                       std::vector<std::pair<std::string, std::string>> extra = {}) {
    net::PgStartup m;
    m.parameters.emplace_back("user", std::move(user));
    m.parameters.emplace_back("database", "raftlock");
    for (auto& p : extra) {
        m.parameters.push_back(std::move(p));
    }
    return m;
}

net::PgQuery query(std::string sql) {
    return net::PgQuery{std::move(sql)};
}

net::PgParse parse_msg(std::string name, std::string sql, std::vector<uint32_t> oids = {}) {
    return net::PgParse{std::move(name), std::move(sql), std::move(oids)};
}

net::PgBind bind_msg(std::string portal,
                     std::string statement,
                     std::vector<std::optional<std::string>> params = {},
                     std::vector<net::PgFormat> param_formats = {},
                     std::vector<net::PgFormat> result_formats = {}) {
    return net::PgBind{std::move(portal), std::move(statement), std::move(param_formats),
                       std::move(params), std::move(result_formats)};
}

net::PgDescribe describe_portal(std::string name = "") {
    return net::PgDescribe{net::PgTarget::kPortal, std::move(name)};
}

net::PgDescribe describe_statement(std::string name = "") {
    return net::PgDescribe{net::PgTarget::kStatement, std::move(name)};
}

net::PgExecute execute_msg(std::string portal = "", int32_t max_rows = 0) {
    return net::PgExecute{std::move(portal), max_rows};
}

sql::StatementResult rows(std::vector<sql::ResultColumn> columns,
                          std::vector<std::vector<Value>> data,
                          std::string tag) {
    sql::StatementResult r;
    r.returns_rows = true;
    r.columns = std::move(columns);
    r.rows = std::move(data);
    r.tag = std::move(tag);
    return r;
}

sql::StatementResult done(std::string tag, sql::TxStatus tx = sql::TxStatus::kIdle) {
    sql::StatementResult r;
    r.tag = std::move(tag);
    r.tx_status = tx;
    return r;
}

sql::StatementResult failed(sql::SqlError error, sql::TxStatus tx = sql::TxStatus::kIdle) {
    sql::StatementResult r;
    r.error = std::move(error);
    r.tx_status = tx;
    return r;
}

struct Fixture {
    explicit Fixture(PgFrontendOptions options = {})
        : frontend(std::move(options), output, backend) {}

    void open(uint64_t id = kConn) { frontend.on_pg_open(id, "127.0.0.1:5000"); }
    void send(net::PgFrontendMessage m, uint64_t id = kConn) {
        frontend.on_pg_message(id, std::move(m));
    }
    std::vector<Msg> messages(uint64_t id = kConn) {
        return decode(std::exchange(output.sent[id], {}));
    }
    std::string take(uint64_t id = kConn) { return show(messages(id)); }
    // A connection past startup (trust), with its session open and its greeting taken.
    void ready(uint64_t id = kConn, uint64_t session = kSession) {
        open(id);
        send(startup("alice", {{"application_name", "psql"}}), id);
        frontend.on_session_opened(id, session);
        take(id);
    }
    const Backend::Statement& last() const {
        REQUIRE(!backend.statements.empty());
        return backend.statements.back();
    }
    void answer(const sql::StatementResult& result) {
        frontend.on_result(last().id, last().seq, result);
    }

    Output output;
    Backend backend;
    PgFrontend frontend;
};

const std::string kGreeting =
    "R0 S(server_version=15.0) S(server_encoding=UTF8) S(client_encoding=UTF8) "
    "S(DateStyle=ISO, MDY) S(TimeZone=UTC) S(integer_datetimes=on) "
    "S(standard_conforming_strings=on) S(application_name=psql) S(is_superuser=off) "
    "S(session_authorization=alice) K(42) Z(I)";

// --- startup and authentication ------------------------------------------------------------------

TEST_CASE("a trusted startup opens a session and then greets the client", "[pg][startup]") {
    Fixture f;
    f.open();
    f.send(startup("alice", {{"application_name", "psql"}}));
    CHECK(f.take().empty());  // nothing until the session exists
    REQUIRE(f.backend.opens == std::vector<uint64_t>{kConn});
    f.frontend.on_session_opened(kConn, kSession);
    const std::vector<Msg> greeting = f.messages();
    CHECK(show(greeting) == kGreeting);
    // The cancel key is not the process id, which clients show freely.
    CHECK(*greeting.at(11).fields.at(0) == std::to_string(sql::backend_pid(kSession)));
    CHECK(*greeting.at(11).fields.at(1) != *greeting.at(11).fields.at(0));
    CHECK(f.output.closed.empty());
}

TEST_CASE("an SSLRequest or a GSSENCRequest is refused with one byte, then startup goes on",
          "[pg][startup]") {
    Fixture f;
    f.open();
    f.send(net::PgSslRequest{});
    CHECK(f.output.sent[kConn] == "N");
    f.output.sent[kConn].clear();
    f.send(net::PgGssEncRequest{});
    CHECK(f.output.sent[kConn] == "N");
    f.output.sent[kConn].clear();
    f.send(startup("alice", {{"application_name", "psql"}}));
    f.frontend.on_session_opened(kConn, kSession);
    CHECK(f.take() == kGreeting);
}

// A SASLInitialResponse's body: mechanism, length, data.
std::string sasl_initial(std::string_view mechanism, std::string_view data) {
    std::string body(mechanism);
    body.push_back('\0');
    const auto n = static_cast<uint32_t>(data.size());
    for (int shift : {24, 16, 8, 0}) {
        body.push_back(static_cast<char>((n >> shift) & 0xff));
    }
    body.append(data);
    return body;
}

TEST_CASE("with cluster users, SCRAM-SHA-256 logs in as the startup packet's user",
          "[pg][startup][auth]") {
    for (const bool right : {true, false}) {
        INFO((right ? "the right password" : "a wrong one"));
        Fixture f;
        f.backend.verifiers["alice"] =
            base::scram::make_verifier("secret", "salt-of-alice", base::scram::kIterationsMin);
        f.open();
        f.send(startup("alice"));
        std::vector<Msg> offer = f.messages();
        REQUIRE(show(offer) == "R10");
        CHECK(*offer[0].fields.at(1) == std::string("SCRAM-SHA-256\0\0", 15));
        // libpq's way: no user name inside SCRAM (the startup packet's counts).
        base::scram::ClientExchange client("", right ? "secret" : "guess", "fixednonce");
        f.send(net::PgSaslMessage{sasl_initial("SCRAM-SHA-256", client.client_first())});
        std::vector<Msg> challenge = f.messages();
        REQUIRE(show(challenge) == "R11");
        auto final_message = client.server_first(*challenge[0].fields.at(1));
        REQUIRE(final_message.ok());
        f.send(net::PgSaslMessage{*final_message});
        if (!right) {
            CHECK_THAT(f.take(), Catch::Contains("28P01") &&
                                     Catch::Contains("password authentication failed"));
            CHECK(f.backend.opens.empty());
            CHECK(f.backend.logins == std::vector<bool>{false});
            continue;
        }
        std::vector<Msg> done = f.messages();
        REQUIRE(show(done) == "R12");
        CHECK(client.server_final(*done[0].fields.at(1)).ok());  // the node knew the verifier
        CHECK(f.backend.opens == std::vector<uint64_t>{kConn});
        CHECK(f.backend.logins == std::vector<bool>{true});
    }
}

TEST_CASE("with certificate users, the certificate's name is the only user, with no password",
          "[pg][startup][auth]") {
    PgFrontendOptions options;
    options.certificate_user = true;
    Fixture f(options);
    f.backend.verifiers["alice"] =
        base::scram::make_verifier("secret", "salt-of-alice", base::scram::kIterationsMin);
    f.open();
    f.frontend.on_pg_certificate(kConn, "alice");
    f.send(startup("alice"));
    CHECK(f.take().empty());  // no password asked: the session opens
    CHECK(f.backend.opens == std::vector<uint64_t>{kConn});
    CHECK(f.backend.open_users == std::vector<std::string>{"alice"});
    CHECK(f.backend.logins == std::vector<bool>{true});
    // Another user with alice's certificate: refused, as PostgreSQL's `cert` method does.
    f.open(kOther);
    f.frontend.on_pg_certificate(kOther, "alice");
    f.send(startup("root"), kOther);
    CHECK_THAT(f.take(kOther), Catch::Contains("28000") &&
                                   Catch::Contains("certificate authentication failed for user "
                                                   "\"root\""));
    CHECK(f.backend.opens.size() == 1);
    CHECK(f.backend.logins == std::vector<bool>{true, false});
    // Without the option the certificate is ignored: SCRAM as before.
    Fixture plain;
    plain.backend.verifiers["alice"] = f.backend.verifiers["alice"];
    plain.open();
    plain.frontend.on_pg_certificate(kConn, "alice");
    plain.send(startup("alice"));
    CHECK(plain.take() == "R10");
    CHECK(plain.backend.opens.empty());
}

TEST_CASE("with cluster users, a password message or another mechanism is refused",
          "[pg][startup][auth]") {
    Fixture f;
    f.backend.verifiers["alice"] =
        base::scram::make_verifier("secret", "salt-of-alice", base::scram::kIterationsMin);
    f.open();
    f.send(startup("alice"));
    f.take();
    f.send(net::PgPassword{"secret"});  // a cleartext answer to a SASL request
    CHECK_THAT(f.take(), Catch::Contains("expected SASL response"));
    CHECK(f.backend.opens.empty());
    f.open(kOther);
    f.send(startup("alice"), kOther);
    f.take(kOther);
    f.send(net::PgSaslMessage{sasl_initial("SCRAM-SHA-256-PLUS", "n,,n=,r=x")}, kOther);
    CHECK_THAT(f.take(kOther), Catch::Contains("invalid SASL authentication mechanism"));
}

TEST_CASE("md5 authentication accepts the right answer to its salt", "[pg][startup][auth]") {
    PgFrontendOptions options;
    options.password = "secret";
    Fixture f(options);
    f.open();
    f.send(startup("alice"));
    const std::vector<Msg> request = f.messages();
    REQUIRE(show(request) == "R5");
    const std::string& salt_bytes = *request[0].fields.at(1);
    const std::array<uint8_t, 4> salt{
        static_cast<uint8_t>(salt_bytes[0]), static_cast<uint8_t>(salt_bytes[1]),
        static_cast<uint8_t>(salt_bytes[2]), static_cast<uint8_t>(salt_bytes[3])};
    CHECK(f.backend.opens.empty());
    f.send(net::PgPassword{net::pg_md5_password("secret", "alice", salt)});
    CHECK(f.backend.opens == std::vector<uint64_t>{kConn});
    f.frontend.on_session_opened(kConn, kSession);
    CHECK(f.take().starts_with("R0 S(server_version=15.0)"));
}

TEST_CASE("md5 salts differ between connections", "[pg][startup][auth]") {
    PgFrontendOptions options;
    options.password = "secret";
    Fixture f(options);
    f.open(kConn);
    f.open(kOther);
    f.send(startup("alice"), kConn);
    f.send(startup("alice"), kOther);
    const std::vector<Msg> a = f.messages(kConn);
    const std::vector<Msg> b = f.messages(kOther);
    REQUIRE(a.size() == 1);
    REQUIRE(b.size() == 1);
    CHECK(*a[0].fields.at(1) != *b[0].fields.at(1));
}

TEST_CASE("a wrong password ends the connection with 28P01", "[pg][startup][auth]") {
    struct Case {
        std::string method;
        std::string answer;
        std::string request;
    };
    const std::vector<Case> cases = {
        {"md5", "md500000000000000000000000000000000", "R5"},
        {"md5", "secret", "R5"},  // cleartext where md5 is expected
        {"password", "Secret", "R3"},
        {"password", "", "R3"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.method, c.answer);
        PgFrontendOptions options;
        options.password = "secret";
        options.auth_method = c.method;
        Fixture f(options);
        f.open();
        f.send(startup("alice"));
        CHECK(f.take() == c.request);
        f.send(net::PgPassword{c.answer});
        CHECK(f.take() == "E(FATAL 28P01 password authentication failed for user \"alice\")");
        CHECK(f.output.closed.contains(kConn));
        CHECK(f.backend.opens.empty());
    }
}

TEST_CASE("cleartext authentication accepts the configured password", "[pg][startup][auth]") {
    PgFrontendOptions options;
    options.password = "secret";
    options.auth_method = "password";
    Fixture f(options);
    f.open();
    f.send(startup("alice"));
    CHECK(f.take() == "R3");
    f.send(net::PgPassword{"secret"});
    CHECK(f.backend.opens == std::vector<uint64_t>{kConn});
}

TEST_CASE("anything but a password during authentication is a protocol violation",
          "[pg][startup][auth]") {
    PgFrontendOptions options;
    options.password = "secret";
    Fixture f(options);
    f.open();
    f.send(startup("alice"));
    f.take();
    f.send(query("select 1"));
    CHECK(f.take() == "E(FATAL 08P01 expected password response, got message type 81)");
    CHECK(f.output.closed.contains(kConn));
}

TEST_CASE("a startup packet without a user is refused with 28000", "[pg][startup]") {
    Fixture f;
    f.open();
    net::PgStartup m;
    m.parameters.emplace_back("database", "x");
    f.send(m);
    CHECK(f.take() == "E(FATAL 28000 no PostgreSQL user name specified in startup packet)");
    CHECK(f.output.closed.contains(kConn));
    CHECK(f.backend.opens.empty());
}

TEST_CASE("startup parameters are settings, and a refused one ends the connection",
          "[pg][startup][settings]") {
    Fixture f;
    f.open();
    f.send(
        startup("alice",
                {{"DateStyle", "ISO"}, {"client_encoding", "utf-8"}, {"extra_float_digits", "2"}}));
    f.frontend.on_session_opened(kConn, kSession);
    CHECK(f.take() ==
          "R0 S(server_version=15.0) S(server_encoding=UTF8) S(client_encoding=UTF8) "
          "S(DateStyle=ISO, MDY) S(TimeZone=UTC) S(integer_datetimes=on) "
          "S(standard_conforming_strings=on) S(application_name=) S(is_superuser=off) "
          "S(session_authorization=alice) K(42) Z(I)");
    f.send(query("show extra_float_digits"));
    CHECK(f.take() == "T(extra_float_digits:25) D(2) C(SHOW) Z(I)");

    f.open(kOther);
    f.send(startup("bob", {{"TimeZone", "Europe/Paris"}}), kOther);
    CHECK(f.take(kOther) ==
          "E(FATAL 22023 invalid value for parameter \"TimeZone\": \"Europe/Paris\")");
    CHECK(f.output.closed.contains(kOther));
    CHECK(f.backend.opens == std::vector<uint64_t>{kConn});
}

TEST_CASE("a session the backend cannot open ends the connection with 08006", "[pg][startup]") {
    Fixture f;
    f.open();
    f.send(startup("alice"));
    f.send(query("select 1"));  // pipelined behind the startup: dropped with the connection
    f.frontend.on_session_failed(kConn, "no leader: the cluster has no quorum");
    CHECK(f.take() == "E(FATAL 08006 no leader: the cluster has no quorum)");
    CHECK(f.output.closed.contains(kConn));
    CHECK(f.backend.statements.empty());
}

// --- the simple query protocol -------------------------------------------------------------------

TEST_CASE("a simple query returns its rows in text format", "[pg][simple]") {
    Fixture f;
    f.ready();
    f.send(query("SELECT id, name, ok, at FROM t;"));
    REQUIRE(f.backend.statements.size() == 1);
    const Backend::Statement& s = f.last();
    CHECK(s.id == kConn);
    CHECK(s.session == kSession);
    CHECK(s.seq == 1);
    CHECK(s.request.text == "SELECT id, name, ok, at FROM t");
    CHECK(s.request.params.empty());
    CHECK(s.request.lock_timeout_ms == 0);
    CHECK(s.read_only);
    CHECK(f.take().empty());  // nothing until the result
    f.answer(rows(
        {{"id", Type::kInt8},
         {"name", Type::kText},
         {"ok", Type::kBool},
         {"at", Type::kTimestamptz}},
        {{Value::of_int8(1), Value::of_text("a"), Value::of_bool(true), Value::of_timestamptz(0)},
         {Value::of_int8(2), Value::null(Type::kText), Value::of_bool(false),
          Value::null(Type::kTimestamptz)}},
        "SELECT 2"));
    CHECK(f.take() ==
          "T(id:20,name:25,ok:16,at:1184) D(1,a,t,1970-01-01 00:00:00+00) D(2,NULL,f,NULL) "
          "C(SELECT 2) Z(I)");
}

TEST_CASE("statements that lock are not marked read-only", "[pg][simple]") {
    struct Case {
        std::string sql;
        bool read_only;
    };
    const std::vector<Case> cases = {
        {"select 1", true},
        {"select pg_advisory_lock(1)", false},
        {"select * from t for update", false},
        {"insert into t values (1)", false},
        {"begin", false},
    };
    for (const Case& c : cases) {
        CAPTURE(c.sql);
        Fixture f;
        f.ready();
        f.send(query(c.sql));
        REQUIRE(f.backend.statements.size() == 1);
        CHECK(f.last().read_only == c.read_only);
    }
}

TEST_CASE("an error skips the rest of a simple query, at the position in the whole query",
          "[pg][simple]") {
    Fixture f;
    f.ready();
    f.send(query("insert into t values (1); select * from nope; select 1"));
    REQUIRE(f.backend.statements.size() == 1);
    CHECK(f.last().request.text == "insert into t values (1)");
    f.answer(done("INSERT 0 1"));
    REQUIRE(f.backend.statements.size() == 2);
    CHECK(f.last().request.text == "select * from nope");
    CHECK(f.last().seq == 2);
    f.answer(failed({"42P01", "relation \"nope\" does not exist", {}, {}, 15}));
    CHECK(f.backend.statements.size() == 2);  // the third never runs
    CHECK(f.take() == "C(INSERT 0 1) E(ERROR 42P01 relation \"nope\" does not exist P=41) Z(I)");
}

TEST_CASE("statement positions count characters, not bytes", "[pg][simple]") {
    Fixture f;
    f.ready();
    f.send(query("select 'été';\n  select nope"));
    f.answer(rows({{"?column?", Type::kText}}, {{Value::of_text("été")}}, "SELECT 1"));
    REQUIRE(f.backend.statements.size() == 2);
    CHECK(f.last().request.text == "select nope");
    f.answer(failed({"42703", "column \"nope\" does not exist", {}, {}, 8}));
    CHECK(f.take() ==
          "T(?column?:25) D(\\xc3a974c3a9) C(SELECT 1) "
          "E(ERROR 42703 column \"nope\" does not exist P=24) Z(I)");
}

TEST_CASE("a syntax error is answered without the backend", "[pg][simple]") {
    Fixture f;
    f.ready();
    f.send(query("select 1; selec 2"));
    CHECK(f.backend.statements.empty());  // the whole query is parsed before any of it runs
    CHECK(f.take() == "E(ERROR 42601 syntax error at or near \"selec\" P=11) Z(I)");
}

TEST_CASE("an empty query gets EmptyQueryResponse", "[pg][simple]") {
    for (const std::string sql : {"", "   ", ";", " ; ;", "-- nothing\n", "/* c */"}) {
        CAPTURE(sql);
        Fixture f;
        f.ready();
        f.send(query(sql));
        CHECK(f.take() == "I Z(I)");
        CHECK(f.backend.statements.empty());
    }
}

TEST_CASE("notices come before the result and ReadyForQuery shows the transaction",
          "[pg][simple]") {
    Fixture f;
    f.ready();
    f.send(query("begin; select pg_advisory_unlock(1); select x; rollback"));
    f.answer(done("BEGIN", sql::TxStatus::kInBlock));
    sql::StatementResult unlock =
        rows({{"pg_advisory_unlock", Type::kBool}}, {{Value::of_bool(false)}}, "SELECT 1");
    unlock.notices.push_back({"WARNING", "01000", "you don't own a lock of type ExclusiveLock"});
    unlock.tx_status = sql::TxStatus::kInBlock;
    f.answer(unlock);
    f.answer(failed({"42703", "column \"x\" does not exist"}, sql::TxStatus::kFailed));
    CHECK(f.backend.statements.size() == 3);
    CHECK(f.take() ==
          "C(BEGIN) N(WARNING 01000 you don't own a lock of type ExclusiveLock) "
          "T(pg_advisory_unlock:16) D(f) C(SELECT 1) "
          "E(ERROR 42703 column \"x\" does not exist) Z(E)");
    f.send(query("show lock_timeout"));  // in a failed block, as PostgreSQL
    CHECK(f.take() ==
          "E(ERROR 25P02 current transaction is aborted, commands ignored until end "
          "of transaction block) Z(E)");
    f.send(query("rollback"));
    f.answer(done("ROLLBACK"));
    CHECK(f.take() == "C(ROLLBACK) Z(I)");
}

TEST_CASE("an error found by the front end inside a block fails the block on the cluster too",
          "[pg][simple][extended]") {
    // PostgreSQL fails a transaction block on any error, a syntax error or a bad setting
    // included, so a later COMMIT rolls back. The front end has the engine record it: it sends
    // the statement the engine always rejects, and ReadyForQuery waits for its answer.
    Fixture f;
    f.ready();
    f.send(query("begin"));
    f.answer(done("BEGIN", sql::TxStatus::kInBlock));
    CHECK(f.take() == "C(BEGIN) Z(T)");
    f.send(query("selec 1"));
    CHECK(f.take() == "E(ERROR 42601 syntax error at or near \"selec\" P=1)");
    REQUIRE(f.backend.statements.size() == 2);
    CHECK(f.backend.statements.back().request.text == kFailBlockStatement);
    f.answer(failed({"42883", "function raftlock_fail_transaction_block() does not exist"},
                    sql::TxStatus::kFailed));
    CHECK(f.take() == "Z(E)");
    f.send(query("rollback"));
    f.answer(done("ROLLBACK"));
    CHECK(f.take() == "C(ROLLBACK) Z(I)");
    // The same for an error of the extended protocol, and for a refused setting.
    f.send(query("begin"));
    f.answer(done("BEGIN", sql::TxStatus::kInBlock));
    f.take();
    f.send(parse_msg("", "selec 1"));
    f.send(net::PgSync{});
    CHECK(f.take() == "E(ERROR 42601 syntax error at or near \"selec\" P=1)");
    CHECK(f.backend.statements.back().request.text == kFailBlockStatement);
    f.answer(failed({"42883", "no such function"}, sql::TxStatus::kFailed));
    CHECK(f.take() == "Z(E)");
    f.send(query("rollback"));
    f.answer(done("ROLLBACK"));
    f.take();
    f.send(query("begin"));
    f.answer(done("BEGIN", sql::TxStatus::kInBlock));
    f.take();
    f.send(query("set lock_timeout = 'abc'"));
    CHECK(f.backend.statements.back().request.text == kFailBlockStatement);
    f.answer(failed({"42883", "no such function"}, sql::TxStatus::kFailed));
    CHECK(f.take().ends_with("Z(E)"));
}

// --- settings ------------------------------------------------------------------------------------

TEST_CASE("SET lock_timeout is carried by every later statement", "[pg][settings]") {
    struct Case {
        std::string value;
        int64_t lock_timeout_ms;
        std::string shown;
    };
    const std::vector<Case> cases = {
        {"'5s'", 5000, "5s"},
        {"'500ms'", 500, "500ms"},
        {"'1min'", 60000, "1min"},
        {"'0'", 0, "0"},
        {"250", 250, "250ms"},
        {"'1.5s'", 1500, "1500ms"},
        {"' 2 h '", 7'200'000, "2h"},
        {"'3000us'", 3, "3ms"},
        {"'48h'", sql::kLockWaitMsMax, "2d"},  // capped in the request, shown as set
        {"default", 0, "0"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.value);
        Fixture f;
        f.ready();
        f.send(query("set lock_timeout = " + c.value + "; select pg_advisory_lock(1)"));
        REQUIRE(f.backend.statements.size() == 1);
        CHECK(f.last().request.lock_timeout_ms == c.lock_timeout_ms);
        f.answer(rows({{"pg_advisory_lock", Type::kText}}, {{Value::of_text("")}}, "SELECT 1"));
        CHECK(f.take() == "C(" + std::string(c.value == "default" ? "RESET" : "SET") +
                              ") T(pg_advisory_lock:25) D() C(SELECT 1) Z(I)");
        f.send(query("show lock_timeout"));
        CHECK(f.take() == "T(lock_timeout:25) D(" + c.shown + ") C(SHOW) Z(I)");
    }
}

TEST_CASE("SET refuses values the SQL mode cannot honour", "[pg][settings]") {
    struct Case {
        std::string sql;
        std::string error;
    };
    const std::vector<Case> cases = {
        {"set lock_timeout = 'abc'",
         "E(ERROR 22023 invalid value for parameter \"lock_timeout\": \"abc\")"},
        {"set lock_timeout = '5 fortnights'",
         "E(ERROR 22023 invalid value for parameter \"lock_timeout\": \"5 fortnights\")"},
        {"set lock_timeout = '5S'",  // units are case-sensitive, as in PostgreSQL
         "E(ERROR 22023 invalid value for parameter \"lock_timeout\": \"5S\")"},
        {"set lock_timeout = -1",
         "E(ERROR 22023 invalid value for parameter \"lock_timeout\": \"-1\")"},
        {"set lock_timeout = 2147483648",
         "E(ERROR 22023 2147483648 is outside the valid range for parameter \"lock_timeout\" (0 "
         ".. 2147483647))"},
        {"set client_encoding = 'LATIN1'",
         "E(ERROR 22023 invalid value for parameter \"client_encoding\": \"LATIN1\")"},
        {"set time zone 'Europe/Paris'",
         "E(ERROR 22023 invalid value for parameter \"TimeZone\": \"Europe/Paris\")"},
        {"set datestyle = 'German'",
         "E(ERROR 22023 invalid value for parameter \"DateStyle\": \"German\")"},
        {"set transaction_isolation = 'serializable'",
         "E(ERROR 0A000 transaction isolation level \"serializable\" is not supported in the SQL "
         "mode)"},
        {"set standard_conforming_strings = off",
         "E(ERROR 0A000 standard_conforming_strings = off is not supported in the SQL mode)"},
        {"set server_version = '16'",
         "E(ERROR 55P02 parameter \"server_version\" cannot be changed)"},
        {"reset is_superuser", "E(ERROR 55P02 parameter \"is_superuser\" cannot be changed)"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.sql);
        Fixture f;
        f.ready();
        f.send(query(c.sql));
        CHECK(f.take() == c.error + " Z(I)");
        f.send(query("show lock_timeout"));
        CHECK(f.take() == "T(lock_timeout:25) D(0) C(SHOW) Z(I)");  // nothing changed
    }
}

TEST_CASE("SET accepts the spellings PostgreSQL clients use and stores them canonically",
          "[pg][settings]") {
    struct Case {
        std::string sql;
        std::string show;
        std::string shown;  // through SHOW's CommandComplete and any ParameterStatus
    };
    const std::vector<Case> cases = {
        {"set client_encoding = 'utf8'", "client_encoding",
         "T(client_encoding:25) D(UTF8) C(SHOW)"},
        {"set names 'unicode'", "client_encoding", "T(client_encoding:25) D(UTF8) C(SHOW)"},
        {"set timezone to 'utc'", "time zone", "T(TimeZone:25) D(UTC) C(SHOW)"},
        // Reported settings that changed are announced before ReadyForQuery.
        {"set time zone 'Etc/UTC'", "timezone",
         "T(TimeZone:25) D(Etc/UTC) C(SHOW) S(TimeZone=Etc/UTC)"},
        {"set datestyle = 'iso, dmy'", "datestyle",
         "T(DateStyle:25) D(ISO, DMY) C(SHOW) S(DateStyle=ISO, DMY)"},
        {"set session search_path = 'app'", "search_path", "T(search_path:25) D(app) C(SHOW)"},
        {"set statement_timeout = 60000", "statement_timeout",
         "T(statement_timeout:25) D(1min) C(SHOW)"},
        {"set my.custom = 'x'", "my.custom", "T(my.custom:25) D(x) C(SHOW)"},
        {"set transaction_isolation = 'READ COMMITTED'", "transaction isolation level",
         "T(transaction_isolation:25) D(read committed) C(SHOW)"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.sql);
        Fixture f;
        f.ready();
        f.send(query(c.sql + "; show " + c.show));
        CHECK(f.take() == "C(SET) " + c.shown + " Z(I)");
    }
}

TEST_CASE("SHOW knows PostgreSQL's defaults and refuses unknown names", "[pg][settings]") {
    struct Case {
        std::string name;
        std::string shown;
    };
    const std::vector<Case> cases = {
        {"server_version", "T(server_version:25) D(15.0)"},
        {"server_encoding", "T(server_encoding:25) D(UTF8)"},
        {"DateStyle", "T(DateStyle:25) D(ISO, MDY)"},
        {"TimeZone", "T(TimeZone:25) D(UTC)"},
        {"transaction_isolation", "T(transaction_isolation:25) D(read committed)"},
        {"default_transaction_isolation", "T(default_transaction_isolation:25) D(read committed)"},
        {"standard_conforming_strings", "T(standard_conforming_strings:25) D(on)"},
        {"integer_datetimes", "T(integer_datetimes:25) D(on)"},
        {"statement_timeout", "T(statement_timeout:25) D(0)"},
        {"max_identifier_length", "T(max_identifier_length:25) D(63)"},
        {"is_superuser", "T(is_superuser:25) D(off)"},
        {"application_name", "T(application_name:25) D(psql)"},
        {"session authorization", "T(session_authorization:25) D(alice)"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        Fixture f;
        f.ready();
        f.send(query("show " + c.name));
        CHECK(f.take() == c.shown + " C(SHOW) Z(I)");
    }
    Fixture f;
    f.ready();
    f.send(query("show nope"));
    CHECK(f.take() == "E(ERROR 42704 unrecognized configuration parameter \"nope\") Z(I)");
}

TEST_CASE("SHOW ALL lists every setting with its value and description", "[pg][settings]") {
    Fixture f;
    f.ready();
    f.send(query("set zz.custom = 'v'; show all"));
    const std::vector<Msg> out = f.messages();
    REQUIRE(out.size() == 1 + 1 + 18 + 1 + 1);  // SET's C, T, 17 known + 1 custom, C, Z
    CHECK(show_one(out[1]) == "T(name:25,setting:25,description:25)");
    CHECK(show_one(out[2]) ==
          "D(application_name,psql,Sets the application name to be "
          "reported in statistics and logs.)");
    CHECK(show_one(out[4]) ==
          "D(DateStyle,ISO, MDY,Sets the display format for date and time values.)");
    CHECK(show_one(out[19]) == "D(zz.custom,v,)");
    CHECK(show_one(out[20]) == "C(SHOW)");
}

TEST_CASE("reported settings send ParameterStatus when they change, before ReadyForQuery",
          "[pg][settings]") {
    Fixture f;
    f.ready();
    f.send(query("set application_name = 'worker'"));
    CHECK(f.take() == "C(SET) S(application_name=worker) Z(I)");
    f.send(query("set application_name = 'worker'"));
    CHECK(f.take() == "C(SET) Z(I)");  // unchanged: not reported again
    f.send(query("set datestyle = 'ISO, YMD'; set timezone = 'utc'"));
    CHECK(f.take() == "C(SET) C(SET) S(DateStyle=ISO, YMD) Z(I)");  // UTC was UTC already
    f.send(query("reset application_name"));
    CHECK(f.take() == "C(RESET) S(application_name=psql) Z(I)");  // the startup packet's
    f.send(query("set application_name = 'a'; reset all"));
    CHECK(f.take() == "C(SET) C(RESET) S(DateStyle=ISO, MDY) Z(I)");
}

// --- the extended query protocol -----------------------------------------------------------------

TEST_CASE("node-postgres' unnamed Parse, Bind, Describe portal, Execute and Sync",
          "[pg][extended]") {
    Fixture f;
    f.ready();
    f.backend.descriptions["SELECT $1::int AS n, $2 AS s"] = sql::Description{
        {Type::kInt4, Type::kUnknown}, true, {{"n", Type::kInt4}, {"s", Type::kText}}};
    f.send(parse_msg("", "SELECT $1::int AS n, $2 AS s"));
    f.send(bind_msg("", "", {"5", std::nullopt}));
    f.send(describe_portal());
    f.send(execute_msg());
    f.send(net::PgSync{});
    REQUIRE(f.backend.statements.size() == 1);
    CHECK(f.last().request.text == "SELECT $1::int AS n, $2 AS s");
    CHECK(f.last().request.params == std::vector<Value>{Value::of_unknown("5"), Value::null()});
    CHECK(f.last().read_only);
    CHECK(f.take() == "1 2 T(n:23,s:25)");  // sent before the statement runs
    f.answer(rows({{"n", Type::kInt4}, {"s", Type::kText}},
                  {{Value::of_int4(5), Value::null(Type::kText)}}, "SELECT 1"));
    CHECK(f.take() == "D(5,NULL) C(SELECT 1) Z(I)");
}

TEST_CASE("psycopg 3's Parse with types, Bind with a binary int8, Describe, Execute, Sync",
          "[pg][extended]") {
    Fixture f;
    f.ready();
    const std::string sql = "SELECT id, name FROM t WHERE id = $1";
    f.backend.descriptions[sql] =
        sql::Description{{Type::kInt8}, true, {{"id", Type::kInt8}, {"name", Type::kText}}};
    f.send(parse_msg("", sql, {net::kPgOidInt8}));
    f.send(bind_msg("", "", {net::encode_binary_int8(7)}, {net::PgFormat::kBinary}));
    f.send(describe_portal());
    f.send(execute_msg());
    f.send(net::PgSync{});
    REQUIRE(f.backend.statements.size() == 1);
    CHECK(f.last().request.params == std::vector<Value>{Value::of_int8(7)});
    f.answer(rows({{"id", Type::kInt8}, {"name", Type::kText}},
                  {{Value::of_int8(7), Value::of_text("seven")}}, "SELECT 1"));
    CHECK(f.take() == "1 2 T(id:20,name:25) D(7,seven) C(SELECT 1) Z(I)");
}

TEST_CASE("Describe of a statement reports declared, inferred and unknown parameter types",
          "[pg][extended]") {
    Fixture f;
    f.ready();
    const std::string sql = "UPDATE t SET a = $2 WHERE id = $1 AND b = $3";
    f.backend.descriptions[sql] =
        sql::Description{{Type::kInt8, Type::kBool, Type::kUnknown}, false, {}};
    f.send(parse_msg("s1", sql, {0, net::kPgOidInt4}));
    f.send(describe_statement("s1"));
    f.send(net::PgSync{});
    CHECK(f.take() == "1 t(20,23,25) n Z(I)");
    f.send(parse_msg("s2", "SHOW lock_timeout"));
    f.send(describe_statement("s2"));
    f.send(parse_msg("s3", "SET lock_timeout = 1"));
    f.send(describe_statement("s3"));
    f.send(parse_msg("s4", " "));
    f.send(describe_statement("s4"));
    f.send(net::PgSync{});
    CHECK(f.take() == "1 t() T(lock_timeout:25) 1 t() n 1 t() n Z(I)");
}

TEST_CASE("after an error the extended protocol discards messages until Sync", "[pg][extended]") {
    Fixture f;
    f.ready();
    f.send(parse_msg("", "selec 1"));
    f.send(bind_msg("", ""));
    f.send(describe_portal());
    f.send(execute_msg());
    f.send(query("select 1"));  // discarded too, as PostgreSQL does
    f.send(net::PgSync{});
    CHECK(f.take() == "E(ERROR 42601 syntax error at or near \"selec\" P=1) Z(I)");
    CHECK(f.backend.statements.empty());
    f.send(bind_msg("", "nope"));
    f.send(execute_msg());
    f.send(net::PgSync{});
    f.send(bind_msg("", ""));
    f.send(net::PgSync{});
    CHECK(f.take() ==
          "E(ERROR 26000 prepared statement \"nope\" does not exist) Z(I) "
          "E(ERROR 26000 unnamed prepared statement does not exist) Z(I)");
}

TEST_CASE("a statement error in the extended protocol is positioned in the Parse text",
          "[pg][extended]") {
    Fixture f;
    f.ready();
    f.send(parse_msg("", "/* c */ select nope from t"));
    f.send(bind_msg("", ""));
    f.send(execute_msg());
    f.send(execute_msg());  // discarded: the portal failed
    f.send(net::PgSync{});
    REQUIRE(f.backend.statements.size() == 1);
    CHECK(f.last().request.text == "select nope from t");
    f.answer(failed({"42703", "column \"nope\" does not exist", {}, {}, 8}));
    CHECK(f.take() == "1 2 E(ERROR 42703 column \"nope\" does not exist P=16) Z(I)");
}

TEST_CASE("named statements persist until Close, and Close of a missing one is no error",
          "[pg][extended]") {
    Fixture f;
    f.ready();
    f.send(parse_msg("s1", "insert into t values ($1)", {net::kPgOidInt4}));
    f.send(net::PgSync{});
    f.send(parse_msg("s1", "select 1"));
    f.send(net::PgSync{});
    CHECK(f.take() == "1 Z(I) E(ERROR 42P05 prepared statement \"s1\" already exists) Z(I)");
    for (const std::string value : {"1", "2"}) {
        f.send(bind_msg("", "s1", {value}));
        f.send(execute_msg());
        f.send(net::PgSync{});
        REQUIRE(!f.backend.statements.empty());
        CHECK(f.last().request.text == "insert into t values ($1)");
        CHECK(f.last().request.params == std::vector<Value>{Value::of_int4(std::stoi(value))});
        CHECK(!f.last().read_only);
        f.answer(done("INSERT 0 1"));
        CHECK(f.take() == "2 C(INSERT 0 1) Z(I)");
    }
    f.send(net::PgClose{net::PgTarget::kStatement, "s1"});
    f.send(net::PgClose{net::PgTarget::kStatement, "s1"});
    f.send(net::PgClose{net::PgTarget::kPortal, "nope"});
    f.send(bind_msg("", "s1", {"3"}));
    f.send(net::PgSync{});
    CHECK(f.take() == "3 3 3 E(ERROR 26000 prepared statement \"s1\" does not exist) Z(I)");
    CHECK(f.backend.statements.size() == 2);
}

TEST_CASE("Execute with max_rows suspends the portal and the next Execute goes on",
          "[pg][extended]") {
    Fixture f;
    f.ready();
    f.send(net::PgQuery{"begin"});
    f.answer(done("BEGIN", sql::TxStatus::kInBlock));
    CHECK(f.take() == "C(BEGIN) Z(T)");
    f.send(parse_msg("", "select n from t"));
    f.send(bind_msg("p", ""));
    f.send(execute_msg("p", 2));
    f.send(net::PgSync{});
    sql::StatementResult three =
        rows({{"n", Type::kInt4}}, {{Value::of_int4(1)}, {Value::of_int4(2)}, {Value::of_int4(3)}},
             "SELECT 3");
    three.tx_status = sql::TxStatus::kInBlock;
    f.answer(three);
    CHECK(f.take() == "1 2 D(1) D(2) s Z(T)");
    f.send(execute_msg("p", 2));
    f.send(execute_msg("p", 2));
    f.send(net::PgSync{});
    CHECK(f.take() == "D(3) C(SELECT 1) C(SELECT 0) Z(T)");
    CHECK(f.backend.statements.size() == 2);  // BEGIN and the select, once
}

TEST_CASE("a portal that is not a SELECT runs once", "[pg][extended]") {
    Fixture f;
    f.ready();
    f.send(parse_msg("", "delete from t"));
    f.send(bind_msg("", ""));
    f.send(execute_msg());
    f.answer(done("DELETE 2"));
    f.send(execute_msg());
    f.send(net::PgSync{});
    CHECK(f.take() == "1 2 C(DELETE 2) E(ERROR 55000 portal \"\" cannot be run) Z(I)");
    CHECK(f.backend.statements.size() == 1);
}

TEST_CASE("result columns are sent in the binary formats Bind asked for", "[pg][extended]") {
    Fixture f;
    f.ready();
    const std::string sql = "select a, b, c, d, e from t";
    f.backend.descriptions[sql] = sql::Description{{},
                                                   true,
                                                   {{"a", Type::kInt8},
                                                    {"b", Type::kInt4},
                                                    {"c", Type::kBool},
                                                    {"d", Type::kText},
                                                    {"e", Type::kTimestamptz}}};
    f.send(parse_msg("", sql));
    f.send(bind_msg("", "", {}, {}, {net::PgFormat::kBinary}));  // one format: every column
    f.send(describe_portal());
    f.send(execute_msg());
    f.send(net::PgSync{});
    f.answer(rows({{"a", Type::kInt8},
                   {"b", Type::kInt4},
                   {"c", Type::kBool},
                   {"d", Type::kText},
                   {"e", Type::kTimestamptz}},
                  {{Value::of_int8(-2), Value::of_int4(7), Value::of_bool(true),
                    Value::of_text("x"), Value::of_timestamptz(net::kPgEpochUnixUs + 1)},
                   {Value::null(Type::kInt8), Value::null(Type::kInt4), Value::null(Type::kBool),
                    Value::null(Type::kText), Value::null(Type::kTimestamptz)}},
                  "SELECT 2"));
    const std::vector<Msg> out = f.messages();
    CHECK(show(out) ==
          "1 2 T(a:20/b,b:23/b,c:16/b,d:25/b,e:1184/b) "
          "D(\\xfffffffffffffffe,\\x00000007,\\x01,x,\\x0000000000000001) "
          "D(NULL,NULL,NULL,NULL,NULL) C(SELECT 2) Z(I)");

    // Per-column formats: text, binary.
    f.backend.descriptions["select a, b from t"] =
        sql::Description{{}, true, {{"a", Type::kInt8}, {"b", Type::kInt8}}};
    f.send(parse_msg("", "select a, b from t"));
    f.send(bind_msg("", "", {}, {}, {net::PgFormat::kText, net::PgFormat::kBinary}));
    f.send(execute_msg());
    f.send(net::PgSync{});
    f.answer(rows({{"a", Type::kInt8}, {"b", Type::kInt8}},
                  {{Value::of_int8(1), Value::of_int8(1)}}, "SELECT 1"));
    CHECK(f.take() == "1 2 D(1,\\x0000000000000001) C(SELECT 1) Z(I)");
}

TEST_CASE("Bind checks the number of result formats against the statement's columns",
          "[pg][extended]") {
    Fixture f;
    f.ready();
    f.backend.descriptions["select a from t"] = sql::Description{{}, true, {{"a", Type::kInt8}}};
    f.send(parse_msg("", "select a from t"));
    f.send(bind_msg("", "", {}, {}, {net::PgFormat::kText, net::PgFormat::kBinary}));
    f.send(net::PgSync{});
    CHECK(f.take() ==
          "1 E(ERROR 08P01 bind message has 2 result formats but query has 1 columns) Z(I)");
}

TEST_CASE("Bind decodes parameters by their declared types and formats", "[pg][extended]") {
    struct Case {
        uint32_t oid;
        net::PgFormat format;
        std::optional<std::string> raw;
        std::optional<Value> value;  // nullopt: the error
        std::string error;
    };
    const auto bin = net::PgFormat::kBinary;
    const auto text = net::PgFormat::kText;
    const std::vector<Case> cases = {
        {0, text, "42", Value::of_unknown("42"), ""},
        {net::kPgOidText, text, "abc", Value::of_unknown("abc"), ""},
        {net::kPgOidInt4, text, "-12", Value::of_int4(-12), ""},
        {net::kPgOidInt2, text, "300", Value::of_int4(300), ""},
        {net::kPgOidInt8, text, "9000000000", Value::of_int8(9'000'000'000), ""},
        {net::kPgOidBool, text, "yes", Value::of_bool(true), ""},
        {net::kPgOidTimestamptz, text, "2000-01-01 00:00:00+00",
         Value::of_timestamptz(net::kPgEpochUnixUs), ""},
        {net::kPgOidInt4, text, std::nullopt, Value::null(Type::kInt4), ""},
        {net::kPgOidInt4, text, "abc", std::nullopt,
         "E(ERROR 22P02 invalid input syntax for type integer: \"abc\")"},
        {net::kPgOidInt2, text, "40000", std::nullopt,
         "E(ERROR 22003 value \"40000\" is out of range for type smallint)"},
        {net::kPgOidInt4, text, "3000000000", std::nullopt,
         "E(ERROR 22003 value \"3000000000\" is out of range for type integer)"},
        {0, text, std::string("a\xff", 2), std::nullopt,
         "E(ERROR 22021 invalid byte sequence for encoding \"UTF8\": 0xff)"},
        {net::kPgOidInt2, bin, net::encode_binary_int2(-3), Value::of_int4(-3), ""},
        {net::kPgOidInt4, bin, net::encode_binary_int4(9), Value::of_int4(9), ""},
        {net::kPgOidBool, bin, net::encode_binary_bool(false), Value::of_bool(false), ""},
        {net::kPgOidTimestamptz, bin, net::encode_binary_int8(1),
         Value::of_timestamptz(net::kPgEpochUnixUs + 1), ""},
        {net::kPgOidVarchar, bin, "héllo", Value::of_text("héllo"), ""},
        {net::kPgOidInt4, bin, std::string(3, '\0'), std::nullopt,
         "E(ERROR 22P03 incorrect binary data format for int4: 3 bytes, expected 4)"},
        {701, bin, std::string(8, '\0'), std::nullopt,
         "E(ERROR 08P01 binary format of parameter $1 (type oid 701) is not supported)"},
        {0, bin, std::string(8, '\0'), std::nullopt,
         "E(ERROR 08P01 could not determine the data type of binary parameter $1)"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.oid, c.raw.value_or("NULL"));
        Fixture f;
        f.ready();
        f.send(parse_msg("", "select $1", {c.oid}));
        f.send(bind_msg("", "", {c.raw}, {c.format}));
        f.send(execute_msg());
        f.send(net::PgSync{});
        if (c.value) {
            REQUIRE(f.backend.statements.size() == 1);
            CHECK(f.last().request.params == std::vector<Value>{*c.value});
            CHECK(f.take() == "1 2");
        } else {
            CHECK(f.backend.statements.empty());
            CHECK(f.take() == "1 " + c.error + " Z(I)");
        }
    }
}

TEST_CASE("a binary parameter without a declared type takes the type Describe infers",
          "[pg][extended]") {
    Fixture f;
    f.ready();
    f.backend.descriptions["select * from t where id = $1"] =
        sql::Description{{Type::kInt8}, true, {{"id", Type::kInt8}}};
    f.send(parse_msg("", "select * from t where id = $1"));
    f.send(bind_msg("", "", {net::encode_binary_int8(5)}, {net::PgFormat::kBinary}));
    f.send(execute_msg());
    REQUIRE(f.backend.statements.size() == 1);
    CHECK(f.last().request.params == std::vector<Value>{Value::of_int8(5)});
}

TEST_CASE("Bind refuses the wrong number of parameters", "[pg][extended]") {
    Fixture f;
    f.ready();
    f.send(parse_msg("s", "select $1, $2"));
    f.send(bind_msg("", "s", {"1"}));
    f.send(net::PgSync{});
    CHECK(f.take() ==
          "1 E(ERROR 08P01 bind message supplies 1 parameters, but prepared "
          "statement \"s\" requires 2) Z(I)");
    // Declared types count as parameters too, as in PostgreSQL.
    f.send(parse_msg("t", "select 1", {net::kPgOidInt4}));
    f.send(bind_msg("", "t"));
    f.send(net::PgSync{});
    CHECK(f.take() ==
          "1 E(ERROR 08P01 bind message supplies 0 parameters, but prepared "
          "statement \"t\" requires 1) Z(I)");
}

TEST_CASE("Parse refuses several statements and missing portals are errors", "[pg][extended]") {
    Fixture f;
    f.ready();
    f.send(parse_msg("", "select 1; select 2"));
    f.send(net::PgSync{});
    f.send(describe_portal("nope"));
    f.send(net::PgSync{});
    f.send(execute_msg("nope"));
    f.send(net::PgSync{});
    f.send(describe_statement("nope"));
    f.send(net::PgSync{});
    CHECK(f.take() ==
          "E(ERROR 42601 cannot insert multiple commands into a prepared statement) Z(I) "
          "E(ERROR 34000 portal \"nope\" does not exist) Z(I) "
          "E(ERROR 34000 portal \"nope\" does not exist) Z(I) "
          "E(ERROR 26000 prepared statement \"nope\" does not exist) Z(I)");
}

TEST_CASE("SET and SHOW in the extended protocol are answered locally, an empty one too",
          "[pg][extended][settings]") {
    Fixture f;
    f.ready();
    f.send(parse_msg("", "SET lock_timeout TO '2s'"));
    f.send(bind_msg("", ""));
    f.send(describe_portal());
    f.send(execute_msg());
    f.send(parse_msg("", "SHOW lock_timeout"));
    f.send(bind_msg("", ""));
    f.send(describe_portal());
    f.send(execute_msg());
    f.send(parse_msg("", ""));
    f.send(bind_msg("", ""));
    f.send(describe_portal());
    f.send(execute_msg());
    f.send(net::PgSync{});
    CHECK(f.take() == "1 2 n C(SET) 1 2 T(lock_timeout:25) D(2s) C(SHOW) 1 2 n I Z(I)");
    CHECK(f.backend.statements.empty());
    f.send(query("select pg_advisory_lock(1)"));
    CHECK(f.last().request.lock_timeout_ms == 2000);
}

TEST_CASE("portals end with their transaction at Sync", "[pg][extended]") {
    Fixture f;
    f.ready();
    f.send(parse_msg("s", "select 1"));
    f.send(bind_msg("p", "s"));
    f.send(net::PgSync{});
    f.send(execute_msg("p"));
    f.send(net::PgSync{});
    CHECK(f.take() == "1 2 Z(I) E(ERROR 34000 portal \"p\" does not exist) Z(I)");
}

TEST_CASE("a connection holds at most 1000 prepared statements and 100 settings",
          "[pg][extended][settings]") {
    Fixture f;
    f.ready();
    for (int i = 0; i < 1000; ++i) {
        f.send(parse_msg(fmt::format("s{}", i), "select 1"));
    }
    f.send(parse_msg("", "select 1"));
    f.send(net::PgSync{});
    const std::string out = f.take();
    CHECK(
        out.ends_with("1 E(ERROR 54000 too many prepared statements (at most 1000 per "
                      "connection)) Z(I)"));
    f.send(net::PgClose{net::PgTarget::kStatement, "s0"});
    f.send(parse_msg("", "select 1"));
    f.send(net::PgFlush{});  // nothing to do: replies are never held back
    f.send(net::PgSync{});
    CHECK(f.take() == "3 1 Z(I)");

    std::string sets;
    for (int i = 0; i < 99; ++i) {  // with application_name from the startup packet: 100
        sets += fmt::format("set x.s{} = 1;", i);
    }
    f.send(query(sets + "set x.one_more = 1"));
    CHECK(f.take().ends_with(
        "C(SET) E(ERROR 54000 too many settings (at most 100 per connection)) Z(I)"));
    f.send(query("set x.s0 = 2; show x.s0"));  // changing one that exists is fine
    CHECK(f.take() == "C(SET) T(x.s0:25) D(2) C(SHOW) Z(I)");
}

TEST_CASE("COPY messages are refused with 0A000", "[pg][extended]") {
    Fixture f;
    f.ready();
    f.send(net::PgCopyData{"1\t2\n"});
    f.send(net::PgCopyDone{});
    f.send(net::PgSync{});
    CHECK(f.take() == "E(ERROR 0A000 COPY is not supported in the SQL mode) Z(I)");
}

// --- order, cancel and the connection's end ------------------------------------------------------

TEST_CASE("messages pipelined behind a statement run in order after its result", "[pg][pipeline]") {
    Fixture f;
    f.ready();
    f.send(query("select pg_advisory_lock(1)"));
    f.send(parse_msg("", "select 2"));
    f.send(bind_msg("", ""));
    f.send(execute_msg());
    f.send(net::PgSync{});
    f.send(query("set application_name = 'x'; select 3"));
    REQUIRE(f.backend.statements.size() == 1);
    CHECK(f.take().empty());
    f.answer(rows({{"pg_advisory_lock", Type::kText}}, {{Value::of_text("")}}, "SELECT 1"));
    REQUIRE(f.backend.statements.size() == 2);
    CHECK(f.last().request.text == "select 2");
    CHECK(f.last().seq == 2);
    CHECK(f.take() == "T(pg_advisory_lock:25) D() C(SELECT 1) Z(I) 1 2");
    f.answer(rows({{"?column?", Type::kInt4}}, {{Value::of_int4(2)}}, "SELECT 1"));
    REQUIRE(f.backend.statements.size() == 3);
    CHECK(f.last().request.text == "select 3");
    f.answer(rows({{"?column?", Type::kInt4}}, {{Value::of_int4(3)}}, "SELECT 1"));
    CHECK(f.take() ==
          "D(2) C(SELECT 1) Z(I) C(SET) T(?column?:23) D(3) C(SELECT 1) "
          "S(application_name=x) Z(I)");
}

// A backend that answers from inside sql_statement (as the Replica may, with an error).
struct EagerBackend final : SqlBackend {
    void sql_open(uint64_t id, const std::string&) override {
        frontend->on_session_opened(id, kSession);
    }
    void sql_statement(
        uint64_t id, uint64_t, uint64_t seq, sql::StatementRequest&& request, bool) override {
        texts.push_back(request.text);
        frontend->on_result(id, seq, done("SELECT 0"));
    }
    Result<sql::Description, sql::SqlError> sql_describe(std::string_view) const override {
        return sql::Description{};
    }
    void sql_cancel(uint64_t) override {}
    void sql_closed(uint64_t, uint64_t) override {}
    PgFrontend* frontend = nullptr;
    std::vector<std::string> texts;
};

TEST_CASE("a backend may answer from inside its call", "[pg][pipeline]") {
    Output output;
    EagerBackend backend;
    PgFrontend frontend({}, output, backend);
    backend.frontend = &frontend;
    frontend.on_pg_open(kConn, "x");
    frontend.on_pg_message(kConn, startup("alice"));
    frontend.on_pg_message(kConn, query("select 1; select 2"));
    frontend.on_pg_message(kConn, query("select 3"));
    CHECK(backend.texts == std::vector<std::string>{"select 1", "select 2", "select 3"});
    const std::string out = show(decode(output.sent[kConn]));
    CHECK(out.ends_with("K(42) Z(I) C(SELECT 0) C(SELECT 0) Z(I) C(SELECT 0) Z(I)"));
}

TEST_CASE("reading pauses when the queue reaches pipeline_max and resumes at half",
          "[pg][pipeline]") {
    PgFrontendOptions options;
    options.pipeline_max = 4;
    Fixture f(options);
    f.ready();
    f.send(query("select 0"));  // in flight
    for (int i = 1; i <= 3; ++i) {
        f.send(query(fmt::format("select {}", i)));
    }
    CHECK(!f.output.paused[kConn]);
    f.send(query("select 4"));
    CHECK(f.output.paused[kConn]);  // 4 queued
    f.answer(done("SELECT 0"));
    CHECK(f.output.paused[kConn]);  // 3 queued
    f.answer(done("SELECT 0"));
    CHECK(!f.output.paused[kConn]);  // 2 queued
    // A reader that ignores the pause is closed at twice the limit.
    for (int i = 0; i < 6; ++i) {
        f.send(query("select 5"));
    }
    CHECK(!f.output.closed.contains(kConn));
    f.send(query("select 6"));
    CHECK(f.take().ends_with("E(FATAL 54000 too many pipelined messages (more than 8))"));
    CHECK(f.output.closed.contains(kConn));
}

TEST_CASE("a CancelRequest cancels the session whose key it carries, and is not answered",
          "[pg][cancel]") {
    Fixture f;
    f.open();
    f.send(startup("alice"));
    f.frontend.on_session_opened(kConn, kSession);
    const std::vector<Msg> greeting = f.messages();
    const Msg& key = greeting.at(greeting.size() - 2);
    REQUIRE(key.type == 'K');
    const auto pid = static_cast<int32_t>(std::stol(*key.fields[0]));
    const auto secret = static_cast<uint32_t>(std::stoul(*key.fields[1]));
    f.send(query("select pg_advisory_lock(1)"));

    struct Case {
        int32_t pid;
        uint32_t key;
        std::vector<uint64_t> cancels;
    };
    const std::vector<Case> cases = {
        {pid, secret + 1, {}},
        {pid + 1, secret, {}},
        {pid, secret, {kSession}},
    };
    uint64_t id = kOther;
    for (const Case& c : cases) {
        CAPTURE(c.pid, c.key);
        f.backend.cancels.clear();
        f.open(++id);
        f.send(net::PgCancelRequest{c.pid, c.key}, id);
        CHECK(f.backend.cancels == c.cancels);
        CHECK(f.output.sent[id].empty());
        CHECK(f.output.closed.contains(id));
    }
    CHECK(!f.output.closed.contains(kConn));
}

TEST_CASE("Terminate closes the connection and later messages are ignored", "[pg][close]") {
    Fixture f;
    f.ready();
    f.send(net::PgTerminate{});
    f.send(query("select 1"));
    CHECK(f.output.closed.contains(kConn));
    CHECK(f.take().empty());
    CHECK(f.backend.statements.empty());
}

TEST_CASE("a password message after startup is a protocol violation", "[pg][close]") {
    Fixture f;
    f.ready();
    f.send(net::PgPassword{"secret"});
    CHECK(f.take() == "E(FATAL 08P01 a password message is only valid during authentication)");
    CHECK(f.output.closed.contains(kConn));
}

TEST_CASE("closing a connection tells the backend once, with its session", "[pg][close]") {
    Fixture f;
    f.ready(kConn, kSession);
    f.open(kOther);  // closed before any session
    CHECK(f.frontend.connection_count() == 2);
    f.frontend.on_pg_close(kConn);
    f.frontend.on_pg_close(kConn);
    f.frontend.on_pg_close(kOther);
    using Close = std::pair<uint64_t, uint64_t>;
    CHECK(f.backend.closes == std::vector<Close>{{kConn, kSession}, {kOther, 0}});
    CHECK(f.frontend.connection_count() == 0);
}

TEST_CASE("a session that ends under its connection closes it with 57P01", "[pg][close]") {
    Fixture f;
    f.ready();
    f.send(query("select pg_advisory_lock(1)"));
    f.send(query("select 2"));
    f.frontend.on_session_ended(kConn);
    CHECK(f.take() == "E(FATAL 57P01 terminating connection: its session expired on the cluster)");
    CHECK(f.output.closed.contains(kConn));
    f.answer(done("SELECT 1"));  // a late answer is dropped
    CHECK(f.take().empty());
    CHECK(f.backend.statements.size() == 1);
    f.frontend.on_pg_close(kConn);
    CHECK(f.backend.closes == std::vector<std::pair<uint64_t, uint64_t>>{{kConn, kSession}});
}

// --- over TCP, through net::PgListener ----------------------------------------------------------

struct ListenerOutput final : PgOutput {
    void send(uint64_t id, std::string bytes) override { listener->send(id, std::move(bytes)); }
    void close(uint64_t id) override { listener->close(id); }
    void pause_reading(uint64_t id, bool paused) override {
        pauses += paused ? 1 : 0;
        listener->pause_reading(id, paused);
    }
    net::PgListener* listener = nullptr;
    int pauses = 0;
};

struct Wire {
    static std::string u32(uint32_t v) {
        return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                static_cast<char>(v)};
    }
    static std::string startup_packet(const std::string& user) {
        const std::string body = u32(net::kPgProtocol3) + "user" + '\0' + user + '\0' + '\0';
        return u32(static_cast<uint32_t>(body.size() + 4)) + body;
    }
    static std::string ssl_request() { return u32(8) + u32(net::kPgSslRequestCode); }
    static std::string message(char type, const std::string& body) {
        return type + u32(static_cast<uint32_t>(body.size() + 4)) + body;
    }
    static std::string query(const std::string& sql) { return message('Q', sql + '\0'); }
};

struct TcpFixture {
    explicit TcpFixture(PgFrontendOptions options = {})
        : frontend(std::move(options), output, backend),
          listener(io, net::PgListenerOptions{}, frontend) {
        output.listener = &listener;
        REQUIRE(listener.start().ok());
    }
    // The server's messages after the SSL refusal byte, if any.
    std::string received(const net::testing::RawClient& c) {
        std::string bytes = c.received();
        if (bytes.starts_with("N")) {
            bytes.erase(0, 1);
        }
        return show(decode(bytes));
    }
    bool wait(const std::function<bool()>& done) { return net::testing::run_until(io, done); }
    std::string last_text() const {
        REQUIRE(!backend.statements.empty());
        return backend.statements.back().request.text;
    }

    boost::asio::io_context io;
    ListenerOutput output;
    Backend backend;
    PgFrontend frontend;
    net::PgListener listener;
};

TEST_CASE("over TCP: SSL refused, startup and a query pipelined behind it, then Terminate",
          "[pg][listener]") {
    TcpFixture f;
    net::testing::RawClient client(f.io, f.listener.port());
    client.start_reading();
    client.write(Wire::ssl_request());
    REQUIRE(f.wait([&] { return client.received() == "N"; }));
    // The query arrives with the startup packet: the listener must read it as a regular message.
    client.write(Wire::startup_packet("alice") + Wire::query("select 1"));
    REQUIRE(f.wait([&] { return f.backend.opens.size() == 1; }));
    const uint64_t id = f.backend.opens[0];
    CHECK((id & net::kPgConnectionBit) != 0);
    f.frontend.on_session_opened(id, kSession);
    REQUIRE(f.wait([&] { return f.backend.statements.size() == 1; }));
    CHECK(f.last_text() == "select 1");
    f.frontend.on_result(id, 1,
                         rows({{"?column?", Type::kInt4}}, {{Value::of_int4(1)}}, "SELECT 1"));
    REQUIRE(f.wait([&] { return f.received(client).ends_with("D(1) C(SELECT 1) Z(I)"); }));
    client.write(Wire::message('X', ""));
    REQUIRE(f.wait([&] { return client.closed_by_server() && !f.backend.closes.empty(); }));
    using Close = std::pair<uint64_t, uint64_t>;
    CHECK(f.backend.closes == std::vector<Close>{{id, kSession}});
    CHECK(f.frontend.connection_count() == 0);
}

TEST_CASE("over TCP: a malformed message gets FATAL 08P01 and only its connection closes",
          "[pg][listener]") {
    TcpFixture f;
    net::testing::RawClient bad(f.io, f.listener.port());
    net::testing::RawClient good(f.io, f.listener.port());
    bad.start_reading();
    good.start_reading();
    bad.write(Wire::startup_packet("alice") + "Q" + Wire::u32(3));  // a length below 4
    good.write(Wire::startup_packet("bob"));
    REQUIRE(f.wait([&] { return bad.closed_by_server() && f.backend.opens.size() == 2; }));
    CHECK(f.received(bad).starts_with("E(FATAL 08P01 "));
    CHECK(f.listener.stats().protocol_errors == 1);
    CHECK(!good.closed_by_server());
}

TEST_CASE("over TCP: a paused connection's pipelined messages wait in the listener, in order",
          "[pg][listener][pipeline]") {
    PgFrontendOptions options;
    options.pipeline_max = 2;  // the front end closes a connection at 4 queued messages
    TcpFixture f(options);
    net::testing::RawClient client(f.io, f.listener.port());
    client.start_reading();
    std::string bytes = Wire::startup_packet("alice");
    for (int i = 0; i < 10; ++i) {
        bytes += Wire::query(fmt::format("select {}", i));
    }
    client.write(bytes);  // one write: the listener reads all of it at once
    REQUIRE(f.wait([&] { return f.backend.opens.size() == 1; }));
    const uint64_t id = f.backend.opens[0];
    f.frontend.on_session_opened(id, kSession);
    for (uint64_t i = 0; i < 10; ++i) {
        REQUIRE(f.wait([&] { return f.backend.statements.size() == i + 1; }));
        CHECK(f.last_text() == fmt::format("select {}", i));
        f.frontend.on_result(id, i + 1, done("SELECT 0"));
    }
    std::string expected;
    for (int i = 0; i < 10; ++i) {
        expected += " C(SELECT 0) Z(I)";
    }
    REQUIRE(f.wait([&] { return f.received(client).ends_with(expected); }));
    CHECK(f.output.pauses > 0);
    CHECK(!client.closed_by_server());
}

TEST_CASE("over TCP: a CancelRequest reaches the session and its connection is closed",
          "[pg][listener][cancel]") {
    TcpFixture f;
    net::testing::RawClient client(f.io, f.listener.port());
    client.start_reading();
    client.write(Wire::startup_packet("alice"));
    REQUIRE(f.wait([&] { return f.backend.opens.size() == 1; }));
    f.frontend.on_session_opened(f.backend.opens[0], kSession);
    REQUIRE(f.wait([&] { return f.received(client).ends_with("Z(I)"); }));
    const std::vector<Msg> greeting = decode(client.received());
    const Msg& key = greeting.at(greeting.size() - 2);
    REQUIRE(key.type == 'K');

    net::testing::RawClient canceller(f.io, f.listener.port());
    canceller.start_reading();
    canceller.write(Wire::u32(16) + Wire::u32(net::kPgCancelRequestCode) +
                    Wire::u32(static_cast<uint32_t>(std::stol(*key.fields[0]))) +
                    Wire::u32(static_cast<uint32_t>(std::stoul(*key.fields[1]))));
    REQUIRE(f.wait([&] { return canceller.closed_by_server(); }));
    CHECK(canceller.received().empty());
    CHECK(f.backend.cancels == std::vector<uint64_t>{kSession});
    CHECK(!client.closed_by_server());
}

}  // namespace
}  // namespace raftlock::server
