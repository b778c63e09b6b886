#include "storage/entry_cache.h"

#include "base/assert.h"

namespace raftlock::storage {

void EntryCache::append(const raft::Entry& entry) {
    if (!entries_.empty() && entry.index != entries_.back().index + 1) {
        clear();
    }
    entries_.push_back(entry);
    bytes_ += raft::entry_size_bytes(entry);
    while (entries_.size() > 1 && bytes_ > bytes_max_) {
        bytes_ -= raft::entry_size_bytes(entries_.front());
        entries_.pop_front();
    }
}

void EntryCache::truncate_after(raft::Index index) {
    while (!entries_.empty() && entries_.back().index > index) {
        bytes_ -= raft::entry_size_bytes(entries_.back());
        entries_.pop_back();
    }
}

void EntryCache::drop_before(raft::Index index) {
    while (!entries_.empty() && entries_.front().index < index) {
        bytes_ -= raft::entry_size_bytes(entries_.front());
        entries_.pop_front();
    }
}

void EntryCache::clear() {
    entries_.clear();
    bytes_ = 0;
}

const raft::Entry& EntryCache::at(raft::Index index) const {
    RL_ASSERT(!entries_.empty());
    RL_ASSERT(index >= first_index());
    RL_ASSERT(index <= last_index());
    const raft::Entry& entry = entries_[index - first_index()];
    RL_ASSERT(entry.index == index);
    return entry;
}

}  // namespace raftlock::storage
