#pragma once

// ZooKeeper's access control lists, as the state machine keeps and checks them
// (docs/zookeeper-mode.md, "ACLs"). A node's ACL is a list of (permissions, scheme:id); an
// operation is allowed when one entry names an id of its caller and grants one of the permissions
// the operation needs. The caller's ids travel in the command (Command::caller), so every replica
// decides alike; only ZooKeeper connections have a caller, the other ports are not restricted by
// ACLs (issue 18 brings users to them).
//
// Schemes: `world` (id `anyone`: everyone), `digest` (`user:base64(sha1(user:password))`, the id a
// connection gains with `addauth digest user:password`) and `ip` (an IPv4 or IPv6 address with an
// optional prefix length, matched against the connection's address). ZooKeeper's `auth` scheme is
// expanded by the front end into the connection's digest ids before a command is written, so it
// never reaches the log. A caller holding the id `super:` (the configured super digest) is allowed
// everything, as ZooKeeper's super user is.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace raftlock::statemachine {

// ZooDefs.Perms.
inline constexpr uint8_t kPermRead = 1;
inline constexpr uint8_t kPermWrite = 2;
inline constexpr uint8_t kPermCreate = 4;
inline constexpr uint8_t kPermDelete = 8;
inline constexpr uint8_t kPermAdmin = 16;
inline constexpr uint8_t kPermAll = 31;

inline constexpr size_t kAclEntriesMax = 64;
inline constexpr size_t kAclIdBytesMax = 1024;
inline constexpr size_t kCallerIdsMax = 16;

struct AclId {
    std::string scheme;
    std::string id;
    friend bool operator==(const AclId&, const AclId&) = default;
};

struct AclEntry {
    uint8_t perms = kPermAll;
    AclId id;
    friend bool operator==(const AclEntry&, const AclEntry&) = default;
};

// Empty: open to everyone, which is `world:anyone` with every permission (what a node created
// through the native port has, and what ZooKeeper's OPEN_ACL_UNSAFE is). Nodes keep that ACL in
// this form, so the common case costs no allocation.
using Acl = std::vector<AclEntry>;

// The ids a ZooKeeper connection holds: `ip:ADDRESS`, each `digest:user:hash` it authenticated as,
// and `super:` for the super user.
using Caller = std::vector<AclId>;

// Every entry has permissions within kPermAll and a valid id of a stored scheme (world, digest,
// ip); at most kAclEntriesMax entries. Empty is valid (open).
bool valid_acl(const Acl& acl);
// Each id of scheme ip (an address without prefix), digest or super (id empty); at most
// kCallerIdsMax.
bool valid_caller(const Caller& caller);
// The stored form: `world:anyone` with every permission, alone, becomes the empty (open) ACL.
Acl canonical_acl(Acl acl);
// What getACL shows: the open ACL as its one entry.
Acl displayed_acl(const Acl& stored);
// Whether `acl` grants `caller` one of the permissions in `perms` (ZooKeeper's checkACL).
bool acl_permits(const Acl& acl, uint8_t perms, const Caller& caller);

}  // namespace raftlock::statemachine
