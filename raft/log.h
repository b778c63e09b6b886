#pragma once

// The Raft log as the core sees it: stable entries (in Storage, read-only here) followed by an
// unstable tail not yet persisted, plus the commit and apply positions. Modelled on etcd's
// raftLog. Invariant: applied <= applying <= committed <= last_index().

#include <optional>
#include <vector>

#include "raft/storage.h"
#include "raft/types.h"

namespace raftlock::raft {

// Entries (and possibly a snapshot) not yet persisted. Some of them may be in progress: handed to
// the application in a Ready whose write has not completed (several Readies may be in flight,
// raft/ready_loop.h); the next Ready carries only what is not in progress yet.
class Unstable {
public:
    explicit Unstable(Index offset) : offset_(offset), in_progress_end_(offset) {}

    std::optional<Index> maybe_first_index() const;
    std::optional<Index> maybe_last_index() const;
    std::optional<Term> maybe_term(Index i) const;

    // The application persisted entries up to (i, t): drop them unless they were replaced since.
    void stable_to(Index i, Term t);
    void stable_snap_to(Index i);
    void restore(const Snapshot& snapshot);
    // Appends, replacing any unstable entries at or after the first new entry's index. Replaced
    // entries that were in progress are handed out again (their write may land, but the new
    // entries' write comes after it and replaces them).
    void truncate_and_append(std::vector<Entry>&& entries);

    // What the next Ready must persist: the entries not in progress, the snapshot if it is not.
    std::vector<Entry> entries_to_persist() const;
    bool has_entries_to_persist() const { return in_progress_end_ < offset_ + entries_.size(); }
    bool has_snapshot_to_persist() const { return snapshot_.has_value() && !snapshot_in_progress_; }
    // Everything unstable is now in progress (a Ready carrying it was handed out).
    void accept_in_progress();
    // Entries [lo, hi); precondition: offset <= lo <= hi <= offset + size.
    void slice(Index lo, Index hi, uint64_t max_bytes, std::vector<Entry>* out) const;

    Index offset() const { return offset_; }
    const std::vector<Entry>& entries() const { return entries_; }
    const std::optional<Snapshot>& snapshot() const { return snapshot_; }

private:
    std::optional<Snapshot> snapshot_;
    std::vector<Entry> entries_;
    Index offset_;           // index of entries_[0]
    Index in_progress_end_;  // first index not handed out; offset_ <= it <= offset_ + size
    bool snapshot_in_progress_ = false;
};

// Where a conflict-free position lies: used for fast log back-off (thesis §5.3).
struct LogPosition {
    Index index = 0;
    Term term = 0;
};

class RaftLog {
public:
    // next_committed_entries() hands out at most max_committed_size_per_ready_bytes (at least one
    // entry) and, when max_committed_entries_per_ready is not 0, at most that many entries.
    RaftLog(const Storage& storage,
            uint64_t max_committed_size_per_ready_bytes,
            uint64_t max_committed_entries_per_ready = 0);

    Index first_index() const;
    Index last_index() const;
    Term last_term() const;
    // Term of entry i, or nullopt when i is compacted away or beyond the last index.
    std::optional<Term> term(Index i) const;
    bool match_term(Index i, Term t) const;
    // Raft §5.4.1: is a log ending at (last_index, last_term) at least as up to date as ours?
    bool is_up_to_date(Index last_index, Term last_term) const;

    struct AppendResult {
        Index last_new = 0;
        // The first index whose entry was replaced or added (nullopt: all entries were present).
        std::optional<Index> first_written;
    };
    // Follower side of AppendEntries: if entry prev_index has prev_term, appends `entries` (cutting
    // a conflicting suffix), commits up to min(committed, last new index) and returns the last new
    // index; nullopt when the terms do not match.
    std::optional<AppendResult> maybe_append(Index prev_index,
                                             Term prev_term,
                                             Index committed,
                                             std::vector<Entry>&& entries);
    // Leader side: appends entries after the last index; returns the new last index.
    Index append(std::vector<Entry>&& entries);

    // The largest index <= index whose term is <= term (the hint for a rejected append).
    LogPosition find_conflict_by_term(Index index, Term term) const;

    // Entries [lo, hi) up to max_bytes (at least one when lo < hi); nullopt if lo is compacted.
    std::optional<std::vector<Entry>> slice(Index lo, Index hi, uint64_t max_bytes) const;

    void commit_to(Index i);
    void applied_to(Index i);
    // Committed entries up to i were handed out to be applied (a Ready carrying them is in
    // flight): the next Ready's committed entries start after them.
    void accept_applying(Index i);
    // Everything unstable was handed out to be persisted.
    void accept_in_progress() { unstable_.accept_in_progress(); }
    // Marks entries up to (i, t) and the snapshot at i as persisted.
    void stable_to(Index i, Term t) { unstable_.stable_to(i, t); }
    void stable_snap_to(Index i) { unstable_.stable_snap_to(i); }
    void restore(const Snapshot& snapshot);

    // The highest index whose entry is persisted (what the leader may count for itself).
    Index last_stable_index() const;
    bool has_next_committed_entries() const;
    std::vector<Entry> next_committed_entries() const;

    Index committed() const { return committed_; }
    Index applied() const { return applied_; }
    Index applying() const { return applying_; }
    const Unstable& unstable() const { return unstable_; }
    const Storage& storage() const { return storage_; }

private:
    std::optional<Index> find_conflict(const std::vector<Entry>& entries) const;

    const Storage& storage_;
    Unstable unstable_;
    Index committed_ = 0;
    Index applied_ = 0;
    Index applying_ = 0;  // applied_ <= applying_ <= committed_
    uint64_t max_committed_size_per_ready_bytes_;
    uint64_t max_committed_entries_per_ready_;
};

}  // namespace raftlock::raft
