#pragma once

// Users, roles and permissions (issue 18; docs/security.md, "Users and permissions"), as the
// state machine keeps and checks them. They are replicated state: every change is a log entry
// (UserChange, RoleChange, AuthEnable, AuthBootstrap in command.h), so every replica decides a
// request alike, and a write is checked where it applies, against the identity its entry carries
// (Command::user), whichever node it came through.
//
// The model is etcd's: a user holds roles; a role grants an access (read < write < admin, each
// including the ones before it) on the names of one space (lock names or node paths) that start
// with a prefix (the empty prefix: every name). The built-in role `root` grants everything,
// cluster administration included (users, roles, membership, other users' sessions). Checks are
// off until authentication is enabled, which needs a user holding `root` so that nobody is locked
// out; entries logged before any of this existed therefore apply exactly as they did.
//
// A password is never stored, nor logged: a user's credentials are a SCRAM-SHA-256 verifier (salt,
// iteration count, StoredKey, ServerKey; RFC 5802), computed by the client that sets the
// password, which every port checks a login against (SCRAM on the native and PostgreSQL ports,
// the plain password against the verifier for Redis AUTH).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_io.h"
#include "base/scram.h"
#include "statemachine/types.h"

namespace raftlock::statemachine {

inline constexpr size_t kAuthNameBytesMax = 128;
inline constexpr size_t kUsersMax = 10000;
inline constexpr size_t kRolesMax = 1000;
inline constexpr size_t kRolesPerUserMax = 64;
inline constexpr size_t kPermissionsPerRoleMax = 256;
inline constexpr size_t kPermissionPrefixBytesMax = 4096;
inline constexpr uint32_t kCredentialIterationsMin = 4096;    // RFC 7677
inline constexpr uint32_t kCredentialIterationsMax = 100000;  // bounds a node's CPU per login
inline constexpr size_t kCredentialSaltBytesMin = 8;
inline constexpr size_t kCredentialSaltBytesMax = 64;
inline constexpr size_t kCredentialKeyBytes = 32;  // SHA-256
inline constexpr std::string_view kRootRole = "root";

// Each access includes the ones below it. Numbers are on the log.
enum class Access : uint8_t { kRead = 1, kWrite = 2, kAdmin = 3 };
inline constexpr uint8_t kAccessMax = static_cast<uint8_t>(Access::kAdmin);
// What a permission's prefix is a prefix of. Numbers are on the log. kRedis and kSql take only
// the empty prefix for now: a Redis command or an SQL statement needs write on all of its space.
enum class Space : uint8_t { kLock = 1, kNode = 2, kRedis = 3, kSql = 4 };
inline constexpr uint8_t kSpaceMax = static_cast<uint8_t>(Space::kSql);

std::string_view to_string(Access access);
std::string_view to_string(Space space);

struct Permission {
    Access access = Access::kRead;
    Space space = Space::kLock;
    std::string prefix;  // byte prefix of the names it covers; empty: all of them
    auto operator<=>(const Permission&) const = default;
    friend bool operator==(const Permission&, const Permission&) = default;
};
// e.g. `write lock "jobs/"`.
std::string to_string(const Permission& permission);

// A SCRAM-SHA-256 verifier, or none at all (iterations 0, every field empty): a user who logs in
// only with a client certificate.
struct Credentials {
    std::string salt;
    uint32_t iterations = 0;
    std::string stored_key;  // kCredentialKeyBytes
    std::string server_key;  // kCredentialKeyBytes
    bool has_password() const { return iterations != 0; }
    friend bool operator==(const Credentials&, const Credentials&) = default;
};

// The same verifier in the SCRAM module's form, both ways (the credentials must be valid and have
// a password for to_verifier).
Credentials to_credentials(const base::scram::Verifier& verifier);
base::scram::Verifier to_verifier(const Credentials& credentials);

// Printable ASCII without spaces, 1..kAuthNameBytesMax bytes (so that names print and travel in
// SCRAM, certificates and RESP alike).
bool valid_auth_name(std::string_view name);
bool valid_credentials(const Credentials& credentials);
bool valid_permission(const Permission& permission);

struct UserInfo {
    std::string name;
    bool has_password = false;
    std::vector<std::string> roles;  // in byte order
    friend bool operator==(const UserInfo&, const UserInfo&) = default;
};
struct RoleInfo {
    std::string name;
    std::vector<Permission> permissions;  // in order
    friend bool operator==(const RoleInfo&, const RoleInfo&) = default;
};

// What a request needs, for checks and for the message of a refusal.
struct Need {
    Access access = Access::kRead;
    Space space = Space::kLock;
    std::string_view name;
};

// The words of a refusal, the same wherever it is decided (where a write applies, or where a read,
// a keepalive or an early refusal is served).
inline constexpr std::string_view kAuthenticationRequired =
    "authentication required: this cluster has authentication enabled; log in as a user "
    "(raftlock --user NAME)";
std::string lacks_message(std::string_view user, const Need& need);  // user "bob" lacks write on...
std::string foreign_session_message(std::string_view user, uint64_t session);
std::string root_only_message(std::string_view user, std::string_view what);
std::string unknown_user_message(std::string_view user);

class AuthStore final {
public:
    bool enabled() const { return enabled_; }
    // Every check passes while authentication is disabled.
    bool permits(std::string_view user, const Need& need) const;
    // Whether `user` exists and holds the root role.
    bool is_root(std::string_view user) const;
    bool user_exists(std::string_view user) const { return users_.contains(user); }
    // Nullopt for an unknown user.
    std::optional<Credentials> credentials(std::string_view user) const;
    std::optional<UserInfo> user(std::string_view name) const;
    std::optional<RoleInfo> role(std::string_view name) const;
    std::vector<std::string> user_names() const;
    std::vector<std::string> role_names() const;  // `root` included
    size_t user_count() const { return users_.size(); }

    // The changes; each returns kOk or why nothing changed, with `message` saying it in words.
    ErrorCode add_user(const std::string& name,
                       const Credentials& credentials,
                       std::string& message);
    ErrorCode delete_user(const std::string& name, std::string& message);
    ErrorCode set_password(const std::string& name,
                           const Credentials& credentials,
                           std::string& message);
    ErrorCode grant_role(const std::string& user, const std::string& role, std::string& message);
    ErrorCode revoke_role(const std::string& user, const std::string& role, std::string& message);
    ErrorCode add_role(const std::string& name, std::string& message);
    ErrorCode delete_role(const std::string& name, std::string& message);
    ErrorCode grant_permission(const std::string& role,
                               const Permission& permission,
                               std::string& message);
    ErrorCode revoke_permission(const std::string& role,
                                const Permission& permission,
                                std::string& message);
    ErrorCode set_enabled(bool enabled, std::string& message);
    // The first start of a cluster given a root password: creates `root` holding the root role
    // and enables authentication, only while no user exists at all (else kUserExists, nothing
    // changes), so that every node may propose it and the first one wins.
    ErrorCode bootstrap(const Credentials& root, std::string& message);

    // Snapshot section (snapshot.cc's version 5): u8 enabled, users (name, salt, iterations,
    // stored_key, server_key, roles*), roles (name, (u8 access, u8 space, prefix)*). read()
    // returns false on malformed or invalid input.
    void write(Writer& w) const;
    bool read(Reader& r);
    // Empty when every invariant holds: names valid, users' roles exist, enabled only with a
    // user holding root.
    std::string check_invariants() const;
    friend bool operator==(const AuthStore&, const AuthStore&) = default;

private:
    struct User {
        Credentials credentials;
        std::set<std::string, std::less<>> roles;
        friend bool operator==(const User&, const User&) = default;
    };
    // The user or role named, or null with `message` saying there is none.
    User* find_user(const std::string& name, std::string& message);
    std::set<Permission>* find_role(const std::string& name, std::string& message);
    // Whether removing `user`'s root role (or the user) would leave no user holding root while
    // authentication is enabled.
    bool last_root(std::string_view user) const;

    bool enabled_ = false;
    std::map<std::string, User, std::less<>> users_;
    std::map<std::string, std::set<Permission>, std::less<>> roles_;  // `root` is not stored
};

}  // namespace raftlock::statemachine
