#pragma once

// The durable store (DESIGN.md §3): the Raft log, the hard state and snapshot metadata in RocksDB,
// snapshot data in checksummed files beside it (snapshot_file.h). Layout of `dir`:
//
//   db/    RocksDB; column family "log" (log key -> entry), "state" (hard state, log start,
//          snapshot metadata); the default column family is unused
//   snap/  snap-<index>-<term>.snap, the data of the latest snapshot
//
// Every change is one RocksDB WriteBatch, so it is all-or-nothing after a crash; a batch that must
// be durable is written with sync = true (one fdatasync of the WAL per batch: group commit).
// A failed write or sync is fatal (fatal.h). Opening verifies every record and the snapshot file
// and refuses to start on corruption, naming the file and index.
//
// Threads: one writer thread (the driver's storage thread) and any number of reader threads (the
// Raft loop). Reads are served from memory (TermRuns for every term, EntryCache for the recent
// entries) and from RocksDB for older entries, under a shared lock. A write holds the exclusive
// lock only while it updates memory, except a write that deletes entries (truncation, compaction,
// a snapshot), which holds it across the disk write so no reader sees an entry vanish.

#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "raft/raw_node.h"
#include "raft/storage.h"
#include "storage/codec.h"
#include "storage/entry_cache.h"
#include "storage/error.h"
#include "storage/log_store.h"
#include "storage/term_runs.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class WriteBatch;
}  // namespace rocksdb

namespace raftlock::storage {

struct RocksStorageOptions {
    // Open for inspection: RocksDB read-only, no files created, removed or written.
    bool read_only = false;
    // Recent entries kept in memory for the core's reads.
    uint64_t entry_cache_bytes_max = 16 * 1024 * 1024;
    // Memtable size of the log column family (RocksDB's write_buffer_size).
    uint64_t log_write_buffer_bytes = 64 * 1024 * 1024;
    uint32_t snapshot_chunk_bytes = 1024 * 1024;
    // Flush memtables when closing, so the next open replays no WAL. Tests turn it off to leave
    // the data in the WAL, as a crash would.
    bool flush_on_close = true;
};

class RocksStorage final : public LogStore {
public:
    // Opens (creating when missing, unless read-only) the store in `dir` and verifies all of it.
    // kCorruption names the file and the log index; the caller must not start the node then.
    static Result<std::unique_ptr<RocksStorage>, StorageError> open(
        const std::string& dir, const RocksStorageOptions& options = {});
    ~RocksStorage() override;
    RocksStorage(const RocksStorage&) = delete;
    RocksStorage& operator=(const RocksStorage&) = delete;

    // raft::Storage
    raft::InitialState initial_state() const override;
    raft::StorageResult<std::vector<raft::Entry>> entries(raft::Index lo,
                                                          raft::Index hi,
                                                          uint64_t max_bytes) const override;
    raft::StorageResult<raft::Term> term(raft::Index i) const override;
    raft::Index first_index() const override;
    raft::Index last_index() const override;
    raft::StorageResult<raft::Snapshot> snapshot() const override;

    // Persists what a Ready asks for, as one WriteBatch synced when ready.must_sync (or when it
    // carries a snapshot; one batch is all-or-nothing, so there is no torn Ready): the snapshot
    // (its file first, then its metadata, replacing the whole log), the hard state, and the
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
    // Synced single writes, for bootstrap and tests.
    void set_hard_state(const raft::HardState& hs);
    void append(const std::vector<raft::Entry>& entries);
    // Replaces everything with `snapshot` (synced). False, and nothing changes, when it is not
    // newer than the current snapshot.
    bool apply_snapshot(const raft::Snapshot& snapshot);
    // Records a snapshot of the application state at `index`: snapshot index < index <= last
    // index, and `index` not compacted. The log is kept; compact() separately.
    void create_snapshot(raft::Index index, const raft::ConfState& conf_state, std::string data);
    // Discards entries up to and including `compact_index` (range delete); first_index() becomes
    // compact_index + 1 and term(compact_index) stays known. Nothing happens when compact_index <
    // first_index(). Precondition: compact_index <= last_index().
    void compact(raft::Index compact_index);

    // For inspection and tests.
    raft::HardState hard_state() const;
    LogStart log_start() const;
    std::optional<SnapshotRecord> snapshot_record() const;
    const std::string& dir() const { return dir_; }
    std::string snapshot_dir() const { return dir_ + "/snap"; }
    std::string db_dir() const { return dir_ + "/db"; }

private:
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

    RocksStorage(std::string dir, const RocksStorageOptions& options);

    // rocks_storage_open.cc
    std::optional<StorageError> open_db();
    std::optional<StorageError> load_state();
    std::optional<StorageError> verify_snapshot() const;
    std::optional<StorageError> scan_log();
    void remove_stray_snapshot_files() const;
    std::string describe_location(raft::Index index) const;

    // rocks_storage_write.cc
    void write(Change change, bool sync);
    void stage_log_changes(rocksdb::WriteBatch& batch, const Change& change) const;
    void stage_entries(rocksdb::WriteBatch& batch,
                       std::span<const raft::Entry> entries,
                       const LogStart& start,
                       raft::Index last) const;
    void apply_to_memory(const Change& change);
    // How many leading entries are at or below the log start `start` (skipped as compacted).
    static size_t compacted_prefix(std::span<const raft::Entry> entries, raft::Index start);

    // rocks_storage.cc
    void read_from_db(raft::Index lo,
                      raft::Index hi,
                      uint64_t max_bytes,
                      uint64_t& total_bytes,
                      std::vector<raft::Entry>& out) const;

    // Whether the change removes stored entries (truncation, compaction or a new snapshot).
    bool deletes_entries(const Change& change) const;

    std::string dir_;
    RocksStorageOptions options_;
    // Guards the in-memory view below against readers on other threads (see the top comment).
    mutable std::shared_mutex mutex_;
    bool open_complete_ = false;  // every check of open() passed
    std::unique_ptr<rocksdb::DB> db_;
    rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
    rocksdb::ColumnFamilyHandle* log_cf_ = nullptr;
    rocksdb::ColumnFamilyHandle* state_cf_ = nullptr;

    raft::HardState hard_state_;
    LogStart log_start_;
    std::optional<SnapshotRecord> snapshot_;
    TermRuns terms_;
    EntryCache cache_;
};

}  // namespace raftlock::storage
