// StoreCore: the view, the reads and the writes both stores share (store_core.h).

#include "storage/store_core.h"

#include <algorithm>
#include <cerrno>
#include <mutex>

#include <fmt/format.h>
#include <unistd.h>

#include "base/assert.h"
#include "storage/fatal.h"
#include "storage/file_util.h"
#include "storage/snapshot_file.h"

namespace raftlock::storage {
namespace {

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

StoreCore::StoreCore(std::string dir,
                     bool read_only,
                     uint64_t entry_cache_bytes_max,
                     uint32_t chunk_bytes)
    : dir_(std::move(dir)),
      read_only_(read_only),
      snapshot_chunk_bytes_(chunk_bytes),
      cache_(entry_cache_bytes_max) {}

// --- reads ---------------------------------------------------------------------------------------

raft::InitialState StoreCore::initial_state() const {
    std::shared_lock lock(mutex_);
    raft::InitialState state;
    state.hard_state = hard_state_;
    if (snapshot_) {
        state.snapshot_meta = snapshot_->meta;
    }
    return state;
}

raft::Index StoreCore::first_index() const {
    std::shared_lock lock(mutex_);
    return log_start_.index + 1;
}

raft::Index StoreCore::last_index() const {
    std::shared_lock lock(mutex_);
    return terms_.last();
}

raft::StorageResult<raft::Term> StoreCore::term(raft::Index i) const {
    std::shared_lock lock(mutex_);
    if (i < log_start_.index) {
        return raft::Error{
            raft::ErrorCode::kCompacted,
            fmt::format("index {} is compacted (log starts at {})", i, log_start_.index)};
    }
    if (i > terms_.last()) {
        return raft::Error{raft::ErrorCode::kUnavailable,
                           fmt::format("index {} is beyond the last index {}", i, terms_.last())};
    }
    const std::optional<raft::Term> t = terms_.term(i);
    RL_ASSERT(t.has_value());
    return *t;
}

raft::StorageResult<std::vector<raft::Entry>> StoreCore::entries(raft::Index lo,
                                                                 raft::Index hi,
                                                                 uint64_t max_bytes) const {
    std::shared_lock lock(mutex_);
    const raft::Index first_index = log_start_.index + 1;
    const raft::Index last_index = terms_.last();
    if (lo < first_index) {
        return raft::Error{
            raft::ErrorCode::kCompacted,
            fmt::format("entries from {} are compacted (first index {})", lo, first_index)};
    }
    if (hi > last_index + 1) {
        return raft::Error{
            raft::ErrorCode::kUnavailable,
            fmt::format("entries up to {} are beyond the last index {}", hi, last_index)};
    }
    RL_ASSERT(lo <= hi);
    if (!cache_.empty()) {
        RL_ASSERT(cache_.last_index() == last_index);  // the cache is always the log's tail
    }
    std::vector<raft::Entry> out;
    uint64_t total_bytes = 0;
    // The part below the cache comes from the engine; the cache always ends at the last index.
    const raft::Index cache_lo = cache_.empty() ? hi : std::max(lo, cache_.first_index());
    const raft::Index disk_hi = std::min(hi, cache_lo);
    if (lo < disk_hi) {
        read_older(lo, disk_hi, max_bytes, total_bytes, out);
        RL_ASSERT(!out.empty() && out.size() <= disk_hi - lo);
        if (out.size() < disk_hi - lo) {
            return out;  // the byte limit was reached
        }
    }
    for (raft::Index i = std::max(lo, disk_hi); i < hi; i++) {
        const raft::Entry& entry = cache_.at(i);
        const uint64_t size = raft::entry_size_bytes(entry);
        if (!out.empty() && total_bytes + size > max_bytes) {
            break;
        }
        total_bytes += size;
        out.push_back(entry);
    }
    return out;
}

raft::HardState StoreCore::hard_state() const {
    std::shared_lock lock(mutex_);
    return hard_state_;
}

LogStart StoreCore::log_start() const {
    std::shared_lock lock(mutex_);
    return log_start_;
}

std::optional<SnapshotRecord> StoreCore::snapshot_record() const {
    std::shared_lock lock(mutex_);
    return snapshot_;
}

raft::StorageResult<raft::Snapshot> StoreCore::snapshot() const {
    std::shared_lock lock(mutex_);
    if (!snapshot_) {
        return raft::Error{raft::ErrorCode::kSnapshotTemporarilyUnavailable,
                           "no snapshot has been taken yet"};
    }
    auto data = read_snapshot_file(snapshot_dir(), *snapshot_);
    if (!data.ok()) {
        fatal_disk_error(data.error().message);
    }
    raft::Snapshot snapshot;
    snapshot.metadata = snapshot_->meta;
    snapshot.data = std::move(*data);
    return snapshot;
}

// --- writes --------------------------------------------------------------------------------------

void StoreCore::persist(const raft::Ready& ready, bool sync) {
    Change change;
    change.hard_state = ready.hard_state;
    change.entries = ready.entries;
    if (ready.snapshot && !ready.snapshot->empty()) {
        const raft::Snapshot& snap = *ready.snapshot;
        if (snapshot_) {
            RL_ASSERT(snap.metadata.index > snapshot_->meta.index);
        }
        change.snapshot = write_snapshot_file(snapshot_dir(), snap, snapshot_chunk_bytes_);
        change.replace_log = true;
        sync = true;
    }
    if (!change.hard_state && change.entries.empty() && !change.snapshot) {
        return;
    }
    write(std::move(change), sync);
}

void StoreCore::set_hard_state(const raft::HardState& hs) {
    Change change;
    change.hard_state = hs;
    write(std::move(change), true);
}

void StoreCore::append(const std::vector<raft::Entry>& entries) {
    if (entries.empty()) {
        return;
    }
    Change change;
    change.entries = entries;
    write(std::move(change), true);
}

bool StoreCore::apply_snapshot(const raft::Snapshot& snapshot) {
    RL_ASSERT(!snapshot.empty());
    if (snapshot_ && snapshot.metadata.index <= snapshot_->meta.index) {
        return false;
    }
    Change change;
    change.snapshot = write_snapshot_file(snapshot_dir(), snapshot, snapshot_chunk_bytes_);
    change.replace_log = true;
    write(std::move(change), true);
    return true;
}

void StoreCore::create_snapshot(raft::Index index,
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
    change.snapshot = write_snapshot_file(snapshot_dir(), snapshot, snapshot_chunk_bytes_);
    write(std::move(change), true);
}

void StoreCore::compact(raft::Index compact_index) {
    if (compact_index <= log_start_.index) {
        return;  // already compacted, as MemoryStorage does
    }
    RL_ASSERT(compact_index <= last_index());
    Change change;
    change.compact_to = compact_index;
    // Not synced: losing a compaction in a crash only keeps entries a little longer.
    write(std::move(change), false);
}

void StoreCore::bootstrap(const raft::Bootstrap& boot) {
    RL_ASSERT_MSG(last_index() == 0 && hard_state().empty(), "bootstrap of a store in use");
    append({boot.entry});
    set_hard_state(boot.hard_state);
}

void StoreCore::save_snapshot(raft::Index index,
                              const raft::ConfState& conf,
                              std::string data,
                              raft::Index compact_index) {
    RL_ASSERT(compact_index <= index);
    create_snapshot(index, conf, std::move(data));
    if (compact_index >= first_index()) {
        compact(compact_index);
    }
}

void StoreCore::write(Change change, bool sync) {
    RL_ASSERT(!read_only_);
    RL_ASSERT(!(change.replace_log && change.compact_to));
    if (change.replace_log) {
        RL_ASSERT(change.snapshot.has_value());
    }
    if (change.compact_to) {
        RL_ASSERT(*change.compact_to > log_start_.index && *change.compact_to <= terms_.last());
    }
    check_entries(change.entries);
    // Only this thread changes the in-memory view, so it may read it without the lock.
    std::unique_lock lock(mutex_, std::defer_lock);
    if (deletes_entries(change)) {
        lock.lock();
    }
    write_change(change, sync);
    const std::optional<SnapshotRecord> old_snapshot = snapshot_;
    const LogStart old_start = log_start_;
    if (!lock.owns_lock()) {
        lock.lock();
    }
    apply_to_memory(change);
    after_change(change, old_start);
    // The record now points at the new file, so the old one is garbage. A crash before this
    // line leaves it behind; opening removes it.
    if (change.snapshot && old_snapshot && old_snapshot->file_name != change.snapshot->file_name) {
        remove_file_durably(snapshot_dir(), old_snapshot->file_name);
    }
}

bool StoreCore::deletes_entries(const Change& change) const {
    if (change.snapshot || change.compact_to) {
        return true;
    }
    const size_t skip = compacted_prefix(change.entries, log_start_.index);
    return skip < change.entries.size() && change.entries[skip].index <= terms_.last();
}

size_t StoreCore::compacted_prefix(std::span<const raft::Entry> entries, raft::Index start) {
    if (entries.empty() || entries.front().index > start) {
        return 0;
    }
    return std::min<size_t>(entries.size(), start - entries.front().index + 1);
}

LogStart StoreCore::start_after(const Change& change) const {
    if (change.replace_log) {
        return LogStart{change.snapshot->meta.index, change.snapshot->meta.term};
    }
    if (change.compact_to) {
        return LogStart{*change.compact_to, *terms_.term(*change.compact_to)};
    }
    return log_start_;
}

void StoreCore::apply_to_memory(const Change& change) {
    if (change.snapshot) {
        snapshot_ = change.snapshot;
    }
    if (change.replace_log) {
        log_start_ = start_after(change);
        terms_.reset(log_start_.index, log_start_.term);
        cache_.clear();
    } else if (change.compact_to) {
        log_start_ = start_after(change);
        terms_.compact_to(log_start_.index);
        cache_.drop_before(log_start_.index + 1);
    }
    const size_t skip = compacted_prefix(change.entries, log_start_.index);
    if (skip < change.entries.size()) {
        const raft::Index first = change.entries[skip].index;
        RL_ASSERT(first <= terms_.last() + 1);
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

void StoreCore::remove_stray_snapshot_files() const {
    auto names = list_directory(snapshot_dir());
    if (!names.ok()) {
        fatal_disk_error(names.error().message);
    }
    bool removed = false;
    for (const std::string& name : *names) {
        if (!snapshot_ || name != snapshot_->file_name) {
            // A temporary file or a superseded snapshot left by a crash.
            const std::string path = snapshot_dir() + "/" + name;
            if (::unlink(path.c_str()) != 0) {
                fatal_errno(fmt::format("unlink {}", path), errno);
            }
            removed = true;
        }
    }
    if (removed) {
        fsync_directory(snapshot_dir());
    }
}

}  // namespace raftlock::storage
