#pragma once

// Which endpoint the client's connection should be on: the leader's, once the client can tell
// which of its endpoints that is. Pure; the core feeds it what responses and connections show.
//
// Any node serves any request, but a follower forwards each write to the leader and learns of its
// commit a round later; a client on the leader saves that hop (docs/decisions/0012). Servers say
// in every response who they are and which leader they know, so the client learns the node id
// behind each endpoint as it visits them. It moves to the leader's endpoint when it knows it, and
// otherwise visits an endpoint whose node it has not met yet. Endpoints whose connection failed
// are left alone for a while, so a leader the client cannot reach does not draw it back again and
// again. Moves to a known leader are spaced (kMoveSpacing) so that nodes disagreeing about the
// leader during an election cannot bounce the client between them.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "client/safe_until.h"

namespace raftlock::client {

class LeaderRouting {
public:
    static constexpr std::chrono::milliseconds kMoveSpacing{250};
    static constexpr std::chrono::milliseconds kAvoidAfterFailure{2000};

    explicit LeaderRouting(size_t endpoints);

    // A response arrived on the connection to endpoint `at`, from node `node_id` (0: a server too
    // old to say), which knows `leader` (0: none). Returns the endpoint to move to, if any.
    std::optional<size_t> on_response(size_t at, uint64_t node_id, uint64_t leader, SteadyTime now);
    // The connection to `at` could not be made, or broke (not: the node answered that it cannot
    // serve now, which during an election says nothing about a moment later).
    void on_connection_failed(size_t at, SteadyTime now);

    // The node last seen behind endpoint `at`; 0 when not known.
    uint64_t node_at(size_t at) const { return ids_.at(at); }

private:
    bool avoided(size_t at, SteadyTime now) const { return now < avoid_until_[at]; }
    std::optional<size_t> endpoint_of(uint64_t node_id, SteadyTime now) const;
    std::optional<size_t> unvisited_after(size_t at, SteadyTime now) const;

    std::vector<uint64_t> ids_;            // by endpoint; 0 = not met yet
    std::vector<SteadyTime> avoid_until_;  // by endpoint
    SteadyTime next_leader_move_{};
};

}  // namespace raftlock::client
