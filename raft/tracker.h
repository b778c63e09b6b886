#pragma once

// The leader's (and candidate's) bookkeeping over the current configuration: one Progress per
// member, votes in the current election, and the quorum questions asked of them.

#include <map>

#include "raft/progress.h"
#include "raft/quorum.h"
#include "raft/types.h"

namespace raftlock::raft {

class ProgressTracker {
public:
    explicit ProgressTracker(uint32_t max_inflight) : max_inflight_(max_inflight) {}

    const ConfState& conf() const { return conf_; }
    // Switches to `conf`: keeps the progress of remaining members, adds new ones (probing from
    // next_index), drops removed ones.
    void set_conf(const ConfState& conf, Index next_index);

    bool is_member(NodeId id) const { return progress_.count(id) > 0; }
    bool is_voter(NodeId id) const;
    Progress* progress(NodeId id);
    const Progress* progress(NodeId id) const;
    std::map<NodeId, Progress>& all() { return progress_; }
    const std::map<NodeId, Progress>& all() const { return progress_; }

    // The largest index a majority of voters has persisted.
    Index committed() const;

    void reset_votes() { votes_.clear(); }
    void record_vote(NodeId id, bool granted);
    VoteResult tally_votes() const;
    size_t votes_granted() const;

    // CheckQuorum: did a majority of voters (counting `self` as active) talk to us recently?
    bool quorum_active(NodeId self) const;
    // ReadIndex: has a majority of voters acknowledged read round `round` (self counts)?
    bool quorum_acked_round(NodeId self, uint64_t round) const;

private:
    uint32_t max_inflight_;
    ConfState conf_;
    std::map<NodeId, Progress> progress_;  // ordered, so iteration is deterministic
    std::map<NodeId, bool> votes_;
};

}  // namespace raftlock::raft
