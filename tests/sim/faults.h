#pragma once

// The fault model of one run, drawn from the seed: how often the nemesis acts and with which
// mix of actions, how likely a node is to crash at each Ready loop stage, and how long crashed
// nodes stay down. Varying the mix across seeds covers both calm runs (where subtle ordering
// bugs show) and storms (where recovery bugs show).

#include <cstdint>
#include <string>

#include "base/rng.h"
#include "tests/sim/network.h"

namespace raftlock::sim {

enum class NemesisAction : uint8_t {
    kCrashNode,
    kCrashLeader,
    kSplit,          // symmetric partition into two random sides
    kIsolateLeader,  // then, an election timeout later, a healed storm of two campaigns
    kOneWay,         // asymmetric: a few links lose messages in one direction only
    kHealNetwork,
    kNetworkProfile,
    kMembership,
    kTransfer,
    kDualCampaign,
    kLeaderChurn,  // isolate whoever leads, again and again, an election timeout apart
    kPause,        // a node stops (GC pause, SIGSTOP) and later resumes with stale beliefs
    kPowerLoss,    // a majority (or all) of the nodes crash at once: only synced data survives
    // A bit flips in a record on a crashed node's disk. The node must refuse to start when it
    // restarts, and stays down for the rest of the run (at most one node per run).
    kCorruptDisk,
    // A broken peer sends a burst of out-of-range messages (hostile.h) to a running node, which
    // must drop each one before it changes anything.
    kHostilePeer,
    kCount,
};

std::string_view to_string(NemesisAction action);

struct FaultProfile {
    uint64_t nemesis_interval_min_us = 0;
    uint64_t nemesis_interval_max_us = 0;
    uint32_t weights[static_cast<size_t>(NemesisAction::kCount)] = {};
    // Chance (per million Readies) to crash at each Ready loop stage or in the middle of a persist.
    uint32_t stage_crash_ppm = 0;
    // Chance (per thousand) that a node crashes in the window between sending an early vote
    // and syncing it, when its Ready grants a vote. Harmless in a correct core (the grant only
    // leaves after the sync); fatal with negative control (b).
    uint32_t vote_crash_per_mille = 0;
    uint64_t downtime_min_us = 0;
    uint64_t downtime_max_us = 0;
    // Drift of each node's clock: its tick interval is off by up to this many per mille.
    uint32_t clock_drift_per_mille = 0;
    // Chance (per million disk writes, syncs and snapshot saves) that the disk fails the write
    // (EIO or ENOSPC); the node crashes right there and later restarts from its disk.
    uint32_t write_failure_ppm = 0;

    std::string describe() const;
};

FaultProfile pick_fault_profile(Rng& rng);
// The storage faults (failed writes, corruption at rest) of `profile`. They come from an Rng of
// their own, so adding them changed nothing else a seed draws.
void pick_storage_faults(Rng& rng, FaultProfile& profile);
// The weight of the broken-peer action (kHostilePeer), from an Rng of its own like the storage
// faults: a seed that draws weight 0 runs exactly as before the action existed.
void pick_hostile_peer_fault(Rng& rng, FaultProfile& profile);
NetworkProfile pick_network_profile(Rng& rng);
NetworkProfile calm_network_profile();
NemesisAction pick_action(const FaultProfile& profile, Rng& rng);

}  // namespace raftlock::sim
