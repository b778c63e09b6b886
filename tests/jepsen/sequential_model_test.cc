#include <catch2/catch.hpp>

#include "history_builder.h"

namespace raftlock::jepsen {
namespace {

using test::HistoryBuilder;
using test::verdict_of;

TEST_CASE("sequential numbers that increase, with gaps, are legal", "[jepsen][sequential]") {
    HistoryBuilder h;
    h.op(1, "create", "/q", "null", "0")
        .op(2, "create", "/q", "null", "1")
        .op(1, "create", "/q", "null", "5");
    CHECK(verdict_of("sequential", h) == Verdict::kLinearizable);
}

TEST_CASE("a duplicate sequential number is a violation", "[jepsen][sequential]") {
    HistoryBuilder h;
    h.invoke(1, "create", "/q")
        .invoke(2, "create", "/q")
        .ok(1, "create", "/q", "3")
        .ok(2, "create", "/q", "3");
    CHECK(verdict_of("sequential", h) == Verdict::kNotLinearizable);
}

TEST_CASE("a sequential number going backwards in real time is a violation",
          "[jepsen][sequential]") {
    HistoryBuilder h;
    h.op(1, "create", "/q", "null", "4").op(2, "create", "/q", "null", "2");
    CHECK(verdict_of("sequential", h) == Verdict::kNotLinearizable);
}

TEST_CASE("concurrent sequential creates may be numbered in either order", "[jepsen][sequential]") {
    HistoryBuilder h;
    h.invoke(1, "create", "/q")
        .invoke(2, "create", "/q")
        .ok(1, "create", "/q", "8")
        .ok(2, "create", "/q", "7");
    CHECK(verdict_of("sequential", h) == Verdict::kLinearizable);
}

TEST_CASE("parents number their children independently", "[jepsen][sequential]") {
    HistoryBuilder h;
    h.op(1, "create", "/a", "null", "4").op(2, "create", "/b", "null", "2");
    CHECK(verdict_of("sequential", h) == Verdict::kLinearizable);
}

TEST_CASE("the sequential model refuses a create that returns no number", "[jepsen][sequential]") {
    HistoryBuilder h;
    h.op(1, "create", "/q", "null", "\"x\"");
    CHECK(test::bad_line("sequential", h.text()) == 2);
}

}  // namespace
}  // namespace raftlock::jepsen
