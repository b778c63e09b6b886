#include <catch2/catch.hpp>

#include "history_builder.h"

namespace raftlock::jepsen {
namespace {

using test::HistoryBuilder;
using test::verdict_of;

TEST_CASE("a read after a completed write must see it", "[jepsen][register]") {
    HistoryBuilder good;
    good.op(1, "write", "x", "1", "1").op(2, "read", "x", "null", "1");
    CHECK(verdict_of("register", good) == Verdict::kLinearizable);

    HistoryBuilder stale;
    stale.op(1, "write", "x", "1", "1").op(2, "read", "x", "null", "null");
    CHECK(verdict_of("register", stale) == Verdict::kNotLinearizable);
}

TEST_CASE("a read concurrent with a write may see the old or the new value", "[jepsen][register]") {
    for (const char* seen : {"null", "1"}) {
        HistoryBuilder h;
        h.invoke(1, "write", "x", "1")
            .invoke(2, "read", "x")
            .ok(2, "read", "x", seen)
            .ok(1, "write", "x", "1");
        INFO(seen);
        CHECK(verdict_of("register", h) == Verdict::kLinearizable);
    }
}

TEST_CASE("two reads may not see a concurrent write take effect and then undo itself",
          "[jepsen][register]") {
    // Herlihy & Wing's classic shape: once one read returns the new value, a read that starts
    // after it returned cannot see the old one.
    HistoryBuilder h;
    h.invoke(1, "write", "x", "1")
        .op(2, "read", "x", "null", "1")
        .op(3, "read", "x", "null", "null")
        .ok(1, "write", "x", "1");
    CHECK(verdict_of("register", h) == Verdict::kNotLinearizable);
}

TEST_CASE("a successful cas swaps and a mismatched cas observes another value",
          "[jepsen][register]") {
    HistoryBuilder swapped;
    swapped.op(1, "write", "x", "4", "4")
        .op(1, "cas", "x", "[4,7]", "[4,7]")
        .op(2, "read", "x", "null", "7");
    CHECK(verdict_of("register", swapped) == Verdict::kLinearizable);

    HistoryBuilder wrong_swap;
    wrong_swap.op(1, "write", "x", "3", "3").op(1, "cas", "x", "[4,7]", "[4,7]");
    CHECK(verdict_of("register", wrong_swap) == Verdict::kNotLinearizable);

    HistoryBuilder mismatch_lie;
    mismatch_lie.op(1, "write", "x", "4", "4")
        .invoke(1, "cas", "x", "[4,7]")
        .fail(1, "cas", "x", "[4,7]", "mismatch");
    CHECK(verdict_of("register", mismatch_lie) == Verdict::kNotLinearizable);

    HistoryBuilder other_failure;  // a failure that is not a compare: it simply did not happen
    other_failure.op(1, "write", "x", "4", "4")
        .invoke(1, "cas", "x", "[4,7]")
        .fail(1, "cas", "x", "[4,7]", "not-leader")
        .op(2, "read", "x", "null", "4");
    CHECK(verdict_of("register", other_failure) == Verdict::kLinearizable);
}

TEST_CASE("an info write may take effect at any later point or never", "[jepsen][register]") {
    HistoryBuilder later;
    later.invoke(1, "write", "x", "1")
        .info(1, "write", "x", "1")
        .op(2, "read", "x", "null", "null")
        .op(2, "read", "x", "null", "1")
        .op(2, "read", "x", "null", "1");
    CHECK(verdict_of("register", later) == Verdict::kLinearizable);

    HistoryBuilder never;
    never.invoke(1, "write", "x", "1")
        .info(1, "write", "x", "1")
        .op(2, "read", "x", "null", "null");
    CHECK(verdict_of("register", never) == Verdict::kLinearizable);

    HistoryBuilder flip_back;  // once seen, it cannot un-happen
    flip_back.invoke(1, "write", "x", "1")
        .info(1, "write", "x", "1")
        .op(2, "read", "x", "null", "1")
        .op(2, "read", "x", "null", "null");
    CHECK(verdict_of("register", flip_back) == Verdict::kNotLinearizable);
}

TEST_CASE("a failed write did not happen", "[jepsen][register]") {
    HistoryBuilder h;
    h.invoke(1, "write", "x", "1").fail(1, "write", "x", "1").op(2, "read", "x", "null", "1");
    CHECK(verdict_of("register", h) == Verdict::kNotLinearizable);
}

TEST_CASE("the kv model treats keys as independent registers", "[jepsen][kv]") {
    HistoryBuilder h;
    h.op(1, "write", "a", "1", "1")
        .op(2, "read", "b", "null", "null")
        .op(2, "read", "a", "null", "1");
    CHECK(verdict_of("kv", h) == Verdict::kLinearizable);
    // The register model ignores keys, so the same history is a stale read there.
    CHECK(verdict_of("register", h) == Verdict::kNotLinearizable);
}

TEST_CASE("the kv model finds a stale read on one key among many", "[jepsen][kv]") {
    HistoryBuilder h;
    for (int k = 0; k < 20; ++k) {
        std::string key = "k" + std::to_string(k);
        h.op(k, "write", key, "1", "1").op(k, "read", key, "null", k == 13 ? "2" : "1");
    }
    CheckResult r = test::check_text("kv", h.text());
    CHECK(r.verdict == Verdict::kNotLinearizable);
    CHECK(r.partitions == 20);
    REQUIRE(r.window);
    CHECK(r.window->key == "k13");
}

TEST_CASE("register values may be strings", "[jepsen][register]") {
    HistoryBuilder h;
    h.op(1, "write", "x", "\"a\"", "\"a\"")
        .op(1, "cas", "x", "[\"a\",\"b\"]", "null")
        .op(2, "read", "x", "null", "\"b\"");
    CHECK(verdict_of("register", h) == Verdict::kLinearizable);
}

TEST_CASE("the register model refuses shapes it does not know, at the record's line",
          "[jepsen][register]") {
    HistoryBuilder unknown_f;
    unknown_f.op(1, "write", "x", "1", "1").op(1, "append", "x", "1", "1");
    CHECK(test::bad_line("register", unknown_f.text()) == 3);

    HistoryBuilder bad_cas;
    bad_cas.op(1, "cas", "x", "4", "4");
    CHECK(test::bad_line("register", bad_cas.text()) == 1);

    HistoryBuilder bad_read;
    bad_read.op(1, "write", "x", "1", "1").op(1, "read", "x", "null", "[1,2]");
    CHECK(test::bad_line("register", bad_read.text()) == 4);  // the completion is wrong
}

}  // namespace
}  // namespace raftlock::jepsen
