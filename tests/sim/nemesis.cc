// The nemesis: fault actions on the cluster, and the crash decisions at Ready loop stages.

#include <algorithm>

#include "base/assert.h"
#include "raft/raft.h"
#include "raft/text.h"
#include "tests/sim/cluster.h"
#include "tests/sim/hostile.h"

namespace raftlock::sim {

namespace {

// An isolated leader's followers stop honouring its lease after an election timeout (10 ticks of
// 10 ms); the storm comes a little after that.
constexpr uint64_t kStormDelayMinUs = 120'000;
constexpr uint64_t kStormDelayMaxUs = 250'000;
// A node crashed in its vote window restarts at once or almost (a supervisor restarts it), so
// the other candidate's request, still in flight, meets the amnesiac node.
constexpr uint64_t kVoteCrashDowntimeMaxUs = 2'000;

}  // namespace

void Cluster::schedule_nemesis() {
    const uint64_t wait_us =
        faults_.nemesis_interval_min_us +
        nemesis_rng_.uniform(faults_.nemesis_interval_max_us - faults_.nemesis_interval_min_us + 1);
    const NemesisAction action = pick_action(faults_, nemesis_rng_);
    queue_.schedule(queue_.now_us() + wait_us,
                    Event{.kind = EventKind::kNemesis, .arg = static_cast<uint32_t>(action)});
}

void Cluster::nemesis_step(NemesisAction action, uint32_t repeat) {
    trace_.log("nemesis {}", to_string(action));
    switch (action) {
        case NemesisAction::kCrashNode:
            act_crash(/*leader_only=*/false);
            break;
        case NemesisAction::kCrashLeader:
            act_crash(/*leader_only=*/true);
            break;
        case NemesisAction::kSplit:
            act_split();
            break;
        case NemesisAction::kIsolateLeader:
            act_isolate_leader();
            break;
        case NemesisAction::kOneWay:
            act_one_way();
            break;
        case NemesisAction::kHealNetwork:
            network_->heal();
            break;
        case NemesisAction::kNetworkProfile:
            network_->set_profile(pick_network_profile(nemesis_rng_));
            trace_.log("network: {}", network_->profile().describe());
            break;
        case NemesisAction::kMembership:
            act_membership();
            break;
        case NemesisAction::kTransfer:
            act_transfer();
            break;
        case NemesisAction::kDualCampaign:
            act_dual_campaign();
            break;
        case NemesisAction::kLeaderChurn:
            act_leader_churn(repeat);
            break;
        case NemesisAction::kPause:
            act_pause();
            break;
        case NemesisAction::kPowerLoss:
            act_power_loss();
            break;
        case NemesisAction::kCorruptDisk:
            act_corrupt_disk();
            break;
        case NemesisAction::kHostilePeer:
            act_hostile_peer();
            break;
        case NemesisAction::kCount:
            RL_PANIC("not an action");
    }
}

size_t Cluster::down_count() const {
    size_t down = 0;
    for (const auto& n : nodes_) {
        down += n->up() ? 0 : 1;
    }
    return down;
}

uint64_t Cluster::pick_downtime_us() {
    return faults_.downtime_min_us +
           nemesis_rng_.uniform(faults_.downtime_max_us - faults_.downtime_min_us + 1);
}

void Cluster::crash_node(SimNode& n, uint64_t downtime_us, std::string_view why) {
    n.crash(why);
    next_downtime_us_[n.id() - 1] = downtime_us;
    on_node_crashed(n);
}

void Cluster::act_crash(bool leader_only) {
    // At most a bare majority of the founders' count down at once; more only stalls the run.
    if (down_count() > founders_ / 2) {
        return;
    }
    SimNode* victim = nullptr;
    if (leader_only) {
        victim = find_leader();
    } else {
        const std::vector<raft::NodeId> up = up_nodes();
        if (!up.empty()) {
            victim = &node(up[nemesis_rng_.uniform(up.size())]);
        }
    }
    if (victim != nullptr) {
        crash_node(*victim, pick_downtime_us(), "by the nemesis");
    }
}

void Cluster::act_split() {
    std::vector<raft::NodeId> side;
    for (raft::NodeId id = 1; id <= max_node_; ++id) {
        if (nemesis_rng_.chance(1, 2)) {
            side.push_back(id);
        }
    }
    network_->split(side);
    trace_.log("network: {}", network_->describe_links());
}

void Cluster::act_isolate_leader() {
    SimNode* leader = find_leader();
    if (leader == nullptr) {
        return;
    }
    network_->isolate(leader->id());
    trace_.log("network: {}", network_->describe_links());
    // The storm: once the others have given up on the isolated leader, the network heals and two
    // nodes campaign at the same moment, so two candidates compete for the same term.
    const uint64_t at = queue_.now_us() + kStormDelayMinUs +
                        nemesis_rng_.uniform(kStormDelayMaxUs - kStormDelayMinUs + 1);
    for (NemesisAction follow_up : {NemesisAction::kHealNetwork, NemesisAction::kDualCampaign}) {
        queue_.schedule(at, Event{.kind = EventKind::kNemesis,
                                  .arg = static_cast<uint32_t>(follow_up),
                                  .token = 1});
    }
}

void Cluster::act_leader_churn(uint32_t repeat) {
    // Each leader in turn is cut off just after it took over, keeping whatever clients sent it
    // in a tail of its own term; the old leader rejoins as the next one is cut off. This breeds
    // the divergent uncommitted tails of Figure 8 of the Raft paper (§5.4.2).
    if (repeat == 0) {
        repeat = 2 + static_cast<uint32_t>(nemesis_rng_.uniform(5));
    }
    if (SimNode* leader = find_leader()) {
        network_->isolate(leader->id());
        trace_.log("network: {}", network_->describe_links());
    }
    const uint64_t at = queue_.now_us() + kStormDelayMinUs +
                        nemesis_rng_.uniform(kStormDelayMaxUs - kStormDelayMinUs + 1);
    const NemesisAction next =
        repeat > 1 ? NemesisAction::kLeaderChurn : NemesisAction::kHealNetwork;
    queue_.schedule(at, Event{.kind = EventKind::kNemesis,
                              .arg = static_cast<uint32_t>(next),
                              .token = 1,
                              .repeat = repeat - 1});
}

void Cluster::act_power_loss() {
    // Correlated failure: every write acknowledged to a peer must have been synced, or a
    // committed entry can vanish from all its copies at once.
    std::vector<raft::NodeId> up = up_nodes();
    const size_t victims = nemesis_rng_.chance(1, 2) ? up.size() : founders_ / 2 + 1;
    for (size_t i = 0; i < victims && !up.empty(); ++i) {
        const size_t k = nemesis_rng_.uniform(up.size());
        crash_node(node(up[k]), pick_downtime_us(), "in a power loss");
        up.erase(up.begin() + static_cast<std::ptrdiff_t>(k));
    }
}

void Cluster::act_corrupt_disk() {
    // One node per run at most loses its disk for good. Voters stay between the founders' count
    // (3 or 5) and one more, so the others are still a majority of any configuration (2 of 3,
    // 3 of 4, 4 of 5, 5 of 6): the cluster makes progress and the liveness checks still hold.
    RL_ASSERT(founders_ >= 3);
    if (corrupted_ != raft::kNoNode) {
        return;
    }
    // At rest: a crashed node's disk, or one crashed for the purpose.
    std::vector<raft::NodeId> down;
    for (const auto& n : nodes_) {
        if (!n->up() && !n->refused()) {
            down.push_back(n->id());
        }
    }
    SimNode* victim = nullptr;
    if (!down.empty()) {
        victim = &node(down[nemesis_rng_.uniform(down.size())]);
    } else if (down_count() <= founders_ / 2) {
        const std::vector<raft::NodeId> up = up_nodes();
        if (up.empty()) {
            return;
        }
        victim = &node(up[nemesis_rng_.uniform(up.size())]);
        crash_node(*victim, pick_downtime_us(), "by the nemesis, to corrupt its disk");
    } else {
        return;
    }
    const std::optional<storage::Corruption> c = victim->corrupt_disk(nemesis_rng_);
    if (!c) {
        trace_.log("n{} disk holds no record to corrupt", victim->id());
        return;
    }
    corrupted_ = victim->id();
    checker_.on_disk_corrupted(victim->id());
    trace_.log("n{} disk CORRUPTED at rest: {}", victim->id(), c->describe());
}

void Cluster::act_pause() {
    // Half the time the leader: it wakes up still believing it leads, the classic stale-leader
    // setup for reads and for CheckQuorum.
    SimNode* victim = nemesis_rng_.chance(1, 2) ? find_leader() : nullptr;
    const std::vector<raft::NodeId> up = up_nodes();
    if (victim == nullptr && !up.empty()) {
        victim = &node(up[nemesis_rng_.uniform(up.size())]);
    }
    if (victim == nullptr) {
        return;
    }
    const uint64_t pause_us = 20'000 + nemesis_rng_.uniform(400'000);
    paused_until_us_[victim->id() - 1] = queue_.now_us() + pause_us;
    trace_.log("n{} paused for {}us", victim->id(), pause_us);
}

void Cluster::act_one_way() {
    const uint64_t cuts = 1 + nemesis_rng_.uniform(3);
    for (uint64_t i = 0; i < cuts; ++i) {
        const raft::NodeId from = 1 + nemesis_rng_.uniform(max_node_);
        const raft::NodeId to = 1 + nemesis_rng_.uniform(max_node_);
        if (from != to) {
            network_->cut_one_way(from, to);
        }
    }
    trace_.log("network: {}", network_->describe_links());
}

void Cluster::act_membership() {
    SimNode* leader = find_leader();
    if (leader == nullptr) {
        return;
    }
    const raft::ConfState& conf = leader->raw().raft().conf_state();
    std::vector<raft::NodeId> outsiders;
    for (raft::NodeId id = 1; id <= max_node_; ++id) {
        if (!raft::is_voter(conf, id) && !raft::is_learner(conf, id)) {
            outsiders.push_back(id);
        }
    }
    // Voters stay between the founders' count and one more, so a majority of the founders'
    // count of nodes being up is always enough for progress after the heal.
    raft::ConfChange change;
    if (!conf.learners.empty() && nemesis_rng_.chance(2, 3)) {
        const raft::NodeId id = conf.learners[nemesis_rng_.uniform(conf.learners.size())];
        const bool promote = conf.voters.size() <= founders_ && nemesis_rng_.chance(3, 4);
        change = {promote ? raft::ConfChangeType::kAddVoter : raft::ConfChangeType::kRemoveNode,
                  id};
    } else if (conf.voters.size() > founders_) {
        const raft::NodeId id = conf.voters[nemesis_rng_.uniform(conf.voters.size())];
        const bool demote = nemesis_rng_.chance(1, 3);
        change = {demote ? raft::ConfChangeType::kAddLearner : raft::ConfChangeType::kRemoveNode,
                  id};
    } else if (!outsiders.empty()) {
        const raft::NodeId id = outsiders[nemesis_rng_.uniform(outsiders.size())];
        const bool as_voter = nemesis_rng_.chance(1, 3);
        change = {as_voter ? raft::ConfChangeType::kAddVoter : raft::ConfChangeType::kAddLearner,
                  id};
    } else {
        return;
    }
    raft::Status status;
    const bool alive = leader->propose_conf_change(change, &status);
    trace_.log("n{} conf change {}: {}", leader->id(), raft::to_string(change),
               status.ok() ? "proposed" : status.message());
    if (!alive) {
        on_node_crashed(*leader);
    }
}

void Cluster::act_transfer() {
    SimNode* leader = find_leader();
    if (leader == nullptr) {
        return;
    }
    const std::vector<raft::NodeId>& voters = leader->raw().raft().conf_state().voters;
    const raft::NodeId to = voters[nemesis_rng_.uniform(voters.size())];
    // Sometimes through a follower, which forwards the request to its leader.
    SimNode* via = leader;
    const std::vector<raft::NodeId> up = up_nodes();
    if (!up.empty() && nemesis_rng_.chance(1, 3)) {
        via = &node(up[nemesis_rng_.uniform(up.size())]);
    }
    trace_.log("n{} transfer leadership to n{}", via->id(), to);
    if (!via->transfer_leadership(to)) {
        on_node_crashed(*via);
    }
}

void Cluster::act_dual_campaign() {
    std::vector<raft::NodeId> candidates;
    for (raft::NodeId id : up_nodes()) {
        const raft::Raft& r = node(id).raw().raft();
        if (r.role() != raft::Role::kLeader && raft::is_voter(r.conf_state(), id)) {
            candidates.push_back(id);
        }
    }
    for (int i = 0; i < 2 && !candidates.empty(); ++i) {
        const size_t k = nemesis_rng_.uniform(candidates.size());
        SimNode& n = node(candidates[k]);
        candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(k));
        trace_.log("n{} campaign", n.id());
        if (!n.campaign()) {
            on_node_crashed(n);
        }
    }
}

bool Cluster::crash_at(raft::NodeId id, raft::ReadyStage stage, const ReadyTraits& ready) {
    if (phase_ != Phase::kFaults) {
        return false;
    }
    // The vote window: between the early messages and the sync (the other half of the window
    // is crash_mid_persist).
    if (stage == raft::ReadyStage::kEarlySent && ready.grants_vote &&
        nemesis_rng_.chance(faults_.vote_crash_per_mille, 2000)) {
        next_downtime_us_[id - 1] = nemesis_rng_.uniform(kVoteCrashDowntimeMaxUs + 1);
        return true;
    }
    if (nemesis_rng_.chance(faults_.stage_crash_ppm, 1'000'000)) {
        next_downtime_us_[id - 1] = pick_downtime_us();
        return true;
    }
    return false;
}

storage::WriteStatus Cluster::write_fault(raft::NodeId id) {
    // No draw at all when the profile has no write failures, so such runs are unchanged.
    if (phase_ != Phase::kFaults || faults_.write_failure_ppm == 0 ||
        !nemesis_rng_.chance(faults_.write_failure_ppm, 1'000'000)) {
        return storage::WriteStatus::kOk;
    }
    next_downtime_us_[id - 1] = pick_downtime_us();
    return nemesis_rng_.chance(1, 2) ? storage::WriteStatus::kIoError
                                     : storage::WriteStatus::kNoSpace;
}

bool Cluster::crash_mid_persist(raft::NodeId id, const ReadyTraits& ready) {
    if (phase_ != Phase::kFaults) {
        return false;
    }
    if (ready.grants_vote && nemesis_rng_.chance(faults_.vote_crash_per_mille, 2000)) {
        next_downtime_us_[id - 1] = nemesis_rng_.uniform(kVoteCrashDowntimeMaxUs + 1);
        return true;
    }
    if (nemesis_rng_.chance(faults_.stage_crash_ppm, 1'000'000)) {
        next_downtime_us_[id - 1] = pick_downtime_us();
        return true;
    }
    return false;
}

void Cluster::act_hostile_peer() {
    const std::vector<raft::NodeId> up = up_nodes();
    if (up.empty()) {
        return;
    }
    SimNode& target = node(up[hostile_rng_.uniform(up.size())]);
    // The peer it claims to be: any other node, member or not (the transport would have proved
    // the id; the peer is authenticated, only broken).
    raft::NodeId from = 1 + hostile_rng_.uniform(max_node_ - 1);
    from += from >= target.id() ? 1 : 0;
    const uint64_t burst = 1 + hostile_rng_.uniform(6);
    for (uint64_t i = 0; i < burst && !checker_.failed(); ++i) {
        const HostileMessage hostile =
            make_hostile_message(hostile_rng_, target.raw().raft(), from, peer_input_limits_);
        trace_.log("hostile n{} -> n{}: {}", from, target.id(), describe(hostile));
        const std::string before = target.state_fingerprint();
        const raft::MessageCheck check = target.step_hostile(hostile.message);
        if (check.fault != hostile.expected) {
            checker_.fail(fmt::format("n{} judged a broken peer's message {} as {} ({})",
                                      target.id(), describe(hostile), raft::to_string(check.fault),
                                      check.reason));
        } else if (target.state_fingerprint() != before) {
            checker_.fail(fmt::format("n{} changed state on a dropped message {}", target.id(),
                                      describe(hostile)));
        } else {
            ++hostile_dropped_;
        }
    }
}

}  // namespace raftlock::sim
