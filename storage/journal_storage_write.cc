// JournalStorage: writes. Each change (store_core.h) becomes one journal batch, all-or-nothing
// after a crash. A failed write is fatal: the node stops rather than run on state it could not
// persist.

#include <fmt/format.h>

#include "base/assert.h"
#include "storage/codec.h"
#include "storage/journal_records.h"
#include "storage/journal_storage.h"

namespace raftlock::storage {

std::string JournalStorage::encode_checkpoint() const {
    Checkpoint checkpoint;
    checkpoint.start = log_start_;
    checkpoint.last = terms_.last();
    checkpoint.runs = terms_.runs();
    if (!hard_state_.empty()) {
        checkpoint.hard_state = hard_state_;
    }
    checkpoint.snapshot = snapshot_;
    return storage::encode_checkpoint(checkpoint);
}

// The batch: a checkpoint of the state before the change when it opens a segment, then the
// change's records in the order replay checks.
void JournalStorage::write_change(const Change& change, bool sync) {
    // An entry's record is its header and codec.h's entry (22 bytes and the data); the other
    // records of a change are far below the allowance.
    constexpr size_t kOtherRecordsAllowance = 8192;
    size_t change_bytes_max = kOtherRecordsAllowance;
    for (const raft::Entry& e : change.entries) {
        change_bytes_max += kRecordHeaderBytes + kEncodedEntryOverheadBytes + e.data.size();
    }
    // (Every segment this store writes starts with its first batch here, so "nothing written in
    // the current segment yet" is "no checkpoint in it yet".)
    const bool opens_segment = journal_->at_segment_start() || change_bytes_max > journal_->room();
    BodyWriter writer;
    writer.body().reserve(change_bytes_max);
    if (opens_segment) {
        writer.add(JournalRecord::kCheckpoint, encode_checkpoint());
    }
    if (change.snapshot) {
        writer.add(JournalRecord::kSnapshot, encode_snapshot_record(*change.snapshot));
    }
    const LogStart start = start_after(change);
    if (change.replace_log) {
        writer.add(JournalRecord::kLogReset, encode_log_start(start));
    } else if (change.compact_to) {
        writer.add(JournalRecord::kCompact, encode_log_start(start));
    }
    const size_t skip = compacted_prefix(change.entries, start.index);
    std::vector<std::pair<size_t, size_t>> entry_records;  // payload offset and length
    entry_records.reserve(change.entries.size() - skip);
    for (size_t i = skip; i < change.entries.size(); i++) {
        entry_records.push_back(writer.add_entry(change.entries[i]));
    }
    if (change.hard_state) {
        writer.add(JournalRecord::kHardState, encode_hard_state(*change.hard_state));
    }
    const std::string& body = writer.body();
    if (opens_segment && !journal_->at_segment_start()) {
        journal_->start_next_segment(body.size());
    }
    RL_ASSERT(opens_segment ? journal_->at_segment_start() : body.size() <= journal_->room());
    const JournalLocation where = journal_->append(body, sync);
    RL_ASSERT(opens_segment || where.segment == checkpointed_segment_);
    if (opens_segment) {
        checkpointed_segment_ = where.segment;
    }
    written_.clear();
    for (const auto& [offset, length] : entry_records) {
        written_.push_back(
            EntryLocation{where.segment, where.offset + offset, static_cast<uint32_t>(length)});
    }
}

void JournalStorage::after_change(const Change& change, const LogStart& old_start) {
    bool dropped = false;
    if (change.replace_log) {
        dropped = !locations_.empty();
        locations_.clear();
    } else if (change.compact_to) {
        const raft::Index gone = log_start_.index - old_start.index;
        RL_ASSERT(gone <= locations_.size());
        locations_.erase(locations_.begin(), locations_.begin() + static_cast<ptrdiff_t>(gone));
        dropped = gone > 0;
    }
    const size_t skip = compacted_prefix(change.entries, log_start_.index);
    RL_ASSERT(written_.size() == change.entries.size() - skip);
    if (!written_.empty()) {
        const raft::Index first = change.entries[skip].index;
        const size_t keep = first - 1 - log_start_.index;
        dropped = dropped || keep < locations_.size();
        locations_.resize(keep);
        locations_.insert(locations_.end(), written_.begin(), written_.end());
    }
    written_.clear();
    RL_ASSERT(locations_.size() == terms_.last() - log_start_.index);
    if (dropped && !read_only_) {
        release_dead_segments();
    }
}

// Segments before the one holding the first live entry hold nothing the store still needs once
// the change that killed their entries is durable: the first kept segment's checkpoint covers the
// rest. (Live entries lie in increasing segment order: a truncation rewrites from its point on.)
// During replay (no journal yet) nothing is released.
void JournalStorage::release_dead_segments() {
    if (journal_ == nullptr) {
        return;
    }
    const uint64_t first_needed =
        locations_.empty() ? journal_->current_segment() : locations_.front().segment;
    const std::vector<uint64_t> kept = journal_->segments();
    RL_ASSERT(first_needed != 0 && !kept.empty());
    if (kept.front() >= first_needed) {
        return;
    }
    journal_->sync();
    journal_->release_before(first_needed);
}

}  // namespace raftlock::storage
