// Who may apply what (auth.h): the checks a write passes where it applies, while authentication
// is enabled, and the user and role changes themselves.

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine {

namespace {

Response refuse(ErrorCode code, std::string message) {
    Response response;
    response.code = code;
    response.message = std::move(message);
    return response;
}

Response lacks(const std::string& user, const Need& need) {
    return refuse(ErrorCode::kPermissionDenied, lacks_message(user, need));
}

// The session an op acts on besides its envelope's: the target of an attach or a cancel.
SessionId target_session(const Op& op) {
    if (const auto* attach = std::get_if<AttachSession>(&op)) {
        return attach->session;
    }
    if (const auto* cancel = std::get_if<SqlCancel>(&op)) {
        return cancel->session;
    }
    return kNoSession;
}

// What each tree op needs: write on its path (read for a Multi's check, admin for a setACL).
Need tree_need(const MultiOp& op) {
    return std::visit(
        [](const auto& o) -> Need {
            using T = std::decay_t<decltype(o)>;
            return Need{std::is_same_v<T, Check> ? Access::kRead : Access::kWrite, Space::kNode,
                        o.path};
        },
        op);
}

}  // namespace

bool StateMachine::may_use_session(const std::string& user, SessionId session) const {
    auto it = sessions_.find(session);
    // A session that does not exist is refused by what applies next (kSessionExpired).
    return it == sessions_.end() || it->second.owner == user || auth_.is_root(user);
}

std::optional<Response> StateMachine::refusal(const Command& command) const {
    if (std::optional<Response> refused = identity_refusal(command)) {
        return refused;
    }
    return op_refusal(command);
}

void StateMachine::in_protocol_terms(const Op& op, Response& refused) {
    RL_ASSERT(refused.code == ErrorCode::kPermissionDenied);
    if (std::holds_alternative<RedisCommand>(op) || std::holds_alternative<RedisTransaction>(op)) {
        refused.redis = redis::Value::error("NOPERM " + refused.message);
    } else if (std::holds_alternative<SqlStatement>(op)) {
        refused.sql.error = sql::SqlError{"42501", refused.message, {}, {}, 0};  // PostgreSQL's
    }
}

std::optional<Response> StateMachine::identity_refusal(const Command& command) const {
    if (!auth_.enabled() || leader_only(command.op)) {
        return std::nullopt;
    }
    if (command.user.empty()) {
        return refuse(ErrorCode::kPermissionDenied, std::string(kAuthenticationRequired));
    }
    if (!auth_.user_exists(command.user)) {
        return refuse(ErrorCode::kPermissionDenied, unknown_user_message(command.user));
    }
    for (SessionId session : {command.client_id, target_session(command.op)}) {
        if (session == kNoSession || may_use_session(command.user, session)) {
            continue;
        }
        return refuse(ErrorCode::kPermissionDenied, foreign_session_message(command.user, session));
    }
    return std::nullopt;
}

std::optional<Response> StateMachine::op_refusal(const Command& command) const {
    if (!auth_.enabled() || leader_only(command.op)) {
        return std::nullopt;
    }
    const std::string& user = command.user;
    RL_ASSERT(auth_.user_exists(user));  // identity_refusal ran first
    auto check = [&](const Need& need) -> std::optional<Response> {
        if (auth_.permits(user, need)) {
            return std::nullopt;
        }
        return lacks(user, need);
    };
    auto root_only = [&](std::string_view what) -> std::optional<Response> {
        if (auth_.is_root(user)) {
            return std::nullopt;
        }
        return refuse(ErrorCode::kPermissionDenied, root_only_message(user, what));
    };
    return std::visit(
        [&](const auto& op) -> std::optional<Response> {
            using T = std::decay_t<decltype(op)>;
            if constexpr (std::is_same_v<T, Create> || std::is_same_v<T, Delete> ||
                          std::is_same_v<T, SetData>) {
                return check(tree_need(MultiOp{op}));
            } else if constexpr (std::is_same_v<T, Multi>) {
                for (const MultiOp& sub : op.ops) {
                    if (auto refused = check(tree_need(sub))) {
                        return refused;
                    }
                }
                return std::nullopt;
            } else if constexpr (std::is_same_v<T, SetAcl>) {
                return check(Need{Access::kAdmin, Space::kNode, op.path});
            } else if constexpr (std::is_same_v<T, Acquire> || std::is_same_v<T, Release> ||
                                 std::is_same_v<T, Cancel>) {
                return check(Need{Access::kWrite, Space::kLock, op.name});
            } else if constexpr (std::is_same_v<T, ForceRelease>) {
                // Another session's hold, whoever owns it: the lock's administrators only.
                return check(Need{Access::kAdmin, Space::kLock, op.name});
            } else if constexpr (std::is_same_v<T, AcquireMany>) {
                for (const LockSpec& spec : op.locks) {
                    if (auto refused = check(Need{Access::kWrite, Space::kLock, spec.name})) {
                        return refused;
                    }
                }
                return std::nullopt;
            } else if constexpr (std::is_same_v<T, RedisCommand>) {
                return check(Need{Access::kWrite, Space::kRedis, ""});
            } else if constexpr (std::is_same_v<T, RedisTransaction>) {
                // A transaction of reads only (with its watches) needs what those reads need.
                const bool writes = std::any_of(op.transaction.commands.begin(),
                                                op.transaction.commands.end(), redis::may_write);
                return check(Need{writes ? Access::kWrite : Access::kRead, Space::kRedis, ""});
            } else if constexpr (std::is_same_v<T, SqlStatement>) {
                return check(Need{Access::kWrite, Space::kSql, ""});
            } else if constexpr (std::is_same_v<T, UserChange>) {
                if (op.action == UserAction::kSetPassword && op.name == user) {
                    return std::nullopt;  // everyone may change their own password
                }
                return root_only("change users");
            } else if constexpr (std::is_same_v<T, RoleChange>) {
                return root_only("change roles");
            } else if constexpr (std::is_same_v<T, AuthEnable>) {
                return root_only("turn authentication on or off");
            } else {
                // Sessions (open, keepalive, close, attach), SQL cancels: identity_refusal
                // checked whose session they act on; nothing else is needed.
                return std::nullopt;
            }
        },
        command.op);
}

Response StateMachine::apply_auth_change(const Command& command) {
    Response response;
    std::string& message = response.message;
    if (const auto* u = std::get_if<UserChange>(&command.op)) {
        switch (u->action) {
            case UserAction::kAdd:
                response.code = auth_.add_user(u->name, u->credentials, message);
                break;
            case UserAction::kDelete:
                response.code = auth_.delete_user(u->name, message);
                break;
            case UserAction::kSetPassword:
                response.code = auth_.set_password(u->name, u->credentials, message);
                break;
            case UserAction::kGrantRole:
                response.code = auth_.grant_role(u->name, u->role, message);
                break;
            case UserAction::kRevokeRole:
                response.code = auth_.revoke_role(u->name, u->role, message);
                break;
        }
    } else if (const auto* r = std::get_if<RoleChange>(&command.op)) {
        switch (r->action) {
            case RoleAction::kAdd:
                response.code = auth_.add_role(r->name, message);
                break;
            case RoleAction::kDelete:
                response.code = auth_.delete_role(r->name, message);
                break;
            case RoleAction::kGrant:
                response.code = auth_.grant_permission(r->name, r->permission, message);
                break;
            case RoleAction::kRevoke:
                response.code = auth_.revoke_permission(r->name, r->permission, message);
                break;
        }
    } else if (const auto* e = std::get_if<AuthEnable>(&command.op)) {
        response.code = auth_.set_enabled(e->enabled, message);
    } else {
        response.code = auth_.bootstrap(std::get<AuthBootstrap>(command.op).root, message);
    }
    RL_ASSERT((response.code == ErrorCode::kOk) == message.empty());
    return response;
}

}  // namespace raftlock::statemachine
