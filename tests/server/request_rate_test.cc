#include "server/request_rate.h"

#include <catch2/catch.hpp>

namespace raftlock::server {
namespace {

TEST_CASE("a connection's request rate: a second's burst, then the rate", "[server][limits]") {
    RequestRate rate;
    for (int i = 0; i < 10; ++i) {
        CHECK(rate.admit(0, 10));
    }
    CHECK_FALSE(rate.admit(0, 10));   // the burst is one second's worth
    CHECK_FALSE(rate.admit(99, 10));  // 10 a second: one more every 100 ms
    CHECK(rate.admit(100, 10));
    CHECK_FALSE(rate.admit(100, 10));
    // A long pause refills one second's worth, not more.
    int admitted = 0;
    while (rate.admit(60'000, 10)) {
        ++admitted;
    }
    CHECK(admitted == 10);
    // A clock that steps back neither refills nor breaks it.
    CHECK_FALSE(rate.admit(1'000, 10));
    CHECK(rate.admit(60'100, 10));
}

}  // namespace
}  // namespace raftlock::server
