#include "statemachine/acl.h"

#include <catch2/catch.hpp>

#include "harness.h"

namespace raftlock::statemachine {
namespace {

using testing::Harness;

const AclId kAlice{"digest", "alice:hash-a"};
const AclId kBob{"digest", "bob:hash-b"};
const Caller kAliceAt{AclId{"ip", "10.0.0.5"}, kAlice};
const Caller kBobAt{AclId{"ip", "10.0.0.6"}, kBob};
const Caller kNobody{AclId{"ip", "192.168.1.9"}};
const Caller kSuper{AclId{"ip", "192.168.1.9"}, AclId{"super", ""}};

Create create_with(const std::string& path, Acl acl) {
    Create c;
    c.path = path;
    c.acl = std::move(acl);
    return c;
}

TEST_CASE("an ACL grants a permission to the ids it names and to no one else",
          "[statemachine][acl]") {
    const Acl acl{AclEntry{kPermRead | kPermWrite, kAlice},
                  AclEntry{kPermRead, {"ip", "10.0.0.0/8"}}};
    CHECK(acl_permits(acl, kPermWrite, kAliceAt));
    CHECK_FALSE(acl_permits(acl, kPermWrite, kBobAt));
    CHECK(acl_permits(acl, kPermRead, kBobAt));  // by its address, inside 10/8
    CHECK_FALSE(acl_permits(acl, kPermRead, kNobody));
    CHECK_FALSE(acl_permits(acl, kPermAdmin, kAliceAt));
    CHECK(acl_permits(acl, kPermAdmin, kSuper));
    CHECK(acl_permits({}, kPermAdmin, kNobody));  // open
    CHECK(acl_permits({AclEntry{kPermRead, {"world", "anyone"}}}, kPermRead, {}));
    CHECK(acl_permits({AclEntry{kPermRead, {"ip", "::1"}}}, kPermRead, {AclId{"ip", "::1"}}));
    CHECK_FALSE(
        acl_permits({AclEntry{kPermRead, {"ip", "10.0.0.5"}}}, kPermRead, {AclId{"ip", "::1"}}));
    // READ|ADMIN asks for either (getACL's check).
    CHECK(acl_permits(acl, kPermRead | kPermAdmin, kBobAt));
}

TEST_CASE("ACLs and callers are validated", "[statemachine][acl]") {
    CHECK(valid_acl({}));
    CHECK(valid_acl({AclEntry{kPermAll, {"world", "anyone"}}}));
    CHECK(valid_acl({AclEntry{kPermRead, {"ip", "10.1.0.0/16"}}}));
    CHECK(valid_acl({AclEntry{kPermRead, {"ip", "fe80::1/64"}}}));
    CHECK_FALSE(valid_acl({AclEntry{kPermRead, {"ip", "10.1.0.0/33"}}}));
    CHECK_FALSE(valid_acl({AclEntry{kPermRead, {"ip", "10.1.0.0/"}}}));
    CHECK_FALSE(valid_acl({AclEntry{kPermRead, {"ip", "host.example"}}}));
    CHECK_FALSE(valid_acl({AclEntry{kPermRead, {"world", "someone"}}}));
    CHECK_FALSE(valid_acl({AclEntry{kPermRead, {"digest", "alice"}}}));
    CHECK_FALSE(valid_acl({AclEntry{kPermRead, {"digest", "a:b:c"}}}));
    CHECK_FALSE(valid_acl({AclEntry{kPermRead, {"auth", ""}}}));  // expanded before the log
    CHECK_FALSE(valid_acl({AclEntry{kPermRead, {"sasl", "x"}}}));
    CHECK_FALSE(valid_acl({AclEntry{32, {"world", "anyone"}}}));
    CHECK(valid_caller(kAliceAt));
    CHECK(valid_caller(kSuper));
    CHECK_FALSE(valid_caller({AclId{"ip", "10.0.0.0/8"}}));  // an address, not a network
    CHECK_FALSE(valid_caller({AclId{"world", "anyone"}}));
    CHECK_FALSE(valid_caller({AclId{"super", "x"}}));
    CHECK(canonical_acl({AclEntry{kPermAll, {"world", "anyone"}}}).empty());
    CHECK(displayed_acl({}) == Acl{AclEntry{kPermAll, {"world", "anyone"}}});
}

TEST_CASE("writes are checked against the node's ACL, in ZooKeeper's order of errors",
          "[statemachine][acl]") {
    Harness h;
    SessionId s = h.open();
    // Alice may do everything on /a; everyone may read it.
    const Acl acl{AclEntry{kPermAll, kAlice}, AclEntry{kPermRead, {"world", "anyone"}}};
    REQUIRE(h.run_as(s, kAliceAt, create_with("/a", acl)).response.code == ErrorCode::kOk);
    // CREATE on the parent.
    CHECK(h.run_as(s, kBobAt, create_with("/a/b", {})).response.code == ErrorCode::kNoAuth);
    CHECK(h.run_as(s, kBobAt, create_with("/a/b/c", {})).response.code == ErrorCode::kNoNode);
    REQUIRE(h.run_as(s, kAliceAt, create_with("/a/b", {})).response.code == ErrorCode::kOk);
    // An existing child: NOAUTH comes first, as ZooKeeper checks the parent before the name.
    CHECK(h.run_as(s, kBobAt, create_with("/a/b", {})).response.code == ErrorCode::kNoAuth);
    // WRITE on the node; /a/b is open, so Bob may set it.
    CHECK(h.run_as(s, kBobAt, SetData{"/a", "x", -1}).response.code == ErrorCode::kNoAuth);
    CHECK(h.run_as(s, kBobAt, SetData{"/a/b", "x", -1}).response.code == ErrorCode::kOk);
    // DELETE on the parent: Bob cannot delete the open /a/b under Alice's /a.
    CHECK(h.run_as(s, kBobAt, Delete{"/a/b", -1}).response.code == ErrorCode::kNoAuth);
    CHECK(h.run_as(s, kBobAt, Delete{"/a/zz", -1}).response.code == ErrorCode::kNoNode);
    // A sub-op refused NOAUTH fails the whole multi (the check passes: anyone may read /a).
    Multi m;
    m.ops = {MultiOp{Check{"/a", -1}}, MultiOp{SetData{"/a", "y", -1}}};
    ApplyResult multi = h.run_as(s, kBobAt, m);
    CHECK(multi.response.code == ErrorCode::kNoAuth);
    CHECK(multi.response.results[0].code == ErrorCode::kRolledBack);
    CHECK(multi.response.results[1].code == ErrorCode::kNoAuth);
    CHECK(h.sm.get("/a").value().data.empty());
    // Without a caller (the native port) nothing is checked; the super user passes every check.
    CHECK(h.run(s, SetData{"/a", "native", -1}).response.code == ErrorCode::kOk);
    CHECK(h.run_as(s, kSuper, Delete{"/a/b", -1}).response.code == ErrorCode::kOk);
    // Reads are checked where they are served, with the same ACL.
    CHECK(h.sm.permits("/a", kPermRead, kNobody));
    CHECK_FALSE(h.sm.permits("/a", kPermWrite, kNobody));
    CHECK(h.sm.permits("/missing", kPermRead, kNobody));
}

TEST_CASE("setACL needs ADMIN and the ACL version, and counts aversion", "[statemachine][acl]") {
    Harness h;
    SessionId s = h.open();
    REQUIRE(h.run_as(s, kAliceAt, create_with("/a", {AclEntry{kPermAll, kAlice}})).response.code ==
            ErrorCode::kOk);
    const Acl bob_reads{AclEntry{kPermAll, kAlice}, AclEntry{kPermRead, kBob}};
    CHECK(h.run_as(s, kBobAt, SetAcl{"/a", bob_reads, -1}).response.code == ErrorCode::kNoAuth);
    CHECK(h.run_as(s, kAliceAt, SetAcl{"/a", bob_reads, 3}).response.code ==
          ErrorCode::kBadVersion);
    CHECK(h.run_as(s, kAliceAt, SetAcl{"/nope", bob_reads, -1}).response.code ==
          ErrorCode::kNoNode);
    const Stat before = *h.sm.exists("/a");
    Response set = h.run_as(s, kAliceAt, SetAcl{"/a", bob_reads, 0}).response;
    REQUIRE(set.code == ErrorCode::kOk);
    CHECK(set.stat.aversion == 1);
    CHECK(set.stat.mzxid == before.mzxid);  // data did not change
    CHECK(set.stat.version == before.version);
    CHECK(*h.sm.acl("/a") == bob_reads);
    CHECK(h.sm.permits("/a", kPermRead, kBobAt));
    // Opening it again stores the open form.
    REQUIRE(h.run_as(s, kAliceAt, SetAcl{"/a", {AclEntry{kPermAll, {"world", "anyone"}}}, 1})
                .response.code == ErrorCode::kOk);
    CHECK(h.sm.acl("/a")->empty());
    CHECK(h.sm.exists("/a")->aversion == 2);
}

TEST_CASE("a snapshot keeps ACLs and aversions, and one from before ACLs restores open",
          "[statemachine][acl][snapshot]") {
    Harness h;
    SessionId s = h.open();
    REQUIRE(h.run_as(s, kAliceAt, create_with("/a", {AclEntry{kPermRead, kAlice}})).response.code ==
            ErrorCode::kOk);
    REQUIRE(h.run_as(s, kAliceAt, create_with("/b", {})).response.code == ErrorCode::kOk);
    REQUIRE(h.run(s, SetAcl{"/b", {AclEntry{kPermAll, kBob}}, -1}).response.code == ErrorCode::kOk);
    StateMachine copy{Config{}};
    REQUIRE(copy.restore(h.sm.snapshot()) == ErrorCode::kOk);
    CHECK(*copy.acl("/a") == Acl{AclEntry{kPermRead, kAlice}});
    CHECK(*copy.acl("/b") == Acl{AclEntry{kPermAll, kBob}});
    CHECK(copy.exists("/b")->aversion == 1);
    CHECK(copy.state_hash() == h.sm.state_hash());
}

TEST_CASE("commands of format version 2 still decode, with open nodes and no caller",
          "[statemachine][acl][codec]") {
    // A version-2 Create of "/v2" written by an earlier server: version, client 7, seq 1, ack 0,
    // time 0, no fence, tag 6 (Create), path, data "", kind 0, ttl 0.
    const std::string v2{"\x02\x07\x01\x00\x00\x00\x06\x03/v2\x00\x00\x00", 14};
    Result<Command, ErrorCode> c = decode_command(v2);
    REQUIRE(c.ok());
    const auto& create = std::get<Create>(c->op);
    CHECK(create.path == "/v2");
    CHECK(create.acl.empty());
    CHECK_FALSE(c->caller.has_value());
    // A SetAcl tag is not a version-2 op.
    const std::string v2_set_acl{"\x02\x07\x01\x00\x00\x00\x10\x02/a\x00\x01", 12};
    CHECK(decode_command(v2_set_acl).error() == ErrorCode::kMalformedCommand);
    // Version 3 round-trips the caller and the ACL.
    Command cmd;
    cmd.client_id = 7;
    cmd.seq = 1;
    cmd.caller = kAliceAt;
    cmd.op = create_with("/a", {AclEntry{kPermRead, kBob}});
    Result<std::string, ErrorCode> bytes = encode_command(cmd);
    REQUIRE(bytes.ok());
    CHECK(decode_command(*bytes).value() == cmd);
    // An invalid caller or ACL is refused before the log.
    cmd.caller = Caller{AclId{"ip", "not-an-address"}};
    CHECK(encode_command(cmd).error() == ErrorCode::kBadArguments);
    cmd.caller = kAliceAt;
    cmd.op = create_with("/a", {AclEntry{kPermRead, {"digest", "nocolon"}}});
    CHECK(encode_command(cmd).error() == ErrorCode::kBadArguments);
}

}  // namespace
}  // namespace raftlock::statemachine
