// RocksStorage: reading older entries, and closing. Opening is in rocks_storage_open.cc, writing
// in rocks_storage_write.cc; the rest is StoreCore's (store_core.h).

#include "storage/rocks_storage.h"

#include <algorithm>

#include <fmt/format.h>
#include <rocksdb/db.h>

#include "storage/fatal.h"

namespace raftlock::storage {

RocksStorage::RocksStorage(std::string dir, const RocksStorageOptions& options)
    : StoreCore(std::move(dir),
                options.read_only,
                options.entry_cache_bytes_max,
                options.snapshot_chunk_bytes),
      options_(options) {}

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

void RocksStorage::read_older(raft::Index lo,
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

}  // namespace raftlock::storage
