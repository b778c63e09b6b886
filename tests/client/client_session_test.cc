// Sessions against FakeServer: keepalive pacing, safe-until, and the session callback.

#include <atomic>

#include <catch2/catch.hpp>

#include "client_test_util.h"

namespace raftlock::client::testing {

using namespace std::chrono_literals;

TEST_CASE("keepalives go out at a third of the session timeout", "[client][session]") {
    FakeServer server;
    ClientOptions options = test_options({server.endpoint()});
    options.safety_margin = 100ms;
    Client client(options);
    REQUIRE(client.open_session(300ms).ok());
    const auto first_safe = client.safe_until();
    REQUIRE(first_safe.has_value());
    REQUIRE(server.wait_until(has_body(proto::Request::kKeepAlive, 4)));
    const auto sent = server.received();
    std::vector<SteadyTime> times;
    for (const Received& r : sent) {
        if (r.request.has_keep_alive()) {
            CHECK(r.request.session_id() == 1000);
            CHECK(r.request.seq() == 0);
            times.push_back(r.at);
        }
    }
    // The first keepalive may come early (a fresh connection sends one at once); the ones after
    // it are paced at 100 ms.
    for (size_t i = 2; i < times.size(); i++) {
        CHECK(times[i] - times[i - 1] >= 80ms);
    }
    CHECK(*client.safe_until() > *first_safe);
}

TEST_CASE("the session callback fires when safe-until passes unacknowledged", "[client][session]") {
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<std::pair<SessionLoss, SteadyTime>> lost;
    FakeServer server;
    server.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& request) {
        if (!request.has_keep_alive()) {  // keepalives vanish: a partitioned leader
            s.reply(conn, FakeServer::ok_response(request));
        }
    });
    ClientOptions options = test_options({server.endpoint()});
    options.safety_margin = 200ms;
    Client client(options);
    client.set_session_callback([&](SessionLoss loss) { lost.set({loss, SteadyClock::now()}); });
    const SteadyTime before_open = SteadyClock::now();
    REQUIRE(client.open_session(600ms).ok());
    const SteadyTime safe = *client.safe_until();
    REQUIRE(lost.wait());
    const auto [loss, at] = lost.values()[0];
    CHECK(loss == SessionLoss::kSafeUntilPassed);
    CHECK(at >= safe);
    // Before the earliest moment the server could expire the session (open + timeout).
    CHECK(at < before_open + 600ms);
    CHECK(safe <= before_open + 400ms + 50ms);
}

TEST_CASE("a recovering keepalive ends the jeopardy and a later loss fires again",
          "[client][session]") {
    std::atomic<bool> answer_keepalives{false};
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<SessionLoss> lost;
    FakeServer server;
    server.set_handler([&](FakeServer& s, uint64_t conn, const proto::Request& request) {
        if (!request.has_keep_alive() || answer_keepalives) {
            s.reply(conn, FakeServer::ok_response(request));
        }
    });
    ClientOptions options = test_options({server.endpoint()});
    options.safety_margin = 200ms;
    Client client(options);
    client.set_session_callback([&](SessionLoss loss) { lost.set(loss); });
    REQUIRE(client.open_session(600ms).ok());
    REQUIRE(lost.wait(1));
    answer_keepalives = true;
    REQUIRE(client.keep_alive().ok());
    CHECK(*client.safe_until() > SteadyClock::now());
    answer_keepalives = false;
    REQUIRE(lost.wait(2));
    CHECK(lost.values()[1] == SessionLoss::kSafeUntilPassed);
}

TEST_CASE("a SessionEnded push ends the session and later writes fail", "[client][session]") {
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<SessionLoss> lost;
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    client.set_session_callback([&](SessionLoss loss) { lost.set(loss); });
    REQUIRE(client.open_session(10s).ok());
    REQUIRE(server.wait_until(has_body(proto::Request::kOpenSession)));
    proto::ServerMessage push;
    push.mutable_session_ended()->set_session_id(1000);
    push.mutable_session_ended()->set_expired(true);
    server.send(server.received()[0].conn, push);
    REQUIRE(lost.wait());
    CHECK(lost.values()[0] == SessionLoss::kExpired);
    CHECK(!client.session_id().has_value());
    auto created = client.create("/x", "");
    REQUIRE(!created.ok());
    CHECK(created.error().code == ErrorCode::kSessionLost);
}

TEST_CASE("SESSION_EXPIRED on a keepalive ends the session", "[client][session]") {
    std::atomic<bool> expired{false};
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<SessionLoss> lost;
    FakeServer server;
    server.set_handler([&](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_keep_alive() && expired) {
            response.set_code(proto::SESSION_EXPIRED);
        }
        s.reply(conn, response);
    });
    Client client(test_options({server.endpoint()}));
    client.set_session_callback([&](SessionLoss loss) { lost.set(loss); });
    REQUIRE(client.open_session(10s).ok());
    expired = true;
    auto renewed = client.keep_alive();
    REQUIRE(!renewed.ok());
    CHECK(renewed.error().code == ErrorCode::kSessionExpired);
    REQUIRE(lost.wait());
    CHECK(lost.values()[0] == SessionLoss::kExpired);
    CHECK(!client.session_id().has_value());
}

TEST_CASE("closing a session sends a write and fires no callback", "[client][session]") {
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<SessionLoss> lost;
    FakeServer server;
    server.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& request) {
        if (request.has_close_session()) {
            // The server pushes the end to every connection of the session before answering.
            proto::ServerMessage push;
            push.mutable_session_ended()->set_session_id(1000);
            s.send(conn, push);
        }
        s.reply(conn, FakeServer::ok_response(request));
    });
    Client client(test_options({server.endpoint()}));
    client.set_session_callback([&](SessionLoss loss) { lost.set(loss); });
    REQUIRE(client.open_session(10s).ok());
    REQUIRE(client.close_session().ok());
    CHECK(!client.session_id().has_value());
    const auto closes = requests_of(server, proto::Request::kCloseSession);
    REQUIRE(closes.size() == 1);
    CHECK(closes[0].seq() == 1);
    CHECK(lost.values().empty());
    // A new session may follow.
    CHECK(client.open_session(10s).ok());
}

TEST_CASE("one session per client", "[client][session]") {
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    auto second = client.open_session(10s);
    REQUIRE(!second.ok());
    CHECK(second.error().code == ErrorCode::kInvalidArgument);
    ClientOptions options = test_options({server.endpoint()});
    options.safety_margin = 500ms;
    auto bad_margin = Client(options).open_session(400ms);
    REQUIRE(!bad_margin.ok());
    CHECK(bad_margin.error().code == ErrorCode::kInvalidArgument);
}

}  // namespace raftlock::client::testing
