#pragma once

// The most recent log entries, in memory, bounded by bytes. The core reads the tail of the log
// (entries to replicate, entries to apply) far more often than anything older; those reads are
// served from here, older ones from RocksDB.

#include <cstdint>
#include <deque>
#include <vector>

#include "raft/types.h"

namespace raftlock::storage {

class EntryCache {
public:
    explicit EntryCache(uint64_t bytes_max) : bytes_max_(bytes_max) {}

    // Adds the entry after the cached ones; if it does not follow them, the cache restarts with it.
    // Evicts the oldest entries beyond the byte budget (the newest entry always stays).
    void append(const raft::Entry& entry);
    // Drops entries above `index`.
    void truncate_after(raft::Index index);
    // Drops entries below `index`.
    void drop_before(raft::Index index);
    void clear();

    bool empty() const { return entries_.empty(); }
    // First cached index; meaningful only when not empty.
    raft::Index first_index() const { return entries_.front().index; }
    raft::Index last_index() const { return entries_.back().index; }
    // Precondition: first_index() <= index <= last_index().
    const raft::Entry& at(raft::Index index) const;
    uint64_t bytes() const { return bytes_; }

private:
    uint64_t bytes_max_;
    uint64_t bytes_ = 0;
    std::deque<raft::Entry> entries_;
};

}  // namespace raftlock::storage
