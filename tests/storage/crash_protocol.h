#pragma once

// What the crash test's child writes and what the parent expects, in one place.

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "raft/types.h"

namespace raftlock::storage::crash {

// Sent by the child through its stdout after persist() returned: entries up to `index` are
// durable, the last of them and the hard state have term `term`.
struct Ack {
    uint64_t index = 0;
    uint64_t term = 0;
};

inline constexpr size_t kEntryBytes = 128;

// The data of entry `index` of term `term`; the parent recomputes it to check every entry.
inline std::string entry_data(raft::Index index, raft::Term term) {
    std::string data = fmt::format("crash entry {} term {} ", index, term);
    for (size_t i = 0; data.size() < kEntryBytes; i++) {
        data.push_back(static_cast<char>('A' + (index * 31 + i) % 26));
    }
    return data;
}

inline std::string snapshot_data(raft::Index index) {
    return fmt::format("state machine after entry {}", index);
}

}  // namespace raftlock::storage::crash
