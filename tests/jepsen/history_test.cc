#include <catch2/catch.hpp>

#include "history_builder.h"

namespace raftlock::jepsen {
namespace {

using test::HistoryBuilder;

Result<std::vector<Operation>, InputError> pair_text(const std::string& text) {
    auto history = parse_jsonl(text, "h.jsonl");
    REQUIRE(history.ok());
    return pair_operations(*history);
}

TEST_CASE("pairing matches each completion to its process's open invocation", "[jepsen][history]") {
    HistoryBuilder h;
    h.invoke(1, "write", "x", "1")
        .invoke(2, "read", "x")
        .ok(2, "read", "x", "1")
        .ok(1, "write", "x", "1");
    auto ops = pair_text(h.text());
    REQUIRE(ops.ok());
    REQUIRE(ops->size() == 2);
    const Operation& write = (*ops)[0];
    const Operation& read = (*ops)[1];
    CHECK(write.call_pos == 0);
    CHECK(write.return_pos == 3);
    CHECK(read.call_pos == 1);
    CHECK(read.return_pos == 2);
    CHECK(read.outcome == Outcome::kOk);
    CHECK(read.output.int_value == 1);
    CHECK(read.call_line == 2);
    CHECK(read.return_line == 3);
}

TEST_CASE("an info completion and an invocation left open both return at infinity",
          "[jepsen][history]") {
    HistoryBuilder h;
    h.invoke(1, "write", "x", "1").info(1, "write", "x", "1").invoke(2, "write", "x", "2");
    auto ops = pair_text(h.text());
    REQUIRE(ops.ok());
    REQUIRE(ops->size() == 2);
    for (const Operation& op : *ops) {
        CHECK(op.outcome == Outcome::kInfo);
        CHECK(op.return_pos == kNeverReturned);
    }
    CHECK((*ops)[0].return_line == 2);
    CHECK((*ops)[1].return_line == 0);
}

TEST_CASE("pairing refuses broken process discipline with the line of the record",
          "[jepsen][history]") {
    SECTION("a completion without an invocation") {
        HistoryBuilder h;
        h.op(1, "read", "x", "null", "null").ok(2, "read", "x");
        auto ops = pair_text(h.text());
        REQUIRE_FALSE(ops.ok());
        CHECK(ops.error().line == 3);
    }
    SECTION("a second invocation while one is open") {
        HistoryBuilder h;
        h.invoke(1, "read", "x").invoke(1, "write", "x", "1");
        auto ops = pair_text(h.text());
        REQUIRE_FALSE(ops.ok());
        CHECK(ops.error().line == 2);
        CHECK_THAT(ops.error().message, Catch::Contains("line 1"));
    }
    SECTION("a completion of another function") {
        HistoryBuilder h;
        h.invoke(1, "read", "x").ok(1, "write", "x", "1");
        auto ops = pair_text(h.text());
        REQUIRE_FALSE(ops.ok());
        CHECK(ops.error().line == 2);
    }
}

}  // namespace
}  // namespace raftlock::jepsen
