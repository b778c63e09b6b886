#pragma once

// Snapshot data files, one per snapshot, in the store's `snap/` directory. The data is split into
// chunks, each with its own CRC32C, so a flipped bit is found and named by offset, and so the file
// can later be streamed chunk by chunk. Layout (integers little-endian):
//
//   header  "RLSNAP01" | u64 index | u64 term | u64 size | u32 chunk bytes | u32 header crc
//   chunk   u32 length | u32 crc | data        (crc = CRC32C of u64 offset, then the data)
//
// The file is written to a temporary name, fsynced, renamed and the directory fsynced
// (file_util.h); only then does the metadata in RocksDB point at it.

#include <cstdint>
#include <string>
#include <string_view>

#include "raft/types.h"
#include "storage/codec.h"

namespace raftlock::storage {

std::string snapshot_file_name(const raft::SnapshotMetadata& meta);

std::string encode_snapshot_file(const raft::SnapshotMetadata& meta,
                                 std::string_view data,
                                 uint32_t chunk_bytes);

// Checks every chunk and that the file is the one `expected` describes; returns the data. Errors
// name `path` and the offset of the bad chunk.
Decoded<std::string> decode_snapshot_file(std::string_view file,
                                          const SnapshotRecord& expected,
                                          std::string_view path);

// Writes the snapshot's data durably and returns the record that points at it. Panics on I/O
// failure.
SnapshotRecord write_snapshot_file(const std::string& dir,
                                   const raft::Snapshot& snapshot,
                                   uint32_t chunk_bytes);

Decoded<std::string> read_snapshot_file(const std::string& dir, const SnapshotRecord& record);

}  // namespace raftlock::storage
