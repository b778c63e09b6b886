// RocksStorage: the core's read path (raft::Storage) and closing. Opening is in
// rocks_storage_open.cc, writing in rocks_storage_write.cc.

#include "storage/rocks_storage.h"

#include <algorithm>

#include <fmt/format.h>
#include <rocksdb/db.h>

#include "storage/fatal.h"
#include "storage/snapshot_file.h"

namespace raftlock::storage {

RocksStorage::RocksStorage(std::string dir, const RocksStorageOptions& options)
    : dir_(std::move(dir)), options_(options), cache_(options.entry_cache_bytes_max) {}

RocksStorage::~RocksStorage() {
    if (db_ == nullptr) {
        return;
    }
    // A store that failed to open is not flushed: damaged contents are not rewritten elsewhere.
    if (options_.flush_on_close && !options_.read_only && open_complete_) {
        const rocksdb::Status s = db_->Flush(rocksdb::FlushOptions(), {log_cf_, state_cf_});
        if (!s.ok()) {
            fatal_disk_error(fmt::format("flush {} on close: {}", db_dir(), s.ToString()));
        }
    }
    for (rocksdb::ColumnFamilyHandle* cf : {default_cf_, log_cf_, state_cf_}) {
        if (cf != nullptr) {
            (void)db_->DestroyColumnFamilyHandle(cf);
        }
    }
    const rocksdb::Status s = db_->Close();
    if (!s.ok() && !options_.read_only) {
        fatal_disk_error(fmt::format("close {}: {}", db_dir(), s.ToString()));
    }
}

raft::InitialState RocksStorage::initial_state() const {
    std::shared_lock lock(mutex_);
    raft::InitialState state;
    state.hard_state = hard_state_;
    if (snapshot_) {
        state.snapshot_meta = snapshot_->meta;
    }
    return state;
}

raft::Index RocksStorage::first_index() const {
    std::shared_lock lock(mutex_);
    return log_start_.index + 1;
}

raft::Index RocksStorage::last_index() const {
    std::shared_lock lock(mutex_);
    return terms_.last();
}

raft::StorageResult<raft::Term> RocksStorage::term(raft::Index i) const {
    std::shared_lock lock(mutex_);
    if (i < log_start_.index) {
        return raft::Error{
            raft::ErrorCode::kCompacted,
            fmt::format("index {} is compacted (log starts at {})", i, log_start_.index)};
    }
    if (i > terms_.last()) {
        return raft::Error{raft::ErrorCode::kUnavailable,
                           fmt::format("index {} is beyond the last index {}", i, terms_.last())};
    }
    const std::optional<raft::Term> t = terms_.term(i);
    RL_ASSERT(t.has_value());
    return *t;
}

raft::StorageResult<std::vector<raft::Entry>> RocksStorage::entries(raft::Index lo,
                                                                    raft::Index hi,
                                                                    uint64_t max_bytes) const {
    std::shared_lock lock(mutex_);
    const raft::Index first_index = log_start_.index + 1;
    const raft::Index last_index = terms_.last();
    if (lo < first_index) {
        return raft::Error{
            raft::ErrorCode::kCompacted,
            fmt::format("entries from {} are compacted (first index {})", lo, first_index)};
    }
    if (hi > last_index + 1) {
        return raft::Error{
            raft::ErrorCode::kUnavailable,
            fmt::format("entries up to {} are beyond the last index {}", hi, last_index)};
    }
    RL_ASSERT(lo <= hi);
    if (!cache_.empty()) {
        RL_ASSERT(cache_.last_index() == last_index);  // the cache is always the log's tail
    }
    std::vector<raft::Entry> out;
    uint64_t total_bytes = 0;
    // The part below the cache comes from RocksDB; the cache always ends at the last index.
    const raft::Index cache_lo = cache_.empty() ? hi : std::max(lo, cache_.first_index());
    const raft::Index db_hi = std::min(hi, cache_lo);
    if (lo < db_hi) {
        read_from_db(lo, db_hi, max_bytes, total_bytes, out);
        if (out.size() < db_hi - lo) {
            return out;  // the byte limit was reached
        }
    }
    for (raft::Index i = std::max(lo, db_hi); i < hi; i++) {
        const raft::Entry& entry = cache_.at(i);
        const uint64_t size = raft::entry_size_bytes(entry);
        if (!out.empty() && total_bytes + size > max_bytes) {
            break;
        }
        total_bytes += size;
        out.push_back(entry);
    }
    return out;
}

void RocksStorage::read_from_db(raft::Index lo,
                                raft::Index hi,
                                uint64_t max_bytes,
                                uint64_t& total_bytes,
                                std::vector<raft::Entry>& out) const {
    const std::string upper = encode_log_key(hi);
    const rocksdb::Slice upper_slice(upper);
    rocksdb::ReadOptions read_options;
    read_options.verify_checksums = true;
    read_options.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read_options, log_cf_));
    raft::Index expected = lo;
    for (it->Seek(encode_log_key(lo)); it->Valid(); it->Next()) {
        auto index = decode_log_key(std::string_view(it->key().data(), it->key().size()));
        auto entry = decode_entry(std::string_view(it->value().data(), it->value().size()));
        if (!index.ok() || *index != expected || !entry.ok() || entry->index != expected) {
            // Verified when the store opened, so this is the disk going bad underneath us.
            fatal_disk_error(fmt::format(
                "corrupt log record at index {} in {}: {}", expected, describe_location(expected),
                entry.ok() ? "wrong key or index" : entry.error().message));
        }
        const uint64_t size = raft::entry_size_bytes(*entry);
        if (!out.empty() && total_bytes + size > max_bytes) {
            return;
        }
        total_bytes += size;
        out.push_back(std::move(*entry));
        expected++;
    }
    if (!it->status().ok()) {
        fatal_disk_error(fmt::format("read log from index {} in {}: {}", expected, db_dir(),
                                     it->status().ToString()));
    }
    if (expected != hi) {
        fatal_disk_error(fmt::format("log entry {} is missing from {}", expected, db_dir()));
    }
}

raft::HardState RocksStorage::hard_state() const {
    std::shared_lock lock(mutex_);
    return hard_state_;
}

LogStart RocksStorage::log_start() const {
    std::shared_lock lock(mutex_);
    return log_start_;
}

std::optional<SnapshotRecord> RocksStorage::snapshot_record() const {
    std::shared_lock lock(mutex_);
    return snapshot_;
}

raft::StorageResult<raft::Snapshot> RocksStorage::snapshot() const {
    std::shared_lock lock(mutex_);
    if (!snapshot_) {
        return raft::Error{raft::ErrorCode::kSnapshotTemporarilyUnavailable,
                           "no snapshot has been taken yet"};
    }
    auto data = read_snapshot_file(snapshot_dir(), *snapshot_);
    if (!data.ok()) {
        fatal_disk_error(data.error().message);
    }
    raft::Snapshot snapshot;
    snapshot.metadata = snapshot_->meta;
    snapshot.data = std::move(*data);
    return snapshot;
}

}  // namespace raftlock::storage
