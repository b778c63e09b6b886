#include "server/zk_auth.h"

#include <algorithm>

#include "base/assert.h"
#include "base/base64.h"
#include "base/digest.h"
#include "statemachine/acl.h"

namespace raftlock::server {

namespace zk = net::zk;
namespace sm = statemachine;

// ZooKeeper's permission bits, the same on the wire and in the state machine.
static_assert(zk::kPermRead == sm::kPermRead && zk::kPermWrite == sm::kPermWrite &&
              zk::kPermCreate == sm::kPermCreate && zk::kPermDelete == sm::kPermDelete &&
              zk::kPermAdmin == sm::kPermAdmin && zk::kPermAll == sm::kPermAll);

std::optional<std::string> zk_digest_id(std::string_view user_password) {
    const size_t colon = user_password.find(':');
    if (colon == std::string_view::npos) {
        return std::nullopt;
    }
    const base::Sha1Digest digest = base::sha1(user_password);
    const std::string_view raw(reinterpret_cast<const char*>(digest.data()), digest.size());
    return std::string(user_password.substr(0, colon)) + ":" + base64_encode(raw);
}

bool zk_add_auth(ZkIdentity& identity,
                 std::string_view scheme,
                 std::string_view auth,
                 std::string_view super_digest) {
    if (scheme == "ip") {
        return true;  // ZooKeeper adds the connection's address, which it holds already
    }
    if (scheme != "digest") {
        return false;
    }
    std::optional<std::string> id = zk_digest_id(auth);
    if (!id) {
        return false;
    }
    if (!super_digest.empty() && *id == super_digest) {
        identity.super = true;
    }
    if (std::find(identity.digests.begin(), identity.digests.end(), *id) !=
        identity.digests.end()) {
        return true;
    }
    // The address and `super:` take two of the ids a request may carry.
    if (identity.digests.size() + 2 >= sm::kCallerIdsMax) {
        return false;
    }
    identity.digests.push_back(std::move(*id));
    return true;
}

proto::Caller zk_caller(const ZkIdentity& identity) {
    proto::Caller caller;
    auto add = [&](const char* scheme, const std::string& id) {
        proto::AclId* out = caller.add_ids();
        out->set_scheme(scheme);
        out->set_id(id);
    };
    // (A connection whose address is not an IP address, as in tests, holds no ip id.)
    if (sm::valid_caller(sm::Caller{sm::AclId{"ip", identity.address}})) {
        add("ip", identity.address);
    }
    for (const std::string& digest : identity.digests) {
        add("digest", digest);
    }
    if (identity.super) {
        add("super", "");
    }
    RL_ASSERT(static_cast<size_t>(caller.ids_size()) <= sm::kCallerIdsMax);
    return caller;
}

Result<std::vector<proto::AclEntry>, zk::Err> zk_native_acl(const std::vector<zk::Acl>& acl,
                                                            const ZkIdentity& identity) {
    if (acl.empty()) {
        return zk::Err::kInvalidAcl;
    }
    sm::Acl expanded;
    auto add = [&](int32_t perms, std::string scheme, std::string id) {
        sm::AclEntry entry{static_cast<uint8_t>(perms),
                           sm::AclId{std::move(scheme), std::move(id)}};
        if (std::find(expanded.begin(), expanded.end(), entry) == expanded.end()) {
            expanded.push_back(std::move(entry));
        }
    };
    for (const zk::Acl& a : acl) {
        if (a.perms < 0 || a.perms > sm::kPermAll) {
            return zk::Err::kInvalidAcl;
        }
        if (a.id.scheme == "auth") {
            // Every id the connection proved (ZooKeeper's fixupACL); none is an error.
            if (identity.digests.empty()) {
                return zk::Err::kInvalidAcl;
            }
            for (const std::string& digest : identity.digests) {
                add(a.perms, "digest", digest);
            }
        } else {
            add(a.perms, a.id.scheme, a.id.id);
        }
    }
    if (!sm::valid_acl(expanded)) {
        return zk::Err::kInvalidAcl;
    }
    std::vector<proto::AclEntry> out;
    for (const sm::AclEntry& e : expanded) {
        proto::AclEntry& p = out.emplace_back();
        p.set_perms(e.perms);
        p.mutable_id()->set_scheme(e.id.scheme);
        p.mutable_id()->set_id(e.id.id);
    }
    return out;
}

std::vector<zk::ClientInfo> zk_who_am_i(const ZkIdentity& identity) {
    // In ZooKeeper 3.8's order (zkCli's transcript against a real one): the digests, then the ip.
    std::vector<zk::ClientInfo> infos;
    for (const std::string& digest : identity.digests) {
        infos.push_back(zk::ClientInfo{"digest", digest.substr(0, digest.find(':'))});
    }
    infos.push_back(zk::ClientInfo{"ip", identity.address});
    return infos;
}

std::vector<zk::Acl> zk_acl_of(const google::protobuf::RepeatedPtrField<proto::AclEntry>& acl) {
    std::vector<zk::Acl> out;
    for (const proto::AclEntry& e : acl) {
        out.push_back(
            zk::Acl{static_cast<int32_t>(e.perms()), zk::Id{e.id().scheme(), e.id().id()}});
    }
    return out;
}

}  // namespace raftlock::server
