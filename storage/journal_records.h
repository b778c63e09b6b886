#pragma once

// What a journal batch of JournalStorage holds (journal_storage.h): one change of the store as
// typed records. Integers little-endian.
//
//   body        u8 version | record...
//   record      u8 type | u32 length | payload
//   checkpoint  u64 start index | u64 start term | u64 last index | varint n | n x (u64 first
//               index, u64 term) | varint length | hard state | varint length | snapshot record
//               (length 0: none); base/byte_io.h's forms
//   hard state, snapshot, log reset, compact, entry: the codec.h forms (each with its own crc
//               and version): hard state, snapshot record, log start, log start, entry
//
// Order inside a body: checkpoint (the first batch of every segment), snapshot, log reset or
// compact, entries, hard state. Unknown types and versions are refused, never skipped.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/codec.h"

namespace raftlock::storage {

enum class JournalRecord : uint8_t {
    kCheckpoint = 1,
    kHardState = 2,
    kSnapshot = 3,
    kLogReset = 4,  // a snapshot replaces the whole log: the log is its start alone
    kCompact = 5,   // entries up to the start go
    kEntry = 6,     // appended; one at or below the last index first truncates from it
};
static_assert(static_cast<uint8_t>(JournalRecord::kCheckpoint) == 1);
static_assert(static_cast<uint8_t>(JournalRecord::kEntry) == 6);

inline constexpr uint8_t kJournalBodyVersion = 1;
inline constexpr size_t kRecordHeaderBytes = 5;

// The store's state at the start of a segment: all that replay needs of the segments before it.
struct Checkpoint {
    LogStart start;
    raft::Index last = 0;
    std::vector<std::pair<raft::Index, raft::Term>> runs;  // TermRuns::runs()
    std::optional<raft::HardState> hard_state;
    std::optional<SnapshotRecord> snapshot;
};

std::string encode_checkpoint(const Checkpoint& checkpoint);
Decoded<Checkpoint> decode_checkpoint(std::string_view payload);

class BodyWriter {
public:
    BodyWriter() { body_.push_back(static_cast<char>(kJournalBodyVersion)); }
    // Returns the payload's offset in the body.
    size_t add(JournalRecord type, std::string_view payload);
    // An entry record, encoded in place (codec.h's entry); returns its payload's offset and size.
    std::pair<size_t, size_t> add_entry(const raft::Entry& entry);
    std::string& body() { return body_; }

private:
    std::string body_;
};

struct RecordView {
    JournalRecord type;
    size_t offset = 0;  // of the payload, in the body
    std::string_view payload;
};
// The records of a body, framing checked (not their payloads).
Decoded<std::vector<RecordView>> split_body(std::string_view body);

}  // namespace raftlock::storage
