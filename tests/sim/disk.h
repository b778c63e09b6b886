#pragma once

// A simulated disk with a volatile write cache. Writes land in the cache at once (the node reads
// its own writes, as from a page cache) and become durable only on sync(). A crash keeps a prefix
// of the unsynced writes, from none to all of them, and loses the rest: a torn batch, written in
// the order the driver contract gives (snapshot, then entries, then hard state).
//
// The node's RawNode reads `storage()`: the durable state with the cache applied on top.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "raft/conf_change.h"
#include "raft/memory_storage.h"
#include "raft/rng.h"
#include "raft/types.h"

namespace raftlock::sim {

// What a crash did to the cache, for the trace.
struct CrashLoss {
    uint32_t unsynced_writes = 0;
    uint32_t kept_writes = 0;
};

class SimDisk {
public:
    // Writes that were never synced pile up only as commit-only hard states, which overwrite each
    // other; anything else is synced within the same Ready. The bound catches a driver that never
    // syncs.
    static constexpr size_t kMaxUnsyncedWrites = 1 << 16;

    const raft::MemoryStorage& storage() const { return cached_; }
    const raft::MemoryStorage& durable() const { return durable_; }
    size_t unsynced_writes() const { return unsynced_.size(); }

    // A founding member's first state (make_bootstrap), written and synced.
    void bootstrap(const raft::Bootstrap& boot);

    void write_snapshot(const raft::Snapshot& snapshot);
    void write_entries(const std::vector<raft::Entry>& entries);
    void write_hard_state(const raft::HardState& hard_state);
    void sync();

    // The application's own snapshot at `index` plus compaction up to `compact_index`: written
    // and synced at once (a snapshot file is fsynced before the log is cut).
    void save_app_snapshot(raft::Index index,
                           const raft::ConfState& conf,
                           std::string data,
                           raft::Index compact_index);

    // Power loss: a random prefix of the unsynced writes survives.
    CrashLoss crash(Rng& rng);

private:
    // One unsynced write; entries are split one per write so a crash can tear a batch anywhere.
    struct Write {
        std::optional<raft::Snapshot> snapshot;
        std::optional<raft::Entry> entry;
        std::optional<raft::HardState> hard_state;
    };
    static void apply(raft::MemoryStorage& storage, const Write& write);
    void push(Write write);

    raft::MemoryStorage durable_;
    raft::MemoryStorage cached_;
    std::vector<Write> unsynced_;
};

}  // namespace raftlock::sim
