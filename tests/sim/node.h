#pragma once

// One simulated server: a simulated disk, the application (app.h) and a RawNode driven by the
// Ready loop the server runs (raft/ready_loop.h). The node is the loop's host: it persists to its
// disk (a storage::FaultInjectingStorage) at once, hands messages to the network, applies entries
// and serves reads, and at every loop stage and every disk write asks the fault injector whether
// to crash
// (or fail the write) right there. A crash loses the RawNode, the application and the unsynced
// part of the disk; a restart verifies the disk and rebuilds them from it, or, when the disk is
// corrupt, refuses to start and the node stays down for good.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/rng.h"
#include "raft/conf_change.h"
#include "raft/config.h"
#include "raft/raw_node.h"
#include "raft/ready_loop.h"
#include "storage/fault_injecting_storage.h"
#include "tests/sim/app.h"
#include "tests/sim/invariants.h"
#include "tests/sim/trace.h"

namespace raftlock::sim {

// What a node tells the fault injector about the Ready it is handling.
struct ReadyTraits {
    bool grants_vote = false;  // carries a granted vote (in either message list)
};

// The node's view of the rest of the simulation.
class NodeEnv {
public:
    virtual ~NodeEnv() = default;
    virtual void send(raft::NodeId from, std::vector<raft::Message>&& messages) = 0;
    // Crash at this stage of the Ready loop? (Crashes are the fault injector's decision.)
    virtual bool crash_at(raft::NodeId id, raft::ReadyStage stage, const ReadyTraits& ready) = 0;
    // Crash in the middle of this persist, after the writes and before the sync?
    virtual bool crash_mid_persist(raft::NodeId id, const ReadyTraits& ready) = 0;
    // Does the disk fail the next write, sync or snapshot save (kOk: no)? The node crashes at a
    // failed write: a failed disk write is fatal (DESIGN §3).
    virtual storage::WriteStatus write_fault(raft::NodeId id) = 0;
    // `entry` carried a register or lock command; `app` is the node's state after applying it.
    virtual void on_command_applied(raft::NodeId id,
                                    const raft::Entry& entry,
                                    const ApplyOutcome& outcome,
                                    const SimApp& app) = 0;
    virtual void on_read_served(raft::NodeId id,
                                const std::string& context,
                                raft::Index read_index,
                                const SimApp& app) = 0;
};

struct NodeParams {
    raft::Config raft;  // id, seed and applied are filled in per start
    // The application snapshots after this many applied entries (0: never) and keeps this many
    // entries behind the snapshot in the log, so slow followers can still catch up from the log.
    uint32_t snapshot_every_entries = 0;
    uint32_t compaction_lag_entries = 0;
    // The lock state machine's configuration (equal on every node).
    statemachine::Config lock_config;
    // Readies whose writes may be in flight at once (raft::ReadyLoop). 1: the disk writes each
    // at once, before persist() returns. More: writes queue, as on the server's storage thread,
    // and a seeded number of them complete, in order, before each later input; a crash loses the
    // ones not yet written.
    uint32_t max_writes_in_flight = 1;
};

// How a (re)start went.
enum class StartResult : uint8_t {
    kStarted,
    kCrashed,  // crashed again while handling its first Ready
    kRefused,  // the disk failed verification: the node never runs again
};

class SimNode final : private raft::ReadyHost {
public:
    // `disk_seed` decides which unsynced writes survive crashes.
    SimNode(raft::NodeId id,
            const NodeParams& params,
            uint64_t disk_seed,
            NodeEnv& env,
            Checker& checker,
            Trace& trace);
    ~SimNode() override;

    raft::NodeId id() const { return id_; }
    bool up() const { return raw_ != nullptr; }
    uint32_t incarnation() const { return incarnation_; }
    const raft::RawNode& raw() const { return *raw_; }
    const storage::FaultInjectingStorage& disk() const { return disk_; }
    // It refused to start on a corrupt disk, and stays down.
    bool refused() const { return refused_; }
    const SimApp& app() const { return app_; }
    uint64_t snapshots_installed() const { return snapshots_installed_; }

    // A founding member writes the bootstrap state before its first start.
    void bootstrap(const raft::Bootstrap& boot);
    // (Re)starts from the durable disk, after verifying it; `raft_seed` seeds the core's
    // election jitter.
    StartResult start(uint64_t raft_seed);
    // Power loss: everything in memory and the unsynced writes are gone.
    void crash(std::string_view why);
    // Flips a bit of a record on the disk of this crashed node (nullopt: it has none).
    std::optional<storage::Corruption> corrupt_disk(Rng& rng);

    // Inputs. Each runs the Ready loop afterwards; false when the node crashed while doing so.
    bool tick();
    // `check` receives the core's verdict on the message (raft/peer_input.h).
    bool step(raft::Message message, raft::MessageCheck* check);
    // A message from a broken peer (hostile.h): the core must drop it with no state change at
    // all. Returns its verdict; nothing runs afterwards, as there must be nothing to run.
    raft::MessageCheck step_hostile(raft::Message message);
    // The core's state in text (status and whether a Ready waits), to compare before and after.
    std::string state_fingerprint() const;
    bool propose(std::string data, raft::Status* status);
    bool read_index(std::string context);
    bool propose_conf_change(const raft::ConfChange& change, raft::Status* status);
    bool transfer_leadership(raft::NodeId to);
    bool campaign();

    // Set when the last input crashed the node (which stage, for the trace).
    std::optional<raft::ReadyStage> crashed_at() const { return crashed_at_; }

private:
    struct PendingRead {
        raft::Index index = 0;
        std::string context;
    };
    // A write queued for the pipelined disk: a Ready's (with its completion), or a commit-only
    // hard state (no completion), in the order the loop started them.
    struct QueuedWrite {
        std::shared_ptr<const raft::Ready> ready;
        bool sync = false;
        Callback done;
        raft::Term term = 0;  // the node's term when the loop handed the write out
        std::optional<raft::HardState> commit_only;
    };
    // Writes the first `count` queued writes and completes them; stops at a failed one (the
    // loop then stops and the node crashes).
    void complete_writes(size_t count);

    bool drive();
    // False when the disk failed the save (the caller crashes the node).
    bool maybe_snapshot();
    // Asks the fault injector whether the next disk write fails, and arms the disk if so.
    void arm_write_fault();
    // False when a disk write failed; remembers which, for the crash.
    bool write_ok(storage::WriteStatus status, std::string_view what);
    void serve_ready_reads();
    // The Ready's snapshot, entries and hard state, then the sync when `sync`.
    // `term`: the node's term when the loop handed the write out (the checker's overwrite rule).
    void write_ready(const raft::Ready& ready, bool sync, raft::Term term);

    // raft::ReadyHost
    void on_ready(const raft::Ready& ready) override;
    void send(std::vector<raft::Message>& messages) override;
    // Writes at once and completes before returning (max_writes_in_flight 1), or queues the
    // write for a later input (complete_writes).
    void persist(std::shared_ptr<const raft::Ready> ready, bool sync, Callback done) override;
    void persist_commit(const raft::HardState& hard_state) override;
    void apply_snapshot(const raft::Snapshot& snapshot) override;
    void apply_entries(const std::vector<raft::Entry>& entries) override;
    void serve_reads(std::vector<raft::ReadState>& read_states) override;
    // Deferred drives run before the input that caused them returns (drive()).
    void defer(Callback fn) override;
    bool proceed(raft::ReadyStage stage) override;

    raft::NodeId id_;
    NodeParams params_;
    Rng disk_rng_;
    Rng write_rng_;  // how many queued writes complete before an input
    NodeEnv& env_;
    Checker& checker_;
    Trace& trace_;
    storage::FaultInjectingStorage disk_;
    SimApp app_;
    std::unique_ptr<raft::RawNode> raw_;
    std::unique_ptr<raft::ReadyLoop> loop_;
    std::vector<Callback> deferred_;
    uint32_t incarnation_ = 0;
    ReadyTraits ready_traits_;
    bool crash_mid_persist_ = false;
    storage::WriteStatus write_failure_ = storage::WriteStatus::kOk;
    std::string_view failed_write_;  // what failed: "entries write", "sync", ...
    bool refused_ = false;
    std::optional<raft::ReadyStage> crashed_at_;
    std::vector<PendingRead> pending_reads_;
    std::deque<QueuedWrite> queued_writes_;
    uint64_t snapshots_installed_ = 0;
};

std::string_view to_string(raft::ReadyStage stage);

}  // namespace raftlock::sim
