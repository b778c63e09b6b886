// Membership: changes one server at a time (Raft thesis §4.1; the core checks and applies them,
// raft/node_membership.cc), the answers to them, and the peer list that follows the configuration.
//
// Addresses travel with the configuration (raft::ConfState::addresses): `member add` records the
// new node's Raft address in the entry, so every node, and every snapshot, knows where each member
// is. The --member flags are only the founding configuration and, for a node started with
// --initial-cluster-state existing, where to find the cluster before its log arrives.

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "raft/conf_change.h"
#include "raft/text.h"
#include "server/replica.h"

namespace raftlock::server {

namespace {

// Leadership transfers waiting for their answer on one node: a bound on what clients can make it
// hold (each is a few words), far above what operators ask for.
constexpr size_t kTransfersWaitingMax = 64;
// Membership changes a follower relays and waits for: the same kind of bound.
constexpr size_t kMemberForwardsMax = 64;

bool is_member(const raft::ConfState& conf, raft::NodeId id) {
    return raft::is_voter(conf, id) || raft::is_learner(conf, id);
}

Result<raft::ConfChange, std::string> to_conf_change(const proto::ChangeMember& request) {
    raft::ConfChange change;
    change.node_id = request.node_id();
    if (change.node_id == raft::kNoNode) {
        return std::string("member change: node_id must be positive");
    }
    switch (request.kind()) {
        case proto::ChangeMember::ADD_VOTER:
            change.type = raft::ConfChangeType::kAddVoter;
            break;
        case proto::ChangeMember::ADD_LEARNER:
            change.type = raft::ConfChangeType::kAddLearner;
            break;
        case proto::ChangeMember::REMOVE:
            change.type = raft::ConfChangeType::kRemoveNode;
            if (!request.address().empty()) {
                return std::string("member change: a removal takes no address");
            }
            return change;
        default:
            return fmt::format("member change: unknown kind {}", static_cast<int>(request.kind()));
    }
    if (!request.address().empty()) {
        const std::optional<Endpoint> endpoint = parse_endpoint(request.address());
        if (!endpoint) {
            return fmt::format("member change: address '{}': expected HOST:PORT of its Raft port",
                               request.address());
        }
        change.address = to_string(*endpoint);
    }
    return change;
}

}  // namespace

void Replica::change_member(net::ConnectionId conn, const proto::Request& request) {
    const ClientRef client{conn, request.request_id()};
    if (is_leader() || soft_.leader == raft::kNoNode) {
        propose_member_change(MemberOrigin{client}, request.change_member());
        return;
    }
    // A follower hands it to the leader and relays the answer (or answers TIMEOUT itself).
    if (member_forwards_.size() >= kMemberForwardsMax) {
        respond_error(client, proto::UNAVAILABLE,
                      fmt::format("{} membership changes already wait for the leader here; retry",
                                  member_forwards_.size()));
        return;
    }
    const uint64_t tag = ++next_tag_;
    proto::PeerFrame frame;
    proto::ForwardMemberChange* forward = frame.mutable_forward_member_change();
    forward->set_tag(tag);
    *forward->mutable_change() = request.change_member();
    // (Recorded before it is sent: the answer may come back at once.)
    member_forwards_.emplace(
        tag, MemberForward{client, clock_.steady_ms() + config_.request_timeout_ms});
    if (!peers_.send(soft_.leader, frame)) {
        // Not sent, so certainly not made: the client may go on to another node at once.
        member_forwards_.erase(tag);
        respond_error(
            client, proto::UNAVAILABLE,
            fmt::format("the leader, node {}, cannot be reached from here; retry", soft_.leader));
    }
}

void Replica::handle_forward_member_change(uint64_t from,
                                           const proto::ForwardMemberChange& forward) {
    RL_ASSERT(from != config_.node_id);
    propose_member_change(MemberOrigin{ClientRef{}, from, forward.tag()}, forward.change());
}

void Replica::handle_forward_member_reply(const proto::ForwardMemberReply& reply) {
    auto it = member_forwards_.find(reply.tag());
    if (it == member_forwards_.end()) {
        return;  // answered TIMEOUT already
    }
    const ClientRef client = it->second.client;
    member_forwards_.erase(it);
    proto::Response response = reply.response();
    respond(client, response);
}

void Replica::answer_member_change(const MemberOrigin& origin, proto::Response& response) {
    if (origin.peer == 0) {
        respond(origin.client, response);
        return;
    }
    proto::PeerFrame frame;
    proto::ForwardMemberReply* reply = frame.mutable_forward_member_reply();
    reply->set_tag(origin.tag);
    *reply->mutable_response() = std::move(response);
    peers_.send(origin.peer, frame);
}

void Replica::member_change_error(const MemberOrigin& origin,
                                  proto::Code code,
                                  std::string message) {
    RL_ASSERT(code != proto::OK);
    proto::Response response;
    response.set_code(code);
    response.set_message(std::move(message));
    answer_member_change(origin, response);
}

void Replica::propose_member_change(const MemberOrigin& origin,
                                    const proto::ChangeMember& request) {
    Result<raft::ConfChange, std::string> change = to_conf_change(request);
    if (!change.ok()) {
        member_change_error(origin, proto::BAD_ARGUMENTS, change.error());
        return;
    }
    if (!is_leader()) {
        // UNAVAILABLE makes the client try the next node.
        member_change_error(origin, proto::UNAVAILABLE,
                            soft_.leader == raft::kNoNode
                                ? "no leader is known to take the membership change; retry"
                                : fmt::format("node {} is not the leader (node {} is)",
                                              config_.node_id, soft_.leader));
        return;
    }
    const raft::ConfState& conf = raw_->conf_state();
    if (change->type != raft::ConfChangeType::kRemoveNode && change->address.empty() &&
        !is_member(conf, change->node_id)) {
        member_change_error(origin, proto::BAD_ARGUMENTS,
                            fmt::format("node {} is new: its address (HOST:PORT of its Raft "
                                        "port) is needed",
                                        change->node_id));
        return;
    }
    // Checked here too, so a change that makes no sense is told so even while the core would
    // refuse any change for now.
    if (auto next = raft::apply_conf_change(conf, *change); !next.ok()) {
        member_change_error(origin, proto::BAD_ARGUMENTS,
                            fmt::format("node {}: {}", change->node_id, next.error().message));
        return;
    }
    if (member_change_) {
        member_change_error(origin, proto::CHANGE_IN_PROGRESS, {});
        return;
    }
    const raft::Status status = raw_->propose_conf_change(*change);
    if (!status.ok()) {
        const bool busy = status.code() == raft::ErrorCode::kConfChangeRejected;
        const bool dropped = status.code() == raft::ErrorCode::kProposalDropped;
        member_change_error(origin,
                            busy      ? proto::CHANGE_IN_PROGRESS
                            : dropped ? proto::UNAVAILABLE
                                      : proto::BAD_ARGUMENTS,
                            status.message());
        return;
    }
    member_change_ = PendingMemberChange{origin, raw_->last_index(), raw_->term(),
                                         clock_.steady_ms() + config_.request_timeout_ms};
    spdlog::info("membership change proposed at index {}: {} node {}{}{}", member_change_->index,
                 request.kind() == proto::ChangeMember::REMOVE     ? "remove"
                 : change->type == raft::ConfChangeType::kAddVoter ? "voter"
                                                                   : "learner",
                 change->node_id, change->address.empty() ? "" : " at " + change->address,
                 origin.peer == 0 ? "" : fmt::format(" (forwarded by node {})", origin.peer));
    schedule_flush();
}

void Replica::transfer_leadership(net::ConnectionId conn, const proto::Request& request) {
    const ClientRef client{conn, request.request_id()};
    const raft::NodeId to = request.transfer_leadership().node_id();
    const raft::ConfState& conf = raw_->conf_state();
    if (!raft::is_voter(conf, to)) {
        respond_error(client, proto::BAD_ARGUMENTS,
                      fmt::format("node {} is not a voter, so it cannot lead (members: {})", to,
                                  raft::to_string(conf)));
        return;
    }
    if (soft_.leader == to) {
        respond_error(client, proto::OK);  // (leader_hint says who leads)
        return;
    }
    if (soft_.leader == raft::kNoNode) {
        respond_error(client, proto::UNAVAILABLE, "no leader is known to hand leadership over");
        return;
    }
    if (transfers_.size() >= kTransfersWaitingMax) {
        respond_error(client, proto::UNAVAILABLE,
                      fmt::format("{} leadership transfers already wait on this node; retry",
                                  transfers_.size()));
        return;
    }
    RL_ASSERT(to != raft::kNoNode && to != soft_.leader);
    // The leader gives an attempt up after an election timeout (and takes proposals again); the
    // second one is for the request to reach it and the news of a new leader to come back.
    const int64_t wait_ms =
        std::min<int64_t>(2 * int64_t{config_.election_timeout_ms}, config_.request_timeout_ms);
    transfers_.push_back(PendingTransfer{client, to, clock_.steady_ms() + wait_ms});
    spdlog::info("leadership transfer to node {} asked (node {} leads)", to, soft_.leader);
    raw_->transfer_leadership(to);
    schedule_flush();
}

void Replica::settle_transfers(int64_t now_ms) {
    std::erase_if(transfers_, [&](const PendingTransfer& t) {
        if (soft_.leader == t.to) {
            respond_error(t.client, proto::OK);
            return true;
        }
        if (t.deadline_ms <= now_ms) {
            respond_error(t.client, proto::TIMEOUT,
                          fmt::format("node {} did not take leadership in time (behind, or "
                                      "unreachable?); {}",
                                      t.to,
                                      soft_.leader == raft::kNoNode
                                          ? std::string("no leader is known now")
                                          : fmt::format("node {} leads", soft_.leader)));
            return true;
        }
        return false;
    });
    RL_ASSERT(transfers_.size() <= kTransfersWaitingMax);
}

// Called for every applied configuration entry, in log order.
void Replica::on_conf_applied(const raft::Entry& entry, const raft::ConfState& conf) {
    const bool was_member = is_member(applied_conf_, config_.node_id);
    applied_conf_ = conf;
    if (entry.index > replayed_through_) {
        spdlog::info("configuration at index {}: {}", entry.index, raft::to_string(conf));
    }
    settle_member_change(entry, &conf);
    if (was_member && !is_member(conf, config_.node_id) && !removed_) {
        spdlog::warn("node {} was removed from the cluster (index {}): shutting down",
                     config_.node_id, entry.index);
        removed_ = true;
        shut_down();
    }
}

// The pending change's entry is applied (or another entry took its index): answer it.
void Replica::settle_member_change(const raft::Entry& entry, const raft::ConfState* conf) {
    if (!member_change_ || entry.index != member_change_->index) {
        return;
    }
    const PendingMemberChange pending = *member_change_;
    member_change_.reset();
    if (entry.term != pending.term || conf == nullptr) {
        member_change_error(pending.origin, proto::UNAVAILABLE,
                            "the membership change was lost in a leader change; nothing was done");
        return;
    }
    proto::Response response;
    response.set_code(proto::OK);
    fill_members(*conf, *response.mutable_members());
    answer_member_change(pending.origin, response);
}

void Replica::expire_member_change(int64_t now_ms) {
    static constexpr const char* kMayStillBe =
        "the membership change was not committed in time; it may still be: `raftlock member "
        "list` tells";
    if (member_change_ && member_change_->deadline_ms <= now_ms) {
        member_change_error(member_change_->origin, proto::TIMEOUT, kMayStillBe);
        member_change_.reset();
    }
    // A follower's: the leader's answer did not come (lost with the leader, or the leader's own
    // deadline is about to answer it: the client hears the same either way).
    for (auto it = member_forwards_.begin(); it != member_forwards_.end();) {
        if (it->second.deadline_ms > now_ms) {
            ++it;
            continue;
        }
        respond_error(it->second.client, proto::TIMEOUT, kMayStillBe);
        it = member_forwards_.erase(it);
    }
}

void Replica::fill_members(const raft::ConfState& conf, proto::MembersResult& out) const {
    std::vector<std::pair<raft::NodeId, bool>> members;
    for (raft::NodeId id : conf.voters) {
        members.emplace_back(id, false);
    }
    for (raft::NodeId id : conf.learners) {
        members.emplace_back(id, true);
    }
    std::sort(members.begin(), members.end());
    for (const auto& [id, learner] : members) {
        proto::Member* m = out.add_members();
        m->set_id(id);
        m->set_learner(learner);
        if (auto it = conf.addresses.find(id); it != conf.addresses.end()) {
            m->set_address(it->second);
        } else {
            for (const Member& founding : config_.members) {
                if (founding.id == id) {
                    m->set_address(to_string(founding.raft));
                }
            }
        }
    }
}

void Replica::on_removed_by_peer(uint64_t peer) {
    if (removed_) {
        return;
    }
    // The peer retires a node only once it has applied the node's removal: it is committed, even
    // if this node never heard so (a leader stops replicating to a node as soon as it appends
    // the node's removal).
    spdlog::warn("node {} says node {} was removed from the cluster: shutting down", peer,
                 config_.node_id);
    removed_ = true;
    shut_down();
}

// The transport talks to the members of the active configuration (the latest, committed or not,
// as the core uses it) and of the applied one: a member whose removal is not committed yet still
// takes part (a removed leader must hear the acks that commit its removal). Before this node has
// any configuration, to the --member list.
void Replica::refresh_peers() {
    // Called for every Ready: the common case (nothing changed) compares, copies nothing.
    const raft::ConfState& latest = raw_->conf_state();
    if (peers_source_ && peers_source_->first == latest && peers_source_->second == applied_conf_) {
        return;
    }
    peers_source_.emplace(latest, applied_conf_);
    raft::ConfState conf = latest;
    for (raft::NodeId id : applied_conf_.voters) {
        if (!is_member(conf, id)) {
            conf.learners.push_back(id);  // only the union of members matters here
        }
    }
    for (raft::NodeId id : applied_conf_.learners) {
        if (!is_member(conf, id)) {
            conf.learners.push_back(id);
        }
    }
    std::sort(conf.learners.begin(), conf.learners.end());
    conf.addresses.insert(applied_conf_.addresses.begin(), applied_conf_.addresses.end());
    std::map<uint64_t, Endpoint> directory;
    for (const Member& m : config_.members) {
        if (conf.empty() || is_member(conf, m.id)) {
            directory[m.id] = m.raft;
        }
    }
    for (const auto& [id, address] : conf.addresses) {
        // The leader checked it; a peer's data is still not trusted blindly.
        if (const std::optional<Endpoint> endpoint = parse_endpoint(address)) {
            directory[id] = *endpoint;
        } else {
            spdlog::warn("member {} has a malformed address in the configuration: '{}'", id,
                         address);
        }
    }
    std::vector<net::PeerAddress> peers;
    for (const auto& [id, endpoint] : directory) {
        if (id != config_.node_id) {
            peers.push_back(net::PeerAddress{id, endpoint.host, endpoint.port});
        }
    }
    for (raft::NodeId id : latest.voters) {
        if (id != config_.node_id && directory.count(id) == 0) {
            spdlog::warn("member {} has no known address: give it with --member {}=HOST:PORT", id,
                         id);
        }
    }
    peers_.set_peers(peers);
}

}  // namespace raftlock::server
