#pragma once

// The core's read-only view of stable storage. The application owns the storage and writes to it
// (Ready.entries, Ready.hard_state, Ready.snapshot, compaction); the core only reads through this
// interface. Implementations: MemoryStorage (raft/memory_storage.h) and the RocksDB store
// (storage/). All indexes are Raft log indexes; ranges are half-open [lo, hi).

#include <cstdint>
#include <vector>

#include "raft/types.h"

namespace raftlock::raft {

struct InitialState {
    HardState hard_state;
    // Metadata of the latest snapshot (index 0 when there is none); its conf_state is the
    // configuration before any configuration entry of the log.
    SnapshotMetadata snapshot_meta;
};

class Storage {
public:
    virtual ~Storage() = default;

    virtual InitialState initial_state() const = 0;

    // Entries in [lo, hi), at most `max_bytes` of them by entry_size_bytes() but always at least
    // one when lo < hi. Preconditions: first_index() <= lo <= hi <= last_index() + 1; otherwise
    // kCompacted (lo below first index) or kUnavailable (hi above).
    virtual StorageResult<std::vector<Entry>> entries(Index lo,
                                                      Index hi,
                                                      uint64_t max_bytes) const = 0;

    // Term of entry i for first_index() - 1 <= i <= last_index() (the entry just before the first
    // is the snapshot's); kCompacted below, kUnavailable above.
    virtual StorageResult<Term> term(Index i) const = 0;

    // Index of the first entry that may be read. Everything before it was compacted; it is at
    // most the snapshot index + 1 (compaction never passes the snapshot).
    virtual Index first_index() const = 0;
    // Index of the last entry (snapshot index when the log holds no entries).
    virtual Index last_index() const = 0;

    // The latest snapshot. kSnapshotTemporarilyUnavailable when none can be produced now.
    virtual StorageResult<Snapshot> snapshot() const = 0;
};

}  // namespace raftlock::raft
