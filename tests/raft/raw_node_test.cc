#include <catch2/catch.hpp>

#include "raft/text.h"
#include "tests/raft/cluster_fixture.h"

namespace raftlock::raft {
namespace {

using testing::TestCluster;

TEST_CASE("a campaigning node of a fresh three-node cluster becomes leader", "[raft][raw_node]") {
    TestCluster c(3);
    c.node(1).campaign();
    c.pump();
    CHECK(c.node(1).status().soft_state.role == Role::kLeader);
    CHECK(c.node(2).status().soft_state.leader == 1);
    CHECK(c.node(3).status().soft_state.leader == 1);
    CHECK(c.node(1).status().hard_state.term == 2);
}

TEST_CASE("proposals commit and apply in the same order on every node", "[raft][raw_node]") {
    TestCluster c(3);
    c.node(1).campaign();
    c.pump();
    for (int i = 0; i < 100; ++i) {
        REQUIRE(c.node(1).propose("v" + std::to_string(i)).ok());
    }
    REQUIRE(c.node(2).propose("from-follower").ok());
    c.pump();
    for (NodeId id = 1; id <= 3; ++id) {
        const auto& applied = c.at(id).applied;
        REQUIRE(applied.size() == 102);  // term-start entry + 100 + forwarded one
        CHECK(applied[1].data == "v0");
        CHECK(applied[100].data == "v99");
        CHECK(applied[101].data == "from-follower");
        CHECK(applied == c.at(1).applied);
    }
}

TEST_CASE("a read index is served after a heartbeat round", "[raft][raw_node][read_index]") {
    TestCluster c(3);
    c.node(1).campaign();
    c.pump();
    c.node(1).read_index("r1");
    c.node(3).read_index("r3");
    c.pump();
    REQUIRE(c.at(1).read_states.size() == 1);
    CHECK(c.at(1).read_states[0].context == "r1");
    CHECK(c.at(1).read_states[0].index == c.node(1).status().hard_state.commit);
    REQUIRE(c.at(3).read_states.size() == 1);
    CHECK(c.at(3).read_states[0].context == "r3");
}

TEST_CASE("leadership moves to the transferee", "[raft][raw_node][transfer]") {
    TestCluster c(3);
    c.node(1).campaign();
    c.pump();
    c.node(1).transfer_leadership(3);
    c.pump();
    CHECK(c.node(3).status().soft_state.role == Role::kLeader);
    CHECK(c.node(1).status().soft_state.leader == 3);
}

TEST_CASE("a learner is added, replicated to and promoted", "[raft][raw_node][membership]") {
    TestCluster c(3);
    c.node(1).campaign();
    c.pump();
    Status dup = c.node(1).propose_conf_change({ConfChangeType::kAddVoter, 3});
    REQUIRE(!dup.ok());
    CHECK(dup.code() == ErrorCode::kInvalidArgument);
    REQUIRE(c.node(1).propose_conf_change({ConfChangeType::kRemoveNode, 3}).ok());
    c.pump();
    CHECK(c.node(1).status().conf_state.voters == std::vector<NodeId>{1, 2});
    REQUIRE(c.node(1).propose_conf_change({ConfChangeType::kAddLearner, 3}).ok());
    c.pump();
    CHECK(c.node(1).status().conf_state.learners == std::vector<NodeId>{3});
    REQUIRE(c.node(1).propose_conf_change({ConfChangeType::kAddVoter, 3}).ok());
    c.pump();
    CHECK(c.node(2).status().conf_state.voters == std::vector<NodeId>{1, 2, 3});
}

}  // namespace
}  // namespace raftlock::raft
