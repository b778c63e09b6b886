#pragma once

// The durable store on the journal (journal.h; docs/decisions/0021-journal-segments.md): the Raft
// log, the hard state and the snapshot metadata as records in batches of preallocated segment
// files, the snapshot data in checksummed files beside them. Layout of `dir`:
//
//   journal/   the segments (journal.h)
//   snap/      snap-<index>-<term>.snap, the data of the latest snapshot (snapshot_file.h)
//
// Every change of the store is one journal batch (journal_records.h), so it is all-or-nothing
// after a crash; a change that must be durable is appended with sync (one fdatasync, of data
// only: the segment's blocks exist already). Opening replays the batches from the oldest segment
// kept, each starting with a checkpoint of the store's state, and refuses to start on corruption,
// naming the file and offset or the log index. A failed write is fatal (fatal.h).
//
// A segment is released (deleted) once every entry in it is compacted, truncated or replaced by a
// snapshot, and that change is synced: the next segment's checkpoint then says all that replay
// needs of the ones before it.
//
// The in-memory view, the reads and the threads' rules are StoreCore's (store_core.h); older
// entries are read from the segments, each run of them with one pread.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "raft/raw_node.h"
#include "raft/storage.h"
#include "storage/codec.h"
#include "storage/error.h"
#include "storage/journal.h"
#include "storage/store_core.h"

namespace raftlock::storage {

struct JournalStorageOptions {
    // Open for inspection: no file created, removed or written.
    bool read_only = false;
    // Recent entries kept in memory for the core's reads.
    uint64_t entry_cache_bytes_max = 16 * 1024 * 1024;
    uint64_t segment_bytes = 64ull << 20;
    uint32_t snapshot_chunk_bytes = 1024 * 1024;
    // Prepare the next segment on a thread of its own (journal.h).
    bool prepare_in_background = true;
};

class JournalStorage final : public StoreCore {
public:
    // Opens (creating when missing, unless read-only) the store in `dir` and verifies all of it.
    // kCorruption names the file and the offset or the log index; the caller must not start the
    // node then.
    static Result<std::unique_ptr<JournalStorage>, StorageError> open(
        const std::string& dir, const JournalStorageOptions& options = {});
    ~JournalStorage() override;
    JournalStorage(const JournalStorage&) = delete;
    JournalStorage& operator=(const JournalStorage&) = delete;

    const char* engine() const override { return "journal"; }
    std::vector<uint64_t> segments() const { return journal_->segments(); }
    std::string journal_dir() const { return dir_ + "/journal"; }

private:
    // Where an entry's record lies in the journal; segment 0 while replay has not met it yet
    // (a checkpoint names entries that earlier, released segments held).
    struct EntryLocation {
        uint64_t segment = 0;
        uint64_t offset = 0;
        uint32_t length = 0;
    };

    JournalStorage(std::string dir, const JournalStorageOptions& options);

    // journal_storage_open.cc
    std::optional<StorageError> replay_batch(const JournalLocation& where, std::string_view body);
    std::optional<StorageError> replay_checkpoint(std::string_view payload, uint64_t segment);
    std::optional<StorageError> finish_replay();

    // journal_storage_write.cc: one batch per change.
    void write_change(const Change& change, bool sync) override;
    void after_change(const Change& change, const LogStart& old_start) override;
    std::string encode_checkpoint() const;
    void release_dead_segments();

    // journal_storage.cc
    void read_older(raft::Index lo,
                    raft::Index hi,
                    uint64_t max_bytes,
                    uint64_t& total_bytes,
                    std::vector<raft::Entry>& out) const override;

    std::unique_ptr<Journal> journal_;
    // locations_[i] is entry log_start_.index + 1 + i.
    std::deque<EntryLocation> locations_;
    // Where the last change's entries went (write_change to after_change, or replay).
    std::vector<EntryLocation> written_;
    uint64_t checkpointed_segment_ = 0;  // the last segment whose first batch holds a checkpoint
};

}  // namespace raftlock::storage
