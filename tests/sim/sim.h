#pragma once

// One simulated run, a pure function of its options: `run_simulation({.seed = N})` does the same
// thing, event for event, every time (the trace proves it). See docs/raft.md "Simulator".

#include <cstdint>
#include <string>

namespace raftlock::sim {

// The negative controls of the unsafe build (raft/config.h NegativeControls, and the lock state
// machine's statemachine/types.h Config::negative_control_double_grant).
enum class BreakControl : uint8_t {
    kNone,
    kVoteBeforePersist,
    kCommitEarlierTerms,
    kNoLogCheck,
    kLockDoubleGrant,
};

struct SimOptions {
    uint64_t seed = 1;
    uint32_t nodes = 0;  // founding voters: 3 or 5; 0 lets the seed choose
    uint64_t steps = 0;  // ticks of the fault phase; 0: the default
    bool trace = false;
    // With trace: the trace goes here instead of stdout.
    std::string* trace_capture = nullptr;
    // When set, receives the clients' history as JSON lines (DESIGN §6).
    std::string* history_capture = nullptr;
    // When set, receives the lock clients' history (x-locks, jepsen's mutex model) as JSON lines.
    std::string* lock_history_capture = nullptr;
    BreakControl break_control = BreakControl::kNone;
};

struct SimResult {
    bool ok = true;
    std::string violation;
    uint32_t nodes = 0;
    uint64_t steps = 0;
    uint64_t events = 0;
    uint64_t sim_time_us = 0;
    uint64_t crashes = 0;
    uint64_t leader_terms = 0;
    uint64_t committed = 0;
    uint64_t ops_ok = 0;
    uint64_t ops_fail = 0;
    uint64_t ops_info = 0;
    uint64_t lock_ops_ok = 0;
    uint64_t lock_ops_fail = 0;
    uint64_t lock_ops_info = 0;
    uint64_t lock_grants = 0;
    uint64_t lock_hand_offs = 0;
    uint64_t session_expiries = 0;
    uint64_t liveness_ticks = 0;  // ticks from the heal to the first new commit
    uint64_t snapshots_installed = 0;
    uint64_t conf_changes = 0;
    uint64_t hostile_dropped = 0;  // a broken peer's messages the nodes dropped (hostile.h)
};

inline constexpr uint64_t kDefaultSteps = 2000;

SimResult run_simulation(const SimOptions& options);

}  // namespace raftlock::sim
