#include "jepsen/checker/wgl.h"

#include <catch2/catch.hpp>

#include "history_builder.h"
#include "jepsen/checker/models.h"

namespace raftlock::jepsen {
namespace {

using test::HistoryBuilder;

// n writes of distinct values that all time out, then a read of a value nobody wrote: proving
// that no linearization exists means exploring every subset of the writes (2^n configurations).
HistoryBuilder hard_history(int n) {
    HistoryBuilder h;
    for (int p = 0; p < n; ++p) {
        h.invoke(p, "write", "x", std::to_string(p + 1));
    }
    h.op(1000, "read", "x", "null", "99999");
    return h;
}

TEST_CASE("a search that runs out of time is unknown, never a pass", "[jepsen][wgl][budget]") {
    CheckOptions options;
    options.budget = std::chrono::milliseconds(1);
    CheckResult r = test::check_text("register", hard_history(40).text(), options);
    CHECK(r.search_verdict == Verdict::kUnknown);
    CHECK_FALSE(r.unknown_reason.empty());
}

TEST_CASE("a search that runs out of memory is unknown", "[jepsen][wgl][budget]") {
    CheckOptions options;
    options.memory_bytes_max = 64 * 1024;
    CheckResult r = test::check_text("register", hard_history(40).text(), options);
    CHECK(r.search_verdict == Verdict::kUnknown);
}

TEST_CASE("any one of many writes that timed out may explain a later read", "[jepsen][wgl]") {
    HistoryBuilder h;
    for (int p = 0; p < 30; ++p) {
        h.invoke(p, "write", "x", std::to_string(p + 1));
    }
    h.op(1000, "read", "x", "null", "25").op(1000, "read", "x", "null", "25");
    CHECK(test::verdict_of("register", h) == Verdict::kLinearizable);
}

TEST_CASE("the search reports the deepest partial linearization and the stuck operation",
          "[jepsen][wgl]") {
    RegisterModel model(false);
    // write 1 [0,1], read -> 2 [2,3]: the read can never be placed.
    std::vector<SearchOp> ops = {
        {CompiledOp{1, false, 1, 0, 0}, 0, 1, 0},
        {CompiledOp{0, false, 2, 0, 0}, 2, 3, 1},
    };
    SearchResult r = wgl_search(model, ops, Budget{});
    CHECK(r.verdict == Verdict::kNotLinearizable);
    CHECK(r.best_linearization == std::vector<int32_t>{0});
    CHECK(r.stuck_id == 1);
}

TEST_CASE("an empty history is linearizable", "[jepsen][wgl]") {
    RegisterModel model(false);
    SearchResult r = wgl_search(model, {}, Budget{});
    CHECK(r.verdict == Verdict::kLinearizable);
}

TEST_CASE("the failure window ends at the return of the operation that cannot be placed",
          "[jepsen][wgl][window]") {
    HistoryBuilder h;
    h.op(1, "write", "x", "1", "1");  // lines 1-2
    for (int i = 0; i < 10; ++i) {
        h.op(2, "read", "x", "null", "1");  // lines 3-22
    }
    h.op(3, "read", "x", "null", "null");  // lines 23-24: stale
    for (int i = 0; i < 10; ++i) {
        h.op(2, "read", "x", "null", "1");
    }
    auto history = parse_jsonl(h.text(), "h.jsonl");
    REQUIRE(history.ok());
    CheckResult r = test::check_text("register", h.text());
    REQUIRE(r.window);
    CHECK(r.window->minimal);
    CHECK(history->events[r.window->end_pos].line == 24);
    CHECK(history->events[r.window->start_pos].line <= 23);
    CHECK(r.window->stuck_id == 11);
}

}  // namespace
}  // namespace raftlock::jepsen
