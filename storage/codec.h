#pragma once

// Byte forms of everything the store keeps in RocksDB. Every value starts with the CRC32C of the
// rest of the value and a format version, so a flipped bit anywhere is caught when the value is
// read, independently of RocksDB's own block and WAL checksums. Integers are little-endian, except
// log keys, which are big-endian so that RocksDB's bytewise order is log order.
//
//   log key      u64be index
//   entry        u32 crc | u8 version | u64 term | u64 index | u8 type | data
//   hard state   u32 crc | u8 version | u64 term | u64 vote | u64 commit
//   log start    u32 crc | u8 version | u64 index | u64 term
//   snapshot     u32 crc | u8 version | u64 index | u64 term | u32 n | n x u64 voter
//                | u32 m | m x u64 learner | u32 len | file name | u64 size | u32 data crc

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "raft/types.h"
#include "storage/error.h"

namespace raftlock::storage {

// Keys of the "state" column family.
inline constexpr std::string_view kHardStateKey = "hard_state";
inline constexpr std::string_view kLogStartKey = "log_start";
inline constexpr std::string_view kSnapshotKey = "snapshot";

template <typename T>
using Decoded = Result<T, StorageError>;

// The entry just before the first readable one: the snapshot's last entry or the compaction point.
// Its term is kept so that term(first_index() - 1) can be answered.
struct LogStart {
    raft::Index index = 0;
    raft::Term term = 0;

    friend bool operator==(const LogStart&, const LogStart&) = default;
};

// Where the latest snapshot lives and how to check it.
struct SnapshotRecord {
    raft::SnapshotMetadata meta;
    std::string file_name;  // relative to the store's snapshot directory
    uint64_t size_bytes = 0;
    uint32_t data_crc = 0;  // CRC32C of the whole snapshot data

    friend bool operator==(const SnapshotRecord&, const SnapshotRecord&) = default;
};

std::string encode_log_key(raft::Index index);
Decoded<raft::Index> decode_log_key(std::string_view key);

// What an encoded entry adds to its data: checksum, version, term, index and type.
constexpr size_t kEncodedEntryOverheadBytes = 4 + 1 + 8 + 8 + 1;
std::string encode_entry(const raft::Entry& entry);
// The same appended to `out` (no value of its own: a journal batch holds many); returns its size.
size_t append_entry(std::string& out, const raft::Entry& entry);
Decoded<raft::Entry> decode_entry(std::string_view value);

// One stored log record as recovery reads it (RocksStorage and FaultInjectingStorage open()):
// it decodes (checksum, framing), holds the entry of its key, and its term is not below
// `prev_term`, the term of the entry before it. The error names the index and the broken rule;
// the caller adds where the record is.
Decoded<raft::Entry> decode_log_record(raft::Index key,
                                       raft::Term prev_term,
                                       std::string_view value);

std::string encode_hard_state(const raft::HardState& hs);
Decoded<raft::HardState> decode_hard_state(std::string_view value);

std::string encode_log_start(const LogStart& start);
Decoded<LogStart> decode_log_start(std::string_view value);

std::string encode_snapshot_record(const SnapshotRecord& record);
Decoded<SnapshotRecord> decode_snapshot_record(std::string_view value);

// Little-endian fixed-width helpers, shared with the snapshot file format.
void put_u32(std::string& out, uint32_t v);
void put_u64(std::string& out, uint64_t v);
uint32_t get_u32(const char* p);
uint64_t get_u64(const char* p);

}  // namespace raftlock::storage
