// The SQL mode inside the state machine: SqlStatement entries through the codec and the
// exactly-once envelope, waits answered by later entries, session ends, timers and snapshots.

#include <catch2/catch.hpp>

#include "harness.h"

namespace raftlock::statemachine::testing {
namespace {

SqlStatement sql(std::string text, TimeMs lock_timeout_ms = 0) {
    return SqlStatement{sql::StatementRequest{std::move(text), {}, lock_timeout_ms}};
}

TEST_CASE("a waiting statement is answered by the entry that releases its lock",
          "[statemachine][sql]") {
    Harness h;
    const SessionId a = h.open();
    const SessionId b = h.open();
    ApplyResult locked = h.run(a, sql("SELECT pg_advisory_lock(1)"));
    REQUIRE_FALSE(locked.response.sql_waiting);
    CHECK_FALSE(locked.response.sql.error.has_value());
    ApplyResult waiting = h.run(b, sql("SELECT pg_advisory_lock(1)"));
    CHECK(waiting.response.sql_waiting);
    CHECK(waiting.sql_done.empty());
    ApplyResult unlocked = h.run(a, sql("SELECT pg_advisory_unlock(1)"));
    REQUIRE(unlocked.sql_done.size() == 1);
    CHECK(unlocked.sql_done[0].session == b);
    CHECK(unlocked.sql_done[0].ticket == waiting.seq);
    CHECK(unlocked.sql_done[0].result.tag == "SELECT 1");
    // A retry of the statement gets its final result, not "waiting" again.
    Command retry;
    retry.client_id = b;
    retry.seq = waiting.seq;
    retry.op = sql("SELECT pg_advisory_lock(1)");
    ApplyResult replayed = h.apply(retry);
    CHECK(replayed.replayed);
    CHECK_FALSE(replayed.response.sql_waiting);
    CHECK(replayed.response.sql.tag == "SELECT 1");
}

TEST_CASE("an expired session's SQL locks pass to its waiters and its transaction rolls back",
          "[statemachine][sql]") {
    Harness h;
    const SessionId a = h.open();
    const SessionId b = h.open();
    h.run(a, sql("CREATE TABLE t (k int PRIMARY KEY)"));
    h.run(a, sql("SELECT pg_advisory_lock(7)"));
    h.run(a, sql("BEGIN"));
    h.run(a, sql("INSERT INTO t VALUES (1)"));
    CHECK(h.run(b, sql("SELECT pg_advisory_lock(7)")).response.sql_waiting);
    ApplyResult expired = h.leader(ExpireSession{a});
    REQUIRE(expired.sql_done.size() == 1);
    CHECK(expired.sql_done[0].session == b);
    CHECK(h.sm.sql_query(b, {"SELECT count(*) FROM t", {}, 0}).rows[0][0] ==
          sql::Value::of_int8(0));
}

TEST_CASE("lock_timeout fires on the leader's clock, through any entry", "[statemachine][sql]") {
    Harness h;
    const SessionId a = h.open();
    const SessionId b = h.open();
    h.run(a, sql("SELECT pg_advisory_lock(1)"));
    CHECK(h.run(b, sql("SELECT pg_advisory_lock(1)", 500)).response.sql_waiting);
    REQUIRE(h.sm.next_timer_ms().has_value());
    CHECK(*h.sm.next_timer_ms() == h.time_ms + 500);
    CHECK(h.advance(499).sql_done.empty());
    ApplyResult fired = h.advance(1);
    REQUIRE(fired.sql_done.size() == 1);
    CHECK(fired.sql_done[0].result.error->sqlstate == "55P03");
}

TEST_CASE("SqlCancel ends another session's wait", "[statemachine][sql]") {
    Harness h;
    const SessionId a = h.open();
    const SessionId b = h.open();
    h.run(a, sql("SELECT pg_advisory_lock(1)"));
    CHECK(h.run(b, sql("SELECT pg_advisory_lock(1)")).response.sql_waiting);
    Command cancel;
    cancel.seq = 99;  // the proposing server's nonce
    cancel.op = SqlCancel{b};
    ApplyResult cancelled = h.apply(cancel);
    REQUIRE(cancelled.sql_done.size() == 1);
    CHECK(cancelled.sql_done[0].result.error->sqlstate == "57014");
}

TEST_CASE("SQL state survives a snapshot, saved results included", "[statemachine][sql]") {
    Harness h;
    const SessionId a = h.open();
    const SessionId b = h.open();
    h.run(a, sql("CREATE TABLE t (k int PRIMARY KEY, v text)"));
    h.run(a, sql("INSERT INTO t VALUES (1, 'x') RETURNING v"));
    h.run(a, sql("BEGIN"));
    h.run(a, sql("SELECT * FROM t WHERE k = 1 FOR UPDATE"));
    CHECK(h.run(b, sql("UPDATE t SET v = 'y' WHERE k = 1")).response.sql_waiting);
    const std::string bytes = h.sm.snapshot();
    StateMachine restored;
    REQUIRE(restored.restore(bytes) == ErrorCode::kOk);
    CHECK(restored.snapshot() == bytes);
    CHECK(restored.sql_table_count() == 1);
    CHECK(restored.sql_tx_status(a) == sql::TxStatus::kInBlock);
    const std::optional<Response> saved = restored.saved_response(a, 2);
    REQUIRE(saved.has_value());
    CHECK(saved->sql.rows.size() == 1);
}

TEST_CASE("a malformed SqlStatement is refused by the codec", "[statemachine][sql][codec]") {
    Command c;
    c.client_id = 3;
    c.seq = 1;
    c.op = sql(std::string(sql::kStatementBytesMax + 1, 'x'));
    CHECK_FALSE(encode_command(c).ok());
    c.op = sql("SELECT 1", -1);
    CHECK_FALSE(encode_command(c).ok());
    c.op = sql("SELECT 1");
    c.client_id = kNoSession;  // a statement needs its session
    CHECK_FALSE(encode_command(c).ok());
}

TEST_CASE("a statement's row budget travels in its entry", "[statemachine][sql][codec]") {
    Command c;
    c.client_id = 3;
    c.seq = 1;
    c.op = sql("SELECT 1");
    for (uint64_t budget : {uint64_t{0}, uint64_t{12345}, sql::kRowsTouchedMax}) {
        std::get<SqlStatement>(c.op).request.rows_max = budget;
        Result<Command, ErrorCode> back = decode_command(encode_command(c).value());
        REQUIRE(back.ok());
        CHECK(back.value() == c);
    }
    std::get<SqlStatement>(c.op).request.rows_max = sql::kRowsTouchedMax + 1;
    CHECK_FALSE(encode_command(c).ok());
    // Entries of version 1, with and without a budget: tests/statemachine/golden.
}

TEST_CASE("a statement stops at the same row on every replica and in every replay",
          "[statemachine][sql]") {
    const auto run_on_a_replica = [] {
        Harness h;
        const SessionId a = h.open();
        h.run(a, sql("CREATE TABLE t (k int PRIMARY KEY, v int)"));
        std::string insert = "INSERT INTO t VALUES ";
        for (int i = 0; i < 2000; ++i) {
            insert += (i == 0 ? "(" : ",(") + std::to_string(i) + "," + std::to_string(i % 7) + ")";
        }
        h.run(a, sql(insert));
        SqlStatement update = sql("UPDATE t SET v = v + 1 WHERE v = 3");
        update.request.rows_max = 1500;  // 2000 rows to look at: stops at the 1501st
        return std::pair{h.run(a, update), h.run(a, sql("SELECT count(*) FROM t WHERE v = 4"))};
    };
    const auto [first, first_after] = run_on_a_replica();
    const auto [second, second_after] = run_on_a_replica();
    REQUIRE(first.response.sql.error.has_value());
    CHECK(first.response.sql.error->sqlstate == "54000");
    CHECK(sql::spent_row_budget(first.response.sql));
    CHECK(first.response.sql == second.response.sql);
    // Nothing of the stopped statement stays.
    CHECK(first_after.response.sql.rows == second_after.response.sql.rows);
    CHECK(sql::to_text(first_after.response.sql.rows.at(0).at(0)) == "286");
}

}  // namespace
}  // namespace raftlock::statemachine::testing
