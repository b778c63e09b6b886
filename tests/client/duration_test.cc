#include "client/duration.h"

#include <catch2/catch.hpp>

namespace raftlock::client {

using std::chrono::milliseconds;

TEST_CASE("durations parse with their units", "[client][duration]") {
    struct Case {
        const char* text;
        int64_t ms;
    };
    const Case cases[] = {{"500ms", 500}, {"30s", 30000}, {"5m", 300000},   {"1h", 3600000},
                          {"0", 0},       {"0s", 0},      {"1500ms", 1500}, {"24h", 86400000}};
    for (const Case& c : cases) {
        INFO(c.text);
        auto parsed = parse_duration(c.text);
        REQUIRE(parsed.ok());
        CHECK(parsed->count() == c.ms);
    }
}

TEST_CASE("durations without a unit or with a fraction are rejected", "[client][duration]") {
    for (const char* text : {"30", "1.5s", "-1s", "s", "10d", "", "5 s", "ms", "1e3ms"}) {
        INFO(text);
        auto parsed = parse_duration(text);
        REQUIRE(!parsed.ok());
        CHECK_THAT(parsed.error(), Catch::Contains("500ms, 30s"));
    }
}

TEST_CASE("absurdly long durations are rejected, without overflow", "[client][duration]") {
    CHECK(!parse_duration("9999999h").ok());
    CHECK(!parse_duration("999999999999ms").ok());
    CHECK(!parse_duration("9999999999999s").ok());
}

TEST_CASE("durations format in the shortest exact unit", "[client][duration]") {
    CHECK(format_duration(milliseconds(0)) == "0s");
    CHECK(format_duration(milliseconds(500)) == "500ms");
    CHECK(format_duration(milliseconds(1500)) == "1500ms");
    CHECK(format_duration(milliseconds(30000)) == "30s");
    CHECK(format_duration(milliseconds(300000)) == "5m");
    CHECK(format_duration(milliseconds(7200000)) == "2h");
}

}  // namespace raftlock::client
