#pragma once

// Exactly-once bookkeeping of one session's writes (Raft thesis §6.3, docs/statemachine.md).
//
// Every write gets the next sequence number; a retry of the write reuses it, and the server answers
// a retry with the saved reply. `ack_seq` tells the server which saved replies it may forget: every
// seq <= ack_seq is *settled*, meaning its reply arrived or the client gave up on it and will never
// send it again (a caller's deadline passed). Giving up on a seq and acknowledging it also fences
// it: a late copy of that request still in the log is answered RESULT_DISCARDED, not applied.
//
// The server keeps at most 64 saved replies per session and drops the oldest beyond that, so the
// window of seqs above ack_seq is bounded to the same size: a retry is never answered
// RESULT_DISCARDED because of the client's own concurrency.

#include <cstdint>
#include <set>

namespace raftlock::client {

inline constexpr uint64_t kSeqWindowMax = 64;  // statemachine kSavedResultsPerSessionMax

class SeqTracker {
public:
    // A fresh session starts at 1. A process attaching to a session another process used passes a
    // seq above every seq used before (see cli/raftlock.cc): everything below it counts as settled.
    explicit SeqTracker(uint64_t first_seq = 1);

    // False when kSeqWindowMax seqs above ack_seq are allocated: wait for replies first.
    bool can_allocate() const;
    // Precondition: can_allocate().
    uint64_t allocate();
    // The reply of `seq` arrived, or the client abandoned it. Idempotent.
    // Precondition: `seq` was allocated.
    void settle(uint64_t seq);

    uint64_t ack_seq() const { return ack_seq_; }
    uint64_t next_seq() const { return next_seq_; }
    // Allocated seqs above ack_seq, settled or not.
    uint64_t window() const { return next_seq_ - 1 - ack_seq_; }

private:
    uint64_t next_seq_;
    uint64_t ack_seq_;
    std::set<uint64_t> settled_above_;  // settled seqs > ack_seq_ + 1 (a gap below them)
};

}  // namespace raftlock::client
