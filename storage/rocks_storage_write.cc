// RocksStorage: writes. Every public write builds one Change, which becomes one RocksDB WriteBatch
// (all-or-nothing after a crash) and, once RocksDB has accepted it, updates the in-memory view.
// A failed write is fatal: the node stops rather than run on state it could not persist.

#include <algorithm>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "storage/fatal.h"
#include "storage/file_util.h"
#include "storage/rocks_storage.h"
#include "storage/snapshot_file.h"

namespace raftlock::storage {
namespace {

void check_batch_status(const rocksdb::Status& s, std::string_view what) {
    if (!s.ok()) {
        fatal_disk_error(fmt::format("{}: {}", what, s.ToString()));
    }
}

// Entries must be consecutive with non-decreasing terms, or the log matching property breaks.
void check_entries(std::span<const raft::Entry> entries) {
    for (size_t i = 1; i < entries.size(); i++) {
        RL_ASSERT(entries[i].index == entries[i - 1].index + 1);
        RL_ASSERT(entries[i].term >= entries[i - 1].term);
    }
    if (!entries.empty()) {
        RL_ASSERT(entries.front().index > 0);
        RL_ASSERT(entries.front().term > 0);
    }
}

}  // namespace

void RocksStorage::persist(const raft::Ready& ready, bool sync) {
    Change change;
    change.hard_state = ready.hard_state;
    change.entries = ready.entries;
    if (ready.snapshot && !ready.snapshot->empty()) {
        const raft::Snapshot& snap = *ready.snapshot;
        if (snapshot_) {
            RL_ASSERT(snap.metadata.index > snapshot_->meta.index);
        }
        change.snapshot = write_snapshot_file(snapshot_dir(), snap, options_.snapshot_chunk_bytes);
        change.replace_log = true;
        sync = true;
    }
    if (!change.hard_state && change.entries.empty() && !change.snapshot) {
        return;
    }
    write(std::move(change), sync);
}

void RocksStorage::set_hard_state(const raft::HardState& hs) {
    Change change;
    change.hard_state = hs;
    write(std::move(change), true);
}

void RocksStorage::append(const std::vector<raft::Entry>& entries) {
    if (entries.empty()) {
        return;
    }
    Change change;
    change.entries = entries;
    write(std::move(change), true);
}

bool RocksStorage::apply_snapshot(const raft::Snapshot& snapshot) {
    RL_ASSERT(!snapshot.empty());
    if (snapshot_ && snapshot.metadata.index <= snapshot_->meta.index) {
        return false;
    }
    Change change;
    change.snapshot = write_snapshot_file(snapshot_dir(), snapshot, options_.snapshot_chunk_bytes);
    change.replace_log = true;
    write(std::move(change), true);
    return true;
}

void RocksStorage::create_snapshot(raft::Index index,
                                   const raft::ConfState& conf_state,
                                   std::string data) {
    RL_ASSERT(index <= last_index());
    RL_ASSERT(index >= log_start_.index);
    if (snapshot_) {
        RL_ASSERT(index > snapshot_->meta.index);
    }
    raft::Snapshot snapshot;
    snapshot.metadata.index = index;
    snapshot.metadata.term = *terms_.term(index);
    snapshot.metadata.conf_state = conf_state;
    snapshot.data = std::move(data);
    Change change;
    change.snapshot = write_snapshot_file(snapshot_dir(), snapshot, options_.snapshot_chunk_bytes);
    write(std::move(change), true);
}

void RocksStorage::compact(raft::Index compact_index) {
    if (compact_index <= log_start_.index) {
        return;  // already compacted, as MemoryStorage does
    }
    RL_ASSERT(compact_index <= last_index());
    Change change;
    change.compact_to = compact_index;
    // Not synced: losing a compaction in a crash only keeps entries a little longer.
    write(std::move(change), false);
}

void RocksStorage::bootstrap(const raft::Bootstrap& boot) {
    RL_ASSERT_MSG(last_index() == 0 && hard_state().empty(), "bootstrap of a store in use");
    append({boot.entry});
    set_hard_state(boot.hard_state);
}

void RocksStorage::save_snapshot(raft::Index index,
                                 const raft::ConfState& conf,
                                 std::string data,
                                 raft::Index compact_index) {
    RL_ASSERT(compact_index <= index);
    create_snapshot(index, conf, std::move(data));
    if (compact_index >= first_index()) {
        compact(compact_index);
    }
}

void RocksStorage::write(Change change, bool sync) {
    RL_ASSERT(!options_.read_only);
    RL_ASSERT(!(change.replace_log && change.compact_to));
    if (change.replace_log) {
        RL_ASSERT(change.snapshot.has_value());
    }
    check_entries(change.entries);
    // Only this thread changes the in-memory view, so it may read it without the lock.
    std::unique_lock lock(mutex_, std::defer_lock);
    if (deletes_entries(change)) {
        lock.lock();
    }
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
    const std::optional<SnapshotRecord> old_snapshot = snapshot_;
    if (!lock.owns_lock()) {
        lock.lock();
    }
    apply_to_memory(change);
    // The metadata now points at the new file, so the old one is garbage. A crash before this
    // line leaves it behind; opening removes it.
    if (change.snapshot && old_snapshot && old_snapshot->file_name != change.snapshot->file_name) {
        remove_file_durably(snapshot_dir(), old_snapshot->file_name);
    }
}

bool RocksStorage::deletes_entries(const Change& change) const {
    if (change.snapshot || change.compact_to) {
        return true;
    }
    const size_t skip = compacted_prefix(change.entries, log_start_.index);
    return skip < change.entries.size() && change.entries[skip].index <= terms_.last();
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

size_t RocksStorage::compacted_prefix(std::span<const raft::Entry> entries, raft::Index start) {
    if (entries.empty() || entries.front().index > start) {
        return 0;
    }
    return std::min<size_t>(entries.size(), start - entries.front().index + 1);
}

void RocksStorage::apply_to_memory(const Change& change) {
    if (change.snapshot) {
        snapshot_ = change.snapshot;
    }
    if (change.replace_log) {
        log_start_ = LogStart{change.snapshot->meta.index, change.snapshot->meta.term};
        terms_.reset(log_start_.index, log_start_.term);
        cache_.clear();
    } else if (change.compact_to) {
        log_start_ = LogStart{*change.compact_to, *terms_.term(*change.compact_to)};
        terms_.compact_to(log_start_.index);
        cache_.drop_before(log_start_.index + 1);
    }
    const size_t skip = compacted_prefix(change.entries, log_start_.index);
    if (skip < change.entries.size()) {
        const raft::Index first = change.entries[skip].index;
        if (first <= terms_.last()) {
            terms_.truncate_after(first - 1);
            cache_.truncate_after(first - 1);
        }
        for (size_t i = skip; i < change.entries.size(); i++) {
            terms_.append(change.entries[i].index, change.entries[i].term);
            cache_.append(change.entries[i]);
        }
    }
    if (change.hard_state) {
        hard_state_ = *change.hard_state;
    }
}

}  // namespace raftlock::storage
