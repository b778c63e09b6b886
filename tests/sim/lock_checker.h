#pragma once

// Lock safety, checked on every application of a lock state machine entry at every node:
//
//   invariants      the state machine's own checker (statemachine/invariants.cc) holds after
//                   every apply: at most one exclusive holder (or only shared holders) per lock,
//                   no holder, waiter or ephemeral node without a live session, FIFO waiters, ...
//   same outputs    every node that applies index i reports the same ApplyResult (the state
//                   hashes are compared through the application digest, invariants.h)
//   oracle          the first application of each index updates a model of every lock built
//                   only from the outputs (grants, hand-offs, releases, wait timeouts, session
//                   ends) and the commands: a grant may not join an exclusive holder or join
//                   shared holders as exclusive; a grant's token is its entry's index and grows
//                   per lock; the state machine's holders equal the model's (no grant nobody was
//                   told of, no hold that outlives its session); an accepted fenced request
//                   names a current holder's token
//   exactly-once    a session's request (session, seq) is executed at one index only
//
// The first application of index i happens after that of every index below it (a node applies
// in order, or installs a snapshot made by a node that applied them), so the oracle sees the
// committed sequence in order.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "raft/types.h"
#include "statemachine/command.h"
#include "statemachine/output.h"
#include "tests/sim/app.h"
#include "tests/sim/invariants.h"

namespace raftlock::sim {

class LockChecker {
public:
    explicit LockChecker(Checker& checker) : checker_(checker) {}

    // Node `id` applied the lock command `entry` with result `result`; `app` is its state after.
    // Returns true when this is the first application of the index anywhere (the clients learn
    // their results then).
    bool on_applied(raft::NodeId id,
                    const raft::Entry& entry,
                    const statemachine::ApplyResult& result,
                    const SimApp& app);

    uint64_t grants() const { return grants_; }
    uint64_t hand_offs() const { return hand_offs_; }
    uint64_t expiries() const { return expiries_; }
    uint64_t wait_timeouts() const { return wait_timeouts_; }
    uint64_t fenced_rejected() const { return fenced_rejected_; }

private:
    // (session, owner tag)
    using Owner = std::pair<statemachine::SessionId, std::string>;
    struct Hold {
        statemachine::LockMode mode = statemachine::LockMode::kExclusive;
        statemachine::Index token = 0;
    };
    struct LockModel {
        std::map<Owner, Hold> holders;
        std::map<Owner, statemachine::LockMode> waiters;
        statemachine::Index last_token = 0;
    };

    bool check_result(raft::NodeId id,
                      const raft::Entry& entry,
                      const statemachine::ApplyResult& result,
                      const SimApp& app);
    void first_application(raft::Index index,
                           const statemachine::Command& command,
                           const statemachine::ApplyResult& result,
                           const SimApp& app);
    void apply_removals(const statemachine::Command& command,
                        const statemachine::ApplyResult& result);
    void apply_additions(raft::Index index,
                         const statemachine::Command& command,
                         const statemachine::ApplyResult& result);
    void add_holder(raft::Index index,
                    const std::string& name,
                    const Owner& owner,
                    statemachine::LockMode mode,
                    statemachine::Index token);
    void check_fence(raft::Index index,
                     const statemachine::Command& command,
                     const statemachine::ApplyResult& result);
    void check_exactly_once(raft::Index index,
                            const statemachine::Command& command,
                            const statemachine::ApplyResult& result);
    void compare_with_state(raft::Index index, const SimApp& app);

    Checker& checker_;
    raft::Index last_first_applied_ = 0;
    std::vector<uint64_t> output_hash_at_;  // [index]: hash of the ApplyResult text, 0: none
    std::map<std::string, LockModel> locks_;
    std::map<std::pair<statemachine::SessionId, uint64_t>, raft::Index> executed_at_;
    uint64_t grants_ = 0;
    uint64_t hand_offs_ = 0;
    uint64_t expiries_ = 0;
    uint64_t wait_timeouts_ = 0;
    uint64_t fenced_rejected_ = 0;
};

}  // namespace raftlock::sim
