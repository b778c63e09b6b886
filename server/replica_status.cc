// What a node says about itself: the admin /status JSON and the NodeStatus client request.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/replica.h"

namespace raftlock::server {

namespace {

const char* role_name(raft::Role role) {
    switch (role) {
        case raft::Role::kFollower:
            return "follower";
        case raft::Role::kPreCandidate:
            return "pre-candidate";
        case raft::Role::kCandidate:
            return "candidate";
        case raft::Role::kLeader:
            return "leader";
    }
    return "unknown";
}

const char* progress_name(raft::ProgressState state) {
    switch (state) {
        case raft::ProgressState::kProbe:
            return "probe";
        case raft::ProgressState::kReplicate:
            return "replicate";
        case raft::ProgressState::kSnapshot:
            return "snapshot";
    }
    return "unknown";
}

}  // namespace

bool Replica::healthy() const {
    return !shutting_down_ && soft_.leader != raft::kNoNode && !catching_up();
}

std::string Replica::health() const {
    if (shutting_down_) {
        return "shutting down";
    }
    if (catching_up()) {
        return fmt::format("catching up: applied {} of {}", applied_index_, replayed_through_);
    }
    return soft_.leader == raft::kNoNode ? "no leader" : "ok";
}

void Replica::fill_status(proto::NodeStatusResult& out) const {
    const raft::NodeStatus st = raw_->status();
    out.set_id(config_.node_id);
    out.set_role(role_name(st.soft_state.role));
    out.set_term(st.hard_state.term);
    out.set_leader(st.soft_state.leader);
    out.set_commit(st.hard_state.commit);
    out.set_applied(applied_index_);
    out.set_last_index(st.last_index);
    out.set_snapshot_index(snapshot_index_);
    for (const raft::PeerStatus& p : st.peers) {
        proto::PeerProgress* pp = out.add_peers();
        pp->set_id(p.id);
        pp->set_match(p.match);
        pp->set_next(p.next);
        pp->set_learner(p.learner);
    }
    out.set_sessions(sm_.session_count());
    out.set_locks(sm_.lock_count());
    out.set_nodes(sm_.node_count());
    out.set_client_endpoint(config_.client_listen.host + ":" +
                            std::to_string(config_.client_listen.port));
}

std::string Replica::status_json() const {
    const raft::NodeStatus st = raw_->status();
    nlohmann::json j;
    j["id"] = config_.node_id;
    j["cluster_id"] = config_.cluster_id;
    j["role"] = role_name(st.soft_state.role);
    j["term"] = st.hard_state.term;
    j["vote"] = st.hard_state.vote;
    j["leader"] = st.soft_state.leader;
    j["commit"] = st.hard_state.commit;
    j["applied"] = applied_index_;
    j["catching_up"] = catching_up();
    j["first_index"] = st.first_index;
    j["last_index"] = st.last_index;
    j["snapshot_index"] = snapshot_index_;
    j["voters"] = st.conf_state.voters;
    j["learners"] = st.conf_state.learners;
    nlohmann::json addresses = nlohmann::json::object();
    for (const auto& [id, address] : st.conf_state.addresses) {
        addresses[std::to_string(id)] = address;
    }
    j["addresses"] = std::move(addresses);
    j["removed"] = removed_;
    nlohmann::json peers = nlohmann::json::array();
    for (const raft::PeerStatus& p : st.peers) {
        peers.push_back({{"id", p.id},
                         {"match", p.match},
                         {"next", p.next},
                         {"state", progress_name(p.state)},
                         {"learner", p.learner},
                         {"lag", st.last_index > p.match ? st.last_index - p.match : 0}});
    }
    j["peers"] = peers;
    j["sessions"] = sm_.session_count();
    j["locks"] = sm_.lock_count();
    j["nodes"] = sm_.node_count();
    j["cluster_time_ms"] = sm_.now_ms();
    j["connections"] = connections_.size();
    j["pending_writes"] = pending_writes_.size();
    j["waiting_acquires"] = waiting_.size();
    j["tracked_sessions"] = tracker_.size();
    j["client_endpoint"] =
        config_.client_listen.host + ":" + std::to_string(config_.client_listen.port);
    j["shutting_down"] = shutting_down_;
    return j.dump();
}

}  // namespace raftlock::server
