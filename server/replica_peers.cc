// Frames between nodes: Raft messages, and the writes and keepalives followers relay to the leader.

#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "net/raft_codec.h"
#include "server/negative_controls.h"
#include "server/replica.h"
#include "statemachine/codec.h"

namespace raftlock::server {

namespace sm = statemachine;

void Replica::on_peer_frame(uint64_t from, proto::PeerFrame&& frame) {
    switch (frame.body_case()) {
        case proto::PeerFrame::kRaft:
            step_peer_message(from, frame.raft());
            break;
        case proto::PeerFrame::kForwardWrite:
            handle_forward_write(from, frame.forward_write());
            break;
        case proto::PeerFrame::kForwardKeepAlive:
            handle_forward_keepalive(from, frame.forward_keep_alive());
            break;
        case proto::PeerFrame::kForwardReply:
            handle_forward_reply(frame.forward_reply());
            break;
        case proto::PeerFrame::kForwardMemberChange:
            handle_forward_member_change(from, frame.forward_member_change());
            break;
        case proto::PeerFrame::kForwardMemberReply:
            handle_forward_member_reply(frame.forward_member_reply());
            break;
        default:
            drop_peer_message(from, raft::MessageFault::kMalformed,
                              fmt::format("unexpected peer frame (body case {})",
                                          static_cast<int>(frame.body_case())));
            return;
    }
    schedule_flush();
}

// Every check runs before the message reaches the core's state, and the core checks again against
// its own (raft/peer_input.h): even an authenticated peer cannot push a term past its bound, and
// so cannot wrap it (issue 16: one such heartbeat bricked the cluster).
void Replica::step_peer_message(uint64_t from, const proto::RaftMessage& raw) {
    Result<raft::Message, net::DecodeError> message =
        net::decode_raft_message(raw, peer_input_limits_);
    if (!message.ok()) {
        drop_peer_message(from, message.error().fault, message.error().reason);
        return;
    }
    if (message->from != from) {
        // The transport proved the link's peer in its Hello; the message must agree.
        drop_peer_message(from, raft::MessageFault::kMisaddressed,
                          fmt::format("claims to be from node {}", message->from));
        return;
    }
    const raft::MessageCheck check = raw_->step(std::move(message).value());
    if (!check.ok()) {
        drop_peer_message(from, check.fault, check.reason);
    }
}

void Replica::drop_peer_message(uint64_t from,
                                raft::MessageFault fault,
                                const std::string& reason) {
    RL_ASSERT(fault != raft::MessageFault::kNone);
    RL_ASSERT(fault != raft::MessageFault::kCount);
    ++metrics_.peer_messages_dropped[static_cast<size_t>(fault)];
    // The key and the decision ignore the values in `reason`, which a broken peer varies at will.
    uint64_t suppressed = 0;
    const std::string key = fmt::format("{}/{}", from, raft::to_string(fault));
    const net::LogLimiter::Clock::time_point now{std::chrono::milliseconds(clock_.steady_ms())};
    if (!peer_input_log_.allow(key, key, now, suppressed)) {
        return;
    }
    spdlog::warn("dropped a Raft message from node {} ({}): {}{}", from, raft::to_string(fault),
                 reason,
                 suppressed > 0 ? fmt::format(" ({} more like it held back)", suppressed) : "");
}

void Replica::send_forward_reply(uint64_t to, uint64_t tag, proto::ForwardStatus status) {
    proto::PeerFrame frame;
    frame.mutable_forward_reply()->set_tag(tag);
    frame.mutable_forward_reply()->set_status(status);
    frame.mutable_forward_reply()->set_leader(soft_.leader);
    peers_.send(to, frame);
}

void Replica::handle_forward_write(uint64_t from, const proto::ForwardWrite& forward) {
    if (!is_leader()) {
        send_forward_reply(from, forward.tag(), proto::FORWARD_NOT_LEADER);
        return;
    }
    Result<sm::Command, sm::ErrorCode> command = sm::decode_command(forward.command());
    if (!command.ok()) {
        send_forward_reply(from, forward.tag(), proto::FORWARD_BAD_COMMAND);
        return;
    }
    // A session's expiry, a term's first entry and a root password's bootstrap are the leader's
    // own to propose (its session tracker, its election, its start): a follower forwards only what
    // its clients asked for. A peer that forwards one is broken or hostile (issue 18's report: a
    // forged ExpireSession ended a lock holder's session on another node's say-so).
    const sm::Op& op = command.value().op;
    if (sm::leader_only(op)) {
        ++metrics_.forwarded_internal_refused_total;
        uint64_t suppressed = 0;
        const std::string key = fmt::format("{}/forwarded-internal", from);
        const net::LogLimiter::Clock::time_point now{std::chrono::milliseconds(clock_.steady_ms())};
        if (peer_input_log_.allow(key, key, now, suppressed)) {
            spdlog::warn("refused a forwarded {} from node {}: only the leader proposes it{}",
                         sm::op_name(op), from,
                         suppressed > 0 ? fmt::format(" ({} more held back)", suppressed) : "");
        }
        send_forward_reply(from, forward.tag(), proto::FORWARD_BAD_COMMAND);
        return;
    }
    if (!propose_command(std::move(command).value())) {
        send_forward_reply(from, forward.tag(), proto::FORWARD_DROPPED);
        return;
    }
#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
    if (negative_controls::on(negative_controls::Control::kForwardAnsweredEarly)) {
        send_forward_reply(from, forward.tag(), proto::FORWARD_OK);
    }
#endif
}

void Replica::handle_forward_keepalive(uint64_t from, const proto::ForwardKeepAlive& forward) {
    if (!is_leader()) {
        send_forward_reply(from, forward.tag(), proto::FORWARD_NOT_LEADER);
        return;
    }
    ForwardedKeepAlive f{from, forward.tag(), {}, {}};
    const int64_t now_ms = clock_.steady_ms();
    for (uint64_t session : forward.sessions()) {
        if (tracker_.touch(session, now_ms) == SessionTracker::Touch::kExpiring) {
            f.expiring.push_back(session);
        } else {
            f.sessions.push_back(session);
        }
    }
    next_batch_.forwarded.push_back(std::move(f));
}

void Replica::handle_forward_reply(const proto::ForwardReply& reply) {
    if (auto ka = keepalive_forwards_.find(reply.tag()); ka != keepalive_forwards_.end()) {
        KeepAliveForward waiting = std::move(ka->second);
        keepalive_forwards_.erase(ka);
        const std::set<uint64_t> expired(reply.expired_sessions().begin(),
                                         reply.expired_sessions().end());
        for (const auto& [client, session] : waiting.clients) {
            if (reply.status() != proto::FORWARD_OK) {
                respond_error(client, proto::UNAVAILABLE,
                              "the leader changed; retry the keepalive");
            } else {
                respond_error(client, expired.count(session) ? proto::SESSION_EXPIRED : proto::OK);
            }
        }
        return;
    }
    auto tag = forward_tags_.find(reply.tag());
    if (tag == forward_tags_.end()) {
        return;
    }
    const WriteKey key = tag->second;
    auto pending = pending_writes_.find(key);
    RL_ASSERT(pending != pending_writes_.end());
    switch (reply.status()) {
#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
        case proto::FORWARD_OK:
            if (negative_controls::on(negative_controls::Control::kForwardAnsweredEarly) &&
                std::holds_alternative<sm::SetData>(pending->second.command.op)) {
                const ClientRef client{pending->second.conn, pending->second.request_id};
                forward_tags_.erase(tag);
                pending_writes_.erase(pending);
                respond_error(client, proto::OK);
            }
            return;
#endif
        case proto::FORWARD_NOT_LEADER:
        case proto::FORWARD_DROPPED:
            // This copy was not proposed. Our idea of the leader is stale (the next leader change
            // resubmits the write), or the leader refused it while an earlier copy may commit
            // (route_write): either way the write waits for its fate.
            if (reply.status() == proto::FORWARD_NOT_LEADER || pending->second.maybe_proposed) {
                forward_tags_.erase(tag);
                pending->second.forward_tag = 0;
                return;
            }
            [[fallthrough]];
        case proto::FORWARD_BAD_COMMAND:
        default: {
            const ClientRef client{pending->second.conn, pending->second.request_id};
            forward_tags_.erase(tag);
            pending_writes_.erase(pending);
            respond_error(client, reply.status() == proto::FORWARD_DROPPED ? proto::UNAVAILABLE
                                                                           : proto::BAD_ARGUMENTS);
            return;
        }
    }
}

void Replica::flush_keepalive_forwards() {
    if (next_keepalive_forward_.empty()) {
        return;
    }
    std::vector<std::pair<ClientRef, uint64_t>> clients = std::move(next_keepalive_forward_);
    next_keepalive_forward_.clear();
    if (is_leader() || soft_.leader == raft::kNoNode) {
        for (const auto& [client, session] : clients) {
            respond_error(client, proto::UNAVAILABLE, "the leader changed; retry the keepalive");
        }
        return;
    }
    proto::PeerFrame frame;
    const uint64_t tag = ++next_tag_;
    frame.mutable_forward_keep_alive()->set_tag(tag);
    std::set<uint64_t> sessions;
    for (const auto& [client, session] : clients) {
        if (sessions.insert(session).second) {
            frame.mutable_forward_keep_alive()->add_sessions(session);
        }
    }
    keepalive_forwards_[tag] =
        KeepAliveForward{std::move(clients), clock_.steady_ms() + config_.request_timeout_ms};
    peers_.send(soft_.leader, frame);
}

// A forwarded write lost with the link would otherwise wait for its request timeout. Sending it
// again is harmless: exactly-once answers a second copy with the first one's result (an
// OpenSession's copy opens a second session nobody holds, which expires). The copy waits in the
// transport's queue until the link is back.
void Replica::on_peer_link_lost(uint64_t peer) {
    if (peer != soft_.leader || is_leader()) {
        return;
    }
    metrics_.forwards_resent_total += route_pending_writes(/*forwarded_only=*/true);
    schedule_flush();
}

// Routes the pending writes again (route_write), or only those forwarded to a leader; returns how
// many. route_write erases a write the leader refuses, so this walks a copy of the keys.
size_t Replica::route_pending_writes(bool forwarded_only) {
    std::vector<WriteKey> keys;
    keys.reserve(pending_writes_.size());
    for (const auto& [key, pending] : pending_writes_) {
        if (!forwarded_only || pending.forward_tag != 0) {
            keys.push_back(key);
        }
    }
    for (const WriteKey& key : keys) {
        if (auto it = pending_writes_.find(key); it != pending_writes_.end()) {
            route_write(key, it->second);
        }
    }
    return keys.size();
}

// Writes and reads that the old leader may have dropped go to the new one. Exactly-once makes a
// second copy of a write harmless: the state machine answers it with the first one's result.
void Replica::refuse_keepalives(ReadBatch& batch) {
    for (const auto& [client, session] : batch.keepalives) {
        respond_error(client, proto::UNAVAILABLE, "the leader changed; retry the keepalive");
    }
    batch.keepalives.clear();
    for (const ForwardedKeepAlive& f : batch.forwarded) {
        send_forward_reply(f.from, f.tag, proto::FORWARD_NOT_LEADER);
    }
    batch.forwarded.clear();
}

void Replica::resubmit_after_leader_change() {
    if (soft_.leader == raft::kNoNode) {
        return;
    }
    (void)route_pending_writes(/*forwarded_only=*/false);
    // Reads are asked again of the new leader. Keepalives are not: this node recorded them in
    // its tracker as the leader it no longer is, and the new leader's round would acknowledge
    // them without the new leader having recorded them (the client's safe-until would then
    // outlast the expiry the new leader makes; found by the server simulator).
    for (auto it = reads_in_flight_.begin(); it != reads_in_flight_.end();) {
        refuse_keepalives(it->second);
        if (it->second.empty()) {
            it = reads_in_flight_.erase(it);
            continue;
        }
        it->second.asked_ms = clock_.steady_ms();
        raw_->read_index(read_context(it->first));
        ++it;
    }
    serve_confirmed_reads();  // (what waited for a round that held only keepalives)
    for (auto& [tag, waiting] : keepalive_forwards_) {
        for (const auto& [client, session] : waiting.clients) {
            respond_error(client, proto::UNAVAILABLE, "the leader changed; retry the keepalive");
        }
    }
    keepalive_forwards_.clear();
}

}  // namespace raftlock::server
