#include "tests/sim/faults.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::sim {

namespace {

constexpr size_t kActions = static_cast<size_t>(NemesisAction::kCount);

}  // namespace

std::string_view to_string(NemesisAction action) {
    switch (action) {
        case NemesisAction::kCrashNode:
            return "crash-node";
        case NemesisAction::kCrashLeader:
            return "crash-leader";
        case NemesisAction::kSplit:
            return "split";
        case NemesisAction::kIsolateLeader:
            return "isolate-leader";
        case NemesisAction::kOneWay:
            return "one-way";
        case NemesisAction::kHealNetwork:
            return "heal-network";
        case NemesisAction::kNetworkProfile:
            return "network-profile";
        case NemesisAction::kMembership:
            return "membership";
        case NemesisAction::kTransfer:
            return "transfer";
        case NemesisAction::kDualCampaign:
            return "dual-campaign";
        case NemesisAction::kLeaderChurn:
            return "leader-churn";
        case NemesisAction::kPause:
            return "pause";
        case NemesisAction::kPowerLoss:
            return "power-loss";
        case NemesisAction::kCorruptDisk:
            return "corrupt-disk";
        case NemesisAction::kHostilePeer:
            return "hostile-peer";
        case NemesisAction::kCount:
            break;
    }
    return "unknown";
}

std::string FaultProfile::describe() const {
    std::string mix;
    for (size_t i = 0; i < kActions; ++i) {
        if (weights[i] > 0) {
            mix += fmt::format(" {}={}", to_string(static_cast<NemesisAction>(i)), weights[i]);
        }
    }
    return fmt::format(
        "nemesis every {}..{}us:{}; stage crashes {}/1e6 readies, vote-window crashes {}/1000; "
        "downtime {}..{}us; clock drift {}/1000; write failures {}/1e6 writes",
        nemesis_interval_min_us, nemesis_interval_max_us, mix, stage_crash_ppm,
        vote_crash_per_mille, downtime_min_us, downtime_max_us, clock_drift_per_mille,
        write_failure_ppm);
}

FaultProfile pick_fault_profile(Rng& rng) {
    FaultProfile p;
    const uint64_t intervals_us[] = {30'000, 80'000, 200'000};
    p.nemesis_interval_min_us = rng.pick(intervals_us);
    p.nemesis_interval_max_us = p.nemesis_interval_min_us * 4;
    // Every action is likely enabled; a third of them get a low weight, so some seeds hammer
    // one kind of fault.
    const uint32_t weight_choices[] = {0, 1, 3, 6, 6, 10};
    for (size_t i = 0; i < kActions; ++i) {
        const auto action = static_cast<NemesisAction>(i);
        // Drawn from their own Rngs: pick_storage_faults, pick_hostile_peer_fault.
        if (action != NemesisAction::kCorruptDisk && action != NemesisAction::kHostilePeer) {
            p.weights[i] = rng.pick(weight_choices);
        }
    }
    p.weights[static_cast<size_t>(NemesisAction::kHealNetwork)] += 4;
    const uint32_t stage_ppm[] = {0, 500, 2000, 10'000};
    p.stage_crash_ppm = rng.pick(stage_ppm);
    const uint32_t vote_crash[] = {0, 100, 300, 600};
    p.vote_crash_per_mille = rng.pick(vote_crash);
    const uint64_t downtimes_us[] = {1'000, 50'000, 300'000};
    p.downtime_min_us = 0;
    p.downtime_max_us = rng.pick(downtimes_us);
    const uint32_t drifts[] = {0, 20, 100, 250};
    p.clock_drift_per_mille = rng.pick(drifts);
    return p;
}

void pick_storage_faults(Rng& rng, FaultProfile& profile) {
    // Low rates: a failed write is one more kind of crash, and a corrupt disk takes a node out
    // for good (at most once per run), so most of a run stays about the other faults.
    const uint32_t write_ppm[] = {0, 0, 300, 1000};
    profile.write_failure_ppm = rng.pick(write_ppm);
    const uint32_t corrupt_weights[] = {0, 0, 0, 1};
    profile.weights[static_cast<size_t>(NemesisAction::kCorruptDisk)] = rng.pick(corrupt_weights);
}

void pick_hostile_peer_fault(Rng& rng, FaultProfile& profile) {
    // Three seeds in four meet a broken peer, some of them often.
    const uint32_t weights[] = {0, 2, 4, 8};
    profile.weights[static_cast<size_t>(NemesisAction::kHostilePeer)] = rng.pick(weights);
}

NetworkProfile calm_network_profile() {
    return NetworkProfile{.delay_min_us = 200, .delay_max_us = 2'000};
}

NetworkProfile pick_network_profile(Rng& rng) {
    NetworkProfile n;
    const uint32_t drops[] = {0, 0, 10, 50, 200};
    n.drop_per_mille = rng.pick(drops);
    const uint32_t dups[] = {0, 10, 100};
    n.duplicate_per_mille = rng.pick(dups);
    const uint64_t mins_us[] = {50, 200, 1'000};
    n.delay_min_us = rng.pick(mins_us);
    const uint64_t spreads_us[] = {500, 3'000, 20'000};
    n.delay_max_us = n.delay_min_us + rng.pick(spreads_us);
    const uint32_t spikes[] = {0, 10, 50};
    n.spike_per_mille = rng.pick(spikes);
    n.spike_max_us = n.spike_per_mille > 0 ? 80'000 : 0;
    return n;
}

NemesisAction pick_action(const FaultProfile& profile, Rng& rng) {
    uint64_t total = 0;
    for (uint32_t w : profile.weights) {
        total += w;
    }
    RL_ASSERT(total > 0);  // heal-network always has weight
    uint64_t x = rng.uniform(total);
    for (size_t i = 0; i < kActions; ++i) {
        if (x < profile.weights[i]) {
            return static_cast<NemesisAction>(i);
        }
        x -= profile.weights[i];
    }
    RL_PANIC("unreachable: weights changed while picking");
}

}  // namespace raftlock::sim
