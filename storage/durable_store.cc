#include "storage/durable_store.h"

#include <fmt/format.h>

#include "storage/file_util.h"
#include "storage/journal_storage.h"
#include "storage/rocks_storage.h"

namespace raftlock::storage {

Result<std::optional<StoreEngine>, StorageError> detect_store_engine(const std::string& dir) {
    const bool journal = is_directory(dir + "/journal");
    const bool rocksdb = is_directory(dir + "/db");
    if (journal && rocksdb) {
        return StorageError{StorageErrorCode::kInvalidArgument,
                            fmt::format("{} holds two stores, {}/journal and {}/db: which one is "
                                        "this node's? Move the other away",
                                        dir, dir, dir)};
    }
    if (journal) {
        return std::optional<StoreEngine>(StoreEngine::kJournal);
    }
    if (rocksdb) {
        return std::optional<StoreEngine>(StoreEngine::kRocksDb);
    }
    return std::optional<StoreEngine>();
}

Result<std::unique_ptr<StoreCore>, StorageError> open_durable_store(
    const std::string& dir, const DurableStoreOptions& options) {
    auto found = detect_store_engine(dir);
    if (!found.ok()) {
        return found.error();
    }
    if (!found->has_value() && options.read_only) {
        return StorageError{
            StorageErrorCode::kInvalidArgument,
            fmt::format("no store in {} (neither {}/journal nor {}/db)", dir, dir, dir)};
    }
    const StoreEngine engine = found->value_or(options.new_store_engine);
    if (engine == StoreEngine::kJournal) {
        JournalStorageOptions journal;
        journal.read_only = options.read_only;
        journal.entry_cache_bytes_max = options.entry_cache_bytes_max;
        journal.segment_bytes = options.journal_segment_bytes;
        auto store = JournalStorage::open(dir, journal);
        if (!store.ok()) {
            return store.error();
        }
        return std::unique_ptr<StoreCore>(std::move(store).value());
    }
    RocksStorageOptions rocks;
    rocks.read_only = options.read_only;
    rocks.entry_cache_bytes_max = options.entry_cache_bytes_max;
    auto store = RocksStorage::open(dir, rocks);
    if (!store.ok()) {
        return store.error();
    }
    return std::unique_ptr<StoreCore>(std::move(store).value());
}

}  // namespace raftlock::storage
