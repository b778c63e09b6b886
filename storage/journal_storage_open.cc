// JournalStorage: opening. The journal hands over its batches in order; each is checked as data
// from disk (never trusted to hold the writer's invariants) and applied as the writer applied it.

#include <fmt/format.h>

#include "storage/file_util.h"
#include "storage/journal_records.h"
#include "storage/journal_storage.h"
#include "storage/snapshot_file.h"

namespace raftlock::storage {

Result<std::unique_ptr<JournalStorage>, StorageError> JournalStorage::open(
    const std::string& dir, const JournalStorageOptions& options) {
    std::unique_ptr<JournalStorage> store(new JournalStorage(dir, options));
    if (options.read_only) {
        if (!is_directory(store->journal_dir())) {
            return StorageError{
                StorageErrorCode::kInvalidArgument,
                fmt::format("no store in {} ({} is missing)", dir, store->journal_dir())};
        }
    } else {
        for (const std::string& path : {dir, store->journal_dir(), store->snapshot_dir()}) {
            if (std::optional<StorageError> error = ensure_directory(path)) {
                return *error;
            }
        }
    }
    JournalOptions journal_options;
    journal_options.segment_bytes = options.segment_bytes;
    journal_options.read_only = options.read_only;
    journal_options.prepare_in_background = options.prepare_in_background;
    JournalStorage* s = store.get();
    auto journal = Journal::open(store->journal_dir(), journal_options,
                                 [s](const JournalLocation& where, std::string_view body) {
                                     return s->replay_batch(where, body);
                                 });
    if (!journal.ok()) {
        return journal.error();
    }
    store->journal_ = std::move(journal).value();
    if (std::optional<StorageError> error = store->finish_replay()) {
        return *error;
    }
    if (!options.read_only) {
        store->remove_stray_snapshot_files();
    }
    return store;
}

std::optional<StorageError> JournalStorage::replay_batch(const JournalLocation& where,
                                                         std::string_view body) {
    auto fail = [&](const std::string& why) {
        return corruption(fmt::format("{}/{}: batch at offset {} (batch seq {}): {}", journal_dir(),
                                      Journal::segment_name(where.segment),
                                      where.offset - kBatchHeaderBytes, where.batch_seq, why));
    };
    auto records = split_body(body);
    if (!records.ok()) {
        return fail(records.error().message);
    }
    const bool first_in_segment = where.offset == kSegmentHeaderBytes + kBatchHeaderBytes;
    const bool has_checkpoint =
        !records->empty() && records->front().type == JournalRecord::kCheckpoint;
    if (first_in_segment != has_checkpoint) {
        return fail(first_in_segment ? "a segment's first batch holds no checkpoint"
                                     : "a checkpoint after the start of a segment");
    }
    if (has_checkpoint) {
        if (auto error = replay_checkpoint(records->front().payload, where.segment)) {
            return fail(error->message);
        }
    }
    Change change;
    std::vector<raft::Entry> entries;
    std::vector<EntryLocation> locations;
    // Records in the writer's order: snapshot, reset or compact, entries, hard state.
    int stage = 0;
    for (size_t r = has_checkpoint ? 1 : 0; r < records->size(); r++) {
        const RecordView& record = (*records)[r];
        const int record_stage = record.type == JournalRecord::kSnapshot     ? 1
                                 : record.type == JournalRecord::kEntry      ? 3
                                 : record.type == JournalRecord::kHardState  ? 4
                                 : record.type == JournalRecord::kCheckpoint ? 0
                                                                             : 2;
        if (record_stage <= stage && !(record_stage == 3 && stage == 3)) {
            return fail(
                fmt::format("record {} (type {}) out of order", r, static_cast<int>(record.type)));
        }
        stage = record_stage;
        switch (record.type) {
            case JournalRecord::kSnapshot: {
                auto snap = decode_snapshot_record(record.payload);
                if (!snap.ok()) {
                    return fail(snap.error().message);
                }
                if (snapshot_ && snap->meta.index <= snapshot_->meta.index) {
                    return fail(fmt::format("snapshot at index {} does not follow the one at {}",
                                            snap->meta.index, snapshot_->meta.index));
                }
                change.snapshot = std::move(*snap);
                break;
            }
            case JournalRecord::kLogReset:
            case JournalRecord::kCompact: {
                auto start = decode_log_start(record.payload);
                if (!start.ok()) {
                    return fail(start.error().message);
                }
                if (record.type == JournalRecord::kLogReset) {
                    if (!change.snapshot || start->index != change.snapshot->meta.index ||
                        start->term != change.snapshot->meta.term) {
                        return fail("a log reset that is not its snapshot's");
                    }
                    change.replace_log = true;
                } else {
                    if (start->index <= log_start_.index || start->index > terms_.last() ||
                        terms_.term(start->index) != start->term) {
                        return fail(fmt::format(
                            "compaction to {} (term {}) outside the log {}..{} or of another term",
                            start->index, start->term, log_start_.index, terms_.last()));
                    }
                    change.compact_to = start->index;
                }
                break;
            }
            case JournalRecord::kEntry: {
                auto entry = decode_entry(record.payload);
                if (!entry.ok()) {
                    return fail(fmt::format("record {}: {}", r, entry.error().message));
                }
                entries.push_back(std::move(*entry));
                locations.push_back(EntryLocation{where.segment, where.offset + record.offset,
                                                  static_cast<uint32_t>(record.payload.size())});
                break;
            }
            case JournalRecord::kHardState: {
                auto hs = decode_hard_state(record.payload);
                if (!hs.ok()) {
                    return fail(hs.error().message);
                }
                change.hard_state = *hs;
                break;
            }
            case JournalRecord::kCheckpoint:
                return fail("a second checkpoint in one batch");
        }
    }
    // The entries must continue the log as the writer checked before writing them.
    const LogStart start =
        change.replace_log  ? LogStart{change.snapshot->meta.index, change.snapshot->meta.term}
        : change.compact_to ? LogStart{*change.compact_to, *terms_.term(*change.compact_to)}
                            : log_start_;
    const raft::Index last = change.replace_log ? start.index : terms_.last();
    for (size_t i = 0; i < entries.size(); i++) {
        const raft::Entry& e = entries[i];
        const raft::Index first_ok = i == 0 ? start.index + 1 : entries[i - 1].index + 1;
        const bool placed =
            i == 0 ? e.index >= first_ok && e.index <= last + 1 : e.index == first_ok;
        const raft::Term prev_term = i > 0                        ? entries[i - 1].term
                                     : e.index - 1 == start.index ? start.term
                                     : placed                     ? *terms_.term(e.index - 1)
                                                                  : 0;
        if (!placed || e.term == 0 || e.term < prev_term) {
            return fail(
                fmt::format("entry {} (term {}) does not continue the log {}..{} (term {} "
                            "before it)",
                            e.index, e.term, start.index, last, prev_term));
        }
    }
    change.entries = entries;
    written_ = std::move(locations);
    const LogStart old_start = log_start_;
    apply_to_memory(change);
    after_change(change, old_start);
    return std::nullopt;
}

// The first batch of a segment starts with the state before it. For the oldest segment kept it is
// the state the replay starts from (the entries it names lie in released segments until later
// records remove them); for any other it must agree with the batches before it.
std::optional<StorageError> JournalStorage::replay_checkpoint(std::string_view payload,
                                                              uint64_t segment) {
    auto checkpoint = decode_checkpoint(payload);
    if (!checkpoint.ok()) {
        return checkpoint.error();
    }
    if (checkpointed_segment_ == 0) {
        log_start_ = checkpoint->start;
        terms_.reset(checkpoint->start.index, checkpoint->start.term);
        const auto& runs = checkpoint->runs;
        for (size_t r = 0; r < runs.size(); r++) {
            // Runs were checked increasing; each covers up to the next one's start.
            const raft::Index begin = r == 0 ? runs[0].first + 1 : runs[r].first;
            const raft::Index end = r + 1 < runs.size() ? runs[r + 1].first - 1 : checkpoint->last;
            if (begin != terms_.last() + 1 || end + 1 < begin) {
                return corruption("checkpoint term runs leave a gap or overlap");
            }
            for (raft::Index i = begin; i <= end; i++) {
                terms_.append(i, runs[r].second);
            }
        }
        locations_.assign(checkpoint->last - checkpoint->start.index, EntryLocation{});
        hard_state_ = checkpoint->hard_state.value_or(raft::HardState{});
        snapshot_ = checkpoint->snapshot;
    } else if (checkpoint->start != log_start_ || checkpoint->last != terms_.last() ||
               checkpoint->runs != terms_.runs() ||
               checkpoint->hard_state.value_or(raft::HardState{}) != hard_state_ ||
               checkpoint->snapshot != snapshot_) {
        return corruption("its checkpoint disagrees with the batches before it");
    }
    checkpointed_segment_ = segment;
    return std::nullopt;
}

std::optional<StorageError> JournalStorage::finish_replay() {
    for (size_t i = 0; i < locations_.size(); i++) {
        if (locations_[i].segment == 0) {
            return corruption(fmt::format(
                "{}: log entry {} is named by the checkpoint of segment {} but no segment kept "
                "holds it",
                journal_dir(), log_start_.index + 1 + i,
                Journal::segment_name(checkpointed_segment_)));
        }
    }
    if (hard_state_.commit > terms_.last()) {
        return corruption(
            fmt::format("{}: hard state commit index {} is beyond the last log index {}",
                        journal_dir(), hard_state_.commit, terms_.last()));
    }
    if (snapshot_) {
        auto data = read_snapshot_file(snapshot_dir(), *snapshot_);
        if (!data.ok()) {
            return data.error();
        }
    }
    return std::nullopt;
}

}  // namespace raftlock::storage
