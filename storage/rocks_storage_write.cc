// RocksStorage: writes. Each change (store_core.h) becomes one RocksDB WriteBatch, all-or-nothing
// after a crash. A failed write is fatal: the node stops rather than run on state it could not
// persist.

#include <algorithm>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "storage/fatal.h"
#include "storage/rocks_storage.h"

namespace raftlock::storage {
namespace {

void check_batch_status(const rocksdb::Status& s, std::string_view what) {
    if (!s.ok()) {
        fatal_disk_error(fmt::format("{}: {}", what, s.ToString()));
    }
}

}  // namespace

void RocksStorage::write_change(const Change& change, bool sync) {
    rocksdb::WriteBatch batch;
    if (change.snapshot) {
        check_batch_status(
            batch.Put(state_cf_, kSnapshotKey, encode_snapshot_record(*change.snapshot)),
            "stage snapshot metadata");
    }
    stage_log_changes(batch, change);
    if (change.hard_state) {
        check_batch_status(
            batch.Put(state_cf_, kHardStateKey, encode_hard_state(*change.hard_state)),
            "stage hard state");
    }
    rocksdb::WriteOptions write_options;
    write_options.sync = sync;
    write_options.disableWAL = false;
    const rocksdb::Status s = db_->Write(write_options, &batch);
    if (!s.ok()) {
        fatal_disk_error(fmt::format("write batch to {} ({} entries, sync={}): {}", db_dir(),
                                     change.entries.size(), sync, s.ToString()));
    }
}

// RocksDB keeps nothing beside the view: the batch said it all.
void RocksStorage::after_change(const Change& change, const LogStart& old_start) {
    (void)change;
    (void)old_start;
}

void RocksStorage::stage_log_changes(rocksdb::WriteBatch& batch, const Change& change) const {
    raft::Index start = log_start_.index;
    raft::Index last = terms_.last();
    raft::Term start_term = log_start_.term;
    std::optional<LogStart> new_start;
    if (change.replace_log) {
        new_start = LogStart{change.snapshot->meta.index, change.snapshot->meta.term};
        if (last > start) {
            check_batch_status(
                batch.DeleteRange(log_cf_, encode_log_key(start + 1), encode_log_key(last + 1)),
                "stage log replacement");
        }
        last = new_start->index;
    } else if (change.compact_to) {
        RL_ASSERT(*change.compact_to > start);
        new_start = LogStart{*change.compact_to, *terms_.term(*change.compact_to)};
        check_batch_status(batch.DeleteRange(log_cf_, encode_log_key(start + 1),
                                             encode_log_key(new_start->index + 1)),
                           "stage compaction");
    }
    if (new_start) {
        check_batch_status(batch.Put(state_cf_, kLogStartKey, encode_log_start(*new_start)),
                           "stage log start");
        start = new_start->index;
        start_term = new_start->term;
    }
    stage_entries(batch, change.entries, LogStart{start, start_term}, last);
}

void RocksStorage::stage_entries(rocksdb::WriteBatch& batch,
                                 std::span<const raft::Entry> entries,
                                 const LogStart& start,
                                 raft::Index last) const {
    const size_t skip = compacted_prefix(entries, start.index);
    if (skip == entries.size()) {
        return;
    }
    const raft::Entry& first = entries[skip];
    RL_ASSERT(first.index <= last + 1);
    // Log matching: the new suffix may not go back in term from the entry it follows.
    const raft::Term prev_term =
        first.index - 1 == start.index ? start.term : *terms_.term(first.index - 1);
    RL_ASSERT(first.term >= prev_term);
    if (first.index <= last) {
        // Conflict truncation: the new entries replace the stored suffix from `first`.
        check_batch_status(
            batch.DeleteRange(log_cf_, encode_log_key(first.index), encode_log_key(last + 1)),
            "stage log truncation");
    }
    for (size_t i = skip; i < entries.size(); i++) {
        check_batch_status(
            batch.Put(log_cf_, encode_log_key(entries[i].index), encode_entry(entries[i])),
            "stage log entry");
    }
}

}  // namespace raftlock::storage
