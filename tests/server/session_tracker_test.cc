#include "server/session_tracker.h"

#include <catch2/catch.hpp>

namespace raftlock::server {
namespace {

TEST_CASE("a new leader gives every session a full timeout", "[server][sessions]") {
    SessionTracker t;
    t.reset({{7, 1000}, {9, 5000}}, 100);
    CHECK(t.find(7)->deadline_ms == 1100);
    CHECK(t.find(9)->deadline_ms == 5100);
    CHECK(t.take_expired(1099, 1000, 10).empty());
    CHECK(t.take_expired(1100, 1000, 10) == std::vector<uint64_t>{7});
}

TEST_CASE("a keepalive before the deadline renews it", "[server][sessions]") {
    SessionTracker t;
    t.add(7, 1000, 0);
    CHECK(t.touch(7, 900) == SessionTracker::Touch::kRenewed);
    CHECK(t.find(7)->deadline_ms == 1900);
    CHECK(t.take_expired(1899, 1000, 10).empty());
    CHECK(t.touch(8, 900) == SessionTracker::Touch::kUnknown);
}

TEST_CASE("a keepalive after the deadline is not acknowledged: an expiry may be in the log",
          "[server][sessions]") {
    SessionTracker t;
    t.add(7, 1000, 0);
    CHECK(t.touch(7, 1000) == SessionTracker::Touch::kExpiring);
    CHECK(t.find(7)->deadline_ms == 1000);
}

TEST_CASE("an expiry is offered once, and again after the retry interval", "[server][sessions]") {
    SessionTracker t;
    t.add(1, 100, 0);
    t.add(2, 50, 0);
    CHECK(t.take_expired(200, 1000, 10) == std::vector<uint64_t>{2, 1});  // oldest deadline first
    CHECK(t.take_expired(500, 1000, 10).empty());
    CHECK(t.take_expired(1200, 1000, 10) == std::vector<uint64_t>{1, 2});
    t.remove(1);
    CHECK(t.take_expired(5000, 1000, 10) == std::vector<uint64_t>{2});
    CHECK(t.size() == 1);
}

TEST_CASE("take_expired returns at most max sessions per call", "[server][sessions]") {
    SessionTracker t;
    for (uint64_t s = 1; s <= 10; ++s) {
        t.add(s, 10, 0);
    }
    CHECK(t.take_expired(100, 1000, 4).size() == 4);
    CHECK(t.take_expired(100, 1000, 4).size() == 4);
    CHECK(t.take_expired(100, 1000, 4).size() == 2);
    CHECK(t.take_expired(100, 1000, 4).empty());
}

}  // namespace
}  // namespace raftlock::server
