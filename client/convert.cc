#include "client/convert.h"

namespace raftlock::client {

namespace {

template <typename Enum>
Enum checked_enum(int value, int max) {
    // Unknown numbers from a newer server map to the first value rather than to garbage.
    return static_cast<Enum>(value >= 0 && value <= max ? value : 0);
}

}  // namespace

proto::NodeKind to_proto(NodeKind kind) {
    return static_cast<proto::NodeKind>(kind);
}

NodeKind from_proto(proto::NodeKind kind) {
    return checked_enum<NodeKind>(kind, static_cast<int>(NodeKind::kTtlSequential));
}

proto::LockMode to_proto(LockMode mode) {
    return static_cast<proto::LockMode>(mode);
}

LockMode from_proto(proto::LockMode mode) {
    return checked_enum<LockMode>(mode, static_cast<int>(LockMode::kSemaphore));
}

EventType from_proto(proto::EventType type) {
    return checked_enum<EventType>(type, static_cast<int>(EventType::kNodeChildrenChanged));
}

Stat from_proto(const proto::Stat& s) {
    return Stat{s.czxid(),   s.mzxid(),    s.pzxid(),           s.ctime_ms(),     s.mtime_ms(),
                s.version(), s.cversion(), s.ephemeral_owner(), s.num_children(), s.data_length()};
}

LockInfo from_proto(const proto::LockInfo& info) {
    LockInfo out;
    out.name = info.name();
    out.semaphore = info.semaphore();
    out.permits = info.permits();
    out.mode = from_proto(info.mode());
    for (const proto::Holder& h : info.holders()) {
        out.holders.push_back(
            LockHolder{h.session(), h.owner_tag(), h.token(), h.since_ms(), h.count()});
    }
    for (const proto::Waiter& w : info.waiters()) {
        out.waiters.push_back(LockWaiter{w.session(),
                                         w.owner_tag(),
                                         from_proto(w.mode()),
                                         w.enqueued_ms(),
                                         w.deadline_ms(),
                                         {w.together().begin(), w.together().end()}});
    }
    out.lock_delay_ms = info.lock_delay_ms();
    out.free_at_ms = info.free_at_ms();
    out.now_ms = info.now_ms();
    return out;
}

SessionInfo from_proto(const proto::SessionInfo& info) {
    return SessionInfo{info.id(),         info.timeout_ms(), info.last_keepalive_ms(),
                       info.ephemerals(), info.locks(),      info.owner()};
}

std::vector<Member> from_proto(const proto::MembersResult& members) {
    std::vector<Member> out;
    for (const proto::Member& m : members.members()) {
        out.push_back(Member{m.id(), m.address(), m.learner()});
    }
    return out;
}

NodeStatus from_proto(const proto::NodeStatusResult& s) {
    NodeStatus out;
    out.id = s.id();
    out.role = s.role();
    out.term = s.term();
    out.leader = s.leader();
    out.commit = s.commit();
    out.applied = s.applied();
    out.last_index = s.last_index();
    out.snapshot_index = s.snapshot_index();
    for (const proto::PeerProgress& p : s.peers()) {
        out.peers.push_back(PeerProgress{p.id(), p.match(), p.next(), p.learner()});
    }
    out.sessions = s.sessions();
    out.locks = s.locks();
    out.nodes = s.nodes();
    out.client_endpoint = s.client_endpoint();
    return out;
}

WatchEvent from_proto(const proto::WatchEvent& event) {
    return WatchEvent{event.path(), from_proto(event.type()), event.zxid()};
}

void fill_fence(const std::optional<Fence>& fence, proto::Request& request) {
    if (!fence) {
        return;
    }
    request.mutable_fence()->set_lock(fence->lock);
    request.mutable_fence()->set_token(fence->token);
}

void fill_multi_op(const MultiOp& op, proto::MultiOp& out) {
    if (const auto* c = std::get_if<CreateOp>(&op)) {
        proto::Create* create = out.mutable_create();
        create->set_path(c->path);
        create->set_data(c->data);
        create->set_kind(to_proto(c->kind));
        create->set_ttl_ms(c->ttl.count());
    } else if (const auto* d = std::get_if<DeleteOp>(&op)) {
        out.mutable_delete_()->set_path(d->path);
        out.mutable_delete_()->set_version(d->version);
    } else if (const auto* s = std::get_if<SetOp>(&op)) {
        out.mutable_set_data()->set_path(s->path);
        out.mutable_set_data()->set_data(s->data);
        out.mutable_set_data()->set_version(s->version);
    } else if (const auto* k = std::get_if<CheckOp>(&op)) {
        out.mutable_check()->set_path(k->path);
        out.mutable_check()->set_version(k->version);
    }
}

}  // namespace raftlock::client
