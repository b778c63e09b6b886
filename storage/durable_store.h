#pragma once

// Opens the durable store in a directory with the engine that wrote it: JournalStorage (a
// `journal/` directory, the default for a new store) or RocksStorage (`db/`, what raftlock
// wrote before the journal, docs/decisions/0021-journal-segments.md). A new store gets the engine
// the caller names.

#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "storage/error.h"
#include "storage/store_core.h"

namespace raftlock::storage {

enum class StoreEngine : uint8_t { kJournal, kRocksDb };

struct DurableStoreOptions {
    StoreEngine new_store_engine = StoreEngine::kJournal;  // only for a directory without a store
    bool read_only = false;  // open for inspection; a missing store is an error
    uint64_t entry_cache_bytes_max = 16 * 1024 * 1024;
    uint64_t journal_segment_bytes = 64ull << 20;
};

// The engine of the store in `dir`, or nullopt when there is none. An error when it holds both.
Result<std::optional<StoreEngine>, StorageError> detect_store_engine(const std::string& dir);

Result<std::unique_ptr<StoreCore>, StorageError> open_durable_store(
    const std::string& dir, const DurableStoreOptions& options = {});

}  // namespace raftlock::storage
