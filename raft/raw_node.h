#pragma once

// The public face of the Raft core, in the spirit of etcd's RawNode. Pure and single-threaded: no
// I/O, clocks, threads or randomness other than a PRNG seeded from Config. The application drives
// it:
//
//   inputs   tick(), step(msg), propose(data), propose_conf_change(cc), read_index(ctx),
//            transfer_leadership(id), campaign()
//   outputs  ready(): a batch of work, then advance(ready) once the batch is done:
//              1. send ready.early_messages (any time, even before persisting);
//              2. persist ready.snapshot, ready.entries and ready.hard_state (one synced write when
//                 ready.must_sync);
//              3. send ready.messages (only now: they promise the state just persisted);
//              4. apply ready.snapshot and ready.committed_entries, serve ready.read_states;
//              5. advance(ready).
//
// Ready.entries may start at or below the last stored index: the stored log from that index on is
// replaced (conflict truncation). The hard state's commit index may refer to entries of the same
// Ready, so a store must never make the hard state durable without those entries (one atomic batch,
// or entries first). See docs/raft.md for the guarantees.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "raft/config.h"
#include "raft/storage.h"
#include "raft/types.h"

namespace raftlock::raft {

class Raft;

struct Ready {
    std::optional<SoftState> soft_state;   // set when leader or role changed
    std::optional<HardState> hard_state;   // set when it changed; persist before `messages`
    std::vector<Entry> entries;            // append to stable storage
    std::optional<Snapshot> snapshot;      // persist and apply (a follower caught up by snapshot)
    std::vector<Entry> committed_entries;  // apply in order
    std::vector<ReadState> read_states;
    std::vector<Message> messages;        // send after the state above is durable
    std::vector<Message> early_messages;  // may be sent before persisting (leader's replication,
                                          // thesis §10.2.1: the leader writes in parallel)
    // True when hard_state's term or vote changed or entries is non-empty: the write must be
    // synced. A commit-only change may be written without a sync.
    bool must_sync = false;

    bool empty() const;
};

// Replication progress of one peer, as seen by a leader.
enum class ProgressState : uint8_t { kProbe, kReplicate, kSnapshot };

struct PeerStatus {
    NodeId id = kNoNode;
    bool learner = false;
    Index match = 0;
    Index next = 0;
    ProgressState state = ProgressState::kProbe;
};

struct NodeStatus {
    NodeId id = kNoNode;
    SoftState soft_state;
    HardState hard_state;
    Index applied = 0;
    Index first_index = 0;
    Index last_index = 0;
    ConfState conf_state;
    NodeId lead_transferee = kNoNode;
    std::vector<PeerStatus> peers;  // leader only, sorted by id
};

class RawNode {
public:
    // `storage` must outlive the node; the application writes to it only as Ready asks and for
    // snapshots/compaction, never behind the core's back. Panics on an invalid config or storage.
    RawNode(const Config& config, const Storage& storage);
    ~RawNode();
    RawNode(const RawNode&) = delete;
    RawNode& operator=(const RawNode&) = delete;

    // Advances logical time by one tick (election and heartbeat timeouts are counted in ticks).
    void tick();
    // Starts an election now (after PreVote when enabled), as if the election timeout elapsed.
    void campaign();
    // A message from a peer. One that fails the peer-input checks (raft/peer_input.h: out of
    // range, malformed, misaddressed) is dropped before it changes any state, and the result says
    // why, for the caller to count and log; a stale message is dropped too, and is no failure.
    MessageCheck step(Message message);

    // Appends data to the log (leader) or forwards it to the leader (follower). kProposalDropped
    // when no leader is known, a leadership transfer is in progress or the uncommitted budget is
    // used up.
    Status propose(std::string data);
    // A one-server membership change. Rejected while another change is uncommitted or before the
    // leader has committed an entry of its term (the fix of the single-server-change bug).
    Status propose_conf_change(const ConfChange& change);
    // Requests a linearizable read point; the answer arrives as a ReadState with this context.
    void read_index(std::string context);
    // Asks the leader (or forwards to it) to hand leadership to `transferee` (thesis §3.10).
    void transfer_leadership(NodeId transferee);

    bool has_ready() const;
    // Several Readies may be outstanding (a pipelined application persists the next while the
    // last is syncing): each carries only what the ones before it did not (entries, snapshot,
    // committed entries), and their writes must complete in the order they were handed out.
    Ready ready();
    // Acknowledges that everything in `ready` was persisted, sent and applied as described above.
    // Readies are advanced in the order ready() returned them.
    void advance(const Ready& ready);
    size_t readies_outstanding() const { return readies_outstanding_; }

    NodeStatus status() const;
    NodeId id() const;
    // The active configuration: the latest in the log, committed or not (thesis §4.1).
    const ConfState& conf_state() const;
    // The index of the last entry in the log (the one a successful propose just appended).
    Index last_index() const;
    // The highest index this node knows to be committed (it may lag the leader's).
    Index committed() const;
    Term term() const;
    // Direct access for tests (interaction scripts, simulator invariants).
    const Raft& raft() const { return *raft_; }

private:
    std::unique_ptr<Raft> raft_;
    size_t readies_outstanding_ = 0;
    SoftState prev_soft_state_;
    HardState prev_hard_state_;
};

}  // namespace raftlock::raft
