// What holds between any two calls into the core (LogCabin's RaftConsensusInvariants is the
// model): checked after every interaction-script command and every simulator step, so a broken
// rule stops the run at the step that broke it rather than when its effect shows.

#include "base/assert.h"
#include "raft/raft.h"

namespace raftlock::raft {

void Raft::check_invariants() const {
    // The log's positions (log.h): applied <= applying <= committed <= last, and compaction never
    // passes the commit index.
    RL_ASSERT_MSG(log_.applied() <= log_.applying(), "applied past what was handed out");
    RL_ASSERT_MSG(log_.applying() <= log_.committed(), "applying past the commit index");
    RL_ASSERT_MSG(log_.committed() <= log_.last_index(), "commit index past the log");
    RL_ASSERT_MSG(log_.first_index() <= log_.committed() + 1, "compacted past the commit index");
    RL_ASSERT_MSG(log_.last_stable_index() <= log_.last_index(), "stable index past the log");
    // Not asserted: last_term() <= current_term_. A torn write (the simulated disk keeps a
    // prefix of a Ready's unsynced writes, entries before the hard state) can restart a node
    // with entries of a term its hard state never reached; nothing of that Ready was
    // acknowledged, and the node catches up on the term from its peers.
    RL_ASSERT_MSG(persisted_term_ <= current_term_, "a durable term ahead of the current one");

    // Roles against leader and vote.
    switch (role_) {
        case Role::kLeader:
            RL_ASSERT_MSG(leader_id_ == id_, "a leader that does not know itself as leader");
            RL_ASSERT_MSG(voted_for_ == id_, "a leader that did not vote for itself");
            RL_ASSERT_MSG(pending_conf_index_ <= log_.last_index(),
                          "a pending configuration change beyond the log");
            break;
        case Role::kCandidate:
            RL_ASSERT_MSG(voted_for_ == id_, "a candidate that did not vote for itself");
            RL_ASSERT_MSG(leader_id_ == kNoNode, "a candidate that knows a leader");
            break;
        case Role::kPreCandidate:
            RL_ASSERT_MSG(leader_id_ == kNoNode, "a pre-candidate that knows a leader");
            break;
        case Role::kFollower:
            RL_ASSERT_MSG(leader_id_ != id_, "a follower that names itself leader");
            break;
    }
    if (role_ != Role::kLeader) {
        // Only a leader runs confirmation rounds or hands leadership over.
        RL_ASSERT_MSG(pending_reads_.empty() && deferred_reads_.empty() && !read_round_in_flight_,
                      "ReadIndex state on a node that is not the leader");
        RL_ASSERT_MSG(lead_transferee_ == kNoNode, "a transfer on a node that is not the leader");
        return;
    }

    // The leader's view of its followers: each match below its next, no next beyond the log.
    for (const auto& [id, pr] : tracker_.all()) {
        RL_ASSERT_MSG(pr.match < pr.next, "a progress whose match is not below its next");
        RL_ASSERT_MSG(pr.next <= log_.last_index() + 1, "a progress next beyond the log");
        if (id == id_) {
            RL_ASSERT_MSG(pr.match <= log_.last_stable_index(),
                          "the leader counts unpersisted entries of its own");
        }
    }
    // Pending reads: in round order, each at most one round ahead, none beyond the commit index.
    uint64_t previous_round = 0;
    for (const PendingRead& read : pending_reads_) {
        RL_ASSERT_MSG(read.round >= previous_round, "pending reads out of round order");
        RL_ASSERT_MSG(read.round <= read_round_ + 1, "a read waiting for a round not yet due");
        RL_ASSERT_MSG(read.index <= log_.committed(), "a read index beyond the commit index");
        previous_round = read.round;
    }
    RL_ASSERT_MSG(pending_reads_.empty() || read_round_in_flight_,
                  "reads pending with no confirmation round in flight");
}

}  // namespace raftlock::raft
