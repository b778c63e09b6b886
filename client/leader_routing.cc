#include "client/leader_routing.h"

#include "base/assert.h"

namespace raftlock::client {

LeaderRouting::LeaderRouting(size_t endpoints) : ids_(endpoints, 0), avoid_until_(endpoints) {
    RL_ASSERT(endpoints > 0);
}

std::optional<size_t> LeaderRouting::on_response(size_t at,
                                                 uint64_t node_id,
                                                 uint64_t leader,
                                                 SteadyTime now) {
    RL_ASSERT(at < ids_.size());
    if (node_id == 0) {
        return std::nullopt;  // the server does not say who it is: nothing to route by
    }
    ids_[at] = node_id;
    if (leader == 0 || leader == node_id) {
        return std::nullopt;  // on the leader already, or no leader to go to
    }
    if (auto target = endpoint_of(leader, now)) {
        if (now < next_leader_move_) {
            return std::nullopt;
        }
        next_leader_move_ = now + kMoveSpacing;
        return target;
    }
    // The leader is behind none of the endpoints met so far: meet the next one. Each visit makes
    // one more endpoint known (or avoided), so these moves end by themselves.
    return unvisited_after(at, now);
}

void LeaderRouting::on_connection_failed(size_t at, SteadyTime now) {
    RL_ASSERT(at < ids_.size());
    avoid_until_[at] = now + kAvoidAfterFailure;
}

std::optional<size_t> LeaderRouting::endpoint_of(uint64_t node_id, SteadyTime now) const {
    RL_ASSERT(node_id != 0);
    for (size_t i = 0; i < ids_.size(); ++i) {
        if (ids_[i] == node_id && !avoided(i, now)) {
            return i;
        }
    }
    return std::nullopt;
}

std::optional<size_t> LeaderRouting::unvisited_after(size_t at, SteadyTime now) const {
    for (size_t step = 1; step < ids_.size(); ++step) {
        const size_t i = (at + step) % ids_.size();
        if (ids_[i] == 0 && !avoided(i, now)) {
            return i;
        }
    }
    return std::nullopt;
}

}  // namespace raftlock::client
