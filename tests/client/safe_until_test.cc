#include "client/safe_until.h"

#include <catch2/catch.hpp>

namespace raftlock::client {

using namespace std::chrono_literals;

TEST_CASE("the default margin is a tenth of the timeout, at least 500 ms", "[client][safe]") {
    CHECK(default_safety_margin(1s) == 500ms);
    CHECK(default_safety_margin(3s) == 500ms);
    CHECK(default_safety_margin(30s) == 3s);
    CHECK(default_safety_margin(10min) == 60s);
    // Below the server's minimum (tests only) it stays under half the timeout.
    CHECK(default_safety_margin(600ms) == 300ms);
}

TEST_CASE("keepalives go out at a third of the timeout", "[client][safe]") {
    CHECK(keepalive_interval(30s) == 10s);
    CHECK(keepalive_interval(1s) == 333ms);
}

TEST_CASE("safe-until is the last acknowledged send time plus timeout minus margin",
          "[client][safe]") {
    const SteadyTime t0 = SteadyTime{} + 1000s;
    SafeUntil safe(10s, 1s);
    CHECK(!safe.deadline().has_value());
    CHECK(safe.passed(t0));

    safe.on_acknowledged(t0);
    REQUIRE(safe.deadline().has_value());
    CHECK(*safe.deadline() == t0 + 9s);
    CHECK(!safe.passed(t0 + 8999ms));
    CHECK(safe.passed(t0 + 9s));

    // A later keepalive moves it; an older acknowledgement arriving late does not move it back.
    safe.on_acknowledged(t0 + 3s);
    CHECK(*safe.deadline() == t0 + 12s);
    safe.on_acknowledged(t0 + 1s);
    CHECK(*safe.deadline() == t0 + 12s);
}

TEST_CASE("safe-until comes before the earliest possible server expiry by the margin",
          "[client][safe]") {
    // The leader receives a keepalive at or after its send time, so it cannot expire the session
    // before send + timeout; safe-until is margin earlier than that.
    const SteadyTime sent = SteadyTime{} + 50s;
    SafeUntil safe(5s, 500ms);
    safe.on_acknowledged(sent);
    const SteadyTime earliest_expiry = sent + 5s;
    CHECK(earliest_expiry - *safe.deadline() == 500ms);
}

}  // namespace raftlock::client
