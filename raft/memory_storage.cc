#include "raft/memory_storage.h"

#include "base/assert.h"

namespace raftlock::raft {

MemoryStorage::MemoryStorage() : entries_(1) {}

InitialState MemoryStorage::initial_state() const {
    return InitialState{hard_state_, snapshot_.metadata};
}

StorageResult<std::vector<Entry>> MemoryStorage::entries(Index lo,
                                                         Index hi,
                                                         uint64_t max_bytes) const {
    if (lo <= offset()) {
        return Error{ErrorCode::kCompacted, "requested entries are compacted"};
    }
    if (hi > last_index() + 1) {
        return Error{ErrorCode::kUnavailable, "requested entries are beyond the last index"};
    }
    std::vector<Entry> out;
    uint64_t bytes = 0;
    for (Index i = lo; i < hi; ++i) {
        const Entry& e = entries_[i - offset()];
        bytes += entry_size_bytes(e);
        if (!out.empty() && bytes > max_bytes) {
            break;
        }
        out.push_back(e);
    }
    return out;
}

StorageResult<Term> MemoryStorage::term(Index i) const {
    if (i < offset()) {
        return Error{ErrorCode::kCompacted, "term of a compacted entry"};
    }
    if (i - offset() >= entries_.size()) {
        return Error{ErrorCode::kUnavailable, "term beyond the last index"};
    }
    return entries_[i - offset()].term;
}

Index MemoryStorage::first_index() const {
    return offset() + 1;
}

Index MemoryStorage::last_index() const {
    return offset() + entries_.size() - 1;
}

StorageResult<Snapshot> MemoryStorage::snapshot() const {
    if (snapshot_.empty()) {
        return Error{ErrorCode::kSnapshotTemporarilyUnavailable, "no snapshot yet"};
    }
    return snapshot_;
}

void MemoryStorage::set_hard_state(const HardState& hs) {
    hard_state_ = hs;
}

void MemoryStorage::append(const std::vector<Entry>& entries) {
    if (entries.empty()) {
        return;
    }
    const Index first = first_index();
    const Index last = entries.back().index;
    if (last < first) {
        return;  // everything is compacted already
    }
    size_t skip = 0;
    if (entries.front().index < first) {
        skip = first - entries.front().index;
    }
    const Index start = entries[skip].index;
    RL_ASSERT_MSG(start <= last_index() + 1, "gap in appended entries");
    entries_.resize(start - offset());  // drop the replaced suffix
    entries_.insert(entries_.end(), entries.begin() + static_cast<std::ptrdiff_t>(skip),
                    entries.end());
}

bool MemoryStorage::apply_snapshot(const Snapshot& snapshot) {
    if (snapshot.metadata.index <= snapshot_.metadata.index) {
        return false;
    }
    snapshot_ = snapshot;
    entries_.assign(1, Entry{.term = snapshot.metadata.term, .index = snapshot.metadata.index});
    return true;
}

void MemoryStorage::create_snapshot(Index index, const ConfState& conf_state, std::string data) {
    RL_ASSERT(index > snapshot_.metadata.index);
    RL_ASSERT(index >= offset());  // its term must still be known
    RL_ASSERT(index <= last_index());
    snapshot_.metadata = SnapshotMetadata{index, entries_[index - offset()].term, conf_state};
    snapshot_.data = std::move(data);
}

void MemoryStorage::compact(Index compact_index) {
    if (compact_index <= offset()) {
        return;
    }
    RL_ASSERT(compact_index <= last_index());
    const size_t drop = compact_index - offset();
    // entries_[drop] (entry compact_index) becomes the new dummy, keeping its index and term.
    entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(drop));
    entries_[0].data.clear();
    entries_[0].type = EntryType::kNormal;
}

}  // namespace raftlock::raft
