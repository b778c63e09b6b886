#pragma once

// ZooKeeper's authentication and ACLs as the ZooKeeper front end speaks them
// (docs/zookeeper-mode.md, "ACLs"): the ids `addauth digest user:password` gives a connection,
// and a client's ACL turned into the state machine's (statemachine/acl.h), with ZooKeeper's `auth`
// scheme expanded into the connection's digest ids. Pure: the front end keeps the connection's ids.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "net/zk_codec.h"
#include "proto/client.pb.h"

namespace raftlock::server {

// ZooKeeper's digest id for `user:password`: `user:` + base64(sha1(`user:password`)), the form
// DigestAuthenticationProvider stores and `zkCli addauth digest` proves. Nullopt without a colon.
std::optional<std::string> zk_digest_id(std::string_view user_password);

// The ids a connection holds: its address (`ip`), then each digest it authenticated as, and
// `super:` once it proved the configured super digest.
struct ZkIdentity {
    std::string address;               // the client's IP address, without port or brackets
    std::vector<std::string> digests;  // `user:hash`, in the order proved, without repeats
    bool super = false;
};

// Adds what `addauth SCHEME AUTH` proves to `identity`; false (AUTHFAILED) for a scheme other
// than digest and ip, a digest without a colon, or more ids than a request may carry.
// `super_digest` is `super:hash` (or empty: no super user).
bool zk_add_auth(ZkIdentity& identity,
                 std::string_view scheme,
                 std::string_view auth,
                 std::string_view super_digest);

// The Caller the requests of the connection carry.
proto::Caller zk_caller(const ZkIdentity& identity);

// A client's ACL as the native request's, or kInvalidAcl: empty, `auth` without a digest id to
// expand into, a scheme other than world/digest/ip/auth, a malformed id or permission. Repeated
// entries are kept once, as ZooKeeper does.
Result<std::vector<proto::AclEntry>, net::zk::Err> zk_native_acl(
    const std::vector<net::zk::Acl>& acl, const ZkIdentity& identity);

// whoAmI's answer: the user of each digest id, then the address.
std::vector<net::zk::ClientInfo> zk_who_am_i(const ZkIdentity& identity);

std::vector<net::zk::Acl> zk_acl_of(const google::protobuf::RepeatedPtrField<proto::AclEntry>& acl);

}  // namespace raftlock::server
