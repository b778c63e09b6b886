#pragma once

// An in-memory store that fails the way disks fail (DESIGN §3): the simulator's disk, and a unit
// under test of its own. It keeps what RocksStorage keeps, in RocksStorage's record formats
// (codec.h: every record carries a CRC32C), and implements the core's raft::Storage over a view
// of those records plus the writes the driver loop makes. Three faults, all decided by the owner
// (explicit calls and an Rng it passes in), so that a run is a pure function of its seed:
//
//   lost writes   Writes land in a volatile cache at once (the node reads its own writes, as from
//                 a page cache) and reach the records at rest only on sync(). crash() keeps a
//                 random prefix of the unsynced writes, from none to all, and loses the rest: a
//                 torn batch, in the order the driver writes (snapshot, entries one by one, hard
//                 state).
//   failed write  fail_next_write() makes the next write or sync return an error (EIO, ENOSPC).
//                 The store then refuses every further write: a failed write is fatal, and the
//                 owner must crash() (DESIGN §3: crash, restart, recover from disk). What the
//                 failed write carried is unsynced, so the crash decides how much of it survives,
//                 as it would for any unsynced write.
//   corruption    corrupt_record() flips one bit of one record at rest while the store is closed
//                 (after a crash). open() verifies every record's checksum, key and framing, as
//                 RocksStorage::open does, and refuses with kCorruption naming the record; the
//                 owner must not start the node then. Nothing is ever truncated or repaired.
//
// Life cycle: a new store is closed and empty (a fresh disk); bootstrap() may write the first
// state while it is closed; open() verifies and loads it; crash() closes it again. Reads and
// writes need an open store; only crash() is allowed after a failed write.
//
// Durability model: each write is one atomic batch (a RocksDB WriteBatch), so a crash keeps or
// loses it whole; entries are written one batch each so a crash can tear a Ready anywhere.
// save_snapshot() is synced at once, as a snapshot file is fsynced before the log is cut.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/rng.h"
#include "raft/conf_change.h"
#include "raft/memory_storage.h"
#include "raft/storage.h"
#include "raft/types.h"
#include "storage/error.h"

namespace raftlock::storage {

// What a write or sync returns: the disk's answer.
enum class WriteStatus : uint8_t {
    kOk,
    kIoError,  // EIO: the device failed the write or the flush
    kNoSpace,  // ENOSPC
};

std::string_view to_string(WriteStatus status);

// What a crash did to the unsynced writes (for traces and tests).
struct CrashLoss {
    uint32_t unsynced_writes = 0;
    uint32_t kept_writes = 0;
};

// One flipped bit in a record at rest.
struct Corruption {
    std::string record;  // e.g. "log entry record at index 42", "hard state record"
    uint64_t byte = 0;   // offset in the record
    uint32_t bit = 0;    // 0..7

    std::string describe() const;
};

class FaultInjectingStorage final : public raft::Storage {
public:
    // Writes that were never synced pile up only as commit-only hard states, which overwrite
    // each other; anything else is synced within the same Ready. The bound catches a driver
    // that never syncs.
    static constexpr size_t kMaxUnsyncedWrites = 1 << 16;

    FaultInjectingStorage() = default;
    FaultInjectingStorage(const FaultInjectingStorage&) = delete;
    FaultInjectingStorage& operator=(const FaultInjectingStorage&) = delete;

    // raft::Storage: the records at rest with the unsynced writes on top. Precondition: open.
    raft::InitialState initial_state() const override;
    raft::StorageResult<std::vector<raft::Entry>> entries(raft::Index lo,
                                                          raft::Index hi,
                                                          uint64_t max_bytes) const override;
    raft::StorageResult<raft::Term> term(raft::Index i) const override;
    raft::Index first_index() const override;
    raft::Index last_index() const override;
    raft::StorageResult<raft::Snapshot> snapshot() const override;

    bool is_open() const { return open_; }
    // A write failed; nothing but crash() is allowed until then.
    bool failed() const { return failed_; }
    size_t unsynced_writes() const { return unsynced_.size(); }

    // A founding member's first state (raft::make_bootstrap), written durably. Precondition:
    // closed and never written.
    void bootstrap(const raft::Bootstrap& boot);
    // Verifies every record at rest and loads the view: nullopt when the store opened, otherwise
    // kCorruption naming the record (the store stays closed and the node must not start).
    // Precondition: closed.
    std::optional<StorageError> open();

    // The Ready loop's writes, in the order of raft::ReadyHost::persist. Semantics as
    // raft::MemoryStorage: entries at or below the last index replace the log from there,
    // compacted ones are skipped, and an older snapshot changes nothing. Each returns kOk, or
    // the injected error (then the store is failed()). Precondition: open, not failed.
    [[nodiscard]] WriteStatus write_snapshot(const raft::Snapshot& snapshot);
    [[nodiscard]] WriteStatus write_entries(const std::vector<raft::Entry>& entries);
    [[nodiscard]] WriteStatus write_hard_state(const raft::HardState& hard_state);
    // Makes every write so far durable.
    [[nodiscard]] WriteStatus sync();
    // The application's own snapshot at `index` (snapshot index < index <= last index), then
    // compaction up to `compact_index` (<= index): synced, with everything written before it.
    [[nodiscard]] WriteStatus save_snapshot(raft::Index index,
                                            const raft::ConfState& conf,
                                            std::string data,
                                            raft::Index compact_index);

    // Faults. The next write, sync or save_snapshot returns `error` (not kOk).
    void fail_next_write(WriteStatus error);
    // Power loss: a random prefix of the unsynced writes survives; the store closes.
    // Precondition: open (failed or not).
    CrashLoss crash(Rng& rng);
    // Flips one random bit of one random record at rest. Precondition: closed. nullopt when
    // the disk holds no record at all (a spare node that never wrote).
    std::optional<Corruption> corrupt_record(Rng& rng);

    // The records at rest, verified and decoded as open() would, without opening (the
    // simulator's final audit). Any state.
    Result<raft::MemoryStorage, StorageError> read_durable() const;

private:
    // One atomic change of the records at rest. Log records with keys in [erase_lo, erase_hi)
    // go first, then the put (one entry at most: entries are written one batch each).
    struct Batch {
        raft::Index erase_lo = 0;
        raft::Index erase_hi = 0;
        std::optional<std::pair<raft::Index, std::string>> log_put;
        std::optional<std::string> hard_state;
        std::optional<std::string> log_start;
        std::optional<std::string> snapshot_meta;
        std::optional<std::string> snapshot_data;

        bool hard_state_only() const;
    };
    // The records at rest: the RocksDB layout of RocksStorage (docs/storage.md), in memory. The
    // log's keys run without a hole from `log_first` (the writes never leave one).
    struct Records {
        raft::Index log_first = 0;    // key of log.front()
        std::deque<std::string> log;  // entry records
        std::optional<std::string> hard_state;
        std::optional<std::string> log_start;
        std::optional<std::string> snapshot_meta;
        std::string snapshot_data;  // the snapshot file's data; its CRC is in snapshot_meta

        bool empty() const;
    };

    void apply(Batch batch);
    void push(Batch batch);
    // Takes an armed failure, if any: the write that asked fails.
    WriteStatus take_failure();
    void check_writable() const;
    Batch snapshot_batch(const raft::Snapshot& snapshot);
    Batch entry_batch(const raft::Entry& entry);
    static raft::Index max_index();

    Records durable_;
    raft::MemoryStorage view_;  // durable_ decoded, with unsynced_ applied on top
    std::vector<Batch> unsynced_;
    bool open_ = false;
    bool failed_ = false;
    WriteStatus armed_failure_ = WriteStatus::kOk;
};

}  // namespace raftlock::storage
