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
// The in-memory view, the reads and the threads' rules are StoreCore's (store_core.h); older
// entries are read from RocksDB.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "raft/raw_node.h"
#include "raft/storage.h"
#include "storage/codec.h"
#include "storage/error.h"
#include "storage/store_core.h"

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

class RocksStorage final : public StoreCore {
public:
    // Opens (creating when missing, unless read-only) the store in `dir` and verifies all of it.
    // kCorruption names the file and the log index; the caller must not start the node then.
    static Result<std::unique_ptr<RocksStorage>, StorageError> open(
        const std::string& dir, const RocksStorageOptions& options = {});
    ~RocksStorage() override;
    RocksStorage(const RocksStorage&) = delete;
    RocksStorage& operator=(const RocksStorage&) = delete;

    const char* engine() const override { return "rocksdb"; }
    std::string db_dir() const { return dir_ + "/db"; }

private:
    RocksStorage(std::string dir, const RocksStorageOptions& options);

    // rocks_storage_open.cc
    std::optional<StorageError> open_db();
    std::optional<StorageError> load_state();
    std::optional<StorageError> verify_snapshot() const;
    std::optional<StorageError> scan_log();
    std::string describe_location(raft::Index index) const;

    // rocks_storage_write.cc: one WriteBatch per change.
    void write_change(const Change& change, bool sync) override;
    void after_change(const Change& change, const LogStart& old_start) override;
    void stage_log_changes(rocksdb::WriteBatch& batch, const Change& change) const;
    void stage_entries(rocksdb::WriteBatch& batch,
                       std::span<const raft::Entry> entries,
                       const LogStart& start,
                       raft::Index last) const;

    // rocks_storage.cc
    void read_older(raft::Index lo,
                    raft::Index hi,
                    uint64_t max_bytes,
                    uint64_t& total_bytes,
                    std::vector<raft::Entry>& out) const override;

    RocksStorageOptions options_;
    bool open_complete_ = false;  // every check of open() passed
    std::unique_ptr<rocksdb::DB> db_;
    rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
    rocksdb::ColumnFamilyHandle* log_cf_ = nullptr;
    rocksdb::ColumnFamilyHandle* state_cf_ = nullptr;
};

}  // namespace raftlock::storage
