// RocksStorage: opening and recovery. RocksDB replays its WAL (a torn tail record of a write that
// was never acknowledged is dropped; damage before the tail fails the open), then every record of
// ours is checked: checksums, the log's contiguity and term order, the snapshot file chunk by
// chunk. Any failure refuses the open with a message naming the file and the log index.

#include <cerrno>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fatal.h"
#include "storage/file_util.h"
#include "storage/rocks_logger.h"
#include "storage/rocks_storage.h"
#include "storage/snapshot_file.h"

namespace raftlock::storage {
namespace {

constexpr const char* kLogFamily = "log";
constexpr const char* kStateFamily = "state";

// All options are set here, at the one place the database is opened, rather than left to
// RocksDB's defaults, which change between releases.
rocksdb::DBOptions make_db_options(const RocksStorageOptions& options) {
    rocksdb::DBOptions db;
    db.create_if_missing = !options.read_only;
    db.create_missing_column_families = !options.read_only;
    db.error_if_exists = false;
    db.paranoid_checks = true;
    // A record torn by a crash in the middle of an unacknowledged write is dropped; corruption
    // anywhere else fails the open (kPointInTimeRecovery would silently drop everything after it).
    db.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
    db.use_fsync = false;  // fdatasync for WAL syncs; RocksDB fsyncs directories itself
    db.manual_wal_flush = false;
    db.enable_pipelined_write = false;
    db.recycle_log_file_num = 0;
    db.max_background_jobs = 2;
    db.max_total_wal_size = 256u << 20;
    db.max_open_files = 256;
    db.stats_dump_period_sec = 0;
    db.stats_persist_period_sec = 0;
    db.avoid_flush_during_shutdown = false;
    db.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
    db.info_log = make_rocks_logger(db.info_log_level);
    return db;
}

rocksdb::ColumnFamilyOptions make_cf_options(uint64_t write_buffer_bytes) {
    rocksdb::ColumnFamilyOptions cf;
    // Log entries are small, already dense, and read back rarely: compression only costs CPU.
    cf.compression = rocksdb::kNoCompression;
    cf.bottommost_compression = rocksdb::kNoCompression;
    cf.compression_per_level.clear();
    cf.write_buffer_size = write_buffer_bytes;
    cf.max_write_buffer_number = 4;
    rocksdb::BlockBasedTableOptions table;
    table.checksum = rocksdb::kCRC32c;
    table.block_size = 16 * 1024;
    cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    return cf;
}

// Write-ahead log files in the database directory, for error messages.
std::string wal_file_names(const std::string& db_dir) {
    auto names = list_directory(db_dir);
    std::vector<std::string> logs;
    if (names.ok()) {
        for (const std::string& name : *names) {
            if (name.size() > 4 && name.substr(name.size() - 4) == ".log") {
                logs.push_back(db_dir + "/" + name);
            }
        }
    }
    return logs.empty() ? "none" : fmt::format("{}", fmt::join(logs, ", "));
}

// After RocksDB refused to open because of damage, finds how far the log can be read, so the
// message can name an index: opens read-only with kPointInTimeRecovery, which stops replaying at
// the damage instead of failing, and writes nothing. Empty when even that fails.
std::string locate_damage(const std::string& db_dir,
                          const rocksdb::DBOptions& db_options,
                          const std::vector<rocksdb::ColumnFamilyDescriptor>& families) {
    rocksdb::DBOptions diagnostic = db_options;
    diagnostic.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    if (!rocksdb::DB::OpenForReadOnly(diagnostic, db_dir, families, &handles, &raw).ok()) {
        return "";
    }
    std::unique_ptr<rocksdb::DB> db(raw);
    std::optional<raft::Index> first;
    raft::Index last = 0;
    {
        std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), handles[1]));
        // One pass per readable entry: bounded by the log's length.
        for (it->SeekToFirst(); it->Valid(); it->Next()) {
            auto index = decode_log_key(std::string_view(it->key().data(), it->key().size()));
            if (!index.ok() || (first && *index != last + 1)) {
                break;
            }
            first = first.value_or(*index);
            last = *index;
        }
    }
    for (rocksdb::ColumnFamilyHandle* handle : handles) {
        (void)db->DestroyColumnFamilyHandle(handle);
    }
    if (!first) {
        return "; no log entry can be read before the damage";
    }
    return fmt::format(
        "; the log reads cleanly from index {} to {}, so the damaged record follows "
        "index {}",
        *first, last, last);
}

}  // namespace

Result<std::unique_ptr<RocksStorage>, StorageError> RocksStorage::open(
    const std::string& dir, const RocksStorageOptions& options) {
    std::unique_ptr<RocksStorage> store(new RocksStorage(dir, options));
    if (options.read_only) {
        if (!is_directory(store->db_dir())) {
            return StorageError{
                StorageErrorCode::kInvalidArgument,
                fmt::format("no store in {} ({} is missing)", dir, store->db_dir())};
        }
    } else {
        // The database directory too: RocksDB logs an error when it opens a missing one.
        for (const std::string& path : {dir, store->db_dir(), store->snapshot_dir()}) {
            if (std::optional<StorageError> error = ensure_directory(path)) {
                return *error;
            }
        }
    }
    for (auto step : {&RocksStorage::open_db, &RocksStorage::load_state, &RocksStorage::scan_log}) {
        if (std::optional<StorageError> error = (store.get()->*step)()) {
            return *error;
        }
    }
    if (std::optional<StorageError> error = store->verify_snapshot()) {
        return *error;
    }
    if (store->hard_state_.commit > store->last_index()) {
        return corruption(
            fmt::format("{}: hard state commit index {} is beyond the last log index {}",
                        store->db_dir(), store->hard_state_.commit, store->last_index()));
    }
    if (!options.read_only) {
        store->remove_stray_snapshot_files();
    }
    store->open_complete_ = true;
    return store;
}

std::optional<StorageError> RocksStorage::open_db() {
    const rocksdb::DBOptions db_options = make_db_options(options_);
    const std::vector<rocksdb::ColumnFamilyDescriptor> families = {
        {rocksdb::kDefaultColumnFamilyName, make_cf_options(4u << 20)},
        {kLogFamily, make_cf_options(options_.log_write_buffer_bytes)},
        {kStateFamily, make_cf_options(4u << 20)},
    };
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    const rocksdb::Status s =
        options_.read_only
            ? rocksdb::DB::OpenForReadOnly(db_options, db_dir(), families, &handles, &db)
            : rocksdb::DB::Open(db_options, db_dir(), families, &handles, &db);
    if (s.IsCorruption()) {
        return StorageError{StorageErrorCode::kCorruption,
                            fmt::format("cannot open RocksDB in {}: {} (write-ahead logs: {}){}",
                                        db_dir(), s.ToString(), wal_file_names(db_dir()),
                                        locate_damage(db_dir(), db_options, families))};
    }
    if (!s.ok()) {
        return StorageError{StorageErrorCode::kIo,
                            fmt::format("cannot open RocksDB in {}: {}", db_dir(), s.ToString())};
    }
    db_.reset(db);
    RL_ASSERT(handles.size() == 3);
    default_cf_ = handles[0];
    log_cf_ = handles[1];
    state_cf_ = handles[2];
    return std::nullopt;
}

std::optional<StorageError> RocksStorage::load_state() {
    rocksdb::ReadOptions read_options;
    read_options.verify_checksums = true;
    // Reads one optional record; absent leaves `out` at its default.
    auto load = [&](std::string_view key, auto decode, auto& out) -> std::optional<StorageError> {
        std::string value;
        const rocksdb::Status s = db_->Get(read_options, state_cf_, key, &value);
        if (s.IsNotFound()) {
            return std::nullopt;
        }
        if (!s.ok()) {
            return StorageError{
                s.IsCorruption() ? StorageErrorCode::kCorruption : StorageErrorCode::kIo,
                fmt::format("read {} from {}: {}", key, db_dir(), s.ToString())};
        }
        auto decoded = decode(value);
        if (!decoded.ok()) {
            return corruption(fmt::format("{} (column family state, key {}): {}", db_dir(), key,
                                          decoded.error().message));
        }
        out = std::move(*decoded);
        return std::nullopt;
    };
    std::optional<StorageError> error = load(kHardStateKey, decode_hard_state, hard_state_);
    if (!error) {
        error = load(kLogStartKey, decode_log_start, log_start_);
    }
    if (!error) {
        error = load(kSnapshotKey, decode_snapshot_record, snapshot_);
    }
    return error;
}

std::optional<StorageError> RocksStorage::verify_snapshot() const {
    if (!snapshot_) {
        return std::nullopt;
    }
    auto data = read_snapshot_file(snapshot_dir(), *snapshot_);
    if (!data.ok()) {
        return data.error();
    }
    return std::nullopt;
}

std::optional<StorageError> RocksStorage::scan_log() {
    terms_.reset(log_start_.index, log_start_.term);
    cache_.clear();
    rocksdb::ReadOptions read_options;
    read_options.verify_checksums = true;
    read_options.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read_options, log_cf_));
    raft::Index expected = log_start_.index + 1;
    raft::Term prev_term = log_start_.term;
    // One pass per stored entry: bounded by the log's length.
    for (it->Seek(encode_log_key(0)); it->Valid(); it->Next()) {
        auto index = decode_log_key(std::string_view(it->key().data(), it->key().size()));
        if (!index.ok() || *index != expected) {
            return corruption(
                fmt::format("log in {} is not contiguous: expected index {}, found {}",
                            describe_location(expected), expected,
                            index.ok() ? fmt::to_string(*index) : index.error().message));
        }
        auto entry = decode_log_record(expected, prev_term,
                                       std::string_view(it->value().data(), it->value().size()));
        if (!entry.ok()) {
            return corruption(
                fmt::format("{} (in {})", entry.error().message, describe_location(expected)));
        }
        terms_.append(entry->index, entry->term);
        prev_term = entry->term;
        cache_.append(*entry);
        expected++;
    }
    if (!it->status().ok()) {
        return StorageError{
            it->status().IsCorruption() ? StorageErrorCode::kCorruption : StorageErrorCode::kIo,
            fmt::format("cannot read the log record at index {} in {}: {}", expected, db_dir(),
                        it->status().ToString())};
    }
    return std::nullopt;
}

// Names where a log key lives: the table files whose key range holds it, else the WAL (recent
// writes that are still in the memtable).
std::string RocksStorage::describe_location(raft::Index index) const {
    const std::string key = encode_log_key(index);
    std::vector<rocksdb::LiveFileMetaData> files;
    db_->GetLiveFilesMetaData(&files);
    std::vector<std::string> names;
    for (const rocksdb::LiveFileMetaData& file : files) {
        if (file.column_family_name == kLogFamily && file.smallestkey <= key &&
            key <= file.largestkey) {
            names.push_back(file.db_path + file.name);
        }
    }
    if (names.empty()) {
        return fmt::format("{} (column family log, write-ahead log)", db_dir());
    }
    return fmt::format("{} (column family log)", fmt::join(names, " or "));
}

}  // namespace raftlock::storage
