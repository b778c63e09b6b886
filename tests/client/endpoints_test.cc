#include "client/endpoints.h"

#include <catch2/catch.hpp>

namespace raftlock::client {

TEST_CASE("an endpoint list parses into hosts and ports in order", "[client][endpoints]") {
    auto parsed = parse_endpoints("127.0.0.1:7101, 127.0.0.1:7102 ,localhost:7103");
    REQUIRE(parsed.ok());
    REQUIRE(parsed->size() == 3);
    CHECK(parsed.value()[0] == Endpoint{"127.0.0.1", 7101});
    CHECK(parsed.value()[1] == Endpoint{"127.0.0.1", 7102});
    CHECK(parsed.value()[2] == Endpoint{"localhost", 7103});
    CHECK(to_string(parsed.value()) == "127.0.0.1:7101,127.0.0.1:7102,localhost:7103");
}

TEST_CASE("IPv6 endpoints are written in brackets", "[client][endpoints]") {
    auto parsed = parse_endpoints("[::1]:7101");
    REQUIRE(parsed.ok());
    CHECK(parsed.value()[0] == Endpoint{"::1", 7101});
    CHECK(to_string(parsed.value()[0]) == "[::1]:7101");
    CHECK(!parse_endpoints("::1:7101").ok());
}

TEST_CASE("the default endpoint list parses", "[client][endpoints]") {
    auto parsed = parse_endpoints(kDefaultEndpoints);
    REQUIRE(parsed.ok());
    CHECK(parsed->size() == 3);
}

TEST_CASE("bad endpoint lists are rejected with the bad item named", "[client][endpoints]") {
    struct Case {
        const char* text;
        const char* mentions;
    };
    const Case cases[] = {
        {"", "empty"},
        {"  ", "empty"},
        {"127.0.0.1", "no port"},
        {"127.0.0.1:", "port"},
        {"127.0.0.1:0", "1..65535"},
        {"127.0.0.1:65536", "1..65535"},
        {"127.0.0.1:12x", "1..65535"},
        {":7101", "no host"},
        {"a:1,,b:2", "empty item"},
        {"a:1,", "empty item"},
        {"a:1,a:1", "twice"},
        {"[::1]7101", "IPv6"},
    };
    for (const Case& c : cases) {
        INFO(c.text);
        auto parsed = parse_endpoints(c.text);
        REQUIRE(!parsed.ok());
        CHECK_THAT(parsed.error(), Catch::Contains(c.mentions));
    }
}

TEST_CASE("an endpoint list is bounded", "[client][endpoints]") {
    std::string text;
    for (size_t i = 0; i <= kEndpointsMax; i++) {
        text += (i ? "," : "") + std::string("h:") + std::to_string(1000 + i);
    }
    auto parsed = parse_endpoints(text);
    REQUIRE(!parsed.ok());
    CHECK_THAT(parsed.error(), Catch::Contains("more than"));
}

}  // namespace raftlock::client
