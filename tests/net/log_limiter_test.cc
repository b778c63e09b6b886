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
    LogLimiter limiter(1000ms, 4, 1000, 1000);
    const auto t0 = LogLimiter::Clock::time_point{};
    uint64_t suppressed = 0;
    for (int i = 0; i < 100; ++i) {
        CHECK(limiter.allow("key" + std::to_string(i), "m", t0, suppressed));
    }
    // Forgotten keys print again: at most one extra line each.
    CHECK(limiter.allow("key0", "m", t0, suppressed));
    CHECK(!limiter.allow("key0", "m", t0, suppressed));
}

// Issue 16, row 9: a refusal line carried the remote address and a count, so every line was a new
// message and 200 reconnecting sockets logged ~4 MB/s. The budget bounds every key together.
TEST_CASE("lines whose text changes every time stay within the budget", "[net][log]") {
    LogLimiter limiter(5000ms);  // 10 lines a second, a burst of 20
    const auto t0 = LogLimiter::Clock::time_point{};
    uint64_t suppressed = 0;
    int printed = 0;
    uint64_t reported = 0;
    // 10,000 lines in 10 seconds, each different, over 50 keys.
    for (int i = 0; i < 10000; ++i) {
        const auto now = t0 + std::chrono::milliseconds(i);
        if (limiter.allow("refuse:" + std::to_string(i % 50),
                          "refusing 10.0.0." + std::to_string(i), now, suppressed)) {
            ++printed;
            reported += suppressed;
        }
    }
    CHECK(printed >= 20);
    CHECK(printed <= 20 + 10 * 10);
    // Every line held back is accounted for in a printed one, but for those after the last.
    CHECK(reported <= 10000u - static_cast<uint64_t>(printed));
    CHECK(reported >= 10000u - static_cast<uint64_t>(printed) - 200);
    // The budget refills: after a quiet second, lines print again.
    CHECK(limiter.allow("other", "x", t0 + 12000ms, suppressed));
    CHECK(suppressed > 0);
}

}  // namespace
}  // namespace raftlock::net
