// ReadIndex (Raft thesis §6.4): a linearizable read point without writing to the log.
//
//   1. The leader must have committed an entry of its term (so its commit index is current);
//      earlier requests wait for that.
//   2. It records its commit index as the read index.
//   3. It confirms it is still the leader with a round of heartbeats acknowledged by a majority.
//   4. Once the application has applied up to the read index, the read may be served.
//
// Rounds are batched: every request that arrives while a round is in flight joins the next round,
// which starts as soon as the current one is confirmed, so a burst of reads costs two heartbeat
// rounds, not one per read.

#include "base/assert.h"
#include "raft/raft.h"

namespace raftlock::raft {

void Raft::handle_read_index(NodeId from, std::string context) {
    if (role_ != Role::kLeader) {
        // Followers forward their own clients' requests; forwarded ones are not forwarded again.
        if (from == id_ && role_ == Role::kFollower && leader_id_ != kNoNode) {
            send(Message{
                .type = MessageType::kReadIndex, .to = leader_id_, .context = std::move(context)});
        }
        return;  // otherwise dropped: the client retries when a leader is known
    }
    if (!committed_in_current_term()) {
        if (deferred_reads_.size() < cfg_.max_pending_reads) {
            deferred_reads_.emplace_back(from, std::move(context));
        }
        return;
    }
    if (pending_reads_.size() >= cfg_.max_pending_reads) {
        return;  // overloaded: dropped, the client times out and retries
    }
    PendingRead read{from, std::move(context), log_.committed(), 0};
    const ConfState& conf = tracker_.conf();
    if (conf.voters.size() == 1 && conf.voters.front() == id_) {
        release_read(std::move(read));  // a single voter is its own majority
        return;
    }
    if (!read_round_in_flight_) {
        start_read_round();
        read.round = read_round_;
    } else {
        read.round = read_round_ + 1;
    }
    pending_reads_.push_back(std::move(read));
}

void Raft::start_read_round() {
    ++read_round_;
    read_round_in_flight_ = true;
    bcast_heartbeat();
}

void Raft::maybe_release_reads() {
    if (!read_round_in_flight_ || !tracker_.quorum_acked_round(id_, read_round_)) {
        return;
    }
    read_round_in_flight_ = false;
    while (!pending_reads_.empty() && pending_reads_.front().round <= read_round_) {
        release_read(std::move(pending_reads_.front()));
        pending_reads_.pop_front();
    }
    if (!pending_reads_.empty()) {
        start_read_round();
        RL_ASSERT(pending_reads_.back().round == read_round_);
    }
}

void Raft::release_read(PendingRead&& read) {
    if (read.from == id_) {
        read_states_.push_back(ReadState{read.index, std::move(read.context)});
        return;
    }
    send(Message{.type = MessageType::kReadIndexResponse,
                 .to = read.from,
                 .index = read.index,
                 .context = std::move(read.context)});
}

void Raft::release_deferred_reads() {
    if (role_ != Role::kLeader || deferred_reads_.empty() || !committed_in_current_term()) {
        return;
    }
    auto deferred = std::exchange(deferred_reads_, {});
    for (auto& [from, context] : deferred) {
        handle_read_index(from, std::move(context));
    }
}

}  // namespace raftlock::raft
