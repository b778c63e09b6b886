// The ZooKeeper port's authentication and ACL translation (server/zk_auth.h), and the front end's
// use of them: addauth, the ids each request carries, create and setACL with ACLs, whoAmI.

#include "server/zk_auth.h"

#include <catch2/catch.hpp>

#include "zk_frontend_fixture.h"

// Inside the fixture's namespace, so its names are found before any other test file's in a unity
// build.
namespace raftlock::server::zk_frontend_fixture {
namespace zk_auth_test {

namespace zk = net::zk;

TEST_CASE("a digest id is user:base64(sha1(user:password)), as ZooKeeper's", "[zk][acl]") {
    // The value ZooKeeper's documentation gives for the super user with password "admin".
    CHECK(zk_digest_id("super:admin") == "super:xQJmxLMiHGwaqBvst5y6rkB6HQs=");
    CHECK(zk_digest_id("alice:secret") == "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
    CHECK_FALSE(zk_digest_id("no-colon").has_value());
}

TEST_CASE("addauth adds digest ids once; other schemes fail", "[zk][acl]") {
    ZkIdentity id;
    id.address = "10.0.0.5";
    CHECK(zk_add_auth(id, "digest", "alice:secret", ""));
    CHECK(zk_add_auth(id, "digest", "alice:secret", ""));
    CHECK(id.digests == std::vector<std::string>{"alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="});
    CHECK(zk_add_auth(id, "ip", "", ""));  // the address it holds already
    CHECK_FALSE(zk_add_auth(id, "digest", "nocolon", ""));
    CHECK_FALSE(zk_add_auth(id, "sasl", "x", ""));
    CHECK_FALSE(id.super);
    CHECK(zk_add_auth(id, "digest", "super:admin", "super:xQJmxLMiHGwaqBvst5y6rkB6HQs="));
    CHECK(id.super);
    const proto::Caller caller = zk_caller(id);
    REQUIRE(caller.ids_size() == 4);
    CHECK(caller.ids(0).scheme() == "ip");
    CHECK(caller.ids(1).id() == "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
    CHECK(caller.ids(3).scheme() == "super");
    // A bounded number of ids: a client cannot grow what every request carries.
    for (int i = 0; i < 100; ++i) {
        zk_add_auth(id, "digest", "u" + std::to_string(i) + ":p", "");
    }
    CHECK(zk_caller(id).ids_size() <= 16);
}

TEST_CASE("a client's ACL is expanded and validated as ZooKeeper's fixupACL does", "[zk][acl]") {
    ZkIdentity id;
    id.address = "10.0.0.5";
    const zk::Acl creator_all{zk::kPermAll, zk::Id{"auth", ""}};
    CHECK(zk_native_acl({creator_all}, id).error() == zk::Err::kInvalidAcl);  // nobody to expand
    CHECK(zk_native_acl({}, id).error() == zk::Err::kInvalidAcl);
    CHECK(zk_native_acl({zk::Acl{zk::kPermAll, zk::Id{"world", "other"}}}, id).error() ==
          zk::Err::kInvalidAcl);
    CHECK(zk_native_acl({zk::Acl{zk::kPermRead, zk::Id{"x509", "CN=a"}}}, id).error() ==
          zk::Err::kInvalidAcl);
    CHECK(zk_native_acl({zk::Acl{64, zk::Id{"world", "anyone"}}}, id).error() ==
          zk::Err::kInvalidAcl);
    REQUIRE(zk_add_auth(id, "digest", "alice:secret", ""));
    Result<std::vector<proto::AclEntry>, zk::Err> acl =
        zk_native_acl({creator_all, zk::Acl{zk::kPermRead, zk::Id{"ip", "10.0.0.0/8"}},
                       zk::Acl{zk::kPermRead, zk::Id{"ip", "10.0.0.0/8"}}},
                      id);
    REQUIRE(acl.ok());
    REQUIRE(acl->size() == 2);  // the repeated entry once
    CHECK((*acl)[0].id().scheme() == "digest");
    CHECK((*acl)[0].id().id() == "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
    CHECK((*acl)[1].id().id() == "10.0.0.0/8");
}

zk::Request auth_request(std::string scheme, std::string auth) {
    return zk::Request{zk::kXidAuth, zk::OpCode::kAuth,
                       zk::AuthRequest{0, std::move(scheme), std::move(auth)}};
}

TEST_CASE("after addauth the requests carry the digest id; create takes its ACL", "[zk][acl]") {
    Fixture f;
    f.open();
    f.send(auth_request("digest", "alice:secret"));
    zk::Request create = create_request(1, "/a", zk::CreateMode::kPersistent);
    std::get<zk::CreateRequest>(create.body).acl = {zk::Acl{zk::kPermAll, zk::Id{"auth", ""}}};
    f.send(create);
    f.send(zk::Request{
        2, zk::OpCode::kSetAcl,
        zk::SetAclRequest{"/a", {zk::Acl{zk::kPermRead, zk::Id{"world", "anyone"}}}, 4}});
    f.send(zk::Request{3, zk::OpCode::kWhoAmI, zk::EmptyRequest{}});
    REQUIRE(f.backend.requests.size() == 2);  // auth and whoAmI are answered here
    const proto::Request& created = f.backend.requests[0];
    REQUIRE(created.caller().ids_size() == 2);
    CHECK(created.caller().ids(1).id() == "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
    REQUIRE(created.create().acl_size() == 1);
    CHECK(created.create().acl(0).id().scheme() == "digest");
    CHECK(created.create().acl(0).perms() == static_cast<uint32_t>(zk::kPermAll));
    const proto::Request& set = f.backend.requests[1];
    CHECK(set.set_acl().path() == "/a");
    CHECK(set.set_acl().version() == 4);
    CHECK(set.seq() == created.seq() + 1);  // a write of the session
    f.answer(0, ok());
    proto::Response refused = ok();
    refused.set_code(proto::NO_AUTH);
    f.answer(1, refused);
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 4);
    CHECK(replies[0].xid == zk::kXidAuth);
    CHECK(replies[0].err == 0);
    CHECK(replies[2].err == static_cast<int32_t>(zk::Err::kNoAuth));
    // whoAmI: the user (not the hash), then the address.
    CHECK(net::load_u32(replies[3].body, 0) == 2);
    CHECK(string_at(replies[3].body, 4) == "digest");
    CHECK(string_at(replies[3].body, 14) == "alice");
    CHECK(string_at(replies[3].body, 23) == "ip");
    CHECK(string_at(replies[3].body, 29) == "127.0.0.1");
    CHECK_FALSE(f.output.closed);
}

TEST_CASE("a failed addauth answers AUTHFAILED and closes the connection", "[zk][acl]") {
    Fixture f;
    f.open();
    f.send(auth_request("kerberos", "x"));
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].xid == zk::kXidAuth);
    CHECK(replies[0].err == static_cast<int32_t>(zk::Err::kAuthFailed));
    CHECK(f.output.closed);
}

TEST_CASE("the super digest is proved by addauth, never by a client's own claim", "[zk][acl]") {
    ZkFrontendOptions options = Fixture::defaults();
    options.super_digest = "super:xQJmxLMiHGwaqBvst5y6rkB6HQs=";
    Fixture f(options);
    f.open();
    f.send(auth_request("digest", "super:wrong"));
    f.send(path_request(1, zk::OpCode::kGetData, "/a"));
    f.send(auth_request("digest", "super:admin"));
    f.send(path_request(2, zk::OpCode::kGetData, "/a"));
    REQUIRE(f.backend.requests.size() == 2);
    auto has_super = [](const proto::Request& r) {
        for (const proto::AclId& id : r.caller().ids()) {
            if (id.scheme() == "super") {
                return true;
            }
        }
        return false;
    };
    CHECK_FALSE(has_super(f.backend.requests[0]));
    CHECK(has_super(f.backend.requests[1]));
}

}  // namespace zk_auth_test
}  // namespace raftlock::server::zk_frontend_fixture
