#pragma once

// The whole simulated cluster in one thread: nodes, network, clients, nemesis and checker, driven
// by one event queue. One class split over files by concern:
//
//   cluster.cc   setup, the event loop, phases (faults, then heal and liveness), routing
//   nemesis.cc   the fault actions and the crash decisions at Ready loop stages

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "base/rng.h"
#include "tests/sim/event_queue.h"
#include "tests/sim/faults.h"
#include "tests/sim/invariants.h"
#include "tests/sim/lock_checker.h"
#include "tests/sim/lock_workload.h"
#include "tests/sim/network.h"
#include "tests/sim/node.h"
#include "tests/sim/sim.h"
#include "tests/sim/trace.h"
#include "tests/sim/workload.h"

namespace raftlock::sim {

class Cluster final : private NodeEnv, private ClusterAccess, private LockAccess {
public:
    explicit Cluster(const SimOptions& options);
    ~Cluster() override;

    SimResult run();

private:
    // Faults, then the heal (until a new command commits), then settling (until every member
    // has applied everything committed by then).
    enum class Phase : uint8_t { kFaults, kHeal, kSettle };

    // cluster.cc
    void setup_nodes(Rng& rng);
    void handle(const Event& event);
    void deliver(raft::Message message);
    void on_node_crashed(SimNode& node);
    void restart(SimNode& node);
    void begin_heal();
    bool finished();
    bool settled();
    void extend_settle_deadline(const raft::ConfState& conf);
    void final_checks();
    SimNode& node(raft::NodeId id);
    // The running (up, not paused) node with the highest term among those that believe they
    // lead, if any.
    SimNode* find_leader();
    std::vector<raft::NodeId> up_nodes() const;
    uint64_t raft_seed(raft::NodeId id, uint32_t incarnation) const;

    // nemesis.cc
    void nemesis_step(NemesisAction action, uint32_t repeat);
    void schedule_nemesis();
    void crash_node(SimNode& node, uint64_t downtime_us, std::string_view why);
    void act_crash(bool leader_only);
    void act_split();
    void act_isolate_leader();
    void act_one_way();
    void act_membership();
    void act_transfer();
    void act_dual_campaign();
    void act_leader_churn(uint32_t repeat);
    void act_pause();
    void act_power_loss();
    void act_corrupt_disk();
    void act_hostile_peer();
    bool paused(raft::NodeId id) const { return queue_.now_us() < paused_until_us_[id - 1]; }
    uint64_t pick_downtime_us();
    size_t down_count() const;

    // NodeEnv
    void send(raft::NodeId from, std::vector<raft::Message>&& messages) override;
    bool crash_at(raft::NodeId id, raft::ReadyStage stage, const ReadyTraits& ready) override;
    bool crash_mid_persist(raft::NodeId id, const ReadyTraits& ready) override;
    storage::WriteStatus write_fault(raft::NodeId id) override;
    void on_command_applied(raft::NodeId id,
                            const raft::Entry& entry,
                            const ApplyOutcome& outcome,
                            const SimApp& app) override;
    void on_read_served(raft::NodeId id,
                        const std::string& context,
                        raft::Index read_index,
                        const SimApp& app) override;

    // ClusterAccess
    uint64_t now_us() const override { return queue_.now_us(); }
    raft::NodeId pick_node(Rng& rng) override;
    raft::Status propose(raft::NodeId id, std::string data) override;
    void read_index(raft::NodeId id, std::string context) override;
    void wake_client(uint32_t client, uint64_t at_us, uint64_t token) override;

    // LockAccess (now_us and pick_node are shared with ClusterAccess)
    raft::Status propose_lock(raft::NodeId id, statemachine::Command command) override;
    void keepalive(raft::NodeId id, statemachine::SessionId session) override;
    void wake_lock_client(uint32_t client, uint64_t at_us) override;
    // A node's own clock in ms (simulated time plus a fixed per-node offset): what a leader
    // stamps on the lock commands it proposes, and what its session tracking measures.
    int64_t node_clock_ms(raft::NodeId id) const;
    // The leader's session tracking and timer Noops, once per tick of a leader.
    void lead_sessions(SimNode& node);

    SimOptions options_;
    uint32_t founders_ = 0;
    raft::NodeId max_node_ = 0;  // founders plus one spare that can join later
    Trace trace_;
    Checker checker_;
    EventQueue queue_;
    Rng nemesis_rng_;
    Rng hostile_rng_;  // the broken peer's choices, apart so they disturb no other draw
    raft::PeerInputLimits peer_input_limits_;  // every node's (NodeParams::raft.peer_input)
    FaultProfile faults_;
    std::unique_ptr<Network> network_;
    std::unique_ptr<Workload> workload_;
    std::unique_ptr<LockWorkload> lock_workload_;
    LockChecker lock_checker_;
    std::vector<LeaderSessions> leader_sessions_;  // [id - 1]: in the node's memory
    std::vector<int64_t> clock_offset_ms_;         // [id - 1]
    std::vector<std::unique_ptr<SimNode>> nodes_;  // [id - 1]
    std::vector<uint64_t> tick_interval_us_;       // [id - 1]: per-node clock rate
    std::vector<uint64_t> next_downtime_us_;       // [id - 1]: set when a crash is decided
    std::vector<uint64_t> paused_until_us_;        // [id - 1]: a paused node does nothing
    Phase phase_ = Phase::kFaults;
    uint64_t faults_end_us_ = 0;
    uint64_t heal_deadline_us_ = 0;
    uint64_t heal_start_us_ = 0;
    uint64_t settle_start_us_ = 0;
    uint64_t settle_deadline_us_ = 0;
    raft::Index settle_index_ = 0;
    uint64_t settle_progress_ = 0;  // members' applied indexes (up to settle_index_), summed
    uint64_t events_ = 0;
    uint64_t crashes_ = 0;
    uint64_t hostile_dropped_ = 0;
    // The one node per run whose disk the nemesis corrupted (it stays down once it refuses).
    raft::NodeId corrupted_ = raft::kNoNode;
};

}  // namespace raftlock::sim
