#pragma once

// What a replica needs of its durable store: the core's reads (raft::Storage) and the writes of
// the Ready loop. RocksStorage is the store a server runs on; the simulator runs the same replica
// on an in-memory disk that loses unsynced writes at a crash (tests/sim/replica/).
//
// Threads: the writes run on the replica's storage executor (server/storage_executor.h), one at a
// time and in order; the reads run on the replica's loop. A failed write is fatal to the node:
// the store does not return it (RocksStorage aborts, storage/fatal.h; the simulator crashes the
// node).

#include <string>

#include "raft/conf_change.h"
#include "raft/raw_node.h"
#include "raft/storage.h"

namespace raftlock::storage {

class LogStore : public raft::Storage {
public:
    // A founding member's first state on an empty store (raft::make_bootstrap), synced.
    virtual void bootstrap(const raft::Bootstrap& boot) = 0;
    // Persists what a Ready asks for: its snapshot, then its entries, then its hard state; all of
    // it durable before returning when `sync`, otherwise possibly lost by a crash.
    virtual void persist(const raft::Ready& ready, bool sync) = 0;
    // The application's snapshot at `index` (snapshot index < index <= last index), then the log
    // compacted up to `compact_index` (<= index; nothing when below the first index). Synced.
    virtual void save_snapshot(raft::Index index,
                               const raft::ConfState& conf,
                               std::string data,
                               raft::Index compact_index) = 0;
};

}  // namespace raftlock::storage
