#include "raft/log.h"

#include <algorithm>
#include <cstddef>

#include "base/assert.h"

namespace raftlock::raft {

std::optional<Index> Unstable::maybe_first_index() const {
    if (snapshot_) {
        return snapshot_->metadata.index + 1;
    }
    return std::nullopt;
}

std::optional<Index> Unstable::maybe_last_index() const {
    if (!entries_.empty()) {
        return offset_ + entries_.size() - 1;
    }
    if (snapshot_) {
        return snapshot_->metadata.index;
    }
    return std::nullopt;
}

std::optional<Term> Unstable::maybe_term(Index i) const {
    if (i < offset_) {
        if (snapshot_ && snapshot_->metadata.index == i) {
            return snapshot_->metadata.term;
        }
        return std::nullopt;
    }
    if (i - offset_ >= entries_.size()) {
        return std::nullopt;
    }
    return entries_[i - offset_].term;
}

void Unstable::stable_to(Index i, Term t) {
    std::optional<Term> term = maybe_term(i);
    // Only entries still unstable and unchanged since the Ready that carried them: a conflicting
    // append between ready() and advance() replaced them, and they must still be persisted.
    if (!term || *term != t || i < offset_) {
        return;
    }
    // Persisted entries were handed out: stable_to() follows the Ready that carried them.
    RL_ASSERT_MSG(i < in_progress_end_, "entries persisted that no Ready carried");
    entries_.erase(entries_.begin(),
                   entries_.begin() + static_cast<std::ptrdiff_t>(i + 1 - offset_));
    offset_ = i + 1;
    RL_ASSERT(offset_ <= in_progress_end_);
}

void Unstable::stable_snap_to(Index i) {
    if (snapshot_ && snapshot_->metadata.index == i) {
        RL_ASSERT_MSG(snapshot_in_progress_, "a snapshot persisted that no Ready carried");
        snapshot_.reset();
        snapshot_in_progress_ = false;
    }
}

void Unstable::restore(const Snapshot& snapshot) {
    offset_ = snapshot.metadata.index + 1;
    in_progress_end_ = offset_;
    entries_.clear();
    snapshot_ = snapshot;
    snapshot_in_progress_ = false;
}

std::vector<Entry> Unstable::entries_to_persist() const {
    RL_ASSERT(offset_ <= in_progress_end_ && in_progress_end_ <= offset_ + entries_.size());
    return std::vector<Entry>(
        entries_.begin() + static_cast<std::ptrdiff_t>(in_progress_end_ - offset_), entries_.end());
}

void Unstable::accept_in_progress() {
    in_progress_end_ = offset_ + entries_.size();
    snapshot_in_progress_ = snapshot_.has_value();
}

void Unstable::truncate_and_append(std::vector<Entry>&& entries) {
    RL_ASSERT(!entries.empty());
    const Index after = entries.front().index;
    if (after == offset_ + entries_.size()) {
        // The common case: a contiguous append.
    } else if (after <= offset_) {
        // Replace all unstable entries (the stable log beyond `after` is overwritten when these
        // are persisted: Ready.entries starting at or below the stored last index).
        offset_ = after;
        in_progress_end_ = after;
        entries_.clear();
    } else {
        RL_ASSERT(after < offset_ + entries_.size());
        entries_.resize(after - offset_);
        in_progress_end_ = std::min(in_progress_end_, after);
    }
    if (entries_.empty()) {
        entries_ = std::move(entries);
        return;
    }
    entries_.insert(entries_.end(), std::make_move_iterator(entries.begin()),
                    std::make_move_iterator(entries.end()));
}

void Unstable::slice(Index lo, Index hi, uint64_t max_bytes, std::vector<Entry>* out) const {
    RL_ASSERT(offset_ <= lo);
    RL_ASSERT(lo <= hi);
    RL_ASSERT(hi <= offset_ + entries_.size());
    uint64_t bytes = 0;
    for (Index i = lo; i < hi; ++i) {
        const Entry& e = entries_[i - offset_];
        bytes += entry_size_bytes(e);
        if (!out->empty() && bytes > max_bytes) {
            return;
        }
        out->push_back(e);
    }
}

RaftLog::RaftLog(const Storage& storage,
                 uint64_t max_committed_size_per_ready_bytes,
                 uint64_t max_committed_entries_per_ready)
    : storage_(storage),
      unstable_(storage.last_index() + 1),
      max_committed_size_per_ready_bytes_(max_committed_size_per_ready_bytes),
      max_committed_entries_per_ready_(max_committed_entries_per_ready) {
    // A new or restarted log has committed and applied at least up to its snapshot.
    committed_ = storage.first_index() - 1;
    applied_ = committed_;
    applying_ = committed_;
}

Index RaftLog::first_index() const {
    if (auto i = unstable_.maybe_first_index()) {
        return *i;
    }
    return storage_.first_index();
}

Index RaftLog::last_index() const {
    if (auto i = unstable_.maybe_last_index()) {
        return *i;
    }
    return storage_.last_index();
}

Term RaftLog::last_term() const {
    std::optional<Term> t = term(last_index());
    RL_ASSERT(t.has_value());
    return *t;
}

std::optional<Term> RaftLog::term(Index i) const {
    // The entry before the first one (the snapshot's) still has a known term.
    const Index dummy = first_index() - 1;
    if (i < dummy || i > last_index()) {
        return std::nullopt;
    }
    if (auto t = unstable_.maybe_term(i)) {
        return t;
    }
    StorageResult<Term> t = storage_.term(i);
    if (t.ok()) {
        return *t;
    }
    // Compacted concurrently (the application compacts its own storage) or not there: the caller
    // treats it as unknown and falls back to a snapshot.
    RL_ASSERT(t.error().code == ErrorCode::kCompacted || t.error().code == ErrorCode::kUnavailable);
    return std::nullopt;
}

bool RaftLog::match_term(Index i, Term t) const {
    std::optional<Term> term_i = term(i);
    return term_i && *term_i == t;
}

bool RaftLog::is_up_to_date(Index index, Term t) const {
    const Term last = last_term();
    return t > last || (t == last && index >= last_index());
}

std::optional<Index> RaftLog::find_conflict(const std::vector<Entry>& entries) const {
    for (const Entry& e : entries) {
        if (!match_term(e.index, e.term)) {
            return e.index;
        }
    }
    return std::nullopt;
}

std::optional<RaftLog::AppendResult> RaftLog::maybe_append(Index prev_index,
                                                           Term prev_term,
                                                           Index committed,
                                                           std::vector<Entry>&& entries) {
    if (!match_term(prev_index, prev_term)) {
        return std::nullopt;
    }
    const Index last_new = prev_index + entries.size();
    std::optional<Index> conflict = find_conflict(entries);
    if (conflict) {
        // Raft §5.3: an existing entry that conflicts with a new one (same index, different
        // term) is deleted with all that follow it. Committed entries never conflict.
        RL_ASSERT_MSG(*conflict > committed_, "conflict with a committed entry");
        const Index skip = *conflict - (prev_index + 1);
        entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(skip));
        unstable_.truncate_and_append(std::move(entries));
    }
    commit_to(std::min(committed, last_new));
    return AppendResult{last_new, conflict};
}

Index RaftLog::append(std::vector<Entry>&& entries) {
    if (entries.empty()) {
        return last_index();
    }
    RL_ASSERT_MSG(entries.front().index > committed_, "append below the commit index");
    unstable_.truncate_and_append(std::move(entries));
    return last_index();
}

LogPosition RaftLog::find_conflict_by_term(Index index, Term t) const {
    // Walk back over entries with a larger term. Bounded by the log length; in practice a few
    // steps per term, since each step usually crosses a whole term's worth of a diverged tail.
    for (;;) {
        std::optional<Term> term_i = term(index);
        if (!term_i) {
            return LogPosition{index, 0};
        }
        if (*term_i <= t || index == 0) {
            return LogPosition{index, *term_i};
        }
        --index;
    }
}

std::optional<std::vector<Entry>> RaftLog::slice(Index lo, Index hi, uint64_t max_bytes) const {
    RL_ASSERT(lo <= hi);
    RL_ASSERT(hi <= last_index() + 1);
    std::vector<Entry> out;
    if (lo == hi) {
        return out;
    }
    if (lo < first_index()) {
        return std::nullopt;
    }
    const Index stable_hi = std::min(hi, unstable_.offset());
    if (lo < stable_hi) {
        StorageResult<std::vector<Entry>> stored = storage_.entries(lo, stable_hi, max_bytes);
        if (!stored.ok()) {
            RL_ASSERT(stored.error().code == ErrorCode::kCompacted);
            return std::nullopt;
        }
        out = std::move(stored).value();
        // The storage stopped early because of the size limit: do not continue past the gap.
        if (out.size() < stable_hi - lo) {
            return out;
        }
    }
    if (hi > unstable_.offset()) {
        uint64_t used_bytes = 0;
        for (const Entry& e : out) {
            used_bytes += entry_size_bytes(e);
        }
        if (!out.empty() && used_bytes >= max_bytes) {
            return out;
        }
        // Unstable::slice adds at least one entry only when `out` is still empty.
        unstable_.slice(std::max(lo, unstable_.offset()), hi, max_bytes - used_bytes, &out);
    }
    return out;
}

void RaftLog::commit_to(Index i) {
    if (i <= committed_) {
        return;  // never decrease the commit index
    }
    RL_ASSERT_MSG(i <= last_index(), "commit index beyond the last index");
    committed_ = i;
}

void RaftLog::applied_to(Index i) {
    if (i == 0) {
        return;
    }
    RL_ASSERT(i <= committed_);
    RL_ASSERT(i >= applied_);
    applied_ = i;
    applying_ = std::max(applying_, i);  // a snapshot is applied without being "applying"
}

void RaftLog::accept_applying(Index i) {
    RL_ASSERT(i <= committed_);
    RL_ASSERT_MSG(i > applying_, "committed entries handed out twice");
    applying_ = i;
}

void RaftLog::restore(const Snapshot& snapshot) {
    committed_ = snapshot.metadata.index;
    unstable_.restore(snapshot);
}

Index RaftLog::last_stable_index() const {
    if (unstable_.snapshot()) {
        return 0;  // nothing is known durable until the snapshot is
    }
    return unstable_.offset() - 1;
}

bool RaftLog::has_next_committed_entries() const {
    // Entries below the first index are in an unapplied snapshot, which is applied first.
    const Index lo = std::max(applying_ + 1, first_index());
    return committed_ >= lo && !unstable_.snapshot();
}

std::vector<Entry> RaftLog::next_committed_entries() const {
    if (!has_next_committed_entries()) {
        return {};
    }
    const Index lo = std::max(applying_ + 1, first_index());
    Index hi = committed_ + 1;
    if (max_committed_entries_per_ready_ > 0) {
        hi = std::min(hi, lo + max_committed_entries_per_ready_);
    }
    RL_ASSERT(lo < hi);
    std::optional<std::vector<Entry>> out = slice(lo, hi, max_committed_size_per_ready_bytes_);
    RL_ASSERT_MSG(out.has_value(), "committed entries compacted before they were applied");
    return std::move(*out);
}

}  // namespace raftlock::raft
