#pragma once

// The simulated network: per-message loss, duplication and delay (random delays reorder
// messages), plus a link matrix for partitions: symmetric splits, one-way (asymmetric) cuts and
// an isolated node. A message is checked against the links when it is delivered, so a partition
// also swallows what was already in flight.

#include <cstdint>
#include <string>
#include <vector>

#include "base/rng.h"
#include "raft/types.h"

namespace raftlock::sim {

struct NetworkProfile {
    uint32_t drop_per_mille = 0;
    uint32_t duplicate_per_mille = 0;
    uint64_t delay_min_us = 200;
    uint64_t delay_max_us = 2000;
    // A few messages take much longer (a congested link): they arrive after later ones.
    uint32_t spike_per_mille = 0;
    uint64_t spike_max_us = 0;

    std::string describe() const;
};

// What the network does with one message: delivered after each of `delays_us` (none: lost).
struct Fate {
    uint32_t copies = 0;
    uint64_t delays_us[2] = {0, 0};
};

class Network {
public:
    // Node ids are 1..max_node.
    Network(uint64_t seed, raft::NodeId max_node);

    void set_profile(const NetworkProfile& profile) { profile_ = profile; }
    const NetworkProfile& profile() const { return profile_; }

    Fate route(const raft::Message& message);
    bool link_up(raft::NodeId from, raft::NodeId to) const;

    // Partitions. Each replaces the previous one.
    void heal();
    void isolate(raft::NodeId id);
    // Nodes in `side` can talk among themselves, the others among themselves, not across.
    void split(const std::vector<raft::NodeId>& side);
    // Messages from `from` to `to` are lost; the reverse direction still works.
    void cut_one_way(raft::NodeId from, raft::NodeId to);
    bool partitioned() const { return cut_links_ > 0; }
    std::string describe_links() const;

private:
    void set_link(raft::NodeId from, raft::NodeId to, bool up);

    Rng rng_;
    raft::NodeId max_node_;
    NetworkProfile profile_;
    std::vector<bool> down_;  // [from * (max_node + 1) + to]
    uint32_t cut_links_ = 0;
};

}  // namespace raftlock::sim
