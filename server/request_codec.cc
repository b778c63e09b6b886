#include "server/request_codec.h"

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/codec.h"
#include "statemachine/text.h"

namespace raftlock::server {

namespace sm = statemachine;

RequestKind kind_of(const proto::Request& request) {
    using B = proto::Request::BodyCase;
    switch (request.body_case()) {
        case B::kOpenSession:
        case B::kCloseSession:
        case B::kAttachSession:
        case B::kCreate:
        case B::kDelete:
        case B::kSetData:
        case B::kMulti:
        case B::kSetAcl:
        case B::kAcquire:
        case B::kAcquireMany:
        case B::kRelease:
        case B::kCancel:
        case B::kForceRelease:
        case B::kUserChange:
        case B::kRoleChange:
        case B::kAuthEnable:
            return RequestKind::kWrite;
        case B::kGet:
        case B::kExists:
        case B::kChildren:
        case B::kDescribeLock:
        case B::kListLocks:
        case B::kListSessions:
        case B::kRestoreWatches:
        case B::kCountDescendants:
        case B::kListEphemerals:
        case B::kGetAcl:
        case B::kListMembers:
        case B::kGetUser:
        case B::kListUsers:
        case B::kGetRole:
        case B::kListRoles:
            return RequestKind::kRead;
        case B::kChangeMember:
        case B::kTransferLeadership:
            return RequestKind::kMembership;
        case B::kKeepAlive:
            return RequestKind::kKeepAlive;
        case B::kAddWatch:
        case B::kRemoveWatch:
        case B::kNodeStatus:
        case B::kAuthStatus:
            return RequestKind::kLocal;
        case B::kAuthenticate:
            return RequestKind::kAuthenticate;
        case B::BODY_NOT_SET:
            break;
    }
    return RequestKind::kInvalid;
}

namespace {

// Protobuf enums arrive as any int; only known values are accepted.
bool node_kind(proto::NodeKind in, sm::NodeKind& out) {
    if (in < 0 || in > static_cast<int>(sm::kNodeKindMax)) {
        return false;
    }
    out = static_cast<sm::NodeKind>(in);
    return true;
}

bool lock_mode(proto::LockMode in, sm::LockMode& out) {
    if (in < 0 || in > static_cast<int>(sm::kLockModeMax)) {
        return false;
    }
    out = static_cast<sm::LockMode>(in);
    return true;
}

// Permissions beyond ZooKeeper's five bits are refused (INVALID_ACL via validate_command).
sm::Acl to_acl(const google::protobuf::RepeatedPtrField<proto::AclEntry>& in) {
    sm::Acl out;
    out.reserve(static_cast<size_t>(in.size()));
    for (const proto::AclEntry& e : in) {
        const auto perms = static_cast<uint8_t>(std::min<uint32_t>(e.perms(), 0xff));
        out.push_back(sm::AclEntry{perms, sm::AclId{e.id().scheme(), e.id().id()}});
    }
    return out;
}

Result<sm::Create, std::string> to_create(const proto::Create& in) {
    sm::Create c{in.path(), in.data(), sm::NodeKind::kPersistent, in.ttl_ms(), to_acl(in.acl())};
    if (!node_kind(in.kind(), c.kind)) {
        return std::string("create: unknown node kind");
    }
    return c;
}

Result<sm::MultiOp, std::string> to_multi_op(const proto::MultiOp& op) {
    switch (op.op_case()) {
        case proto::MultiOp::kCreate: {
            Result<sm::Create, std::string> c = to_create(op.create());
            if (!c.ok()) {
                return "multi: " + c.error();
            }
            return sm::MultiOp{std::move(c).value()};
        }
        case proto::MultiOp::kDelete:
            return sm::MultiOp{sm::Delete{op.delete_().path(), op.delete_().version()}};
        case proto::MultiOp::kSetData:
            return sm::MultiOp{
                sm::SetData{op.set_data().path(), op.set_data().data(), op.set_data().version()}};
        case proto::MultiOp::kCheck:
            return sm::MultiOp{sm::Check{op.check().path(), op.check().version()}};
        case proto::MultiOp::OP_NOT_SET:
            break;
    }
    return std::string("multi: a sub-operation has no op set");
}

sm::Credentials to_credentials(const proto::Credentials& in) {
    return sm::Credentials{in.salt(), in.iterations(), in.stored_key(), in.server_key()};
}

// Out-of-range enums become 0, which no valid op has (validate_command refuses it).
template <typename Out>
Out checked_enum(int in, uint8_t max) {
    return static_cast<Out>(in >= 1 && in <= max ? in : 0);
}

Result<sm::Op, std::string> to_op(const proto::Request& r) {
    using B = proto::Request::BodyCase;
    switch (r.body_case()) {
        case B::kOpenSession:
            return sm::Op{sm::OpenSession{r.open_session().timeout_ms()}};
        case B::kCloseSession:
            return sm::Op{sm::CloseSession{}};
        case B::kCreate: {
            Result<sm::Create, std::string> c = to_create(r.create());
            if (!c.ok()) {
                return c.error();
            }
            return sm::Op{std::move(c).value()};
        }
        case B::kSetAcl:
            return sm::Op{
                sm::SetAcl{r.set_acl().path(), to_acl(r.set_acl().acl()), r.set_acl().version()}};
        case B::kDelete:
            return sm::Op{sm::Delete{r.delete_().path(), r.delete_().version()}};
        case B::kSetData:
            return sm::Op{
                sm::SetData{r.set_data().path(), r.set_data().data(), r.set_data().version()}};
        case B::kMulti: {
            sm::Multi m;
            for (const proto::MultiOp& op : r.multi().ops()) {
                Result<sm::MultiOp, std::string> sub = to_multi_op(op);
                if (!sub.ok()) {
                    return sub.error();
                }
                m.ops.push_back(std::move(sub).value());
            }
            return sm::Op{std::move(m)};
        }
        case B::kAcquire: {
            const proto::Acquire& a = r.acquire();
            sm::Acquire op{a.name(),
                           a.owner_tag(),
                           sm::LockMode::kExclusive,
                           a.permits() == 0 ? 1 : a.permits(),
                           a.wait_ms(),
                           a.lock_delay_ms()};
            if (!lock_mode(a.mode(), op.mode)) {
                return std::string("acquire: unknown lock mode");
            }
            return sm::Op{std::move(op)};
        }
        case B::kAcquireMany: {
            const proto::AcquireMany& a = r.acquire_many();
            sm::AcquireMany op;
            for (const proto::AcquireMany::Lock& lock : a.locks()) {
                sm::LockSpec spec{lock.name(), sm::LockMode::kExclusive,
                                  lock.permits() == 0 ? 1 : lock.permits()};
                if (!lock_mode(lock.mode(), spec.mode)) {
                    return std::string("acquire_many: unknown lock mode");
                }
                op.locks.push_back(std::move(spec));
            }
            op.owner_tag = a.owner_tag();
            op.wait_ms = a.wait_ms();
            op.lock_delay_ms = a.lock_delay_ms();
            return sm::Op{std::move(op)};
        }
        case B::kRelease:
            return sm::Op{
                sm::Release{r.release().name(), r.release().owner_tag(), r.release().token()}};
        case B::kCancel:
            return sm::Op{sm::Cancel{r.cancel().name(), r.cancel().owner_tag()}};
        case B::kForceRelease: {
            const proto::ForceRelease& f = r.force_release();
            return sm::Op{sm::ForceRelease{f.name(), f.session(), f.token()}};
        }
        case B::kUserChange: {
            const proto::UserChange& u = r.user_change();
            return sm::Op{
                sm::UserChange{checked_enum<sm::UserAction>(u.action(), sm::kUserActionMax),
                               u.name(), to_credentials(u.credentials()), u.role()}};
        }
        case B::kRoleChange: {
            const proto::RoleChange& c = r.role_change();
            sm::RoleChange op{
                checked_enum<sm::RoleAction>(c.action(), sm::kRoleActionMax), c.name(), {}};
            if (c.has_permission()) {  // a grant's or a revoke's (validate_command checks which)
                op.permission = sm::Permission{
                    checked_enum<sm::Access>(c.permission().access(), sm::kAccessMax),
                    checked_enum<sm::Space>(c.permission().space(), sm::kSpaceMax),
                    c.permission().prefix()};
            }
            return sm::Op{std::move(op)};
        }
        case B::kAuthEnable:
            return sm::Op{sm::AuthEnable{r.auth_enable().enabled()}};
        default:
            break;
    }
    return std::string("not a write request");
}

}  // namespace

sm::Caller to_caller(const proto::Caller& in) {
    sm::Caller out;
    out.reserve(static_cast<size_t>(in.ids_size()));
    for (const proto::AclId& id : in.ids()) {
        out.push_back(sm::AclId{id.scheme(), id.id()});
    }
    return out;
}

void to_proto(const sm::Acl& acl, google::protobuf::RepeatedPtrField<proto::AclEntry>& out) {
    for (const sm::AclEntry& e : acl) {
        proto::AclEntry* p = out.Add();
        p->set_perms(e.perms);
        p->mutable_id()->set_scheme(e.id.scheme);
        p->mutable_id()->set_id(e.id.id);
    }
}

Result<sm::Command, std::string> to_command(const proto::Request& request, uint64_t open_nonce) {
    Result<sm::Op, std::string> op = to_op(request);
    if (!op.ok()) {
        return op.error();
    }
    sm::Command c;
    c.op = std::move(op).value();
    if (sm::carries_nonce(c.op)) {
        c.seq = open_nonce;  // session-less: the reply finds its request by this nonce
    } else {
        if (request.session_id() == 0 || request.seq() == 0 || request.ack_seq() >= request.seq()) {
            return std::string(
                "a session write needs session_id, seq > 0 and ack_seq < seq (exactly-once)");
        }
        c.client_id = request.session_id();
        c.seq = request.seq();
        c.ack_seq = request.ack_seq();
        if (request.has_fence()) {
            c.fence = sm::Fence{request.fence().lock(), request.fence().token()};
        }
        if (request.has_caller()) {
            c.caller = to_caller(request.caller());
        }
    }
    if (sm::validate_command(c) != sm::ErrorCode::kOk) {
        return fmt::format("invalid arguments: {}", sm::to_string(c));
    }
    return c;
}

std::optional<std::string> attach_request_error(const proto::Request& request) {
    RL_ASSERT(request.has_attach_session());
    if (request.session_id() == 0 || request.seq() != 0 || request.ack_seq() != 0 ||
        request.has_fence()) {
        return "attach_session needs session_id, and no seq, ack_seq or fence";
    }
    return std::nullopt;
}

proto::Code to_proto(sm::ErrorCode code) {
    // The numbers are the same by construction (client.proto); checked in request_codec_test.
    return static_cast<proto::Code>(static_cast<int>(code));
}

void to_proto(const sm::Stat& s, proto::Stat& out) {
    out.set_czxid(s.czxid);
    out.set_mzxid(s.mzxid);
    out.set_pzxid(s.pzxid);
    out.set_ctime_ms(s.ctime);
    out.set_mtime_ms(s.mtime);
    out.set_version(s.version);
    out.set_cversion(s.cversion);
    out.set_ephemeral_owner(s.ephemeral_owner);
    out.set_num_children(s.num_children);
    out.set_data_length(s.data_length);
    out.set_aversion(s.aversion);
}

void to_proto(const sm::LockInfo& info, proto::LockInfo& out) {
    out.set_name(info.name);
    out.set_semaphore(info.semaphore);
    out.set_permits(info.permits);
    out.set_mode(static_cast<proto::LockMode>(info.mode));
    for (const sm::HolderInfo& h : info.holders) {
        proto::Holder* p = out.add_holders();
        p->set_session(h.session);
        p->set_owner_tag(h.owner_tag);
        p->set_token(h.token);
        p->set_since_ms(h.since_ms);
        p->set_count(h.count);
    }
    for (const sm::WaiterInfo& w : info.waiters) {
        proto::Waiter* p = out.add_waiters();
        p->set_session(w.session);
        p->set_owner_tag(w.owner_tag);
        p->set_mode(static_cast<proto::LockMode>(w.mode));
        p->set_enqueued_ms(w.enqueued_ms);
        p->set_deadline_ms(w.deadline_ms);
        for (const std::string& other : w.together) {
            p->add_together(other);
        }
    }
    out.set_lock_delay_ms(info.lock_delay_ms);
    out.set_free_at_ms(info.free_at_ms);
}

void to_proto(const sm::SessionInfo& info, proto::SessionInfo& out) {
    out.set_id(info.id);
    out.set_timeout_ms(info.timeout_ms);
    out.set_last_keepalive_ms(info.last_keepalive_ms);
    out.set_ephemerals(info.ephemerals);
    out.set_locks(info.locks);
    out.set_owner(info.owner);
}

void to_proto(const sm::Permission& p, proto::Permission& out) {
    out.set_access(static_cast<proto::Access>(p.access));
    out.set_space(static_cast<proto::Space>(p.space));
    out.set_prefix(p.prefix);
}

void fill_write_response(const sm::Command& command,
                         const sm::Response& response,
                         proto::Response& out) {
    out.set_code(to_proto(response.code));
    if (!response.message.empty()) {
        out.set_message(response.message);
    }
    if (response.code != sm::ErrorCode::kOk && response.results.empty()) {
        return;
    }
    if (const auto* open = std::get_if<sm::OpenSession>(&command.op)) {
        out.mutable_open_session()->set_session_id(response.session);
        out.mutable_open_session()->set_timeout_ms(open->timeout_ms);
    } else if (const auto* attach = std::get_if<sm::AttachSession>(&command.op)) {
        out.mutable_attach_session()->set_first_seq(attach->first_seq);  // timeout: the Replica
    } else if (std::holds_alternative<sm::Create>(command.op) ||
               std::holds_alternative<sm::SetData>(command.op) ||
               std::holds_alternative<sm::SetAcl>(command.op)) {
        out.mutable_node()->set_path(response.path);
        to_proto(response.stat, *out.mutable_node()->mutable_stat());
    } else if (std::holds_alternative<sm::Multi>(command.op)) {
        for (const sm::SubResult& sub : response.results) {
            proto::SubResult* p = out.mutable_multi()->add_results();
            p->set_code(to_proto(sub.code));
            p->set_path(sub.path);
            to_proto(sub.stat, *p->mutable_stat());
        }
    } else if (std::holds_alternative<sm::Acquire>(command.op) ||
               std::holds_alternative<sm::AcquireMany>(command.op) ||
               std::holds_alternative<sm::Release>(command.op) ||
               std::holds_alternative<sm::ForceRelease>(command.op) ||
               std::holds_alternative<sm::Cancel>(command.op)) {
        out.mutable_lock()->set_outcome(static_cast<proto::LockOutcome>(response.lock));
        out.mutable_lock()->set_token(response.token);
        out.mutable_lock()->set_hold_count(response.hold_count);
    }
}

std::string describe(proto::Code code) {
    switch (code) {
        case proto::OK:
            return "";
        case proto::NO_NODE:
            return "no such node";
        case proto::NODE_EXISTS:
            return "the node already exists";
        case proto::NOT_EMPTY:
            return "the node has children";
        case proto::BAD_VERSION:
            return "the node's version is not the expected one";
        case proto::NO_CHILDREN_FOR_EPHEMERALS:
            return "ephemeral nodes cannot have children";
        case proto::BAD_ARGUMENTS:
            return "invalid arguments";
        case proto::SESSION_EXPIRED:
            return "the session has expired or was closed: open a new one";
        case proto::MALFORMED_COMMAND:
            return "malformed command";
        case proto::RESULT_DISCARDED:
            return "the saved result of this retried request was already discarded";
        case proto::LOCK_BUSY:
            return "the lock is held by someone else";
        case proto::NOT_LOCK_HOLDER:
            return "this session and token do not hold the lock";
        case proto::FENCE_REJECTED:
            return "the fencing token is not the lock's current holder's";
        case proto::LIMIT_EXCEEDED:
            return "a limit was exceeded";
        case proto::ALREADY_WAITING:
            return "this session and owner tag already wait for the lock";
        case proto::ROLLED_BACK:
            return "rolled back because another operation of the multi failed";
        case proto::NO_AUTH:
            return "the node's ACL does not grant this permission";
        case proto::INVALID_ACL:
            return "invalid ACL: empty, an unknown scheme or a malformed id";
        case proto::PERMISSION_DENIED:
            return "permission denied";
        case proto::NO_USER:
            return "no such user";
        case proto::NO_ROLE:
            return "no such role";
        case proto::USER_EXISTS:
            return "the user exists already";
        case proto::ROLE_EXISTS:
            return "the role exists already";
        case proto::UNAVAILABLE:
            return "no leader is available now; retry";
        case proto::TIMEOUT:
            return "timed out waiting for the outcome; retry with the same seq to learn it";
        case proto::TOO_MANY_REQUESTS:
            return "too many requests pending on this connection";
        case proto::BAD_REQUEST:
            return "malformed request";
        case proto::WAIT_TIMEOUT:
            return "the wait ended without a grant: the lock is not held";
        case proto::SHUTTING_DOWN:
            return "the server is shutting down; use another node";
        case proto::CHANGE_IN_PROGRESS:
            return "another membership change is not committed yet; retry shortly";
        default:
            break;
    }
    return "unknown code";
}

}  // namespace raftlock::server
