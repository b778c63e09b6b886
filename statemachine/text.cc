// Stable text forms for logs, golden tests and simulator traces. Changing one changes goldens.
//
//   command   c5#3 t=1200 acquire "db" tag="w" exclusive wait=500
//   response  ok granted token=17 count=1
//   apply     @17 c5#3 ok granted token=17 count=1 | grants=[s9 "db" "r" 17]

#include <iterator>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "statemachine/command.h"
#include "statemachine/output.h"
#include "statemachine/state_machine.h"
#include "statemachine/watches.h"

namespace raftlock::statemachine {

std::string_view to_string(ErrorCode code) {
    switch (code) {
        case ErrorCode::kOk:
            return "ok";
        case ErrorCode::kNoNode:
            return "NoNode";
        case ErrorCode::kNodeExists:
            return "NodeExists";
        case ErrorCode::kNotEmpty:
            return "NotEmpty";
        case ErrorCode::kBadVersion:
            return "BadVersion";
        case ErrorCode::kNoChildrenForEphemerals:
            return "NoChildrenForEphemerals";
        case ErrorCode::kBadArguments:
            return "BadArguments";
        case ErrorCode::kSessionExpired:
            return "SessionExpired";
        case ErrorCode::kMalformedCommand:
            return "MalformedCommand";
        case ErrorCode::kResultDiscarded:
            return "ResultDiscarded";
        case ErrorCode::kLockBusy:
            return "LockBusy";
        case ErrorCode::kNotLockHolder:
            return "NotLockHolder";
        case ErrorCode::kFenceRejected:
            return "FenceRejected";
        case ErrorCode::kLimitExceeded:
            return "LimitExceeded";
        case ErrorCode::kAlreadyWaiting:
            return "AlreadyWaiting";
        case ErrorCode::kRolledBack:
            return "RolledBack";
        case ErrorCode::kNoAuth:
            return "NoAuth";
        case ErrorCode::kInvalidAcl:
            return "InvalidAcl";
        case ErrorCode::kPermissionDenied:
            return "PermissionDenied";
        case ErrorCode::kNoUser:
            return "NoUser";
        case ErrorCode::kNoRole:
            return "NoRole";
        case ErrorCode::kUserExists:
            return "UserExists";
        case ErrorCode::kRoleExists:
            return "RoleExists";
    }
    return "?";
}

std::string_view to_string(NodeKind kind) {
    switch (kind) {
        case NodeKind::kPersistent:
            return "persistent";
        case NodeKind::kEphemeral:
            return "ephemeral";
        case NodeKind::kPersistentSequential:
            return "persistent_sequential";
        case NodeKind::kEphemeralSequential:
            return "ephemeral_sequential";
        case NodeKind::kContainer:
            return "container";
        case NodeKind::kTtl:
            return "ttl";
        case NodeKind::kTtlSequential:
            return "ttl_sequential";
    }
    return "?";
}

std::string_view to_string(LockMode mode) {
    switch (mode) {
        case LockMode::kExclusive:
            return "exclusive";
        case LockMode::kShared:
            return "shared";
        case LockMode::kSemaphore:
            return "semaphore";
    }
    return "?";
}

std::string_view to_string(EventType type) {
    switch (type) {
        case EventType::kNodeCreated:
            return "NodeCreated";
        case EventType::kNodeDeleted:
            return "NodeDeleted";
        case EventType::kNodeDataChanged:
            return "NodeDataChanged";
        case EventType::kNodeChildrenChanged:
            return "NodeChildrenChanged";
    }
    return "?";
}

std::string_view to_string(SessionEnd end) {
    return end == SessionEnd::kClosed ? "closed" : "expired";
}

std::string_view to_string(LockOutcome outcome) {
    switch (outcome) {
        case LockOutcome::kNone:
            return "none";
        case LockOutcome::kGranted:
            return "granted";
        case LockOutcome::kQueued:
            return "queued";
        case LockOutcome::kCancelled:
            return "cancelled";
        case LockOutcome::kReleased:
            return "released";
    }
    return "?";
}

std::string to_string(const Stat& s) {
    // The ACL version only once it moved, so that texts from before ACLs stay as they were.
    return fmt::format(
        "czxid={} mzxid={} pzxid={} ctime={} mtime={} v={} cv={} owner={} n={} len={}{}", s.czxid,
        s.mzxid, s.pzxid, s.ctime, s.mtime, s.version, s.cversion, s.ephemeral_owner,
        s.num_children, s.data_length, s.aversion != 0 ? fmt::format(" av={}", s.aversion) : "");
}

namespace {

std::string op_text(const Op& op) {
    return std::visit(
        [](const auto& o) -> std::string {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, OpenSession>) {
                return fmt::format("open timeout={}", o.timeout_ms);
            } else if constexpr (std::is_same_v<T, KeepAlive>) {
                return "keepalive";
            } else if constexpr (std::is_same_v<T, CloseSession>) {
                return "close";
            } else if constexpr (std::is_same_v<T, ExpireSession>) {
                return fmt::format("expire s{}", o.session);
            } else if constexpr (std::is_same_v<T, Noop>) {
                return "noop";
            } else if constexpr (std::is_same_v<T, Create>) {
                return fmt::format("create {} {} len={}{}", o.path, to_string(o.kind),
                                   o.data.size(),
                                   o.acl.empty() ? "" : fmt::format(" acl={}", o.acl.size()));
            } else if constexpr (std::is_same_v<T, Delete>) {
                return fmt::format("delete {} v={}", o.path, o.version);
            } else if constexpr (std::is_same_v<T, SetData>) {
                return fmt::format("set {} v={} len={}", o.path, o.version, o.data.size());
            } else if constexpr (std::is_same_v<T, Multi>) {
                return fmt::format("multi ops={}{}", o.ops.size(),
                                   o.containers_at_end ? " containers-at-end" : "");
            } else if constexpr (std::is_same_v<T, Acquire>) {
                return fmt::format("acquire \"{}\" tag=\"{}\" {} permits={} wait={} delay={}",
                                   o.name, o.owner_tag, to_string(o.mode), o.permits, o.wait_ms,
                                   o.lock_delay_ms);
            } else if constexpr (std::is_same_v<T, Release>) {
                return fmt::format("release \"{}\" tag=\"{}\" token={}", o.name, o.owner_tag,
                                   o.token);
            } else if constexpr (std::is_same_v<T, Cancel>) {
                return fmt::format("cancel \"{}\" tag=\"{}\"", o.name, o.owner_tag);
            } else if constexpr (std::is_same_v<T, ForceRelease>) {
                return fmt::format("force_release \"{}\" s{} token={}", o.name, o.session, o.token);
            } else if constexpr (std::is_same_v<T, AcquireMany>) {
                // The wait only when there is one: lines of older formats keep their text.
                return o.wait_ms == 0 ? fmt::format("acquire_many locks={} tag=\"{}\"",
                                                    o.locks.size(), o.owner_tag)
                                      : fmt::format("acquire_many locks={} tag=\"{}\" wait={}",
                                                    o.locks.size(), o.owner_tag, o.wait_ms);
            } else if constexpr (std::is_same_v<T, RedisCommand>) {
                return fmt::format("redis origin={:x} {} args={} script_budget={}", o.origin,
                                   o.argv.empty() ? "" : o.argv[0], o.argv.size() - 1,
                                   o.script_instructions_max);
            } else if constexpr (std::is_same_v<T, RedisTransaction>) {
                return fmt::format("redis origin={:x} exec commands={} watched={} script_budget={}",
                                   o.origin, o.transaction.commands.size(),
                                   o.transaction.watched.size(), o.script_instructions_max);
            } else if constexpr (std::is_same_v<T, SqlStatement>) {
                // The statement's first words are enough to follow a log; the text can be long.
                return fmt::format("sql \"{}\" params={} lock_timeout={} rows_max={}",
                                   o.request.text.substr(0, 60), o.request.params.size(),
                                   o.request.lock_timeout_ms, o.request.rows_max);
            } else if constexpr (std::is_same_v<T, AttachSession>) {
                return fmt::format("attach s{} first_seq={}", o.session, o.first_seq);
            } else if constexpr (std::is_same_v<T, SetAcl>) {
                return fmt::format("set_acl {} v={} entries={}", o.path, o.version, o.acl.size());
            } else if constexpr (std::is_same_v<T, UserChange>) {
                // Never the credentials: a log print must not help anyone guess a password.
                return fmt::format("user {} \"{}\"{}{}", static_cast<int>(o.action), o.name,
                                   o.credentials.has_password() ? " with-password" : "",
                                   o.role.empty() ? "" : fmt::format(" role=\"{}\"", o.role));
            } else if constexpr (std::is_same_v<T, RoleChange>) {
                return fmt::format("role {} \"{}\" {}", static_cast<int>(o.action), o.name,
                                   to_string(o.permission));
            } else if constexpr (std::is_same_v<T, AuthEnable>) {
                return fmt::format("auth enabled={}", o.enabled);
            } else if constexpr (std::is_same_v<T, AuthBootstrap>) {
                return "auth_bootstrap";
            } else {
                static_assert(std::is_same_v<T, SqlCancel>);
                return fmt::format("sql_cancel s{}", o.session);
            }
        },
        op);
}

}  // namespace

std::string_view op_name(const Op& op) {
    // The order of Op's alternatives (command.h); the static_assert keeps the two in step.
    static constexpr std::string_view kNames[] = {
        "OpenSession", "KeepAlive",     "CloseSession", "ExpireSession",   "Noop",
        "Create",      "Delete",        "SetData",      "Multi",           "Acquire",
        "Release",     "Cancel",        "AcquireMany",  "RedisCommand",    "SqlStatement",
        "SqlCancel",   "AttachSession", "SetAcl",       "UserChange",      "RoleChange",
        "AuthEnable",  "AuthBootstrap", "ForceRelease", "RedisTransaction"};
    static_assert(std::size(kNames) == std::variant_size_v<Op>);
    return kNames[op.index()];
}

std::string to_string(const Command& c) {
    std::string fence =
        c.fence ? fmt::format(" fence=\"{}\"/{}", c.fence->lock, c.fence->token) : "";
    std::string caller;
    if (c.caller) {
        caller = " as=";
        for (const AclId& id : *c.caller) {
            caller += fmt::format("{}{}:{}", caller.size() > 4 ? "," : "", id.scheme, id.id);
        }
    }
    std::string user = c.user.empty() ? "" : fmt::format(" user=\"{}\"", c.user);
    return fmt::format("c{}#{} ack={} t={}{}{}{} {}", c.client_id, c.seq, c.ack_seq, c.time_ms,
                       fence, caller, user, op_text(c.op));
}

std::string to_string(const Response& r) {
    std::string out(to_string(r.code));
    if (r.session != kNoSession) {
        out += fmt::format(" session={}", r.session);
    }
    if (!r.path.empty()) {
        out += fmt::format(" path={}", r.path);
    }
    if (r.lock != LockOutcome::kNone) {
        out += fmt::format(" {} token={} count={}", to_string(r.lock), r.token, r.hold_count);
    }
    for (const SubResult& sub : r.results) {
        out += fmt::format(" [{}{}{}]", to_string(sub.code), sub.path.empty() ? "" : " ", sub.path);
    }
    return out;
}

std::string to_string(const ApplyResult& a) {
    std::string out = fmt::format("@{} c{}#{}{} {}", a.index, a.client_id, a.seq,
                                  a.replayed ? " replayed" : "", to_string(a.response));
    for (const WatchTrigger& t : a.triggers) {
        out += fmt::format(" | {} {}", to_string(t.type), t.path);
    }
    for (const LockGrant& g : a.grants) {
        out +=
            fmt::format(" | grant s{} \"{}\" \"{}\" {}", g.session, g.name, g.owner_tag, g.token);
    }
    for (const WaitTimeout& w : a.wait_timeouts) {
        out += fmt::format(" | timeout s{} \"{}\" \"{}\"", w.session, w.name, w.owner_tag);
    }
    for (const HoldRevoked& h : a.holds_revoked) {
        out += fmt::format(" | revoked s{} \"{}\" {}", h.session, h.name, h.token);
    }
    for (const SessionEnded& e : a.sessions_ended) {
        out += fmt::format(" | ended s{} {}", e.session, to_string(e.reason));
    }
    for (const redis::Publication& p : a.published) {
        out += fmt::format(" | publish \"{}\" {} bytes", p.channel, p.message.size());
    }
    return out;
}

std::string to_string(const LockInfo& info) {
    std::string out = fmt::format("lock \"{}\" {}", info.name,
                                  info.semaphore ? fmt::format("semaphore/{}", info.permits)
                                                 : std::string(to_string(info.mode)));
    for (const HolderInfo& h : info.holders) {
        out += fmt::format(" holder=s{}/\"{}\"/{}@{}x{}", h.session, h.owner_tag, h.token,
                           h.since_ms, h.count);
    }
    for (const WaiterInfo& w : info.waiters) {
        out += fmt::format(" waiter=s{}/\"{}\"/{}@{}..{}", w.session, w.owner_tag,
                           to_string(w.mode), w.enqueued_ms, w.deadline_ms);
    }
    if (info.lock_delay_ms > 0) {
        out += fmt::format(" delay={} free_at={}", info.lock_delay_ms, info.free_at_ms);
    }
    return out;
}

std::string to_string(const WatchEvent& event) {
    return fmt::format("w{} {} {} @{}", event.watcher, to_string(event.type), event.path,
                       event.zxid);
}

}  // namespace raftlock::statemachine
