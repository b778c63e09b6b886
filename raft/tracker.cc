#include "raft/tracker.h"

#include <algorithm>

#include "base/assert.h"
#include "raft/conf_change.h"

namespace raftlock::raft {

void ProgressTracker::set_conf(const ConfState& conf, Index next_index) {
    conf_ = conf;
    for (auto it = progress_.begin(); it != progress_.end();) {
        if (!raft::is_voter(conf_, it->first) && !raft::is_learner(conf_, it->first)) {
            it = progress_.erase(it);
        } else {
            ++it;
        }
    }
    auto ensure = [&](NodeId id, bool learner) {
        auto [it, inserted] = progress_.try_emplace(id, max_inflight_);
        if (inserted) {
            it->second.next = next_index;
            // A new member has not been heard from, but must not count against CheckQuorum
            // before it had a chance to answer.
            it->second.recent_active = true;
        }
        it->second.learner = learner;
    };
    for (NodeId id : conf_.voters) {
        ensure(id, false);
    }
    for (NodeId id : conf_.learners) {
        ensure(id, true);
    }
    // Exactly the members have progress, and none is both a voter and a learner.
    RL_ASSERT(progress_.size() == conf_.voters.size() + conf_.learners.size());
    for (NodeId id : conf_.learners) {
        RL_ASSERT(!raft::is_voter(conf_, id));
    }
}

bool ProgressTracker::is_voter(NodeId id) const {
    return raft::is_voter(conf_, id);
}

Progress* ProgressTracker::progress(NodeId id) {
    auto it = progress_.find(id);
    return it == progress_.end() ? nullptr : &it->second;
}

const Progress* ProgressTracker::progress(NodeId id) const {
    auto it = progress_.find(id);
    return it == progress_.end() ? nullptr : &it->second;
}

Index ProgressTracker::committed() const {
    RL_ASSERT(!conf_.voters.empty());  // asked by a leader, and a leader was elected by voters
    std::vector<Index> acked;
    acked.reserve(conf_.voters.size());
    Index highest = 0;
    for (NodeId id : conf_.voters) {
        auto it = progress_.find(id);
        RL_ASSERT_MSG(it != progress_.end(), "a voter without progress");
        acked.push_back(it->second.match);
        highest = std::max(highest, it->second.match);
    }
    const Index index = majority_index(std::move(acked));
    RL_ASSERT(index <= highest);
    return index;
}

void ProgressTracker::record_vote(NodeId id, bool granted) {
    votes_.try_emplace(id, granted);  // the first answer of a voter counts
}

VoteResult ProgressTracker::tally_votes() const {
    size_t granted = 0;
    size_t rejected = 0;
    for (NodeId id : conf_.voters) {
        auto it = votes_.find(id);
        if (it == votes_.end()) {
            continue;
        }
        (it->second ? granted : rejected) += 1;
    }
    RL_ASSERT(granted + rejected <= votes_.size());
    return vote_result(conf_.voters.size(), granted, rejected);
}

size_t ProgressTracker::votes_granted() const {
    return static_cast<size_t>(
        std::count_if(votes_.begin(), votes_.end(), [](const auto& v) { return v.second; }));
}

bool ProgressTracker::quorum_active(NodeId self) const {
    size_t active = 0;
    for (NodeId id : conf_.voters) {
        if (id == self || progress_.at(id).recent_active) {
            ++active;
        }
    }
    return active >= majority(conf_.voters.size());
}

bool ProgressTracker::quorum_acked_round(NodeId self, uint64_t round) const {
    size_t acked = 0;
    for (NodeId id : conf_.voters) {
        if (id == self || progress_.at(id).read_round_acked >= round) {
            ++acked;
        }
    }
    return acked >= majority(conf_.voters.size());
}

}  // namespace raftlock::raft
