#include "statemachine/auth.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::statemachine {

std::string_view to_string(Access access) {
    switch (access) {
        case Access::kRead:
            return "read";
        case Access::kWrite:
            return "write";
        case Access::kAdmin:
            return "admin";
    }
    return "?";
}

std::string_view to_string(Space space) {
    switch (space) {
        case Space::kLock:
            return "lock";
        case Space::kNode:
            return "node";
        case Space::kRedis:
            return "redis";
        case Space::kSql:
            return "sql";
    }
    return "?";
}

std::string to_string(const Permission& permission) {
    return fmt::format("{} {} \"{}\"", to_string(permission.access), to_string(permission.space),
                       permission.prefix);
}

Credentials to_credentials(const base::scram::Verifier& v) {
    return Credentials{v.salt, v.iterations, std::string(v.stored_key.begin(), v.stored_key.end()),
                       std::string(v.server_key.begin(), v.server_key.end())};
}

base::scram::Verifier to_verifier(const Credentials& c) {
    RL_ASSERT(valid_credentials(c) && c.has_password());
    base::scram::Verifier v;
    v.salt = c.salt;
    v.iterations = c.iterations;
    std::copy(c.stored_key.begin(), c.stored_key.end(), v.stored_key.begin());
    std::copy(c.server_key.begin(), c.server_key.end(), v.server_key.begin());
    return v;
}

std::string lacks_message(std::string_view user, const Need& need) {
    return fmt::format("user \"{}\" lacks {} on {} \"{}\"", user, to_string(need.access),
                       to_string(need.space), need.name);
}

std::string foreign_session_message(std::string_view user, uint64_t session) {
    return fmt::format(
        "user \"{}\" may not use session {}: it belongs to another user (only its owner or a root "
        "user may)",
        user, session);
}

std::string root_only_message(std::string_view user, std::string_view what) {
    return fmt::format("user \"{}\" may not {}: it needs the root role", user, what);
}

std::string unknown_user_message(std::string_view user) {
    return fmt::format("user \"{}\" does not exist (deleted?)", user);
}

bool valid_auth_name(std::string_view name) {
    return !name.empty() && name.size() <= kAuthNameBytesMax &&
           std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

bool valid_credentials(const Credentials& c) {
    if (!c.has_password()) {
        return c.salt.empty() && c.stored_key.empty() && c.server_key.empty();
    }
    return c.iterations >= kCredentialIterationsMin && c.iterations <= kCredentialIterationsMax &&
           c.salt.size() >= kCredentialSaltBytesMin && c.salt.size() <= kCredentialSaltBytesMax &&
           c.stored_key.size() == kCredentialKeyBytes && c.server_key.size() == kCredentialKeyBytes;
}

bool valid_permission(const Permission& p) {
    const auto access = static_cast<uint8_t>(p.access);
    const auto space = static_cast<uint8_t>(p.space);
    if (access < 1 || access > kAccessMax || space < 1 || space > kSpaceMax ||
        p.prefix.size() > kPermissionPrefixBytesMax) {
        return false;
    }
    return p.prefix.empty() || (p.space != Space::kRedis && p.space != Space::kSql);
}

bool AuthStore::permits(std::string_view user, const Need& need) const {
    if (!enabled_) {
        return true;
    }
    auto it = users_.find(user);
    if (it == users_.end()) {
        return false;
    }
    for (const std::string& role_name : it->second.roles) {
        if (role_name == kRootRole) {
            return true;
        }
        auto role = roles_.find(role_name);
        RL_ASSERT(role != roles_.end());  // deleting a role revokes it from every user
        for (const Permission& p : role->second) {
            if (p.space == need.space && p.access >= need.access &&
                need.name.substr(0, p.prefix.size()) == p.prefix) {
                return true;
            }
        }
    }
    return false;
}

bool AuthStore::is_root(std::string_view user) const {
    auto it = users_.find(user);
    return it != users_.end() && it->second.roles.contains(kRootRole);
}

std::optional<Credentials> AuthStore::credentials(std::string_view user) const {
    auto it = users_.find(user);
    if (it == users_.end()) {
        return std::nullopt;
    }
    return it->second.credentials;
}

std::optional<UserInfo> AuthStore::user(std::string_view name) const {
    auto it = users_.find(name);
    if (it == users_.end()) {
        return std::nullopt;
    }
    UserInfo info;
    info.name = it->first;
    info.has_password = it->second.credentials.has_password();
    info.roles.assign(it->second.roles.begin(), it->second.roles.end());
    return info;
}

std::optional<RoleInfo> AuthStore::role(std::string_view name) const {
    RoleInfo info;
    info.name = std::string(name);
    if (name == kRootRole) {
        info.permissions = {Permission{Access::kAdmin, Space::kLock, ""},
                            Permission{Access::kAdmin, Space::kNode, ""},
                            Permission{Access::kAdmin, Space::kRedis, ""},
                            Permission{Access::kAdmin, Space::kSql, ""}};
        return info;
    }
    auto it = roles_.find(name);
    if (it == roles_.end()) {
        return std::nullopt;
    }
    info.permissions.assign(it->second.begin(), it->second.end());
    return info;
}

std::vector<std::string> AuthStore::user_names() const {
    std::vector<std::string> names;
    names.reserve(users_.size());
    for (const auto& [name, user] : users_) {
        names.push_back(name);
    }
    return names;
}

std::vector<std::string> AuthStore::role_names() const {
    std::vector<std::string> names;
    names.reserve(roles_.size() + 1);
    for (const auto& [name, role] : roles_) {
        names.push_back(name);
    }
    names.emplace_back(kRootRole);
    std::sort(names.begin(), names.end());
    return names;
}

AuthStore::User* AuthStore::find_user(const std::string& name, std::string& message) {
    auto it = users_.find(name);
    if (it == users_.end()) {
        message = fmt::format("no user \"{}\"", name);
        return nullptr;
    }
    return &it->second;
}

std::set<Permission>* AuthStore::find_role(const std::string& name, std::string& message) {
    auto it = roles_.find(name);
    if (it == roles_.end()) {
        message = fmt::format("no role \"{}\"", name);
        return nullptr;
    }
    return &it->second;
}

bool AuthStore::last_root(std::string_view user) const {
    if (!enabled_ || !is_root(user)) {
        return false;
    }
    return std::none_of(users_.begin(), users_.end(), [&](const auto& entry) {
        return entry.first != user && entry.second.roles.contains(kRootRole);
    });
}

ErrorCode AuthStore::add_user(const std::string& name,
                              const Credentials& credentials,
                              std::string& message) {
    RL_ASSERT(valid_auth_name(name) && valid_credentials(credentials));
    if (users_.contains(name)) {
        message = fmt::format("user \"{}\" exists already", name);
        return ErrorCode::kUserExists;
    }
    if (users_.size() >= kUsersMax) {
        message = fmt::format("there are {} users already, the most a cluster keeps", kUsersMax);
        return ErrorCode::kLimitExceeded;
    }
    users_.emplace(name, User{credentials, {}});
    return ErrorCode::kOk;
}

ErrorCode AuthStore::delete_user(const std::string& name, std::string& message) {
    if (!users_.contains(name)) {
        message = fmt::format("no user \"{}\"", name);
        return ErrorCode::kNoUser;
    }
    if (last_root(name)) {
        message = fmt::format(
            "\"{}\" is the last user holding the root role: deleting it would lock everyone "
            "out (disable authentication first, or grant root to another user)",
            name);
        return ErrorCode::kBadArguments;
    }
    users_.erase(name);
    return ErrorCode::kOk;
}

ErrorCode AuthStore::set_password(const std::string& name,
                                  const Credentials& credentials,
                                  std::string& message) {
    RL_ASSERT(valid_credentials(credentials));
    User* found = find_user(name, message);
    if (found == nullptr) {
        return ErrorCode::kNoUser;
    }
    found->credentials = credentials;
    return ErrorCode::kOk;
}

ErrorCode AuthStore::grant_role(const std::string& user,
                                const std::string& role,
                                std::string& message) {
    User* found = find_user(user, message);
    if (found == nullptr) {
        return ErrorCode::kNoUser;
    }
    if (role != kRootRole && !roles_.contains(role)) {
        message = fmt::format("no role \"{}\"", role);
        return ErrorCode::kNoRole;
    }
    if (!found->roles.contains(role) && found->roles.size() >= kRolesPerUserMax) {
        message = fmt::format("a user holds at most {} roles", kRolesPerUserMax);
        return ErrorCode::kLimitExceeded;
    }
    found->roles.insert(role);  // granting a role held already changes nothing, and is fine
    return ErrorCode::kOk;
}

ErrorCode AuthStore::revoke_role(const std::string& user,
                                 const std::string& role,
                                 std::string& message) {
    User* found = find_user(user, message);
    if (found == nullptr) {
        return ErrorCode::kNoUser;
    }
    if (!found->roles.contains(role)) {
        message = fmt::format("user \"{}\" does not hold role \"{}\"", user, role);
        return ErrorCode::kNoRole;
    }
    if (role == kRootRole && last_root(user)) {
        message = fmt::format(
            "\"{}\" is the last user holding the root role: revoking it would lock everyone out",
            user);
        return ErrorCode::kBadArguments;
    }
    found->roles.erase(role);
    return ErrorCode::kOk;
}

ErrorCode AuthStore::add_role(const std::string& name, std::string& message) {
    RL_ASSERT(valid_auth_name(name));
    if (name == kRootRole || roles_.contains(name)) {
        message = fmt::format("role \"{}\" exists already", name);
        return ErrorCode::kRoleExists;
    }
    if (roles_.size() >= kRolesMax) {
        message = fmt::format("there are {} roles already, the most a cluster keeps", kRolesMax);
        return ErrorCode::kLimitExceeded;
    }
    roles_.emplace(name, std::set<Permission>{});
    return ErrorCode::kOk;
}

ErrorCode AuthStore::delete_role(const std::string& name, std::string& message) {
    if (name == kRootRole) {
        message = "the root role is built in and cannot be deleted";
        return ErrorCode::kBadArguments;
    }
    if (roles_.erase(name) == 0) {
        message = fmt::format("no role \"{}\"", name);
        return ErrorCode::kNoRole;
    }
    for (auto& [user_name, user] : users_) {
        user.roles.erase(name);
    }
    return ErrorCode::kOk;
}

ErrorCode AuthStore::grant_permission(const std::string& role,
                                      const Permission& permission,
                                      std::string& message) {
    RL_ASSERT(valid_permission(permission));
    if (role == kRootRole) {
        message = "the root role grants everything already and cannot be changed";
        return ErrorCode::kBadArguments;
    }
    std::set<Permission>* found = find_role(role, message);
    if (found == nullptr) {
        return ErrorCode::kNoRole;
    }
    if (!found->contains(permission) && found->size() >= kPermissionsPerRoleMax) {
        message = fmt::format("a role grants at most {} permissions", kPermissionsPerRoleMax);
        return ErrorCode::kLimitExceeded;
    }
    found->insert(permission);
    return ErrorCode::kOk;
}

ErrorCode AuthStore::revoke_permission(const std::string& role,
                                       const Permission& permission,
                                       std::string& message) {
    std::set<Permission>* found = find_role(role, message);
    if (found == nullptr) {
        return ErrorCode::kNoRole;
    }
    if (found->erase(permission) == 0) {
        message = fmt::format("role \"{}\" does not grant {}", role, to_string(permission));
        return ErrorCode::kBadArguments;
    }
    return ErrorCode::kOk;
}

ErrorCode AuthStore::set_enabled(bool enabled, std::string& message) {
    if (enabled && std::none_of(users_.begin(), users_.end(), [](const auto& entry) {
            return entry.second.roles.contains(kRootRole);
        })) {
        message =
            "no user holds the root role: enabling authentication would lock everyone out "
            "(raftlock user add root; raftlock user grant root root)";
        return ErrorCode::kBadArguments;
    }
    enabled_ = enabled;
    return ErrorCode::kOk;
}

ErrorCode AuthStore::bootstrap(const Credentials& root, std::string& message) {
    RL_ASSERT(valid_credentials(root) && root.has_password());
    if (!users_.empty()) {
        message = "users exist already: a root password is only taken on a cluster without any";
        return ErrorCode::kUserExists;
    }
    users_.emplace(std::string(kRootRole), User{root, {std::string(kRootRole)}});
    enabled_ = true;
    RL_ASSERT(check_invariants().empty());
    return ErrorCode::kOk;
}

void AuthStore::write(Writer& w) const {
    w.u8(enabled_ ? 1 : 0);
    w.varint(users_.size());
    for (const auto& [name, user] : users_) {
        w.bytes(name);
        w.bytes(user.credentials.salt);
        w.varint(user.credentials.iterations);
        w.bytes(user.credentials.stored_key);
        w.bytes(user.credentials.server_key);
        w.varint(user.roles.size());
        for (const std::string& role : user.roles) {
            w.bytes(role);
        }
    }
    w.varint(roles_.size());
    for (const auto& [name, permissions] : roles_) {
        w.bytes(name);
        w.varint(permissions.size());
        for (const Permission& p : permissions) {
            w.u8(static_cast<uint8_t>(p.access));
            w.u8(static_cast<uint8_t>(p.space));
            w.bytes(p.prefix);
        }
    }
}

bool AuthStore::read(Reader& r) {
    AuthStore fresh;
    fresh.enabled_ = r.boolean();
    const uint64_t users = r.varint_in(0, kUsersMax);
    for (uint64_t i = 0; i < users && r.ok(); i++) {
        std::string name = r.bytes(kAuthNameBytesMax);
        User user;
        user.credentials.salt = r.bytes(kCredentialSaltBytesMax);
        user.credentials.iterations =
            static_cast<uint32_t>(r.varint_in(0, kCredentialIterationsMax));
        user.credentials.stored_key = r.bytes(kCredentialKeyBytes);
        user.credentials.server_key = r.bytes(kCredentialKeyBytes);
        const uint64_t roles = r.varint_in(0, kRolesPerUserMax);
        for (uint64_t k = 0; k < roles && r.ok(); k++) {
            if (!user.roles.insert(r.bytes(kAuthNameBytesMax)).second) {
                return false;
            }
        }
        if (!r.ok() || !valid_auth_name(name) || !valid_credentials(user.credentials) ||
            !fresh.users_.emplace(std::move(name), std::move(user)).second) {
            return false;
        }
    }
    const uint64_t roles = r.varint_in(0, kRolesMax);
    for (uint64_t i = 0; i < roles && r.ok(); i++) {
        std::string name = r.bytes(kAuthNameBytesMax);
        std::set<Permission> permissions;
        const uint64_t n = r.varint_in(0, kPermissionsPerRoleMax);
        for (uint64_t k = 0; k < n && r.ok(); k++) {
            Permission p;
            p.access = static_cast<Access>(r.varint_in(1, kAccessMax));
            p.space = static_cast<Space>(r.varint_in(1, kSpaceMax));
            p.prefix = r.bytes(kPermissionPrefixBytesMax);
            if (!r.ok() || !valid_permission(p) || !permissions.insert(std::move(p)).second) {
                return false;
            }
        }
        if (!r.ok() || !valid_auth_name(name) || name == kRootRole ||
            !fresh.roles_.emplace(std::move(name), std::move(permissions)).second) {
            return false;
        }
    }
    if (!r.ok() || !fresh.check_invariants().empty()) {
        return false;
    }
    *this = std::move(fresh);
    return true;
}

std::string AuthStore::check_invariants() const {
    bool has_root = false;
    for (const auto& [name, user] : users_) {
        if (!valid_auth_name(name) || !valid_credentials(user.credentials)) {
            return fmt::format("user \"{}\": invalid name or credentials", name);
        }
        for (const std::string& role : user.roles) {
            if (role != kRootRole && !roles_.contains(role)) {
                return fmt::format("user \"{}\" holds role \"{}\", which does not exist", name,
                                   role);
            }
        }
        has_root = has_root || user.roles.contains(kRootRole);
    }
    for (const auto& [name, permissions] : roles_) {
        if (!valid_auth_name(name) || name == kRootRole ||
            !std::all_of(permissions.begin(), permissions.end(), valid_permission)) {
            return fmt::format("role \"{}\": invalid name or permission", name);
        }
    }
    if (enabled_ && !has_root) {
        return "authentication is enabled but no user holds the root role";
    }
    return {};
}

}  // namespace raftlock::statemachine
