#pragma once

// Configuration entries. A kConfChange entry carries the change and the whole configuration it
// results in, so a node finds its configuration from the latest configuration entry of its log
// (Raft thesis §4.1: a server uses the latest configuration in its log, committed or not) without
// replaying every change from the beginning.

#include <optional>
#include <string>

#include "raft/types.h"

namespace raftlock::raft {

// More members than any real cluster has, and longer than any host:port: bounds on what a decoder
// accepts from a disk or a peer (raft/peer_input.h checks configurations in messages against them).
inline constexpr uint64_t kConfMembersMax = 1024;
inline constexpr size_t kConfAddressBytesMax = 1024;

struct ConfChangeRecord {
    // The change that produced `conf_state`; nullopt for the bootstrap configuration.
    std::optional<ConfChange> change;
    ConfState conf_state;

    friend bool operator==(const ConfChangeRecord&, const ConfChangeRecord&) = default;
};

std::string encode_conf_change(const ConfChangeRecord& record);
// Fails with kInvalidArgument on malformed bytes (data from disk or a peer is never trusted).
Result<ConfChangeRecord, Error> decode_conf_change(const std::string& data);

// Applies `change` to `conf`: the result, or an error when the change makes no sense (removing a
// node that is not a member, adding a voter that already is one, a configuration without voters).
Result<ConfState, Error> apply_conf_change(const ConfState& conf, const ConfChange& change);

// Sorted, without duplicates or node 0, voters and learners disjoint, at least one voter.
bool valid_conf_state(const ConfState& conf);
bool is_voter(const ConfState& conf, NodeId id);
bool is_learner(const ConfState& conf, NodeId id);

// The first log entry of a new cluster: every founding member writes the same entry (index 1,
// term 1, the initial configuration) and hard state {term 1, commit 1} before starting, so all
// logs agree from the start and a member added later receives the configuration by replication.
struct Bootstrap {
    HardState hard_state;
    Entry entry;
};
Bootstrap make_bootstrap(const ConfState& initial);

}  // namespace raftlock::raft
