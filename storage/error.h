#pragma once

// Expected failures of the durable store: what `RocksStorage::open` and the decoders report. A
// failed write is not among them: it is fatal (fatal.h).

#include <cstdint>
#include <string>
#include <utility>

namespace raftlock::storage {

enum class StorageErrorCode : uint8_t {
    kCorruption,       // a checksum, framing or invariant check failed on data read from disk
    kIo,               // the operating system or RocksDB refused to read or open
    kInvalidArgument,  // the caller asked for something impossible (a bad path, a missing store)
};

struct StorageError {
    StorageErrorCode code;
    std::string message;
};

inline StorageError corruption(std::string message) {
    return StorageError{StorageErrorCode::kCorruption, std::move(message)};
}

}  // namespace raftlock::storage
