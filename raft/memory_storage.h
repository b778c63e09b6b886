#pragma once

// An in-memory Storage: the reference implementation, used by unit tests, interaction scripts, the
// simulator and the benchmark. Writes model a disk that syncs on every call.

#include <vector>

#include "raft/storage.h"

namespace raftlock::raft {

class MemoryStorage final : public Storage {
public:
    MemoryStorage();

    InitialState initial_state() const override;
    StorageResult<std::vector<Entry>> entries(Index lo,
                                              Index hi,
                                              uint64_t max_bytes) const override;
    StorageResult<Term> term(Index i) const override;
    Index first_index() const override;
    Index last_index() const override;
    StorageResult<Snapshot> snapshot() const override;

    void set_hard_state(const HardState& hs);
    // Appends entries; entries at or below the last index replace the stored suffix from the first
    // one's index. Entries below the first index (already compacted) are skipped. Precondition:
    // the first entry's index is at most last_index() + 1.
    void append(const std::vector<Entry>& entries);
    // Replaces everything with the snapshot. Returns false (and changes nothing) when it is older
    // than the current snapshot.
    bool apply_snapshot(const Snapshot& snapshot);
    // Records a snapshot of the application state at `index` (<= last index, > snapshot index).
    void create_snapshot(Index index, const ConfState& conf_state, std::string data);
    // Discards entries up to and including `compact_index` (<= last index), which should be
    // covered by the snapshot; its term is kept, so first_index() becomes compact_index + 1.
    void compact(Index compact_index);

private:
    HardState hard_state_;
    Snapshot snapshot_;
    // entries_[0] is a dummy at the snapshot's index and term, so entries_[i - offset] is entry i.
    std::vector<Entry> entries_;

    Index offset() const { return entries_.front().index; }
};

}  // namespace raftlock::raft
