#include "jepsen/checker/linear_checks.h"

#include <catch2/catch.hpp>

#include "history_builder.h"

namespace raftlock::jepsen {
namespace {

using test::HistoryBuilder;

std::vector<Operation> ops_of(const HistoryBuilder& h) {
    auto history = parse_jsonl(h.text(), "h.jsonl");
    REQUIRE(history.ok());
    auto ops = pair_operations(*history);
    REQUIRE(ops.ok());
    return std::move(ops.value());
}

std::vector<Finding> watch_findings(const HistoryBuilder& h) {
    auto history = parse_jsonl(h.text(), "h.jsonl");
    REQUIRE(history.ok());
    return check_watch_order(*history);
}

TEST_CASE("fencing tokens that increase across locks pass", "[jepsen][linear]") {
    HistoryBuilder h;
    h.op(1, "acquire", "A", "null", "5")
        .op(2, "acquire", "B", "null", "6")
        .op(3, "acquire", "A", "null", "9");
    CHECK(check_fencing_tokens(ops_of(h)).empty());
}

TEST_CASE("a fencing token that goes backwards across locks is found", "[jepsen][linear]") {
    HistoryBuilder h;
    h.op(1, "acquire", "A", "null", "9").op(2, "acquire", "B", "null", "6");
    std::vector<Finding> f = check_fencing_tokens(ops_of(h));
    REQUIRE(f.size() == 1);
    CHECK(f[0].check == "fencing-tokens");
    CHECK(f[0].lines == std::vector<int64_t>{1, 3});
}

TEST_CASE("concurrent grants may carry tokens in either order", "[jepsen][linear]") {
    HistoryBuilder h;
    h.invoke(1, "acquire", "A")
        .invoke(2, "acquire", "B")
        .ok(1, "acquire", "A", "9")
        .ok(2, "acquire", "B", "6");
    CHECK(check_fencing_tokens(ops_of(h)).empty());
}

TEST_CASE("the same fencing token granted twice is found", "[jepsen][linear]") {
    HistoryBuilder h;
    h.invoke(1, "acquire", "A")
        .invoke(2, "acquire", "B")
        .ok(1, "acquire", "A", "7")
        .ok(2, "acquire", "B", "7");
    std::vector<Finding> f = check_fencing_tokens(ops_of(h));
    REQUIRE(f.size() == 1);
    CHECK_THAT(f[0].message, Catch::Contains("granted twice"));
}

TEST_CASE("a read that misses an acknowledged write is found", "[jepsen][linear]") {
    HistoryBuilder h;
    h.op(1, "write", "x", "1", "1").op(1, "write", "x", "2", "2").op(2, "read", "x", "null", "1");
    std::vector<Finding> f = check_acknowledged_writes(ops_of(h), true);
    REQUIRE(f.size() == 1);
    CHECK(f[0].check == "acknowledged-write");
    CHECK_THAT(f[0].message, Catch::Contains("write of 2"));
}

TEST_CASE("a read may see a later or concurrent write instead of the acknowledged one",
          "[jepsen][linear]") {
    HistoryBuilder h;
    h.op(1, "write", "x", "1", "1")
        .invoke(3, "write", "x", "3")
        .op(2, "read", "x", "null", "3")
        .info(3, "write", "x", "3")
        .invoke(4, "cas", "x", "[3,4]")
        .op(2, "read", "x", "null", "4")
        .ok(4, "cas", "x", "[3,4]");
    CHECK(check_acknowledged_writes(ops_of(h), true).empty());
}

TEST_CASE("acknowledged writes are tracked per key in the kv model", "[jepsen][linear]") {
    HistoryBuilder h;
    h.op(1, "write", "a", "1", "1").op(2, "read", "b", "null", "null");
    CHECK(check_acknowledged_writes(ops_of(h), true).empty());
    CHECK(check_acknowledged_writes(ops_of(h), false).size() == 1);
}

TEST_CASE("watch events in zxid order without gaps pass", "[jepsen][linear][watch]") {
    HistoryBuilder h;
    h.watch(1, "/a", 10, 4).watch(1, "/a", 12, 10).watch(2, "/a", 12, 10).watch(1, "/b", 11, 0);
    CHECK(watch_findings(h).empty());
}

TEST_CASE("watch events out of order, duplicated or with a gap are found",
          "[jepsen][linear][watch]") {
    HistoryBuilder backwards;
    backwards.watch(1, "/a", 12, 10).watch(1, "/a", 10, 4);
    CHECK(watch_findings(backwards).size() == 1);

    HistoryBuilder duplicate;
    duplicate.watch(1, "/a", 12, 10).watch(1, "/a", 12, 10);
    std::vector<Finding> f = watch_findings(duplicate);
    REQUIRE(f.size() == 1);
    CHECK_THAT(f[0].message, Catch::Contains("twice"));

    HistoryBuilder gap;
    gap.watch(1, "/a", 10, 4).watch(1, "/a", 15, 12);
    f = watch_findings(gap);
    REQUIRE(f.size() == 1);
    CHECK_THAT(f[0].message, Catch::Contains("gap"));
    CHECK(f[0].lines == std::vector<int64_t>{1, 2});
}

TEST_CASE("a linear check finding fails the whole history", "[jepsen][linear]") {
    HistoryBuilder h;
    h.op(1, "write", "x", "1", "1").watch(1, "/a", 12, 10).watch(1, "/a", 12, 10);
    CheckResult r = test::check_text("register", h.text());
    CHECK(r.search_verdict == Verdict::kLinearizable);
    CHECK(r.verdict == Verdict::kNotLinearizable);
}

TEST_CASE("a malformed watch event is bad input at its line", "[jepsen][linear][watch]") {
    std::string text = R"({"process":1,"type":"event","f":"watch","key":"/a","value":5})"
                       "\n";
    CHECK(test::bad_line("register", text) == 1);
}

}  // namespace
}  // namespace raftlock::jepsen
