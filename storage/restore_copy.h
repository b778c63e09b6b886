#pragma once

// A new cluster from a copy of one node's data directory (docs/operations.md, "Starting a new
// cluster from a copy"): what `raftlock-storage restore` does after every disk of a cluster is
// lost.
//
// The copy's committed state is rebuilt the way its node would have applied it: its snapshot, then
// its log through the commit index its hard state recorded, each entry through the state machine.
// That state becomes the snapshot of a fresh store, at the last applied index and its term, with
// the new cluster's members as its configuration; every node of the new cluster starts from such a
// store (each made the same way), and Raft goes on from there: the indexes, and with them the
// fencing tokens, keep growing past every token the old cluster granted.
//
// What is lost: entries the copy held but had not recorded as committed (its hard state's commit
// may lag what the cluster had committed, and acknowledged, by the last moments before the copy).
// Sessions come back as they were: cluster time resumes where the copy's state left it, so each has
// what remained of its timeout for its client to reattach; then it expires and its locks are handed
// on (a lock-delay applies, as after any expiry).

#include <cstdint>
#include <string>

#include "base/result.h"
#include "raft/types.h"
#include "statemachine/types.h"

namespace raftlock::storage {

struct RestoreOptions {
    std::string from_dir;     // a copy of a node's data directory, read only
    std::string to_dir;       // must not exist, or be empty
    raft::ConfState members;  // the new cluster's voters and their Raft addresses
    // As the old cluster's nodes were configured (they shape how its entries applied).
    statemachine::Config state_machine;
};

struct RestoreSummary {
    raft::Index index = 0;                // the new snapshot's: the copy's last committed entry
    raft::Term term = 0;                  // its term, the new store's term
    uint64_t entries_applied = 0;         // from the copy's log, after its snapshot
    raft::Index copy_snapshot_index = 0;  // 0: the copy had none
    uint64_t snapshot_bytes = 0;
};

Result<RestoreSummary, std::string> restore_copy(const RestoreOptions& options);

}  // namespace raftlock::storage
