// Users, roles and permissions (docs/security.md): the Client calls that manage them. Passwords
// become SCRAM-SHA-256 verifiers here, with a fresh salt, so that neither the network nor the
// cluster's log ever holds one.

#include <fmt/format.h>

#include "base/scram.h"
#include "client/client.h"
#include "client/client_impl.h"
#include "proto/client.pb.h"

namespace raftlock::client {

namespace {

ClientResult<Done> done_or_error(const ClientResult<proto::Response>& answer,
                                 std::string_view what) {
    if (auto error = answer_error(answer, what)) {
        return *error;
    }
    return Done{};
}

void set_verifier(const std::string& password, proto::Credentials& out) {
    namespace scram = base::scram;
    const scram::Verifier v = scram::make_verifier(password, scram::random_bytes(scram::kSaltBytes),
                                                   scram::kIterationsMin);
    out.set_salt(v.salt);
    out.set_iterations(v.iterations);
    out.set_stored_key(std::string(v.stored_key.begin(), v.stored_key.end()));
    out.set_server_key(std::string(v.server_key.begin(), v.server_key.end()));
}

void set_permission(const Permission& p, proto::Permission& out) {
    out.set_access(static_cast<proto::Access>(p.access));
    out.set_space(static_cast<proto::Space>(p.space));
    out.set_prefix(p.prefix);
}

}  // namespace

namespace {

ClientResult<Done> user_change(Client::Impl& impl,
                               proto::UserChange::Action action,
                               const std::string& name,
                               const std::string& role,
                               const std::optional<std::string>& password) {
    if (password && password->empty()) {
        return Error{ErrorCode::kInvalidArgument, "an empty password"};
    }
    proto::Request request;
    proto::UserChange* body = request.mutable_user_change();
    body->set_action(action);
    body->set_name(name);
    body->set_role(role);
    if (password) {
        set_verifier(*password, *body->mutable_credentials());
    }
    return done_or_error(impl.call(std::move(request), {}), "user change");
}

ClientResult<Done> role_change(Client::Impl& impl,
                               proto::RoleChange::Action action,
                               const std::string& name,
                               const std::optional<Permission>& permission) {
    proto::Request request;
    proto::RoleChange* body = request.mutable_role_change();
    body->set_action(action);
    body->set_name(name);
    if (permission) {
        set_permission(*permission, *body->mutable_permission());
    }
    return done_or_error(impl.call(std::move(request), {}), "role change");
}

}  // namespace

ClientResult<Done> Client::add_user(const std::string& name,
                                    const std::optional<std::string>& password) {
    return user_change(*impl_, proto::UserChange::USER_ADD, name, "", password);
}

ClientResult<Done> Client::delete_user(const std::string& name) {
    return user_change(*impl_, proto::UserChange::USER_DELETE, name, "", std::nullopt);
}

ClientResult<Done> Client::set_password(const std::string& name, const std::string& password) {
    return user_change(*impl_, proto::UserChange::USER_SET_PASSWORD, name, "", password);
}

ClientResult<Done> Client::grant_role(const std::string& user, const std::string& role) {
    return user_change(*impl_, proto::UserChange::USER_GRANT_ROLE, user, role, std::nullopt);
}

ClientResult<Done> Client::revoke_role(const std::string& user, const std::string& role) {
    return user_change(*impl_, proto::UserChange::USER_REVOKE_ROLE, user, role, std::nullopt);
}

ClientResult<Done> Client::add_role(const std::string& name) {
    return role_change(*impl_, proto::RoleChange::ROLE_ADD, name, std::nullopt);
}

ClientResult<Done> Client::delete_role(const std::string& name) {
    return role_change(*impl_, proto::RoleChange::ROLE_DELETE, name, std::nullopt);
}

ClientResult<Done> Client::grant_permission(const std::string& role, const Permission& permission) {
    return role_change(*impl_, proto::RoleChange::ROLE_GRANT, role, permission);
}

ClientResult<Done> Client::revoke_permission(const std::string& role,
                                             const Permission& permission) {
    return role_change(*impl_, proto::RoleChange::ROLE_REVOKE, role, permission);
}

ClientResult<Done> Client::set_auth_enabled(bool enabled) {
    proto::Request request;
    request.mutable_auth_enable()->set_enabled(enabled);
    return done_or_error(impl_->call(std::move(request), {}), "auth enable");
}

ClientResult<UserInfo> Client::get_user(const std::string& name) {
    proto::Request request;
    request.mutable_get_user()->set_name(name);
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, "get user")) {
        return *error;
    }
    const proto::UserResult& u = answer->user();
    return UserInfo{u.name(), u.has_password(), {u.roles().begin(), u.roles().end()}};
}

ClientResult<std::vector<std::string>> Client::list_users() {
    proto::Request request;
    request.mutable_list_users();
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, "list users")) {
        return *error;
    }
    return std::vector<std::string>(answer->names().names().begin(), answer->names().names().end());
}

ClientResult<RoleInfo> Client::get_role(const std::string& name) {
    proto::Request request;
    request.mutable_get_role()->set_name(name);
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, "get role")) {
        return *error;
    }
    RoleInfo info{answer->role().name(), {}};
    for (const proto::Permission& p : answer->role().permissions()) {
        info.permissions.push_back(
            Permission{static_cast<Access>(p.access()), static_cast<Space>(p.space()), p.prefix()});
    }
    return info;
}

ClientResult<std::vector<std::string>> Client::list_roles() {
    proto::Request request;
    request.mutable_list_roles();
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, "list roles")) {
        return *error;
    }
    return std::vector<std::string>(answer->names().names().begin(), answer->names().names().end());
}

ClientResult<AuthStatus> Client::auth_status() {
    proto::Request request;
    request.mutable_auth_status();
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, "auth status")) {
        return *error;
    }
    return AuthStatus{answer->auth_status().enabled(), answer->auth_status().user(),
                      answer->auth_status().root()};
}

}  // namespace raftlock::client
