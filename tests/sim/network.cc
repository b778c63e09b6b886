#include "tests/sim/network.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::sim {

std::string NetworkProfile::describe() const {
    return fmt::format("drop={}/1000 dup={}/1000 delay={}..{}us spikes={}/1000 up to +{}us",
                       drop_per_mille, duplicate_per_mille, delay_min_us, delay_max_us,
                       spike_per_mille, spike_max_us);
}

Network::Network(uint64_t seed, raft::NodeId max_node)
    : rng_(seed), max_node_(max_node), down_((max_node + 1) * (max_node + 1), false) {}

Fate Network::route(const raft::Message& message) {
    (void)message;
    Fate fate;
    if (rng_.chance(profile_.drop_per_mille, 1000)) {
        return fate;
    }
    fate.copies = rng_.chance(profile_.duplicate_per_mille, 1000) ? 2 : 1;
    for (uint32_t i = 0; i < fate.copies; ++i) {
        RL_ASSERT(profile_.delay_max_us >= profile_.delay_min_us);
        uint64_t delay =
            profile_.delay_min_us + rng_.uniform(profile_.delay_max_us - profile_.delay_min_us + 1);
        if (profile_.spike_max_us > 0 && rng_.chance(profile_.spike_per_mille, 1000)) {
            delay += rng_.uniform(profile_.spike_max_us);
        }
        fate.delays_us[i] = delay;
    }
    return fate;
}

bool Network::link_up(raft::NodeId from, raft::NodeId to) const {
    RL_ASSERT(from <= max_node_);
    RL_ASSERT(to <= max_node_);
    return !down_[from * (max_node_ + 1) + to];
}

void Network::set_link(raft::NodeId from, raft::NodeId to, bool up) {
    const size_t i = from * (max_node_ + 1) + to;
    if (down_[i] == !up) {
        return;
    }
    down_[i] = !up;
    cut_links_ = up ? cut_links_ - 1 : cut_links_ + 1;
}

void Network::heal() {
    for (raft::NodeId a = 1; a <= max_node_; ++a) {
        for (raft::NodeId b = 1; b <= max_node_; ++b) {
            set_link(a, b, true);
        }
    }
}

void Network::isolate(raft::NodeId id) {
    heal();
    for (raft::NodeId other = 1; other <= max_node_; ++other) {
        if (other != id) {
            set_link(id, other, false);
            set_link(other, id, false);
        }
    }
}

void Network::split(const std::vector<raft::NodeId>& side) {
    heal();
    std::vector<bool> in_side(max_node_ + 1, false);
    for (raft::NodeId id : side) {
        in_side[id] = true;
    }
    for (raft::NodeId a = 1; a <= max_node_; ++a) {
        for (raft::NodeId b = 1; b <= max_node_; ++b) {
            if (in_side[a] != in_side[b]) {
                set_link(a, b, false);
            }
        }
    }
}

void Network::cut_one_way(raft::NodeId from, raft::NodeId to) {
    set_link(from, to, false);
}

std::string Network::describe_links() const {
    std::string out;
    for (raft::NodeId a = 1; a <= max_node_; ++a) {
        for (raft::NodeId b = 1; b <= max_node_; ++b) {
            if (a != b && !link_up(a, b)) {
                out += fmt::format("{}{}-x->{}", out.empty() ? "" : " ", a, b);
            }
        }
    }
    return out.empty() ? "all links up" : out;
}

}  // namespace raftlock::sim
