// LeaderRouting: where the client's connection goes, from what responses say.

#include "client/leader_routing.h"

#include <catch2/catch.hpp>

namespace raftlock::client {

namespace {

using namespace std::chrono_literals;

const SteadyTime t0 = SteadyTime{} + 1h;

}  // namespace

TEST_CASE("a server that does not say who it is never moves the client", "[client][routing]") {
    LeaderRouting routing(3);
    CHECK_FALSE(routing.on_response(0, 0, 2, t0).has_value());
    CHECK(routing.node_at(0) == 0);
}

TEST_CASE("a client on the leader stays", "[client][routing]") {
    LeaderRouting routing(3);
    CHECK_FALSE(routing.on_response(1, 7, 7, t0).has_value());
    CHECK(routing.node_at(1) == 7);
    CHECK_FALSE(routing.on_response(1, 7, 0, t0).has_value());  // no leader: nowhere to go
}

TEST_CASE("a client on a follower meets the other endpoints, then moves to the leader",
          "[client][routing]") {
    LeaderRouting routing(3);
    // Node 1 at endpoint 0 knows leader 3, behind an endpoint not met yet: meet the next one.
    CHECK(routing.on_response(0, 1, 3, t0) == std::optional<size_t>(1));
    // Endpoint 1 is node 2, a follower too: meet endpoint 2.
    CHECK(routing.on_response(1, 2, 3, t0) == std::optional<size_t>(2));
    CHECK_FALSE(routing.on_response(2, 3, 3, t0).has_value());
    // Node 2 becomes the leader: a client on node 3 goes straight to endpoint 1.
    CHECK(routing.on_response(2, 3, 2, t0 + 1s) == std::optional<size_t>(1));
}

TEST_CASE("moves to a known leader are spaced", "[client][routing]") {
    LeaderRouting routing(2);
    CHECK_FALSE(routing.on_response(1, 2, 2, t0).has_value());
    CHECK(routing.on_response(0, 1, 2, t0) == std::optional<size_t>(1));
    // Node 2 says node 1 leads, node 1 says node 2 does (an election in progress): the client
    // does not bounce between them faster than kMoveSpacing.
    CHECK_FALSE(routing.on_response(1, 2, 1, t0 + 1ms).has_value());
    CHECK(routing.on_response(1, 2, 1, t0 + LeaderRouting::kMoveSpacing) ==
          std::optional<size_t>(0));
}

TEST_CASE("a leader whose endpoint failed is left alone for a while", "[client][routing]") {
    LeaderRouting routing(3);
    CHECK_FALSE(routing.on_response(2, 3, 3, t0).has_value());
    CHECK(routing.on_response(0, 1, 3, t0 + 1s) == std::optional<size_t>(2));
    routing.on_connection_failed(2, t0 + 1s);
    // Node 1 still names node 3; endpoint 1 is unmet, so the client meets it instead.
    CHECK(routing.on_response(0, 1, 3, t0 + 2s) == std::optional<size_t>(1));
    CHECK_FALSE(routing.on_response(1, 2, 3, t0 + 2s).has_value());
    // Once the pause is over, the leader is tried again.
    CHECK(routing.on_response(1, 2, 3, t0 + 1s + LeaderRouting::kAvoidAfterFailure) ==
          std::optional<size_t>(2));
}

TEST_CASE("a leader behind none of the endpoints leaves the client where it is",
          "[client][routing]") {
    LeaderRouting routing(2);
    CHECK(routing.on_response(0, 1, 9, t0) == std::optional<size_t>(1));
    CHECK_FALSE(routing.on_response(1, 2, 9, t0).has_value());
    CHECK_FALSE(routing.on_response(1, 2, 9, t0 + 1h).has_value());
}

}  // namespace raftlock::client
