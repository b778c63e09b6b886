#include <catch2/catch.hpp>

#include "history_builder.h"

namespace raftlock::jepsen {
namespace {

using test::HistoryBuilder;
using test::verdict_of;

TEST_CASE("an ephemeral node lives while its session lives", "[jepsen][sessions]") {
    HistoryBuilder h;
    h.op(1, "open", "/e/1", "null", "77")
        .op(1, "create", "/e/1", "null", "null")
        .op(2, "read", "/e/1", "null", "\"data\"")
        .op(1, "close", "/e/1", "null", "null")
        .op(2, "read", "/e/1", "null", "null");
    CHECK(verdict_of("sessions", h) == Verdict::kLinearizable);
}

TEST_CASE("an ephemeral node seen after its session closed is a violation", "[jepsen][sessions]") {
    HistoryBuilder h;
    h.op(1, "open", "/e/1", "null", "77")
        .op(1, "create", "/e/1", "null", "null")
        .op(1, "close", "/e/1", "null", "null")
        .op(2, "read", "/e/1", "null", "\"data\"");
    CHECK(verdict_of("sessions", h) == Verdict::kNotLinearizable);
}

TEST_CASE("an ephemeral node cannot be created after the session expired", "[jepsen][sessions]") {
    HistoryBuilder h;
    h.op(1, "open", "/e/1", "null", "77")
        .op(1, "expire", "/e/1", "null", "null")
        .op(2, "create", "/e/1", "null", "null");
    CHECK(verdict_of("sessions", h) == Verdict::kNotLinearizable);
}

TEST_CASE("a read concurrent with an expiry may see the node or not", "[jepsen][sessions]") {
    for (const char* seen : {"null", "\"data\""}) {
        HistoryBuilder h;
        h.op(1, "open", "/e/1", "null", "77")
            .op(1, "create", "/e/1", "null", "null")
            .invoke(1, "expire", "/e/1")
            .invoke(2, "read", "/e/1")
            .ok(2, "read", "/e/1", seen)
            .ok(1, "expire", "/e/1");
        INFO(seen);
        CHECK(verdict_of("sessions", h) == Verdict::kLinearizable);
    }
}

TEST_CASE("sessions of different paths are independent", "[jepsen][sessions]") {
    HistoryBuilder h;
    h.op(1, "open", "/e/1", "null", "1")
        .op(1, "create", "/e/1", "null", "null")
        .op(2, "open", "/e/2", "null", "2")
        .op(2, "close", "/e/2", "null", "null")
        .op(3, "read", "/e/1", "null", "\"x\"")
        .op(3, "read", "/e/2", "null", "null");
    CheckResult r = test::check_text("sessions", h.text());
    CHECK(r.verdict == Verdict::kLinearizable);
    CHECK(r.partitions == 2);
}

TEST_CASE("the sessions model refuses unknown operations", "[jepsen][sessions]") {
    HistoryBuilder h;
    h.op(1, "open", "/e/1", "null", "1").op(1, "rename", "/e/1", "null", "null");
    CHECK(test::bad_line("sessions", h.text()) == 3);
}

}  // namespace
}  // namespace raftlock::jepsen
