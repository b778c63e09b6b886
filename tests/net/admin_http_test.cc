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

// A port with the console's kinds of routes: one that echoes its query, a POST, and a long-poll
// whose parked requests the test answers.
struct RouteFixture {
    explicit RouteFixture(AdminHttpOptions options = {}) : http(io, options, {}) {
        http.add_route("/echo", HttpMethod::kGet, [](const HttpRequest& r) {
            std::string body;
            for (const auto& [k, v] : r.query) {
                body += k + "=[" + v + "];";
            }
            return HttpReply{200, "text/plain", body};
        });
        http.add_route("/act", HttpMethod::kPost, [this](const HttpRequest& r) {
            ++posts;
            return HttpReply{200, "text/plain", "did " + r.body + "\n"};
        });
        http.add_async_route("/wait", HttpMethod::kGet,
                             [this](const HttpRequest& r, std::shared_ptr<HttpPending> pending) {
                                 if (r.query.contains("now")) {
                                     pending->reply(HttpReply{200, "text/plain", "at once\n"});
                                     return;
                                 }
                                 parked.push_back(std::move(pending));
                             });
        REQUIRE(http.start().ok());
    }

    asio::io_context io;
    int posts = 0;
    std::vector<std::shared_ptr<HttpPending>> parked;
    AdminHttp http;
};

TEST_CASE("a route reads the decoded query string; a broken one gets 400", "[net][http]") {
    RouteFixture f;
    RawClient c(f.io, f.http.port());
    c.start_reading();
    c.write("GET /echo?path=%2Fa%2Fb&x=1+2&x=3&flag HTTP/1.1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), ";"); }));
    CHECK(ends_with(c.received(), "flag=[];path=[/a/b];x=[3];"));
    RawClient bad(f.io, f.http.port());
    bad.start_reading();
    bad.write("GET /echo?a=%zz HTTP/1.1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(bad.received(), "query string\n"); }));
    CHECK_THAT(bad.received(), Catch::StartsWith("HTTP/1.1 400 Bad Request\r\n"));
    std::string many = "GET /echo?";
    for (int i = 0; i < 40; ++i) {
        many += "k" + std::to_string(i) + "=1&";
    }
    RawClient big(f.io, f.http.port());
    big.start_reading();
    big.write(many + " HTTP/1.1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(big.received(), "query parameters\n"); }));
    CHECK_THAT(big.received(), Catch::StartsWith("HTTP/1.1 400 Bad Request\r\n"));
}

TEST_CASE("a POST route takes POST with the console header only; GET of it gets 405",
          "[net][http]") {
    RouteFixture f;
    RawClient c(f.io, f.http.port());
    c.start_reading();
    c.write("POST /act HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "cross-site posts\n"); }));
    CHECK_THAT(c.received(), Catch::StartsWith("HTTP/1.1 403 Forbidden\r\n"));
    CHECK(f.posts == 0);
    c.write("POST /act HTTP/1.1\r\nX-Raftlock-Console: 1\r\nContent-Length: 2\r\n\r\nhi");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "did hi\n"); }));
    CHECK(f.posts == 1);
    c.write("GET /act HTTP/1.1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "/act takes POST only\n"); }));
    CHECK_THAT(c.received(), Catch::Contains("HTTP/1.1 405 Method Not Allowed\r\n"));
    CHECK_THAT(c.received(), Catch::Contains("Allow: POST\r\n"));
    c.write("POST /echo HTTP/1.1\r\nX-Raftlock-Console: 1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "GET or HEAD only\n"); }));
    c.write("POST /nope HTTP/1.1\r\nX-Raftlock-Console: 1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "no such page: /nope\n"); }));
    CHECK(f.posts == 1);
    CHECK(!c.closed_by_server());
}

TEST_CASE("an asynchronous route answers later, and the connection goes on", "[net][http]") {
    RouteFixture f;
    RawClient c(f.io, f.http.port());
    c.start_reading();
    c.write("GET /wait?now=1 HTTP/1.1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "at once\n"); }));
    CHECK(f.http.parked() == 0);
    c.write("GET /wait HTTP/1.1\r\n\r\n");
    REQUIRE(run_until(f.io, [&] { return f.parked.size() == 1; }));
    CHECK(f.http.parked() == 1);
    CHECK(f.parked[0]->waiting());
    run_for(f.io, 20ms);
    CHECK(count(c.received(), "HTTP/1.1 200") == 1);
    // A request sent meanwhile waits for the parked one's reply, then is answered in order.
    c.write("GET /echo?after=1 HTTP/1.1\r\n\r\n");
    run_for(f.io, 20ms);
    CHECK(count(c.received(), "HTTP/1.1 200") == 1);
    CHECK(f.parked[0]->reply(HttpReply{200, "text/plain", "later\n"}));
    CHECK(!f.parked[0]->reply(HttpReply{200, "text/plain", "twice\n"}));
    CHECK(!f.parked[0]->waiting());
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "after=[1];"); }));
    CHECK(count(c.received(), "later\n") == 1);
    CHECK(f.http.parked() == 0);
}

TEST_CASE("a parked request whose client leaves is freed, and its reply goes nowhere",
          "[net][http]") {
    RouteFixture f;
    {
        RawClient c(f.io, f.http.port());
        c.start_reading();
        c.write("GET /wait HTTP/1.1\r\n\r\n");
        REQUIRE(run_until(f.io, [&] { return f.parked.size() == 1; }));
    }
    REQUIRE(run_until(f.io, [&] { return f.http.parked() == 0; }));
    CHECK(!f.parked[0]->waiting());
    CHECK(!f.parked[0]->reply(HttpReply{}));
}

TEST_CASE("parked requests are bounded, and one not answered in time is closed", "[net][http]") {
    AdminHttpOptions o;
    o.parked_max = 2;
    o.park_timeout_ms = 80;
    RouteFixture f(o);
    RawClient a(f.io, f.http.port());
    RawClient b(f.io, f.http.port());
    RawClient c(f.io, f.http.port());
    size_t n = 0;
    for (RawClient* client : {&a, &b, &c}) {
        client->start_reading();
        client->write("GET /wait HTTP/1.1\r\n\r\n");
        if (++n < 3) {  // one at a time: the third is the one over the bound
            REQUIRE(run_until(f.io, [&] { return f.parked.size() == n; }));
        }
    }
    REQUIRE(run_until(f.io, [&] { return ends_with(c.received(), "try again\n"); }));
    CHECK_THAT(c.received(), Catch::StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
    CHECK(f.parked.size() == 2);
    CHECK(f.http.parked() == 2);
    REQUIRE(run_until(f.io, [&] { return a.closed_by_server() && b.closed_by_server(); }));
    CHECK(a.received().empty());
    CHECK(f.http.parked() == 0);
    CHECK(!f.parked[0]->waiting());
}

}  // namespace
}  // namespace raftlock::net
