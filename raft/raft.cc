#include "raft/raft.h"

#include <algorithm>
#include <limits>

#include "base/assert.h"
#include "raft/conf_change.h"

namespace raftlock::raft {

namespace {

// Messages that carry no term: requests a follower forwards to its leader on behalf of a client.
bool is_forwarded(MessageType type) {
    return type == MessageType::kPropose || type == MessageType::kReadIndex ||
           type == MessageType::kTransferLeader;
}

// Messages a leader may send before its own log write is durable (thesis §10.2.1): they promise
// nothing about the sender's persisted state; the leader counts itself toward a commit quorum
// only once its entries are durable.
bool is_leader_replication(MessageType type) {
    return type == MessageType::kAppend || type == MessageType::kHeartbeat ||
           type == MessageType::kSnapshot || type == MessageType::kTimeoutNow ||
           type == MessageType::kReadIndexResponse;
}

}  // namespace

Raft::Raft(const Config& config, const Storage& storage)
    : cfg_(config),
      id_(config.id),
      rng_(config.seed),
      log_(storage,
           config.max_committed_size_per_ready_bytes,
           config.max_committed_entries_per_ready),
      tracker_(config.max_inflight_msgs) {
    Status valid = config.validate();
    RL_ASSERT_MSG(valid.ok(), valid.message().c_str());

    const InitialState initial = storage.initial_state();
    base_conf_ = initial.snapshot_meta.conf_state;
    const HardState& hs = initial.hard_state;
    RL_ASSERT_MSG(hs.commit <= log_.last_index(), "stored commit index beyond the stored log");
    // Only a version without peer-input checks could have stored such a term (issue 16); going
    // on would wrap it at the next election.
    RL_ASSERT_MSG(hs.term <= kTermMax, "stored term beyond the largest term (raft/peer_input.h)");
    RL_ASSERT_MSG(log_.last_index() <= kIndexMax, "stored log beyond the largest index");
    current_term_ = hs.term;
    persisted_term_ = hs.term;
    voted_for_ = hs.vote;
    log_.commit_to(hs.commit);
    if (config.applied > 0) {
        RL_ASSERT_MSG(config.applied <= log_.committed(), "applied index beyond the commit index");
        log_.applied_to(std::max(config.applied, log_.applied()));
    }
    load_config_from_log();
    become_follower(current_term_, kNoNode);
}

void Raft::reset(Term term) {
    // Terms only grow, and never past kTermMax: messages above it are dropped (peer_input.h) and
    // a node at kTermMax does not campaign (hup), so term + 1 never wraps.
    RL_ASSERT(term >= current_term_);
    RL_ASSERT(term <= kTermMax);
    if (term != current_term_) {
        current_term_ = term;
        voted_for_ = kNoNode;
    }
    leader_id_ = kNoNode;
    election_elapsed_ = 0;
    heartbeat_elapsed_ = 0;
    reset_randomized_election_timeout();
    abort_leader_transfer();
    tracker_.reset_votes();
    const Index next = log_.last_index() + 1;
    for (auto& [id, pr] : tracker_.all()) {
        const bool learner = pr.learner;
        pr = Progress(cfg_.max_inflight_msgs);
        pr.learner = learner;
        pr.next = next;
        if (id == id_) {
            pr.match = log_.last_stable_index();
        }
    }
    // Conservative: the uncommitted tail may hold a configuration entry of an earlier term, so
    // no change is accepted until everything up to here is committed.
    pending_conf_index_ = log_.last_index();
    uncommitted_bytes_ = 0;
    bcast_pending_ = false;
    pending_reads_.clear();
    deferred_reads_.clear();
    read_round_in_flight_ = false;
}

void Raft::reset_randomized_election_timeout() {
    randomized_election_timeout_ =
        cfg_.election_tick +
        static_cast<int>(rng_.uniform(static_cast<uint64_t>(cfg_.election_tick)));
}

void Raft::become_follower(Term term, NodeId leader) {
    reset(term);
    leader_id_ = leader;
    role_ = Role::kFollower;
}

void Raft::become_pre_candidate() {
    RL_ASSERT_MSG(role_ != Role::kLeader, "leader cannot become pre-candidate");
    // PreVote changes neither term nor vote (thesis §9.6). Each election attempt draws a new
    // timeout, so repeated split pre-votes do not stay in lockstep.
    tracker_.reset_votes();
    reset_randomized_election_timeout();
    leader_id_ = kNoNode;
    role_ = Role::kPreCandidate;
}

void Raft::become_candidate() {
    RL_ASSERT_MSG(role_ != Role::kLeader, "leader cannot become candidate");
    RL_ASSERT_MSG(current_term_ < kTermMax, "no term left to campaign in");
    reset(current_term_ + 1);
    voted_for_ = id_;
    role_ = Role::kCandidate;
}

void Raft::become_leader() {
    RL_ASSERT_MSG(role_ == Role::kCandidate, "only a candidate becomes leader");
    reset(current_term_);
    leader_id_ = id_;
    role_ = Role::kLeader;
    if (Progress* self = tracker_.progress(id_)) {
        self->become_replicate();
        self->match = log_.last_stable_index();
        self->next = log_.last_index() + 1;
        self->recent_active = true;
    }
#ifdef RAFTLOCK_NEGATIVE_CONTROLS
    if (cfg_.negative_controls.commit_earlier_terms_by_counting) {
        return;
    }
#endif
    // Raft §5.4.2 / §8: an empty entry of the new term, so entries of earlier terms become
    // committed (indirectly) and the leader learns the commit index.
    std::vector<Entry> noop(1);
    append_entries(std::move(noop));
}

bool Raft::promotable() const {
    if (tracker_.is_voter(id_)) {
        return true;
    }
    // Raft thesis §4.2.2: a server that is not part of its own latest configuration should still
    // start elections while that configuration is uncommitted, since it may still be needed: its
    // log may be the only one the new configuration's voters can elect. It campaigns for the new
    // configuration's majority, which does not count its own vote (tally_votes counts the latest
    // configuration's voters only).
    if (log_confs_.empty() || log_confs_.rbegin()->first <= log_.committed()) {
        return false;
    }
    // The configuration the uncommitted one replaces (one change at a time: the one before it).
    const ConfState& previous =
        log_confs_.size() >= 2 ? std::prev(log_confs_.end(), 2)->second : base_conf_;
    return is_voter(previous, id_);
}

bool Raft::committed_in_current_term() const {
    return log_.term(log_.committed()) == current_term_;
}

void Raft::tick() {
    if (role_ == Role::kLeader) {
        tick_heartbeat();
    } else {
        tick_election();
    }
}

void Raft::tick_election() {
    // Saturates: a learner or removed node ticks forever without campaigning (promotable()).
    if (election_elapsed_ < std::numeric_limits<int>::max()) {
        ++election_elapsed_;
    }
    if (promotable() && election_elapsed_ >= randomized_election_timeout_) {
        election_elapsed_ = 0;
        hup(/*transfer=*/false);
    }
}

void Raft::tick_heartbeat() {
    ++heartbeat_elapsed_;
    ++election_elapsed_;
    if (election_elapsed_ >= cfg_.election_tick) {
        election_elapsed_ = 0;
        if (cfg_.check_quorum) {
            check_quorum_tick();
            if (role_ != Role::kLeader) {
                return;
            }
        }
    }
    if (lead_transferee_ != kNoNode && ++transfer_elapsed_ >= cfg_.election_tick) {
        abort_leader_transfer();  // not finished within an election timeout (§3.10)
    }
    if (heartbeat_elapsed_ >= cfg_.heartbeat_tick) {
        heartbeat_elapsed_ = 0;
        bcast_heartbeat();
        resend_stalled_snapshots();
    }
}

void Raft::send(Message m) {
    m.from = id_;
    if (is_forwarded(m.type)) {
        m.term = 0;
    } else if (m.term == 0) {
        m.term = current_term_;
    }
    // A leader elected within one Ready (a single voter) has not persisted its term and vote
    // yet; its messages must wait like everyone else's, or a crash could let it win the same term
    // again and send different entries under the same (index, term).
    const bool leadership_durable = role_ == Role::kLeader && persisted_term_ == current_term_;
    bool early = is_forwarded(m.type) || (leadership_durable && is_leader_replication(m.type));
#ifdef RAFTLOCK_NEGATIVE_CONTROLS
    if (cfg_.negative_controls.reply_vote_before_persist &&
        (m.type == MessageType::kVoteResponse || m.type == MessageType::kPreVoteResponse)) {
        early = true;
    }
#endif
    (early ? early_msgs_ : msgs_).push_back(std::move(m));
}

MessageCheck Raft::step(Message m) {
    // Before anything else: a confused or broken peer must not confuse us.
    MessageCheck check = check_message(m, receiver_view(), cfg_.peer_input);
    if (!check.ok()) {
        return check;
    }
    if (!step_term(m)) {
        return check;
    }
    if (m.type == MessageType::kVote || m.type == MessageType::kPreVote) {
        handle_vote_request(m);
        return check;
    }
    switch (role_) {
        case Role::kLeader:
            step_leader(m);
            break;
        case Role::kCandidate:
        case Role::kPreCandidate:
            step_candidate(m);
            break;
        case Role::kFollower:
            step_follower(m);
            break;
    }
    return check;
}

ReceiverView Raft::receiver_view() const {
    return ReceiverView{.id = id_,
                        .term = current_term_,
                        .role = role_,
                        .last_index = log_.last_index(),
                        .read_round = read_round_};
}

bool Raft::step_term(const Message& m) {
    if (m.term == 0) {
        return is_forwarded(m.type);
    }
    const bool vote_request = m.type == MessageType::kVote || m.type == MessageType::kPreVote;
    if (m.term > current_term_) {
        if (vote_request) {
            // Leader stickiness (thesis §4.2.3): while we hear from a leader, a node that merely
            // timed out (partitioned, or removed) cannot depose it; a transfer may. A PreVote is
            // always refused then (thesis §9.6: granted only after an election timeout without a
            // leader), a real vote only with CheckQuorum (without it the leader might be gone).
            const bool lease_applies = cfg_.check_quorum || m.type == MessageType::kPreVote;
            const bool in_lease =
                lease_applies && leader_id_ != kNoNode && election_elapsed_ < cfg_.election_tick;
            if (in_lease && !m.transfer) {
                return false;
            }
        }
        if (m.type == MessageType::kPreVote) {
            return true;  // a PreVote never changes our term
        }
        if (m.type == MessageType::kPreVoteResponse && !m.reject) {
            return true;  // granted for the term we would campaign in; not a newer leader
        }
        const bool from_leader = m.type == MessageType::kAppend ||
                                 m.type == MessageType::kHeartbeat ||
                                 m.type == MessageType::kSnapshot;
        // Figure 2: the election timer restarts on hearing from a leader or granting a vote, not
        // on merely seeing a higher term. A stale candidate with a fast clock would otherwise
        // keep every up-to-date node from ever timing out (found by the simulator, PreVote off).
        const int elapsed = election_elapsed_;
        become_follower(m.term, from_leader ? m.from : kNoNode);
        if (m.type == MessageType::kVote) {
            election_elapsed_ = elapsed;  // handle_vote_request resets it if the vote is granted
        }
        return true;
    }
    if (m.term < current_term_) {
        if ((cfg_.check_quorum || cfg_.pre_vote) &&
            (m.type == MessageType::kAppend || m.type == MessageType::kHeartbeat)) {
            // A stale leader (e.g. healed from a partition) learns our term and steps down;
            // with PreVote it could otherwise go on forever, as we never campaign against it.
            send(Message{.type = MessageType::kAppendResponse, .to = m.from});
        } else if (m.type == MessageType::kPreVote) {
            send(Message{.type = MessageType::kPreVoteResponse, .to = m.from, .reject = true});
        }
        return false;
    }
    return true;
}

void Raft::step_leader(Message& m) {
    switch (m.type) {
        case MessageType::kPropose:
            (void)append_proposal(std::move(m.entries));
            break;
        case MessageType::kReadIndex:
            handle_read_index(m.from, std::move(m.context));
            break;
        case MessageType::kAppendResponse:
            handle_append_response(m);
            break;
        case MessageType::kHeartbeatResponse:
            handle_heartbeat_response(m);
            break;
        case MessageType::kSnapshotResponse:
            handle_snapshot_response(m);
            break;
        case MessageType::kTransferLeader:
            handle_transfer_leader(m.index);
            break;
        default:
            break;  // e.g. a late vote response: nothing to do
    }
}

void Raft::step_candidate(Message& m) {
    switch (m.type) {
        case MessageType::kAppend:
            become_follower(m.term, m.from);
            handle_append_entries(m);
            break;
        case MessageType::kHeartbeat:
            become_follower(m.term, m.from);
            handle_heartbeat(m);
            break;
        case MessageType::kSnapshot:
            become_follower(m.term, m.from);
            handle_snapshot_chunk(m);
            break;
        case MessageType::kVoteResponse:
        case MessageType::kPreVoteResponse:
            handle_vote_response(m);
            break;
        default:
            break;  // proposals and reads are dropped while there is no leader
    }
}

void Raft::step_follower(Message& m) {
    switch (m.type) {
        case MessageType::kPropose:
        case MessageType::kReadIndex:
        case MessageType::kTransferLeader:
            // Only requests from this node's own clients are forwarded (at most one hop).
            break;
        case MessageType::kAppend:
            election_elapsed_ = 0;
            leader_id_ = m.from;
            handle_append_entries(m);
            break;
        case MessageType::kHeartbeat:
            election_elapsed_ = 0;
            leader_id_ = m.from;
            handle_heartbeat(m);
            break;
        case MessageType::kSnapshot:
            election_elapsed_ = 0;
            leader_id_ = m.from;
            handle_snapshot_chunk(m);
            break;
        case MessageType::kTimeoutNow:
            // The leader hands over: campaign at once, skipping PreVote (thesis §3.10).
            hup(/*transfer=*/true);
            break;
        case MessageType::kReadIndexResponse:
            read_states_.push_back(ReadState{m.index, std::move(m.context)});
            break;
        default:
            break;
    }
}

Status Raft::propose(std::string data) {
    std::vector<Entry> entries(1);
    entries[0].data = std::move(data);
    if (role_ == Role::kLeader) {
        return append_proposal(std::move(entries));
    }
    if (cfg_.disable_proposal_forwarding) {
        return Status(ErrorCode::kProposalDropped, "not the leader (forwarding is off)");
    }
    if (role_ == Role::kFollower && leader_id_ != kNoNode) {
        send(Message{
            .type = MessageType::kPropose, .to = leader_id_, .entries = std::move(entries)});
        return Status();
    }
    return Status(ErrorCode::kProposalDropped, "no leader is known");
}

void Raft::transfer_leadership(NodeId transferee) {
    if (role_ == Role::kLeader) {
        handle_transfer_leader(transferee);
    } else if (role_ == Role::kFollower && leader_id_ != kNoNode) {
        send(Message{.type = MessageType::kTransferLeader, .to = leader_id_, .index = transferee});
    }
}

void Raft::on_ready_handed_out(Index applying) {
    log_.accept_in_progress();
    if (applying > 0) {
        log_.accept_applying(applying);
    }
}

void Raft::on_persisted(Index index, Term term, Index snapshot_index, Term hard_state_term) {
    if (hard_state_term > persisted_term_) {
        persisted_term_ = hard_state_term;
    }
    if (snapshot_index > 0) {
        log_.stable_snap_to(snapshot_index);
    }
    if (index > 0) {
        log_.stable_to(index, term);
    }
    if (role_ != Role::kLeader) {
        return;
    }
    // The leader counts itself toward a quorum only for entries on its own disk.
    Progress* self = tracker_.progress(id_);
    if (self != nullptr && self->maybe_update(log_.last_stable_index()) && maybe_commit() &&
        role_ == Role::kLeader) {
        request_bcast();
    }
}

void Raft::on_applied(Index applied, const std::vector<Entry>& applied_entries) {
    log_.applied_to(applied);
    if (role_ != Role::kLeader) {
        return;
    }
    for (const Entry& e : applied_entries) {
        const uint64_t bytes = e.data.empty() ? 0 : entry_size_bytes(e);
        uncommitted_bytes_ = bytes > uncommitted_bytes_ ? 0 : uncommitted_bytes_ - bytes;
    }
}

}  // namespace raftlock::raft
