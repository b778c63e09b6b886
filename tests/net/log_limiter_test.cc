#include "net/log_limiter.h"

#include <catch2/catch.hpp>

namespace raftlock::net {
namespace {

using namespace std::chrono_literals;

TEST_CASE("a repeated line is held back for the interval and then counted", "[net][log]") {
    LogLimiter limiter(1000ms);
    const auto t0 = LogLimiter::Clock::time_point{};
    uint64_t suppressed = 99;
    CHECK(limiter.allow("out:2", "connect: refused", t0, suppressed));
    CHECK(suppressed == 0);
    CHECK(!limiter.allow("out:2", "connect: refused", t0 + 10ms, suppressed));
    CHECK(!limiter.allow("out:2", "connect: refused", t0 + 999ms, suppressed));
    CHECK(limiter.allow("out:2", "connect: refused", t0 + 1000ms, suppressed));
    CHECK(suppressed == 2);
    // Another key is independent; a new message on a key prints at once.
    CHECK(limiter.allow("out:3", "connect: refused", t0 + 1001ms, suppressed));
    CHECK(limiter.allow("out:2", "connect: timed out", t0 + 1002ms, suppressed));
    CHECK(suppressed == 0);
}

TEST_CASE("the key map is bounded", "[net][log]") {
    LogLimiter limiter(1000ms, 4);
    const auto t0 = LogLimiter::Clock::time_point{};
    uint64_t suppressed = 0;
    for (int i = 0; i < 100; ++i) {
        CHECK(limiter.allow("key" + std::to_string(i), "m", t0, suppressed));
    }
    // Forgotten keys print again: at most one extra line each.
    CHECK(limiter.allow("key0", "m", t0, suppressed));
    CHECK(!limiter.allow("key0", "m", t0, suppressed));
}

}  // namespace
}  // namespace raftlock::net
