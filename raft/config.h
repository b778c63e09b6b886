#pragma once

#include <cstdint>

#include "raft/peer_input.h"
#include "raft/types.h"

namespace raftlock::raft {

// Test-only switches that break the core on purpose, so tests can show the simulator catches each
// bug (a simulator that cannot catch them has no teeth). They exist only in builds compiled with
// RAFTLOCK_NEGATIVE_CONTROLS (the `raft_unsafe` library); production builds have no such fields.
#ifdef RAFTLOCK_NEGATIVE_CONTROLS
struct NegativeControls {
    // (a) No empty entry at term start, and entries of earlier terms commit by counting replicas
    // (the Figure 8 bug of the Raft paper, §5.4.2).
    bool commit_earlier_terms_by_counting = false;
    // (b) Vote responses go out before the vote is durable (in Ready.early_messages).
    bool reply_vote_before_persist = false;
    // (c) Votes are granted without the "candidate's log is at least as up to date" check (§5.4.1).
    bool skip_log_up_to_date_check = false;
};
#endif

struct Config {
    NodeId id = kNoNode;

    // A follower that hears nothing from a leader for a randomized timeout in
    // [election_tick, 2 * election_tick) starts an election. Must exceed heartbeat_tick.
    int election_tick = 10;
    int heartbeat_tick = 1;

    // Seed of the core's private PRNG (election jitter). The only randomness in the core.
    uint64_t seed = 1;

    bool pre_vote = true;      // thesis §9.6: a partitioned node cannot disrupt a stable leader
    bool check_quorum = true;  // thesis §6.2: a leader without a quorum for a timeout steps down
    // A follower drops local proposals (kProposalDropped) instead of forwarding them to the leader
    // (etcd's DisableProposalForwarding). For an application whose proposals carry decisions only
    // a current leader may make: the server stamps cluster time and expires sessions as leader,
    // and must not have a deposed leader's proposal committed through its successor.
    bool disable_proposal_forwarding = false;

    // The last index the application has applied, when restarting (0 for a new node).
    Index applied = 0;

    // Replication flow control: entries per AppendEntries by size (at least one entry), and the
    // number of unacknowledged AppendEntries per follower (the pipelining window).
    uint64_t max_size_per_msg_bytes = 1 << 20;
    uint32_t max_inflight_msgs = 256;
    // Limit of committed entries handed out in one Ready (at least one entry), in bytes and, when
    // not 0, in entries: an application that applies a Ready in one go bounds the work of one
    // turn of its loop with these.
    uint64_t max_committed_size_per_ready_bytes = 64 << 20;
    uint64_t max_committed_entries_per_ready = 0;
    // Proposals are dropped while the leader's uncommitted tail exceeds this (0 = no limit).
    uint64_t max_uncommitted_entries_bytes = 256 << 20;
    // InstallSnapshot chunk size.
    uint64_t snapshot_chunk_bytes = 1 << 20;
    // Pending ReadIndex requests and the queue of forwarded proposals are bounded too.
    uint32_t max_pending_reads = 1 << 16;
    // Bounds on what a peer's message may carry (raft/peer_input.h); a message beyond them is
    // dropped before it changes anything.
    PeerInputLimits peer_input;

#ifdef RAFTLOCK_NEGATIVE_CONTROLS
    NegativeControls negative_controls;
#endif

    Status validate() const;
};

}  // namespace raftlock::raft
