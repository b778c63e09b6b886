// Membership changes through the client protocol: a node joins and serves, the leader and a
// follower are removed and stop, and bad changes get clear errors.

#include <optional>

#include <catch2/catch.hpp>

#include "replica_cluster.h"

namespace raftlock::server::test {
namespace {

proto::Request change(uint64_t request_id,
                      proto::ChangeMember::Kind kind,
                      uint64_t node,
                      const std::string& address = "") {
    proto::Request r;
    r.set_request_id(request_id);
    r.mutable_change_member()->set_kind(kind);
    r.mutable_change_member()->set_node_id(node);
    r.mutable_change_member()->set_address(address);
    return r;
}

proto::Request list_members(uint64_t request_id) {
    proto::Request r;
    r.set_request_id(request_id);
    r.mutable_list_members();
    return r;
}

std::vector<uint64_t> ids(const proto::MembersResult& members) {
    std::vector<uint64_t> out;
    for (const proto::Member& m : members.members()) {
        out.push_back(m.id());
    }
    return out;
}

proto::Request create(uint64_t request_id,
                      uint64_t session,
                      uint64_t seq,
                      const std::string& path) {
    proto::Request r;
    r.set_request_id(request_id);
    r.set_session_id(session);
    r.set_seq(seq);
    r.mutable_create()->set_path(path);
    r.mutable_create()->set_data("v");
    return r;
}

uint64_t open_session(ReplicaCluster& c, uint64_t node, net::ConnectionId conn) {
    proto::Request r;
    r.set_request_id(100);
    r.mutable_open_session()->set_timeout_ms(60000);
    auto opened = c.call(node, conn, r);
    REQUIRE(opened.has_value());
    REQUIRE(opened->code() == proto::OK);
    return opened->open_session().session_id();
}

TEST_CASE("a node joins and serves; a removed leader and a removed follower stop",
          "[server][membership]") {
    ReplicaCluster c;
    uint64_t leader = c.wait_for_leader();
    c.connect(leader, 1);
    const uint64_t session = open_session(c, leader, 1);
    REQUIRE(c.call(leader, 1, create(1, session, 1, "/before"))->code() == proto::OK);

    c.add_node(4);
    const uint64_t follower = c.follower();
    c.connect(follower, 2);
    // Asked of a follower: it forwards the change to the leader and relays the answer.
    auto added =
        c.call(follower, 2, change(2, proto::ChangeMember::ADD_VOTER, 4, "127.0.0.1:7004"));
    REQUIRE(added.has_value());
    REQUIRE(added->code() == proto::OK);
    CHECK(added->node_id() == follower);
    CHECK(added->leader_hint() == leader);
    CHECK(ids(added->members()) == std::vector<uint64_t>{1, 2, 3, 4});
    CHECK(added->members().members(3).address() == "127.0.0.1:7004");
    CHECK_FALSE(added->members().members(3).learner());
    // The leader's refusal comes back the same way.
    auto again = c.call(follower, 2, change(3, proto::ChangeMember::ADD_VOTER, 4, "h4:7004"));
    REQUIRE(again.has_value());
    CHECK(again->code() == proto::BAD_ARGUMENTS);
    CHECK(again->message().find("already a voter") != std::string::npos);

    // The new node has the log from the start (the founding configuration included) and
    // serves linearizable reads.
    REQUIRE(c.run_until(
        [&] { return c.replica(4).applied_index() >= c.replica(leader).applied_index(); }));
    c.connect(4, 3);
    proto::Request get;
    get.set_request_id(4);
    get.mutable_exists()->set_path("/before");
    auto found = c.call(4, 3, get);
    REQUIRE(found.has_value());
    CHECK(found->exists().exists());
    auto listed = c.call(4, 3, list_members(5));
    REQUIRE(listed.has_value());
    CHECK(ids(listed->members()) == std::vector<uint64_t>{1, 2, 3, 4});

    // The leader removes itself: answered once committed, then it stops.
    const uint64_t old_leader = leader;
    auto removed = c.call(leader, 1, change(6, proto::ChangeMember::REMOVE, leader));
    REQUIRE(removed.has_value());
    REQUIRE(removed->code() == proto::OK);
    CHECK(ids(removed->members()).size() == 3);
    REQUIRE(c.run_until([&] { return c.replica(old_leader).removed(); }));
    c.crash(old_leader);  // raftlockd exits
    leader = c.wait_for_leader();
    CHECK(leader != old_leader);

    // A follower's removal: the leader stops replicating to it at once, so it learns of it from
    // a peer refusing it.
    uint64_t victim = 0;
    for (uint64_t id : {1, 2, 3, 4}) {
        if (id != old_leader && id != leader) {
            victim = id;
        }
    }
    c.connect(leader, 6);
    // A new leader takes changes once it has committed an entry of its term (the fix of the
    // single-server change bug); until then the answer is CHANGE_IN_PROGRESS, and nothing is done.
    std::optional<proto::Response> removed_follower;
    for (uint64_t attempt = 0; attempt < 50; ++attempt) {
        removed_follower =
            c.call(leader, 6, change(10 + attempt, proto::ChangeMember::REMOVE, victim));
        REQUIRE(removed_follower.has_value());
        if (removed_follower->code() != proto::CHANGE_IN_PROGRESS) {
            break;
        }
        c.run_until([] { return false; }, 20);
    }
    REQUIRE(removed_follower->code() == proto::OK);
    REQUIRE(c.run_until([&] { return c.replica(victim).removed(); }));
    c.crash(victim);

    // Two voters left; writes still commit.
    const uint64_t new_session = open_session(c, leader, 6);
    auto written = c.call(leader, 6, create(90, new_session, 1, "/after"));
    REQUIRE(written.has_value());
    CHECK(written->code() == proto::OK);
}

TEST_CASE("bad membership changes get clear errors and change nothing", "[server][membership]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    c.connect(leader, 1);
    struct Case {
        proto::Request request;
        proto::Code code;
        std::string message;
    };
    const std::vector<Case> cases{
        {change(1, proto::ChangeMember::ADD_VOTER, 4), proto::BAD_ARGUMENTS, "address"},
        {change(2, proto::ChangeMember::ADD_VOTER, 4, "no-port"), proto::BAD_ARGUMENTS,
         "expected HOST:PORT"},
        {change(3, proto::ChangeMember::ADD_VOTER, 2), proto::BAD_ARGUMENTS, "already a voter"},
        {change(4, proto::ChangeMember::REMOVE, 9), proto::BAD_ARGUMENTS, "not a member"},
        {change(5, proto::ChangeMember::REMOVE, 2, "h:1"), proto::BAD_ARGUMENTS, "no address"},
        {change(6, proto::ChangeMember::ADD_VOTER, 0, "h:1"), proto::BAD_ARGUMENTS, "positive"},
        {change(7, static_cast<proto::ChangeMember::Kind>(9), 4, "h:1"), proto::BAD_ARGUMENTS,
         "unknown kind"},
    };
    for (const Case& k : cases) {
        auto r = c.call(leader, 1, k.request);
        REQUIRE(r.has_value());
        INFO(r->message());
        CHECK(r->code() == k.code);
        CHECK(r->message().find(k.message) != std::string::npos);
    }
    auto listed = c.call(leader, 1, list_members(8));
    REQUIRE(listed.has_value());
    CHECK(ids(listed->members()) == std::vector<uint64_t>{1, 2, 3});
}

}  // namespace
}  // namespace raftlock::server::test
