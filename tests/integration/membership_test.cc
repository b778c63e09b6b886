// Membership with real processes: a node added after the log was compacted catches up from a
// snapshot (whose metadata carries the members' addresses) and serves; a removed node stops.

#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "client/client.h"
#include "process_cluster.h"

namespace raftlock::integration {
namespace {

using namespace std::chrono_literals;
namespace rc = raftlock::client;

std::vector<uint64_t> ids_of(const std::vector<rc::Member>& members) {
    std::vector<uint64_t> out;
    for (const rc::Member& m : members) {
        out.push_back(m.id);
    }
    return out;
}

TEST_CASE("a node added after compaction catches up from a snapshot; a removed node stops",
          "[integration][membership]") {
    ProcessCluster c(3, {"--snapshot-every-entries", "100", "--compaction-lag-entries", "10"});
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    rc::ClientOptions o;
    o.endpoints = *rc::parse_endpoints(c.endpoints());
    rc::Client client(o);
    REQUIRE(client.open_session(30s).ok());
    REQUIRE(client.create("/data", "").ok());
    for (int i = 0; i < 150; ++i) {
        REQUIRE(client.create("/data/n" + std::to_string(i), std::to_string(i)).ok());
    }

    const uint64_t added = c.add_node();
    const std::string address = "127.0.0.1:" + std::to_string(c.ports(added).raft);
    auto members = client.change_member(rc::MemberChange::kAddVoter, added, address);
    INFO(c.log_of(added));
    REQUIRE(members.ok());
    CHECK(ids_of(*members) == std::vector<uint64_t>{1, 2, 3, added});
    CHECK(members->back().address == address);

    rc::ClientOptions no;
    no.endpoints = *rc::parse_endpoints(c.client_endpoint(added));
    rc::Client on_new(no);
    size_t seen = 0;
    for (int i = 0; i < 1000 && seen != 150; ++i) {
        auto r = on_new.children("/data");
        seen = r.ok() ? r->size() : 0;
        std::this_thread::sleep_for(10ms);
    }
    CHECK(seen == 150);
    CHECK(c.log_of(added).find("installed a snapshot") != std::string::npos);
    auto listed = on_new.members();
    REQUIRE(listed.ok());
    CHECK(ids_of(*listed) == std::vector<uint64_t>{1, 2, 3, added});

    // The leader is removed: it answers once the change is committed, then stops by itself.
    auto removed = client.change_member(rc::MemberChange::kRemove, leader);
    REQUIRE(removed.ok());
    CHECK(removed->size() == 3);
    CHECK(c.wait_exit(leader, 10000) == 0);
    CHECK(c.log_of(leader).find("removed from the cluster") != std::string::npos);

    // The others elect a leader and keep serving, the new node included. The new node may be
    // the leader now, and the first client knows only nodes 1 to 3: from here on a client that
    // knows every node.
    rc::ClientOptions all;
    all.endpoints = *rc::parse_endpoints(c.endpoints());
    rc::Client client_all(all);
    REQUIRE(client.create("/data/after", "x").ok());
    auto after = on_new.get("/data/after");
    REQUIRE(after.ok());
    CHECK(after->data == "x");

    // Bad changes are refused with the reason.
    auto again = client_all.change_member(rc::MemberChange::kAddVoter, added, address);
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().code == rc::ErrorCode::kBadArguments);
    CHECK(again.error().message.find("already a voter") != std::string::npos);
}

TEST_CASE("a membership change sent to a follower is made by the leader and answered there",
          "[integration][membership]") {
    ProcessCluster c(3);
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint64_t follower = leader % 3 + 1;
    // A client that knows only the follower, so it cannot move on to the leader.
    rc::ClientOptions o;
    o.endpoints = *rc::parse_endpoints(c.client_endpoint(follower));
    rc::Client client(o);

    const uint64_t added = c.add_node();
    const std::string address = "127.0.0.1:" + std::to_string(c.ports(added).raft);
    auto members = client.change_member(rc::MemberChange::kAddLearner, added, address);
    INFO((members.ok() ? std::string() : members.error().message));
    REQUIRE(members.ok());
    CHECK(ids_of(*members) == std::vector<uint64_t>{1, 2, 3, added});
    CHECK(members->back().learner);
    CHECK(c.log_of(leader).find(fmt::format("(forwarded by node {})", follower)) !=
          std::string::npos);
    // The leader's refusal comes back through the follower with its reason.
    auto twice = client.change_member(rc::MemberChange::kAddLearner, added, address);
    REQUIRE_FALSE(twice.ok());
    CHECK(twice.error().code == rc::ErrorCode::kBadArguments);
    CHECK(twice.error().message.find("already a learner") != std::string::npos);
    auto removed = client.change_member(rc::MemberChange::kRemove, added);
    REQUIRE(removed.ok());
    CHECK(ids_of(*removed) == std::vector<uint64_t>{1, 2, 3});
    CHECK(c.wait_exit(added, 10000) == 0);
}

}  // namespace
}  // namespace raftlock::integration
