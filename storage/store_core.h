#pragma once

// What both durable stores share (RocksStorage, JournalStorage): the in-memory view of the log,
// the core's reads, and the writes as one Change each, which an engine makes durable as one
// all-or-nothing unit before the view changes.
//
// Threads: one writer thread (the replica's storage thread) and any number of reader threads (the
// Raft loop). Reads are served from memory (TermRuns for every term, EntryCache for the recent
// entries) and from the engine for older entries, under a shared lock. A write holds the
// exclusive lock only while it updates memory, except a write that deletes entries (truncation,
// compaction, a snapshot), which holds it across the disk write so no reader sees an entry vanish.

#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "raft/raw_node.h"
#include "raft/storage.h"
#include "storage/codec.h"
#include "storage/entry_cache.h"
#include "storage/log_store.h"
#include "storage/term_runs.h"

namespace raftlock::storage {

class StoreCore : public LogStore {
public:
    // raft::Storage
    raft::InitialState initial_state() const override;
    raft::StorageResult<std::vector<raft::Entry>> entries(raft::Index lo,
                                                          raft::Index hi,
                                                          uint64_t max_bytes) const override;
    raft::StorageResult<raft::Term> term(raft::Index i) const override;
    raft::Index first_index() const override;
    raft::Index last_index() const override;
    raft::StorageResult<raft::Snapshot> snapshot() const override;

    // Persists what a Ready asks for, as one change synced when ready.must_sync (or when it
    // carries a snapshot; a change is all-or-nothing, so there is no torn Ready): the snapshot
    // (its file first, then its record, replacing the whole log), the hard state, and the
    // entries. Entries at or below the last index replace the log from the first one's index
    // (conflict truncation); entries at or below the log start are skipped. Precondition: the first
    // entry's index is at most last_index() + 1.
    void persist(const raft::Ready& ready) { persist(ready, ready.must_sync); }
    // The same with the sync decided by the caller (LogStore).
    void persist(const raft::Ready& ready, bool sync) override;
    // LogStore: bootstrap() is append() then set_hard_state(); save_snapshot() is
    // create_snapshot() then compact().
    void bootstrap(const raft::Bootstrap& boot) override;
    void save_snapshot(raft::Index index,
                       const raft::ConfState& conf,
                       std::string data,
                       raft::Index compact_index) override;
    // Synced single writes, for bootstrap, restore and tests.
    void set_hard_state(const raft::HardState& hs);
    void append(const std::vector<raft::Entry>& entries);
    // Replaces everything with `snapshot` (synced). False, and nothing changes, when it is not
    // newer than the current snapshot.
    bool apply_snapshot(const raft::Snapshot& snapshot);
    // Records a snapshot of the application state at `index`: snapshot index < index <= last
    // index, and `index` not compacted. The log is kept; compact() separately.
    void create_snapshot(raft::Index index, const raft::ConfState& conf_state, std::string data);
    // Discards entries up to and including `compact_index`; first_index() becomes
    // compact_index + 1 and term(compact_index) stays known. Nothing happens when compact_index <
    // first_index(). Precondition: compact_index <= last_index().
    void compact(raft::Index compact_index);

    // For inspection and tests.
    raft::HardState hard_state() const;
    LogStart log_start() const;
    std::optional<SnapshotRecord> snapshot_record() const;
    const std::string& dir() const { return dir_; }
    std::string snapshot_dir() const { return dir_ + "/snap"; }
    // "journal" or "rocksdb": which engine keeps this store.
    virtual const char* engine() const = 0;

protected:
    // One atomic change of the store: the unit of persist() and of every other write.
    struct Change {
        std::optional<raft::HardState> hard_state;
        std::optional<SnapshotRecord> snapshot;
        bool replace_log = false;               // with a snapshot: every entry goes
        std::optional<raft::Index> compact_to;  // entries up to here go
        // Appended, truncating a conflicting suffix first. A view: the caller's entries outlive
        // write(), so a Ready's batch is not copied on the way to disk.
        std::span<const raft::Entry> entries;
    };

    StoreCore(std::string dir,
              bool read_only,
              uint64_t entry_cache_bytes_max,
              uint32_t chunk_bytes);

    // The engine: makes `change` durable as one unit (synced when `sync`), before the view
    // changes. Runs on the writer thread, with the exclusive lock held when the change deletes
    // entries. Failure is fatal (fatal.h).
    virtual void write_change(const Change& change, bool sync) = 0;
    // After the view took `change` (under the exclusive lock): the engine's own bookkeeping.
    // `old_start` is the log start before it.
    virtual void after_change(const Change& change, const LogStart& old_start) = 0;
    // Entries [lo, hi), all below the cache, in order, until their size passes max_bytes (at least
    // one). Called under the shared lock. Damage is fatal: the store was verified when it opened.
    virtual void read_older(raft::Index lo,
                            raft::Index hi,
                            uint64_t max_bytes,
                            uint64_t& total_bytes,
                            std::vector<raft::Entry>& out) const = 0;

    // Applies a change to the in-memory view (writes, and the journal's replay at open).
    void apply_to_memory(const Change& change);
    // Where the change's new log starts: LogStart after a reset or compaction, else the current.
    LogStart start_after(const Change& change) const;
    // How many leading entries are at or below the log start `start` (skipped as compacted).
    static size_t compacted_prefix(std::span<const raft::Entry> entries, raft::Index start);
    // Removes snapshot files other than the current one's (a crash can leave them).
    void remove_stray_snapshot_files() const;

    std::string dir_;
    bool read_only_;
    uint32_t snapshot_chunk_bytes_;
    // Guards the in-memory view below against readers on other threads (see the top comment).
    mutable std::shared_mutex mutex_;
    raft::HardState hard_state_;
    LogStart log_start_;
    std::optional<SnapshotRecord> snapshot_;
    TermRuns terms_;
    EntryCache cache_;

private:
    void write(Change change, bool sync);
    // Whether the change removes stored entries (truncation, compaction or a new snapshot).
    bool deletes_entries(const Change& change) const;
};

}  // namespace raftlock::storage
