#include "jepsen/checker/parsers.h"

#include <catch2/catch.hpp>

namespace raftlock::jepsen {
namespace {

TEST_CASE("jsonl parser reads every field of the DESIGN.md example", "[jepsen][parser]") {
    std::string text =
        R"({"index":0,"time_ns":1200,"process":3,"type":"invoke","f":"write","key":"k1","value":4})"
        "\n"
        R"({"index":1,"time_ns":1900,"process":3,"type":"ok","f":"write","key":"k1","value":4})"
        "\n"
        R"({"index":2,"time_ns":2100,"process":1,"type":"invoke","f":"cas","key":"k1","value":[4,7]})"
        "\n"
        R"({"index":3,"time_ns":9000,"process":1,"type":"info","f":"cas","key":"k1","value":[4,7]})"
        "\n";
    auto history = parse_jsonl(text, "h.jsonl");
    REQUIRE(history.ok());
    REQUIRE(history->events.size() == 4);
    const Event& cas = history->events[2];
    CHECK(cas.line == 3);
    CHECK(cas.time_ns == 2100);
    CHECK(cas.process == 1);
    CHECK(cas.type == EventType::kInvoke);
    CHECK(cas.f == "cas");
    CHECK(cas.key == "k1");
    CHECK(to_string(cas.value) == "[4,7]");
    CHECK(history->events[3].type == EventType::kInfo);
}

TEST_CASE("jsonl parser skips blank lines and nemesis records but counts their lines",
          "[jepsen][parser]") {
    std::string text =
        "\n"
        R"({"process":"nemesis","type":"info","f":"partition","value":"halves"})"
        "\n"
        R"({"process":0,"type":"invoke","f":"read","value":null})"
        "\r\n";
    auto history = parse_jsonl(text, "h.jsonl");
    REQUIRE(history.ok());
    REQUIRE(history->events.size() == 1);
    CHECK(history->events[0].line == 3);
    CHECK(history->events[0].key.empty());
}

TEST_CASE("jsonl parser reports the line of the first bad record", "[jepsen][parser]") {
    struct Case {
        const char* record;
        const char* message_part;
    };
    const Case cases[] = {
        {R"({"process":0,"type":"invoke","f":"read")", "not valid JSON"},
        {R"([1,2])", "JSON object"},
        {R"({"process":0,"type":"begin","f":"read"})", "\"type\""},
        {R"({"process":"x","type":"ok","f":"read"})", "\"process\""},
        {R"({"process":0,"type":"ok"})", "\"f\""},
        {R"({"process":0,"type":"ok","f":"read","value":1.5})", "\"value\""},
        {R"({"process":0,"type":"ok","f":"read","value":{"a":1}})", "\"value\""},
        {R"({"process":0,"type":"ok","f":"read","key":[1]})", "\"key\""},
        {R"({"process":0,"type":"ok","f":"read","time_ns":5})", "backwards"},
        {R"({"index":0,"process":0,"type":"ok","f":"read"})", "\"index\""},
    };
    for (const Case& c : cases) {
        std::string text = R"({"index":1,"time_ns":10,"process":9,"type":"invoke","f":"read"})"
                           "\n\n" +
                           std::string(c.record) + "\n";
        auto history = parse_jsonl(text, "h.jsonl");
        INFO(c.record);
        REQUIRE_FALSE(history.ok());
        CHECK(history.error().line == 3);
        CHECK_THAT(history.error().message, Catch::Contains(c.message_part));
    }
}

TEST_CASE("jepsen log parser reads tab and space separated records", "[jepsen][parser]") {
    std::string text =
        "INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]\n"
        "INFO  jepsen.util - 3   :fail   :cas    [1 4]  \n"
        "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n"
        "INFO  jepsen.util - 0\t:ok\t:read\t2\n"
        "INFO  jepsen.util - 2\t:info\t:write\t:timed-out\n"
        "INFO  jepsen.util - :nemesis\t:info\t:start\tnil\n";
    auto history = parse_jepsen_log(text, "etcd.log");
    REQUIRE(history.ok());
    REQUIRE(history->events.size() == 5);
    CHECK(to_string(history->events[0].value) == "[1,4]");
    CHECK(history->events[1].type == EventType::kFail);
    CHECK(history->events[1].error == "mismatch");  // etcd's cas answer "compare failed"
    CHECK(history->events[2].value.is_null());
    CHECK(history->events[3].value.int_value == 2);
    CHECK(history->events[4].type == EventType::kInfo);
    CHECK(to_string(history->events[4].value) == "\"timed-out\"");
    CHECK(history->events[4].line == 5);
}

TEST_CASE("jepsen log parser reports the line of the first bad record", "[jepsen][parser]") {
    const char* bad[] = {
        "DEBUG something else entirely",          "INFO  jepsen.util - x\t:ok\t:read\t1",
        "INFO  jepsen.util - 1\t:done\t:read\t1", "INFO  jepsen.util - 1\t:ok\tread\t1",
        "INFO  jepsen.util - 1\t:ok\t:cas\t[1 4", "INFO  jepsen.util - 1\t:ok\t:cas\t[1 4]]",
    };
    for (const char* line : bad) {
        std::string text =
            "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n\n" + std::string(line) + "\n";
        auto history = parse_jepsen_log(text, "etcd.log");
        INFO(line);
        REQUIRE_FALSE(history.ok());
        CHECK(history.error().line == 3);
    }
}

TEST_CASE("a line longer than 1 MiB is refused, not truncated", "[jepsen][parser]") {
    std::string text = "\n" + std::string(kLineBytesMax + 1, ' ') + "\n";
    auto history = parse_jsonl(text, "h.jsonl");
    REQUIRE_FALSE(history.ok());
    CHECK(history.error().line == 2);
}

TEST_CASE("values nested deeper than the limit are refused", "[jepsen][parser]") {
    std::string deep = std::string(20, '[') + std::string(20, ']');
    auto jsonl =
        parse_jsonl(R"({"process":0,"type":"invoke","f":"read","value":)" + deep + "}", "h.jsonl");
    CHECK_FALSE(jsonl.ok());
    auto log = parse_jepsen_log("INFO  jepsen.util - 0\t:invoke\t:read\t" + deep, "etcd.log");
    CHECK_FALSE(log.ok());
}

}  // namespace
}  // namespace raftlock::jepsen
