#include "raft/raw_node.h"

#include "base/assert.h"
#include "raft/raft.h"

namespace raftlock::raft {

bool Ready::empty() const {
    return !soft_state && !hard_state && entries.empty() && !snapshot &&
           committed_entries.empty() && read_states.empty() && messages.empty() &&
           early_messages.empty();
}

RawNode::RawNode(const Config& config, const Storage& storage)
    : raft_(std::make_unique<Raft>(config, storage)),
      prev_soft_state_(raft_->soft_state()),
      prev_hard_state_(raft_->hard_state()) {}

RawNode::~RawNode() = default;

void RawNode::tick() {
    raft_->tick();
}

void RawNode::campaign() {
    raft_->campaign_now();
}

MessageCheck RawNode::step(Message message) {
    return raft_->step(std::move(message));
}

Status RawNode::propose(std::string data) {
    return raft_->propose(std::move(data));
}

Status RawNode::propose_conf_change(const ConfChange& change) {
    return raft_->propose_conf_change(change);
}

void RawNode::read_index(std::string context) {
    raft_->read_index(std::move(context));
}

void RawNode::transfer_leadership(NodeId transferee) {
    raft_->transfer_leadership(transferee);
}

bool RawNode::has_ready() const {
    const RaftLog& log = raft_->log();
    return raft_->soft_state() != prev_soft_state_ || raft_->hard_state() != prev_hard_state_ ||
           log.unstable().has_entries_to_persist() || log.unstable().has_snapshot_to_persist() ||
           log.has_next_committed_entries() || raft_->has_output();
}

Ready RawNode::ready() {
    readies_outstanding_++;
    raft_->flush();  // before reading the log state, so the Ready is consistent
    Ready rd;
    const SoftState soft = raft_->soft_state();
    if (soft != prev_soft_state_) {
        rd.soft_state = soft;
        prev_soft_state_ = soft;
    }
    const HardState hard = raft_->hard_state();
    if (hard != prev_hard_state_) {
        rd.must_sync = hard.term != prev_hard_state_.term || hard.vote != prev_hard_state_.vote;
        rd.hard_state = hard;
        prev_hard_state_ = hard;
    }
    const RaftLog& log = raft_->log();
    rd.entries = log.unstable().entries_to_persist();
    if (log.unstable().has_snapshot_to_persist()) {
        rd.snapshot = *log.unstable().snapshot();
    }
    rd.must_sync = rd.must_sync || !rd.entries.empty() || rd.snapshot.has_value();
    rd.committed_entries = log.next_committed_entries();
    rd.read_states = raft_->take_read_states();
    rd.messages = raft_->take_messages();
    rd.early_messages = raft_->take_early_messages();
    raft_->on_ready_handed_out(rd.committed_entries.empty() ? 0
                                                            : rd.committed_entries.back().index);
    return rd;
}

void RawNode::advance(const Ready& rd) {
    RL_ASSERT_MSG(readies_outstanding_ > 0, "advance() without a ready()");
    readies_outstanding_--;
    const Index snapshot_index = rd.snapshot ? rd.snapshot->metadata.index : 0;
    const Index last_index = rd.entries.empty() ? 0 : rd.entries.back().index;
    const Term last_term = rd.entries.empty() ? 0 : rd.entries.back().term;
    raft_->on_persisted(last_index, last_term, snapshot_index,
                        rd.hard_state ? rd.hard_state->term : 0);
    Index applied = snapshot_index;
    if (!rd.committed_entries.empty()) {
        applied = rd.committed_entries.back().index;
    }
    if (applied > 0) {
        raft_->on_applied(applied, rd.committed_entries);
    }
}

NodeStatus RawNode::status() const {
    const Raft& r = *raft_;
    NodeStatus st;
    st.id = r.id();
    st.soft_state = r.soft_state();
    st.hard_state = r.hard_state();
    st.applied = r.log().applied();
    st.first_index = r.log().first_index();
    st.last_index = r.log().last_index();
    st.conf_state = r.conf_state();
    st.lead_transferee = r.lead_transferee();
    if (r.role() == Role::kLeader) {
        for (const auto& [id, pr] : r.tracker().all()) {
            st.peers.push_back(PeerStatus{id, pr.learner, pr.match, pr.next, pr.state});
        }
    }
    return st;
}

const ConfState& RawNode::conf_state() const {
    return raft_->conf_state();
}

Index RawNode::last_index() const {
    return raft_->log().last_index();
}

Index RawNode::committed() const {
    return raft_->log().committed();
}

Term RawNode::term() const {
    return raft_->hard_state().term;
}

NodeId RawNode::id() const {
    return raft_->id();
}

}  // namespace raftlock::raft
