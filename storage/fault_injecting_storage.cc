#include "storage/fault_injecting_storage.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "base/assert.h"
#include "base/crc32c.h"
#include "storage/codec.h"

namespace raftlock::storage {

namespace {

// The snapshot's "file": the records keep its data beside the metadata, like snap/ in RocksStorage.
constexpr std::string_view kSnapshotFileName = "snapshot";

StorageError injected_corruption(std::string message) {
    return StorageError{StorageErrorCode::kCorruption,
                        fmt::format("fault-injecting store: {}", message)};
}

// The records at rest, decoded and checked: what open() builds the view from.
struct Loaded {
    raft::HardState hard_state;
    LogStart log_start;
    std::optional<SnapshotRecord> snapshot;
    std::vector<raft::Entry> entries;
};

std::optional<StorageError> decode_log(raft::Index first_key,
                                       const std::deque<std::string>& log,
                                       Loaded& out) {
    const raft::Index expected = out.log_start.index + 1;
    if (!log.empty() && first_key != expected) {
        return injected_corruption(fmt::format(
            "the log starts at index {}, not after the log start {}", first_key, expected - 1));
    }
    raft::Term prev_term = out.log_start.term;
    out.entries.reserve(log.size());
    for (size_t i = 0; i < log.size(); ++i) {
        Decoded<raft::Entry> e = decode_log_record(first_key + i, prev_term, log[i]);
        if (!e.ok()) {
            return injected_corruption(e.error().message);
        }
        prev_term = e->term;
        out.entries.push_back(std::move(*e));
    }
    return std::nullopt;
}

template <typename T>
std::optional<StorageError> decode_slot(const std::optional<std::string>& slot,
                                        Decoded<T> (*decode)(std::string_view),
                                        std::string_view what,
                                        T& out) {
    if (!slot) {
        return std::nullopt;  // never written: the default
    }
    Decoded<T> value = decode(*slot);
    if (!value.ok()) {
        return injected_corruption(
            fmt::format("corrupt {} record: {}", what, value.error().message));
    }
    out = std::move(*value);
    return std::nullopt;
}

// The view a node reads, as raft::MemoryStorage holds it: the snapshot, the log start (the entry
// before the first readable one, at or below the snapshot) and the entries after it.
Result<raft::MemoryStorage, StorageError> build_view(Loaded loaded, std::string snapshot_data) {
    raft::MemoryStorage view;
    const raft::Index start = loaded.log_start.index;
    const raft::Index snap = loaded.snapshot ? loaded.snapshot->meta.index : 0;
    if (start > snap) {
        return injected_corruption(
            fmt::format("log start {} is beyond the snapshot {}", start, snap));
    }
    if (start == snap) {
        if (snap > 0) {
            if (loaded.snapshot->meta.term != loaded.log_start.term) {
                return injected_corruption("the log start and the snapshot disagree on the term");
            }
            (void)view.apply_snapshot(raft::Snapshot{loaded.snapshot->meta, snapshot_data});
        }
        view.append(loaded.entries);
        view.set_hard_state(loaded.hard_state);
        return view;
    }
    // Compaction kept entries behind the snapshot: start from the log start, then record the
    // snapshot over the log (MemoryStorage's own path: create_snapshot, then compact).
    (void)view.apply_snapshot(
        raft::Snapshot{raft::SnapshotMetadata{start, loaded.log_start.term, {}}, ""});
    view.append(loaded.entries);
    raft::StorageResult<raft::Term> term = view.term(snap);
    if (!term.ok() || *term != loaded.snapshot->meta.term) {
        return injected_corruption(
            fmt::format("the snapshot {}/{} is not in the log", snap, loaded.snapshot->meta.term));
    }
    view.create_snapshot(snap, loaded.snapshot->meta.conf_state, std::move(snapshot_data));
    view.set_hard_state(loaded.hard_state);
    return view;
}

}  // namespace

std::string_view to_string(WriteStatus status) {
    switch (status) {
        case WriteStatus::kOk:
            return "ok";
        case WriteStatus::kIoError:
            return "EIO";
        case WriteStatus::kNoSpace:
            return "ENOSPC";
    }
    return "unknown";
}

std::string Corruption::describe() const {
    return fmt::format("flipped bit {} of byte {} of the {}", bit, byte, record);
}

bool FaultInjectingStorage::Batch::hard_state_only() const {
    return hard_state && erase_lo >= erase_hi && !log_put && !log_start && !snapshot_meta &&
           !snapshot_data;
}

bool FaultInjectingStorage::Records::empty() const {
    return log.empty() && !hard_state && !log_start && !snapshot_meta && snapshot_data.empty();
}

raft::Index FaultInjectingStorage::max_index() {
    return std::numeric_limits<raft::Index>::max();
}

raft::InitialState FaultInjectingStorage::initial_state() const {
    RL_ASSERT(open_);
    return view_.initial_state();
}

raft::StorageResult<std::vector<raft::Entry>> FaultInjectingStorage::entries(
    raft::Index lo, raft::Index hi, uint64_t max_bytes) const {
    RL_ASSERT(open_);
    return view_.entries(lo, hi, max_bytes);
}

raft::StorageResult<raft::Term> FaultInjectingStorage::term(raft::Index i) const {
    RL_ASSERT(open_);
    return view_.term(i);
}

raft::Index FaultInjectingStorage::first_index() const {
    RL_ASSERT(open_);
    return view_.first_index();
}

raft::Index FaultInjectingStorage::last_index() const {
    RL_ASSERT(open_);
    return view_.last_index();
}

raft::StorageResult<raft::Snapshot> FaultInjectingStorage::snapshot() const {
    RL_ASSERT(open_);
    return view_.snapshot();
}

void FaultInjectingStorage::bootstrap(const raft::Bootstrap& boot) {
    RL_ASSERT(!open_);
    RL_ASSERT_MSG(durable_.empty(), "bootstrap over an existing store");
    RL_ASSERT(boot.entry.index == 1);
    Batch b;
    b.log_put.emplace(boot.entry.index, encode_entry(boot.entry));
    b.hard_state = encode_hard_state(boot.hard_state);
    apply(std::move(b));
}

Result<raft::MemoryStorage, StorageError> FaultInjectingStorage::read_durable() const {
    Loaded loaded;
    if (auto e =
            decode_slot(durable_.hard_state, decode_hard_state, "hard state", loaded.hard_state)) {
        return *e;
    }
    if (auto e = decode_slot(durable_.log_start, decode_log_start, "log start", loaded.log_start)) {
        return *e;
    }
    if (durable_.snapshot_meta) {
        SnapshotRecord record;
        if (auto e = decode_slot(durable_.snapshot_meta, decode_snapshot_record,
                                 "snapshot metadata", record)) {
            return *e;
        }
        if (record.size_bytes != durable_.snapshot_data.size() ||
            record.data_crc != crc32c(durable_.snapshot_data)) {
            return injected_corruption(fmt::format("snapshot data of {} bytes fails its checksum",
                                                   durable_.snapshot_data.size()));
        }
        loaded.snapshot = std::move(record);
    } else if (!durable_.snapshot_data.empty()) {
        return injected_corruption("snapshot data without snapshot metadata");
    }
    if (auto e = decode_log(durable_.log_first, durable_.log, loaded)) {
        return *e;
    }
    return build_view(std::move(loaded), durable_.snapshot_data);
}

std::optional<StorageError> FaultInjectingStorage::open() {
    RL_ASSERT(!open_);
    RL_ASSERT(unsynced_.empty());
    Result<raft::MemoryStorage, StorageError> loaded = read_durable();
    if (!loaded.ok()) {
        return loaded.error();
    }
    view_ = std::move(*loaded);
    open_ = true;
    failed_ = false;
    return std::nullopt;
}

void FaultInjectingStorage::check_writable() const {
    RL_ASSERT_MSG(open_, "write to a closed store");
    RL_ASSERT_MSG(!failed_, "write after a failed write: a failed write is fatal, crash first");
}

WriteStatus FaultInjectingStorage::take_failure() {
    const WriteStatus failure = armed_failure_;
    armed_failure_ = WriteStatus::kOk;
    failed_ = failure != WriteStatus::kOk;
    return failure;
}

void FaultInjectingStorage::fail_next_write(WriteStatus error) {
    RL_ASSERT(error != WriteStatus::kOk);
    RL_ASSERT(open_);
    armed_failure_ = error;
}

FaultInjectingStorage::Batch FaultInjectingStorage::entry_batch(const raft::Entry& entry) {
    Batch b;
    if (entry.index < view_.first_index()) {
        return b;  // compacted already: the store skips it (an empty batch)
    }
    if (entry.index <= view_.last_index()) {
        b.erase_lo = entry.index;  // conflict: the suffix from here is replaced
        b.erase_hi = max_index();
    }
    b.log_put.emplace(entry.index, encode_entry(entry));
    view_.append({entry});
    return b;
}

FaultInjectingStorage::Batch FaultInjectingStorage::snapshot_batch(const raft::Snapshot& snapshot) {
    Batch b;
    if (!view_.apply_snapshot(snapshot)) {
        return b;  // not newer than the stored one: nothing changes
    }
    const raft::SnapshotMetadata& meta = snapshot.metadata;
    b.erase_lo = 0;
    b.erase_hi = max_index();
    b.log_start = encode_log_start(LogStart{meta.index, meta.term});
    b.snapshot_meta = encode_snapshot_record(SnapshotRecord{
        meta, std::string(kSnapshotFileName), snapshot.data.size(), crc32c(snapshot.data)});
    b.snapshot_data = snapshot.data;
    return b;
}

void FaultInjectingStorage::push(Batch batch) {
    // A commit-only hard state right after another one replaces it: both are unsynced, and a
    // torn write keeps either none, the first, or both, which the replacement still allows
    // (none or the newer); it keeps the cache bounded between syncs.
    if (batch.hard_state_only() && !unsynced_.empty() && unsynced_.back().hard_state_only()) {
        unsynced_.back() = std::move(batch);
        return;
    }
    RL_ASSERT_MSG(unsynced_.size() < kMaxUnsyncedWrites, "fault-injecting store: never synced");
    unsynced_.push_back(std::move(batch));
}

// A failed write still leaves what it carried in the cache: a crash (which must follow) keeps or
// loses it like any unsynced write, so nothing of it is durable beyond what a crash allows.
WriteStatus FaultInjectingStorage::write_snapshot(const raft::Snapshot& snapshot) {
    check_writable();
    const WriteStatus status = take_failure();
    push(snapshot_batch(snapshot));
    return status;
}

WriteStatus FaultInjectingStorage::write_entries(const std::vector<raft::Entry>& entries) {
    check_writable();
    const WriteStatus status = take_failure();
    for (const raft::Entry& e : entries) {
        push(entry_batch(e));  // one batch each: a crash may tear the Ready at any entry
    }
    return status;
}

WriteStatus FaultInjectingStorage::write_hard_state(const raft::HardState& hard_state) {
    check_writable();
    const WriteStatus status = take_failure();
    view_.set_hard_state(hard_state);
    Batch b;
    b.hard_state = encode_hard_state(hard_state);
    push(std::move(b));
    return status;
}

WriteStatus FaultInjectingStorage::sync() {
    check_writable();
    const WriteStatus status = take_failure();
    if (status != WriteStatus::kOk) {
        return status;  // a failed flush makes nothing durable; the crash decides
    }
    for (Batch& b : unsynced_) {
        apply(std::move(b));
    }
    unsynced_.clear();
    return WriteStatus::kOk;
}

WriteStatus FaultInjectingStorage::save_snapshot(raft::Index index,
                                                 const raft::ConfState& conf,
                                                 std::string data,
                                                 raft::Index compact_index) {
    check_writable();
    RL_ASSERT(compact_index <= index);
    if (const WriteStatus status = take_failure(); status != WriteStatus::kOk) {
        return status;  // the snapshot file never got renamed into place: nothing changed
    }
    WriteStatus synced = sync();
    RL_ASSERT(synced == WriteStatus::kOk);
    view_.create_snapshot(index, conf, data);
    Batch b;
    b.snapshot_meta = encode_snapshot_record(SnapshotRecord{view_.initial_state().snapshot_meta,
                                                            std::string(kSnapshotFileName),
                                                            data.size(), crc32c(data)});
    b.snapshot_data = std::move(data);
    if (compact_index >= view_.first_index()) {
        b.erase_lo = 0;
        b.erase_hi = compact_index + 1;
        b.log_start = encode_log_start(LogStart{compact_index, *view_.term(compact_index)});
        view_.compact(compact_index);
    }
    apply(std::move(b));
    return WriteStatus::kOk;
}

void FaultInjectingStorage::apply(Batch batch) {
    std::deque<std::string>& log = durable_.log;
    if (batch.erase_lo < batch.erase_hi && !log.empty()) {
        // Either a suffix (conflict) or a prefix (compaction), or everything (a snapshot).
        const raft::Index first = durable_.log_first;
        const raft::Index end = first + log.size();
        const raft::Index lo = std::max(batch.erase_lo, first);
        const raft::Index hi = std::min(batch.erase_hi, end);
        RL_ASSERT(lo == first || hi == end);
        if (lo < hi) {
            log.erase(log.begin() + static_cast<std::ptrdiff_t>(lo - first),
                      log.begin() + static_cast<std::ptrdiff_t>(hi - first));
            durable_.log_first = lo == first ? hi : first;
        }
    }
    if (batch.log_put) {
        auto& [index, record] = *batch.log_put;
        if (log.empty()) {
            durable_.log_first = index;
        }
        RL_ASSERT_MSG(index == durable_.log_first + log.size(), "a hole in the log");
        log.push_back(std::move(record));
    }
    if (batch.hard_state) {
        durable_.hard_state = std::move(batch.hard_state);
    }
    if (batch.log_start) {
        durable_.log_start = std::move(batch.log_start);
    }
    if (batch.snapshot_meta) {
        durable_.snapshot_meta = std::move(batch.snapshot_meta);
    }
    if (batch.snapshot_data) {
        durable_.snapshot_data = std::move(*batch.snapshot_data);
    }
}

CrashLoss FaultInjectingStorage::crash(Rng& rng) {
    RL_ASSERT(open_);
    CrashLoss loss;
    loss.unsynced_writes = static_cast<uint32_t>(unsynced_.size());
    loss.kept_writes = static_cast<uint32_t>(rng.uniform(unsynced_.size() + 1));
    for (uint32_t i = 0; i < loss.kept_writes; ++i) {
        apply(std::move(unsynced_[i]));
    }
    unsynced_.clear();
    view_ = raft::MemoryStorage();  // the process is gone; open() reads the disk again
    open_ = false;
    failed_ = false;
    armed_failure_ = WriteStatus::kOk;
    return loss;
}

std::optional<Corruption> FaultInjectingStorage::corrupt_record(Rng& rng) {
    RL_ASSERT_MSG(!open_, "corruption at rest needs a closed store");
    std::vector<std::pair<std::string, std::string*>> records;
    for (auto& [name, slot] : {std::pair{"hard state record", &durable_.hard_state},
                               std::pair{"log start record", &durable_.log_start},
                               std::pair{"snapshot metadata record", &durable_.snapshot_meta}}) {
        if (slot->has_value()) {
            records.emplace_back(name, &**slot);
        }
    }
    if (!durable_.snapshot_data.empty()) {
        records.emplace_back("snapshot data", &durable_.snapshot_data);
    }
    for (size_t i = 0; i < durable_.log.size(); ++i) {
        records.emplace_back(fmt::format("log entry record at index {}", durable_.log_first + i),
                             &durable_.log[i]);
    }
    if (records.empty()) {
        return std::nullopt;
    }
    auto& [name, bytes] = records[rng.uniform(records.size())];
    RL_ASSERT(!bytes->empty());  // every record has at least its checksum
    Corruption c{.record = name,
                 .byte = rng.uniform(bytes->size()),
                 .bit = static_cast<uint32_t>(rng.uniform(8))};
    (*bytes)[c.byte] = static_cast<char>((*bytes)[c.byte] ^ (1 << c.bit));
    return c;
}

}  // namespace raftlock::storage
