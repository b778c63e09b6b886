#pragma once

// The Raft state machine proper (Ongaro & Ousterhout 2014; Ongaro's thesis 2014), driven by
// RawNode. One class split over files by concern (NuRaft style):
//
//   raft.cc             construction, role transitions (become_*), tick, step dispatch, sending
//   node_election.cc    PreVote, elections, vote handling, CheckQuorum, leadership transfer
//   node_replication.cc AppendEntries both sides, flow control, commitment, proposals
//   node_snapshot.cc    InstallSnapshot in chunks, both sides
//   node_read_index.cc  ReadIndex (thesis §6.4) with batched confirmation rounds
//   node_membership.cc  one-server configuration changes (thesis §4.1), learners
//   node_invariants.cc  check_invariants(): what holds between any two calls
//
// Everything is deterministic given the Config seed and the sequence of calls.

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/rng.h"
#include "raft/config.h"
#include "raft/log.h"
#include "raft/peer_input.h"
#include "raft/tracker.h"
#include "raft/types.h"

namespace raftlock::raft {

class Raft {
public:
    Raft(const Config& config, const Storage& storage);

    void tick();
    // Drops a message that fails the peer-input checks (raft/peer_input.h) before it changes
    // anything, and says why; a stale or ignored message is not a failure.
    MessageCheck step(Message m);
    void campaign_now() { hup(/*transfer=*/false); }
    Status propose(std::string data);
    Status propose_conf_change(const ConfChange& change);
    void read_index(std::string context) { handle_read_index(id_, std::move(context)); }
    void transfer_leadership(NodeId transferee);

    // Called by RawNode when it hands out a Ready: everything unstable is now in progress, and
    // committed entries up to `applying` (0: none) are being applied.
    void on_ready_handed_out(Index applying);
    // Called by RawNode when the application has persisted entries up to (index, term), a
    // snapshot at snapshot_index (0 for none) and a hard state of hard_state_term (0 for none).
    void on_persisted(Index index, Term term, Index snapshot_index, Term hard_state_term);
    void on_applied(Index applied, const std::vector<Entry>& applied_entries);

    // Outputs, taken by RawNode.
    // Both flush() first, so callers always see the coalesced appends.
    std::vector<Message> take_messages() {
        flush();
        return std::exchange(msgs_, {});
    }
    std::vector<Message> take_early_messages() {
        flush();
        return std::exchange(early_msgs_, {});
    }
    std::vector<ReadState> take_read_states() { return std::exchange(read_states_, {}); }
    bool has_output() const {
        return bcast_pending_ || !msgs_.empty() || !early_msgs_.empty() || !read_states_.empty();
    }
    // Sends the appends and commit updates coalesced since the last call (see bcast_pending_).
    void flush();

    NodeId id() const { return id_; }
    Term term() const { return current_term_; }
    NodeId vote() const { return voted_for_; }
    NodeId leader() const { return leader_id_; }
    Role role() const { return role_; }
    HardState hard_state() const { return {current_term_, voted_for_, log_.committed()}; }
    SoftState soft_state() const { return {leader_id_, role_}; }
    const RaftLog& log() const { return log_; }
    const ProgressTracker& tracker() const { return tracker_; }
    const ConfState& conf_state() const { return tracker_.conf(); }
    NodeId lead_transferee() const { return lead_transferee_; }
    size_t pending_reads() const { return pending_reads_.size(); }
    uint64_t read_round() const { return read_round_; }

    // Asserts what must hold between any two calls (LogCabin's RaftConsensusInvariants): the
    // log's positions, the role against term, vote and leader, the leader's progress, and the
    // ReadIndex state. The interaction scripts and the simulators call it after every step; it
    // costs a walk over the progress map and the pending reads.
    void check_invariants() const;

private:
    struct PendingRead {
        NodeId from;
        std::string context;
        Index index;
        uint64_t round;
    };
    struct IncomingSnapshot {
        SnapshotMetadata meta;
        uint64_t size_bytes = 0;
        std::string data;
    };

    // raft.cc
    void become_follower(Term term, NodeId leader);
    void become_pre_candidate();
    void become_candidate();
    void become_leader();
    void reset(Term term);
    void reset_randomized_election_timeout();
    void tick_election();
    void tick_heartbeat();
    void send(Message m);
    bool step_term(const Message& m);  // false when the message is stale and handled
    ReceiverView receiver_view() const;
    void step_leader(Message& m);
    void step_candidate(Message& m);
    void step_follower(Message& m);
    bool promotable() const;
    bool committed_in_current_term() const;

    // node_election.cc
    void hup(bool transfer);
    void campaign(bool pre_vote, bool transfer);
    void handle_vote_request(const Message& m);
    void handle_vote_response(const Message& m);
    void check_quorum_tick();
    void handle_transfer_leader(NodeId transferee);
    void abort_leader_transfer() { lead_transferee_ = kNoNode; }

    // node_replication.cc
    void append_entries(std::vector<Entry>&& entries);
    Status append_proposal(std::vector<Entry>&& entries);
    bool maybe_send_append(NodeId to, bool send_if_empty);
    // Sends as many appends as flow control allows (one when probing).
    void send_append_all(NodeId to, bool send_if_empty = false);
    void bcast_append();
    // Batching: new entries and commit advances only mark a broadcast as pending; flush() sends
    // one AppendEntries per follower covering everything accumulated since, when the application
    // next takes a Ready. Thousands of proposals between two Readies cost one message each way.
    void request_bcast() { bcast_pending_ = role_ == Role::kLeader; }
    void send_heartbeat(NodeId to);
    void bcast_heartbeat();
    bool maybe_commit();
    void handle_append_entries(Message& m);
    void handle_heartbeat(const Message& m);
    void handle_append_response(const Message& m);
    void handle_heartbeat_response(const Message& m);

    // node_snapshot.cc
    bool start_snapshot(NodeId to, Progress& pr);
    void send_snapshot_chunk(NodeId to, const Progress& pr);
    void handle_snapshot_chunk(Message& m);
    void handle_snapshot_response(const Message& m);
    void resend_stalled_snapshots();
    bool restore(const Snapshot& snapshot);

    // node_read_index.cc
    void handle_read_index(NodeId from, std::string context);
    void start_read_round();
    void maybe_release_reads();
    void release_read(PendingRead&& read);
    void release_deferred_reads();

    // node_membership.cc
    void load_config_from_log();
    // The log was written from `first_written` on; `entries` holds (at least) the configuration
    // entries among what was written.
    void note_configs(const std::vector<Entry>& entries, Index first_written);
    void apply_active_config();
    void on_commit_advanced();
    Status check_conf_change(const ConfChange& change, std::string* data) const;

    Config cfg_;
    NodeId id_;
    Rng rng_;
    RaftLog log_;
    ProgressTracker tracker_;

    Term current_term_ = 0;
    // The term of the latest hard state known durable: a leader's messages may precede its own
    // write only once the term (and self-vote) of its leadership is on disk.
    Term persisted_term_ = 0;
    NodeId voted_for_ = kNoNode;
    NodeId leader_id_ = kNoNode;
    Role role_ = Role::kFollower;

    int election_elapsed_ = 0;
    int heartbeat_elapsed_ = 0;
    int randomized_election_timeout_ = 0;

    NodeId lead_transferee_ = kNoNode;
    int transfer_elapsed_ = 0;
    // Index of the latest configuration entry the leader appended (one change at a time).
    Index pending_conf_index_ = 0;
    uint64_t uncommitted_bytes_ = 0;

    // Configuration entries of the log above the snapshot, by index; the active configuration is
    // the last one, or base_conf_ (the snapshot's) when there is none (thesis §4.1).
    ConfState base_conf_;
    std::map<Index, ConfState> log_confs_;

    // ReadIndex: requests waiting for a confirmation round, and requests received before this
    // leader committed an entry of its term.
    std::deque<PendingRead> pending_reads_;
    std::vector<std::pair<NodeId, std::string>> deferred_reads_;
    uint64_t read_round_ = 0;
    bool read_round_in_flight_ = false;

    IncomingSnapshot incoming_snapshot_;

    bool bcast_pending_ = false;
    std::vector<Message> msgs_;
    std::vector<Message> early_msgs_;
    std::vector<ReadState> read_states_;
};

}  // namespace raftlock::raft
