// Issue 16, row 1, against a real three-node cluster: a broken peer sends a follower a heartbeat of
// term 2^64-1 (and more messages out of range). Before the peer-input checks the term wrapped to 0
// and the cluster never served again; now every such message is dropped and counted, and the
// cluster keeps serving throughout and restarts cleanly afterwards.

#include "raft/peer_input.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/hostile/probes.h"
#include "tests/hostile/raw_peer.h"
#include "tests/integration/process_cluster.h"
#include "tests/integration/raw_client.h"

namespace raftlock::hostile {
namespace {

using integration::http_get;
using integration::ProcessCluster;
using integration::RawConnection;
using raft::Message;
using raft::MessageType;

constexpr uint64_t kClusterId = 42;  // ProcessCluster's

// The value of raftlock_peer_messages_dropped_total{reason="..."} on a node's /metrics; -1 when
// the series is missing.
int64_t dropped(ProcessCluster& c, uint64_t node, const std::string& reason) {
    return metric(c, node, "raftlock_peer_messages_dropped_total{reason=\"" + reason + "\"}");
}

// Nobody exited, by crash or abort.
void check_all_running(ProcessCluster& c) {
    for (uint64_t id : c.ids()) {
        INFO("node " << id << " log:\n" << c.log_of(id));
        CHECK(c.wait_exit(id, 1) == -1);
    }
}

// The messages a broken peer claiming to be `leader` sends `follower`, each out of range.
std::vector<Message> to_follower(uint64_t leader, uint64_t follower, uint64_t term) {
    const auto heartbeat = [&](uint64_t t, uint64_t commit) {
        return Message{.type = MessageType::kHeartbeat,
                       .from = leader,
                       .to = follower,
                       .term = t,
                       .commit = commit};
    };
    Message flood{.type = MessageType::kAppend, .from = leader, .to = follower, .term = term};
    flood.entries.resize(raft::PeerInputLimits{}.entries_per_message_max + 1);
    return {
        heartbeat(std::numeric_limits<uint64_t>::max(), 0),  // row 1 itself
        heartbeat(raft::kTermMax + 1, 0),
        heartbeat(term + (uint64_t{1} << 32) + 1, 0),  // beyond any plausible growth
        heartbeat(term, 1'000'000'000),                // commits entries the follower lacks
        flood,                                         // more entries than any message holds
    };
}

// One burst, each on a connection of its own. The node keeps it beside the real peer's link (the
// port cannot tell them apart, docs/protocol.md): the real link is not cut, and nothing but the
// messages' checks stands between them and the node's state.
void attack(ProcessCluster& c, uint64_t leader, uint64_t follower, uint64_t term) {
    const std::string to_follower_bytes = RawPeer::encode(to_follower(leader, follower, term));
    // The leader hears that the follower holds entries it never wrote.
    const std::string to_leader_bytes =
        RawPeer::encode({Message{.type = MessageType::kAppendResponse,
                                 .from = follower,
                                 .to = leader,
                                 .term = term,
                                 .index = 1'000'000'000}});
    {
        RawPeer as_leader(c.ports(follower).raft, kClusterId, leader, follower);
        CHECK(as_leader.send_encoded(to_follower_bytes));
    }
    RawPeer as_follower(c.ports(leader).raft, kClusterId, follower, leader);
    CHECK(as_follower.send_encoded(to_leader_bytes));
}

TEST_CASE("a heartbeat of term 2^64-1 on a follower's Raft port does not stop the cluster",
          "[hostile][peer_input]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint64_t follower = leader % 3 + 1;
    const uint64_t term = term_of(c, leader);
    REQUIRE(term > 0);
    REQUIRE(write_answers(c, leader, 1));

    uint64_t request_id = 100;
    // Three seconds of attack; a write through the leader and one through the attacked follower
    // each answer within a second, all the while.
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (std::chrono::steady_clock::now() < end) {
        attack(c, leader, follower, term);
        CHECK(write_answers(c, leader, ++request_id));
        CHECK(write_answers(c, follower, ++request_id));
    }
    check_all_running(c);
    // No election: the same leader, in the same term, on every node.
    for (uint64_t id : c.ids()) {
        CHECK(term_of(c, id) == term);
        CHECK(c.status_field(id, "leader") == std::to_string(leader));
    }
    for (const char* reason :
         {"term_beyond_max", "term_jump", "commit_beyond_log", "entries_too_many"}) {
        INFO(reason);
        CHECK(dropped(c, follower, reason) > 0);
    }
    CHECK(dropped(c, leader, "ack_beyond_log") > 0);

    // Every node restarts cleanly (before the checks, each aborted on its stored log for good).
    for (uint64_t id : c.ids()) {
        c.stop(id);
    }
    for (uint64_t id : c.ids()) {
        c.start(id);
    }
    const uint64_t new_leader = c.wait_for_leader();
    CHECK(new_leader != 0);
    if (new_leader != 0) {
        CHECK(write_answers(c, new_leader, ++request_id));
        CHECK(term_of(c, new_leader) < term + 100);
    }
    check_all_running(c);
}

}  // namespace
}  // namespace raftlock::hostile
