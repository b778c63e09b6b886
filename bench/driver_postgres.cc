// The PostgreSQL wire protocol through libpq (Debian libpq-dev), for two servers with the same
// client code: raftlock's SQL mode (docs/sql-mode.md, the pg port of every node) and a real
// PostgreSQL. Each benchmark client is one connection, to endpoint `index` modulo the list; every
// statement but SET is prepared once per connection (PQprepare / PQexecPrepared), so both servers
// see the extended protocol that drivers such as psycopg 3 and JDBC use.
//   lock    SET lock_timeout to the wait (only when it changes), then
//           SELECT pg_advisory_lock($1) with the 64-bit FNV-1a hash of the name as a bigint;
//           SQLSTATE 55P03 is a wait that timed out. Both servers queue the waiters.
//   unlock  SELECT pg_advisory_unlock($1), which must answer true
//   kv      the table bench_kv (k text PRIMARY KEY, v text), created IF NOT EXISTS by the first
//           client that needs it; prepare = INSERT ... ON CONFLICT DO NOTHING, then the put;
//           put = UPDATE ... WHERE k = $1 (must report UPDATE 1); get = SELECT v ... WHERE k = $1
//           (raftlock: a ReadIndex read; PostgreSQL: a single server, so the latest commit)
//   watch   none: neither server has watches (LISTEN/NOTIFY is not in the SQL mode)
//   keepalive  nothing: a connection is its session, and the server keeps it alive (raftlock
//           expires it after --pg-session-timeout-ms only when the connection's node is lost)
//   idle    plain connections, each holding one server session, checked every second
//
// The session timeout of set_session_timeout() and open_idle() is not the client's to choose:
// raftlock takes it from the server's --pg-session-timeout-ms, PostgreSQL ends a session with its
// connection. Both are ignored here.

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <libpq-fe.h>

#include "base/assert.h"
#include "bench/driver.h"
#include "bench/run_clock.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

// PostgreSQL's type OIDs for the declared parameter types (pg_type.h, stable since 7.x).
constexpr Oid kOidInt8 = 20;
constexpr Oid kOidText = 25;
constexpr auto kConnectTimeout = 10s;
// One descriptor per connection; the process may raise its limit to about 20,000 here, and a
// real PostgreSQL starts one process per connection, so more would measure the machine.
constexpr size_t kIdleConnectionsMax = 20'000;
constexpr size_t kIdleOpenThreads = 8;
constexpr auto kIdleCheckInterval = 1s;
constexpr std::string_view kLockTimeoutSqlState = "55P03";
// Any user and database are accepted by raftlock; a PostgreSQL with trust auth has these.
constexpr const char* kUser = "postgres";
constexpr const char* kDatabase = "postgres";

struct ConnCloser {
    void operator()(PGconn* c) const { PQfinish(c); }
};
using PgConn = std::unique_ptr<PGconn, ConnCloser>;

struct ResultClearer {
    void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultClearer>;

// The 64-bit FNV-1a hash, as PostgreSQL's signed bigint: the advisory lock key of a lock name.
int64_t lock_key(std::string_view name) {
    uint64_t hash = 14695981039346656037ull;
    for (char c : name) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ull;
    }
    return static_cast<int64_t>(hash);
}

// libpq's messages end in a newline and may span indented lines (DETAIL, HINT, a second reason):
// one line for the report.
std::string one_line(const char* text) {
    std::string out;
    for (const char* c = text == nullptr ? "" : text; *c != '\0'; ++c) {
        const bool space = *c == '\n' || *c == '\t' || *c == ' ';
        if (!space) {
            out += *c;
        } else if (!out.empty() && out.back() != ' ') {
            out += ' ';
        }
    }
    while (!out.empty() && out.back() == ' ') {
        out.pop_back();
    }
    return out;
}

std::string sql_state(const PGresult* r) {
    const char* state = r == nullptr ? nullptr : PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return state == nullptr ? "" : state;
}

// What went wrong with `what`: the server's SQLSTATE and message, or the connection's error.
std::string pg_error(std::string_view what, const PGresult* r, PGconn* conn) {
    if (r == nullptr) {
        return fmt::format("{}: {}", what, one_line(PQerrorMessage(conn)));
    }
    const std::string state = sql_state(r);
    if (state.empty()) {
        return fmt::format("{}: {} ({})", what, one_line(PQresultErrorMessage(r)),
                           PQresStatus(PQresultStatus(r)));
    }
    return fmt::format("{}: {} {}", what, state,
                       one_line(PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)));
}

// Notices (PostgreSQL's "already exists, skipping", the SQL mode's WARNING on an unlock of a
// lock not held) would go to stderr by default; the results already say what the benchmark needs.
void ignore_notice(void* /*arg*/, const char* /*message*/) {}

Result<PgConn, std::string> connect(const HostPort& server) {
    const std::string port = std::to_string(server.port);
    const std::string timeout_s = std::to_string(std::chrono::seconds(kConnectTimeout).count());
    // Neither server here has TLS: sslmode=disable saves libpq's SSLRequest round trip.
    const char* keys[] = {
        "host", "port", "user", "dbname", "connect_timeout", "sslmode", "application_name",
        nullptr};
    const char* values[] = {
        server.host.c_str(), port.c_str(),     kUser,  kDatabase, timeout_s.c_str(),
        "disable",           "raftlock-bench", nullptr};
    PgConn conn(PQconnectdbParams(keys, values, 0));
    if (conn == nullptr) {
        return std::string("connect: libpq is out of memory");
    }
    if (PQstatus(conn.get()) != CONNECTION_OK) {
        return fmt::format("connect {}:{}: {}", server.host, server.port,
                           one_line(PQerrorMessage(conn.get())));
    }
    PQsetNoticeProcessor(conn.get(), ignore_notice, nullptr);
    return conn;
}

// Runs `sql` as a simple Query and expects a command (not rows) back.
Status exec_command(PGconn* conn, const std::string& sql) {
    PgResult r(PQexec(conn, sql.c_str()));
    if (r == nullptr || PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
        return pg_error(sql, r.get(), conn);
    }
    return Done{};
}

Status prepare(PGconn* conn, const char* name, const char* sql, std::initializer_list<Oid> types) {
    const std::vector<Oid> oids(types);
    PgResult r(PQprepare(conn, name, sql, static_cast<int>(oids.size()), oids.data()));
    if (r == nullptr || PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
        return pg_error(fmt::format("PREPARE {}", name), r.get(), conn);
    }
    return Done{};
}

// Runs the prepared statement `name` with text-format parameters and text-format results.
PgResult exec_prepared(PGconn* conn, const char* name, std::initializer_list<const char*> params) {
    const std::vector<const char*> values(params);
    return PgResult(PQexecPrepared(conn, name, static_cast<int>(values.size()), values.data(),
                                   nullptr, nullptr, 0));
}

// The table of the kv scenarios, created once per driver: concurrent CREATE TABLE IF NOT EXISTS
// can fail on a real PostgreSQL (two sessions both insert the table's row type: 23505).
class KvTable {
public:
    Status ensure(PGconn* conn) {
        std::lock_guard lock(mutex_);
        if (created_) {
            return Done{};
        }
        if (Status s = exec_command(
                conn, "CREATE TABLE IF NOT EXISTS bench_kv (k text PRIMARY KEY, v text)");
            !s.ok()) {
            return s;
        }
        created_ = true;
        return Done{};
    }

private:
    std::mutex mutex_;
    bool created_ = false;
};

class PostgresSession final : public Session {
public:
    PostgresSession(PgConn conn, std::shared_ptr<KvTable> table)
        : conn_(std::move(conn)), table_(std::move(table)) {}

    Status open() {
        if (Status s = prepare(conn_.get(), "lock", "SELECT pg_advisory_lock($1)", {kOidInt8});
            !s.ok()) {
            return s;
        }
        return prepare(conn_.get(), "unlock", "SELECT pg_advisory_unlock($1)", {kOidInt8});
    }

    Status lock(const std::string& name, std::chrono::milliseconds wait, LockHandle& out) override {
        // lock_timeout 0 means no limit; a wait shorter than a millisecond waits one.
        const auto timeout = std::max(wait, std::chrono::milliseconds(1));
        if (timeout != lock_timeout_) {
            if (Status s = exec_command(conn_.get(),
                                        fmt::format("SET lock_timeout = '{}ms'", timeout.count()));
                !s.ok()) {
                return s;
            }
            lock_timeout_ = timeout;
        }
        const std::string key = std::to_string(lock_key(name));
        PgResult r = exec_prepared(conn_.get(), "lock", {key.c_str()});
        if (r == nullptr || PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
            if (sql_state(r.get()) == kLockTimeoutSqlState) {
                return pg_error("lock wait timed out", r.get(), conn_.get());
            }
            return pg_error("pg_advisory_lock", r.get(), conn_.get());
        }
        if (PQntuples(r.get()) != 1) {
            return fmt::format("pg_advisory_lock: {} rows, expected 1", PQntuples(r.get()));
        }
        out.name = name;
        out.key = key;
        return Done{};
    }

    Status unlock(const LockHandle& handle) override {
        PgResult r = exec_prepared(conn_.get(), "unlock", {handle.key.c_str()});
        if (r == nullptr || PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
            return pg_error("pg_advisory_unlock", r.get(), conn_.get());
        }
        if (PQntuples(r.get()) != 1 || PQnfields(r.get()) != 1) {
            return fmt::format("pg_advisory_unlock: {} rows of {} columns, expected one value",
                               PQntuples(r.get()), PQnfields(r.get()));
        }
        if (std::string_view(PQgetvalue(r.get(), 0, 0)) != "t") {
            return fmt::format("pg_advisory_unlock: '{}', the lock was not held",
                               PQgetvalue(r.get(), 0, 0));
        }
        return Done{};
    }

    Status prepare_key(const std::string& key, const std::string& value) override {
        if (Status s = ensure_kv(); !s.ok()) {
            return s;
        }
        PgResult r = exec_prepared(conn_.get(), "insert", {key.c_str(), value.c_str()});
        if (r == nullptr || PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
            return pg_error("INSERT INTO bench_kv", r.get(), conn_.get());
        }
        return put(key, value);
    }

    Status put(const std::string& key, const std::string& value) override {
        if (Status s = ensure_kv(); !s.ok()) {
            return s;
        }
        PgResult r = exec_prepared(conn_.get(), "put", {key.c_str(), value.c_str()});
        if (r == nullptr || PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
            return pg_error("UPDATE bench_kv", r.get(), conn_.get());
        }
        if (std::string_view(PQcmdTuples(r.get())) != "1") {
            return fmt::format("UPDATE bench_kv: {} '{}', expected UPDATE 1", PQcmdStatus(r.get()),
                               key);
        }
        return Done{};
    }

    Result<Text, std::string> get(const std::string& key) override {
        if (Status s = ensure_kv(); !s.ok()) {
            return s.error();
        }
        PgResult r = exec_prepared(conn_.get(), "get", {key.c_str()});
        if (r == nullptr || PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
            return pg_error("SELECT FROM bench_kv", r.get(), conn_.get());
        }
        if (PQntuples(r.get()) != 1 || PQnfields(r.get()) != 1) {
            return fmt::format("SELECT FROM bench_kv: {} rows of {} columns for '{}', expected one",
                               PQntuples(r.get()), PQnfields(r.get()), key);
        }
        return Text{std::string(PQgetvalue(r.get(), 0, 0),
                                static_cast<size_t>(PQgetlength(r.get(), 0, 0)))};
    }

    Status watch(const std::string& /*key*/, WatchSink& /*sink*/) override {
        return std::string("not applicable: the SQL mode has no watches (no LISTEN/NOTIFY)");
    }

    Status keep_alive() override { return Done{}; }

private:
    // The kv statements are prepared on first use: PostgreSQL refuses to prepare a statement
    // on a table that does not exist yet.
    Status ensure_kv() {
        if (kv_prepared_) {
            return Done{};
        }
        if (Status s = table_->ensure(conn_.get()); !s.ok()) {
            return s;
        }
        const std::initializer_list<Oid> key_value = {kOidText, kOidText};
        if (Status s = prepare(conn_.get(), "insert",
                               "INSERT INTO bench_kv (k, v) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                               key_value);
            !s.ok()) {
            return s;
        }
        if (Status s =
                prepare(conn_.get(), "put", "UPDATE bench_kv SET v = $2 WHERE k = $1", key_value);
            !s.ok()) {
            return s;
        }
        if (Status s =
                prepare(conn_.get(), "get", "SELECT v FROM bench_kv WHERE k = $1", {kOidText});
            !s.ok()) {
            return s;
        }
        kv_prepared_ = true;
        return Done{};
    }

    PgConn conn_;
    std::shared_ptr<KvTable> table_;
    std::chrono::milliseconds lock_timeout_{0};  // the server's default: no limit
    bool kv_prepared_ = false;
};

// Idle connections for session.keepalive: opened from a few threads, then watched by one that
// wakes every second and reads whatever the servers sent. A connection the server closed (the
// SQL mode's FATAL 57P01 when the session expired) counts as a keepalive error.
class PostgresIdle final : public IdleSessions {
public:
    ~PostgresIdle() override {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        if (monitor_.joinable()) {
            monitor_.join();
        }
    }

    Status open(const std::vector<HostPort>& servers, size_t count) {
        RL_ASSERT(!servers.empty());
        RL_ASSERT(count <= kIdleConnectionsMax);
        conns_.resize(count);
        ErrorLog open_errors;
        std::vector<std::thread> threads;
        for (size_t t = 0; t < std::min(count, kIdleOpenThreads); ++t) {
            threads.emplace_back([&, t] {
                for (size_t i = t; i < count; i += kIdleOpenThreads) {
                    auto conn = connect(servers[i % servers.size()]);
                    if (!conn.ok()) {
                        open_errors.add(conn.error());
                        return;  // the server is refusing: the others will say why too
                    }
                    conns_[i] = std::move(*conn);
                }
            });
        }
        for (std::thread& thread : threads) {
            thread.join();
        }
        opened_ = static_cast<size_t>(std::count_if(conns_.begin(), conns_.end(),
                                                    [](const PgConn& c) { return c != nullptr; }));
        if (opened_ < count) {
            return fmt::format("opened {} of {} connections: {}", opened_, count,
                               open_errors.first());
        }
        lost_.assign(count, false);
        monitor_ = std::thread([this] { monitor(); });
        return Done{};
    }

    size_t open_count() const override { return opened_; }
    uint64_t keepalive_errors() const override { return errors_.count(); }
    std::string first_error() const override { return errors_.first(); }

private:
    void monitor() {
        for (;;) {
            {
                std::unique_lock lock(mutex_);
                if (wake_.wait_for(lock, kIdleCheckInterval, [this] { return stop_; })) {
                    return;
                }
            }
            for (size_t i = 0; i < conns_.size(); ++i) {
                PGconn* c = conns_[i].get();
                if (lost_[i]) {
                    continue;
                }
                if (PQconsumeInput(c) == 0 || PQstatus(c) != CONNECTION_OK) {
                    lost_[i] = true;
                    errors_.add(
                        fmt::format("connection {} closed: {}", i, one_line(PQerrorMessage(c))));
                }
            }
        }
    }

    std::vector<PgConn> conns_;  // written by open(), then read by the monitor alone
    std::vector<bool> lost_;     // the monitor's
    size_t opened_ = 0;
    ErrorLog errors_;
    std::thread monitor_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;  // under mutex_
};

class PostgresDriver final : public Driver {
public:
    explicit PostgresDriver(std::vector<HostPort> servers)
        : servers_(std::move(servers)), table_(std::make_shared<KvTable>()) {}

    std::string name() const override { return "postgres"; }

    // Not the client's to choose (see the top of this file).
    void set_session_timeout(std::chrono::milliseconds /*timeout*/) override {}

    Result<std::unique_ptr<Session>, std::string> open(int index) override {
        RL_ASSERT(index >= 0);
        const HostPort& server = servers_[static_cast<size_t>(index) % servers_.size()];
        auto conn = connect(server);
        if (!conn.ok()) {
            return conn.error();
        }
        auto session = std::make_unique<PostgresSession>(std::move(*conn), table_);
        if (Status s = session->open(); !s.ok()) {
            return s.error();
        }
        return std::unique_ptr<Session>(std::move(session));
    }

    Result<std::unique_ptr<IdleSessions>, std::string> open_idle(
        size_t count, std::chrono::milliseconds /*timeout*/) override {
        if (count > kIdleConnectionsMax) {
            return fmt::format("{} idle connections asked, at most {} (one descriptor each)", count,
                               kIdleConnectionsMax);
        }
        auto idle = std::make_unique<PostgresIdle>();
        if (Status s = idle->open(servers_, count); !s.ok()) {
            return s.error();
        }
        return std::unique_ptr<IdleSessions>(std::move(idle));
    }

private:
    std::vector<HostPort> servers_;
    std::shared_ptr<KvTable> table_;
};

}  // namespace

std::unique_ptr<Driver> make_postgres_driver(const std::string& endpoints) {
    auto servers = parse_host_ports(endpoints);
    if (!servers.ok() || servers->empty()) {
        return nullptr;
    }
    return std::make_unique<PostgresDriver>(std::move(*servers));
}

}  // namespace raftlock::bench
