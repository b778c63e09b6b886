#include "net/admin_http.h"

#include <catch2/catch.hpp>

#include "tests/net/net_test_util.h"

namespace raftlock::net {
namespace {

namespace asio = boost::asio;
using testing::RawClient;
using testing::run_for;
using testing::run_until;
using namespace std::chrono_literals;

struct Fixture {
    Fixture()
        : http(io,
               AdminHttpOptions{},
               {{"/status",
                 [this] {
                     ++status_calls;
                     return HttpReply{200, "application/json", R"({"role":"leader"})"};
                 }},
                {"/healthz", [] {
                     return HttpReply{503, "text/plain", "not ready\n"};
                 }}}) {
        REQUIRE(http.start().ok());
    }

    asio::io_context io;
    int status_calls = 0;
    AdminHttp http;
};

size_t count(const std::string& haystack, const std::string& needle) {
    size_t n = 0;
    for (size_t at = haystack.find(needle); at != std::string::npos;
         at = haystack.find(needle, at + 1)) {
        ++n;
    }
    return n;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST_CASE("GET of a route answers with its callback's reply, keeping the connection",
          "[net][http]") {
    Fixture f;
    RawClient c(f.io, f.http.port());
    c.start_reading();
    c.write("GET /status HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), R"({"role":"leader"})"); }));
    CHECK_THAT(c.received(), Catch::StartsWith("HTTP/1.1 200 OK\r\n"));
    CHECK_THAT(c.received(), Catch::Contains("Content-Type: application/json\r\n"));
    CHECK_THAT(c.received(), Catch::Contains("Content-Length: 17\r\n"));
    // Keep-alive, with a query string and two pipelined requests.
    c.write("GET /status?verbose=1 HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "not ready\n"); }));
    CHECK(count(c.received(), "HTTP/1.1 200 OK") == 2);
    CHECK(count(c.received(), "HTTP/1.1 503 Service Unavailable") == 1);
    CHECK(f.status_calls == 2);
    CHECK(!c.closed_by_server());
}

TEST_CASE("HEAD gets the headers of a GET and no body", "[net][http]") {
    Fixture f;
    RawClient c(f.io, f.http.port());
    c.start_reading();
    c.write("HEAD /status HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "not ready\n"); }));
    const std::string& r = c.received();
    CHECK_THAT(r, Catch::StartsWith("HTTP/1.1 200 OK\r\n"));
    CHECK_THAT(r, Catch::Contains("Content-Length: 17\r\n"));
    CHECK(r.find("leader") == std::string::npos);
}

TEST_CASE("an unknown path gets 404 and the connection stays", "[net][http]") {
    Fixture f;
    RawClient c(f.io, f.http.port());
    c.start_reading();
    c.write("GET /nope HTTP/1.1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "no such page: /nope\n"); }));
    CHECK_THAT(c.received(), Catch::StartsWith("HTTP/1.1 404 Not Found\r\n"));
    run_for(f.io, 10ms);
    CHECK(!c.closed_by_server());
}

TEST_CASE("a method other than GET/HEAD on a route gets 405 with Allow", "[net][http]") {
    Fixture f;
    RawClient c(f.io, f.http.port());
    c.start_reading();
    c.write("POST /status HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "GET or HEAD only\n"); }));
    CHECK_THAT(c.received(), Catch::StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
    CHECK_THAT(c.received(), Catch::Contains("Allow: GET, HEAD\r\n"));
    CHECK(f.status_calls == 0);
}

TEST_CASE("a malformed request gets 400 and the connection closes", "[net][http]") {
    Fixture f;
    for (const std::string& bad :
         {std::string("GARBAGE\r\n\r\n"), std::string("GET /status HTTP/9.x\r\n\r\n"),
          std::string("GET /status HTTP/1.1\r\nX-Big: ") + std::string(20000, 'h') + "\r\n\r\n",
          std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)}) {
        RawClient c(f.io, f.http.port());
        c.start_reading();
        c.write(bad);
        REQUIRE(run_until(f.io, [&] { return c.closed_by_server(); }));
        CHECK_THAT(c.received(), Catch::StartsWith("HTTP/1.1 400 Bad Request\r\n"));
        CHECK_THAT(c.received(), Catch::Contains("Connection: close\r\n"));
    }
    CHECK(f.status_calls == 0);
}

TEST_CASE("HTTP/1.0 without keep-alive closes after the response", "[net][http]") {
    Fixture f;
    RawClient c(f.io, f.http.port());
    c.start_reading();
    c.write("GET /status HTTP/1.0\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return c.closed_by_server(); }));
    CHECK_THAT(c.received(), Catch::StartsWith("HTTP/1.0 200 OK\r\n"));
    CHECK(ends_with(c.received(), R"({"role":"leader"})"));
}

TEST_CASE("an idle keep-alive connection is closed at the timeout", "[net][http]") {
    asio::io_context io;
    AdminHttpOptions o;
    o.idle_timeout_ms = 40;
    AdminHttp http(io, o, {});
    REQUIRE(http.start().ok());
    RawClient c(io, http.port());
    c.start_reading();
    c.write("GET /x HTTP/1.1\r\n\r\n");
    REQUIRE(run_until(io, [&] { return c.closed_by_server(); }));
    CHECK_THAT(c.received(), Catch::StartsWith("HTTP/1.1 404"));
}

}  // namespace
}  // namespace raftlock::net
