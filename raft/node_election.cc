// Elections: PreVote, RequestVote, vote counting, CheckQuorum and leadership transfer.

#include "base/assert.h"
#include "raft/raft.h"

namespace raftlock::raft {

void Raft::hup(bool transfer) {
    if (role_ == Role::kLeader || !promotable()) {
        return;  // learners and removed nodes never campaign (see promotable())
    }
    if (current_term_ >= kTermMax) {
        // Out of terms: another campaign would wrap the term to 0 and every log after it would
        // go backwards. Unreachable but for a peer pushing the term up by term_jump_max at a
        // time, 2^30 times over; this node then only follows.
        return;
    }
    campaign(/*pre_vote=*/cfg_.pre_vote && !transfer, transfer);
}

void Raft::campaign(bool pre_vote, bool transfer) {
    RL_ASSERT(current_term_ < kTermMax);  // hup() checked: the vote term below cannot wrap
    Term vote_term = 0;
    if (pre_vote) {
        become_pre_candidate();
        vote_term = current_term_ + 1;  // the term we would campaign in
    } else {
        become_candidate();
        vote_term = current_term_;
        // Raft §5.2: a candidate votes for itself, durably before any request leaves (the vote
        // is in this Ready's hard state, and the requests go out after it is persisted).
        RL_ASSERT(voted_for_ == id_ && role_ == Role::kCandidate);
    }
    RL_ASSERT(vote_term > 0 && vote_term <= kTermMax);
    tracker_.record_vote(id_, true);
    if (tracker_.tally_votes() == VoteResult::kWon) {
        // A single-voter cluster wins at once.
        if (pre_vote) {
            campaign(/*pre_vote=*/false, transfer);
        } else {
            become_leader();
        }
        return;
    }
    const MessageType type = pre_vote ? MessageType::kPreVote : MessageType::kVote;
    const Index last_index = log_.last_index();
    const Term last_term = log_.last_term();
    for (NodeId voter : tracker_.conf().voters) {
        if (voter == id_) {
            continue;
        }
        send(Message{.type = type,
                     .to = voter,
                     .term = vote_term,
                     .log_term = last_term,
                     .index = last_index,
                     .transfer = transfer});
    }
}

void Raft::handle_vote_request(const Message& m) {
    const bool pre_vote = m.type == MessageType::kPreVote;
    // step_term() moved a real vote's term into ours (or refused it); a PreVote never changes it.
    RL_ASSERT(pre_vote ? m.term >= current_term_ : m.term == current_term_);
    // Raft §5.2: one vote per term; repeat it for the same candidate (a lost response).
    const bool can_vote = voted_for_ == m.from ||
                          (voted_for_ == kNoNode && leader_id_ == kNoNode) ||
                          (pre_vote && m.term > current_term_);
    bool up_to_date = log_.is_up_to_date(m.index, m.log_term);  // Raft §5.4.1
#ifdef RAFTLOCK_NEGATIVE_CONTROLS
    if (cfg_.negative_controls.skip_log_up_to_date_check) {
        up_to_date = true;
    }
#endif
    const MessageType response =
        pre_vote ? MessageType::kPreVoteResponse : MessageType::kVoteResponse;
    if (can_vote && up_to_date) {
        // A granted PreVote answers in the candidate's future term so it counts the grant.
        send(Message{.type = response, .to = m.from, .term = m.term});
        if (!pre_vote) {
            election_elapsed_ = 0;
            voted_for_ = m.from;
        }
        RL_ASSERT(pre_vote || voted_for_ == m.from);  // never two candidates in one term
        return;
    }
    send(Message{.type = response, .to = m.from, .term = current_term_, .reject = true});
}

void Raft::handle_vote_response(const Message& m) {
    const bool expected =
        (role_ == Role::kPreCandidate && m.type == MessageType::kPreVoteResponse) ||
        (role_ == Role::kCandidate && m.type == MessageType::kVoteResponse);
    if (!expected) {
        return;
    }
    RL_ASSERT(m.term >= current_term_);  // step_term() dropped older answers
    tracker_.record_vote(m.from, !m.reject);
    switch (tracker_.tally_votes()) {
        case VoteResult::kWon:
            RL_ASSERT(tracker_.votes_granted() >= majority(tracker_.conf().voters.size()));
            if (role_ == Role::kPreCandidate) {
                campaign(/*pre_vote=*/false, /*transfer=*/false);
            } else {
                become_leader();
                request_bcast();
            }
            break;
        case VoteResult::kLost:
            become_follower(current_term_, kNoNode);
            break;
        case VoteResult::kPending:
            break;
    }
}

void Raft::check_quorum_tick() {
    // Thesis §6.2: a leader that has not heard from a majority within an election timeout may
    // have been deposed without knowing it; stepping down stops it serving stale reads and lets
    // clients find the real leader.
    RL_ASSERT(role_ == Role::kLeader && leader_id_ == id_);
    if (!tracker_.quorum_active(id_)) {
        become_follower(current_term_, kNoNode);
        return;
    }
    for (auto& [id, pr] : tracker_.all()) {
        if (id != id_) {
            pr.recent_active = false;
        }
    }
}

void Raft::handle_transfer_leader(NodeId transferee) {
    RL_ASSERT(role_ == Role::kLeader);
    if (transferee == id_ || !tracker_.is_voter(transferee)) {
        return;  // already the leader, or a learner / non-member that could not win
    }
    if (lead_transferee_ == transferee) {
        return;  // already in progress
    }
    abort_leader_transfer();
    // The transfer must finish within an election timeout, or it is abandoned (tick_heartbeat).
    // It has its own timer: resetting election_elapsed_ would also postpone CheckQuorum, and a
    // stream of transfer requests could then keep an isolated leader in place.
    transfer_elapsed_ = 0;
    lead_transferee_ = transferee;
    const Progress* pr = tracker_.progress(transferee);
    RL_ASSERT(pr != nullptr);
    if (pr->match == log_.last_index()) {
        send(Message{.type = MessageType::kTimeoutNow, .to = transferee});
    } else {
        // Even with nothing new to send (appends in flight, maybe lost), probe now so a lagging
        // transferee catches up without waiting for a heartbeat.
        send_append_all(transferee, /*send_if_empty=*/true);
    }
}

}  // namespace raftlock::raft
