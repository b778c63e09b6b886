#pragma once

// A leader's view of one peer's replication (thesis §3.5 nextIndex/matchIndex, with etcd's
// probe / replicate / snapshot states for flow control).
//
//   probe      next is a guess: at most one AppendEntries in flight until the peer answers
//   replicate  next is known good: AppendEntries are pipelined, up to the in-flight window
//   snapshot   the peer needs a snapshot: chunks are sent, no appends until it is installed

#include <cstdint>
#include <memory>
#include <vector>

#include "raft/raw_node.h"
#include "raft/types.h"

namespace raftlock::raft {

// A bounded ring of the last indexes of unacknowledged AppendEntries (the pipelining window).
class Inflights {
public:
    explicit Inflights(uint32_t capacity) : capacity_(capacity) {}

    void add(Index last_index);
    // Frees every in-flight message whose last index is <= `index`.
    void free_le(Index index);
    void free_first_one();
    void reset();
    bool full() const { return count_ == capacity_; }
    uint32_t count() const { return count_; }

private:
    uint32_t capacity_;
    uint32_t start_ = 0;
    uint32_t count_ = 0;
    std::vector<Index> buffer_;  // capacity_ slots once used
};

struct Progress {
    explicit Progress(uint32_t max_inflight) : inflights(max_inflight) {}

    Index match = 0;
    Index next = 1;
    ProgressState state = ProgressState::kProbe;
    // Probe: an append is in flight, so wait for an answer (or the next heartbeat) before another.
    bool probe_sent = false;
    // Snapshot: the index of the snapshot being sent.
    Index pending_snapshot = 0;
    // Heard from within the current election timeout (CheckQuorum).
    bool recent_active = false;
    bool learner = false;
    Inflights inflights;

    // The highest commit index sent to this peer with entries it holds (or was sent), so a
    // broadcast can skip peers that already know everything.
    Index commit_sent = 0;
    // The highest ReadIndex round this peer acknowledged (thesis §6.4).
    uint64_t read_round_acked = 0;

    // Snapshot transfer: the snapshot being sent, bytes acknowledged, and whether any ack came
    // since the last heartbeat (if not, the unacknowledged chunk is sent again).
    std::shared_ptr<const Snapshot> snapshot;
    uint64_t snapshot_acked_bytes = 0;
    bool snapshot_progressed = false;

    void become_probe();
    void become_replicate();
    void become_snapshot(std::shared_ptr<const Snapshot> snap);

    // An append up to `last_index` was sent.
    void sent_entries(Index last_index, bool any_entries);
    // The peer acknowledged up to n; false when the ack is stale.
    bool maybe_update(Index n);
    // The peer rejected the append at `rejected`; `match_hint` is the next index to probe, minus
    // one. False when the rejection is stale.
    bool maybe_decrease_to(Index rejected, Index match_hint);
    // True when no append should be sent now (flow control).
    bool is_paused() const;
};

}  // namespace raftlock::raft
