// Issue 16, row 9, against a real three-node cluster: 200 connections that never say Hello, held
// against the leader's and the other follower's Raft ports (reopened as soon as closed), while a
// follower restarts. Before, those ports refused every new connection once their 64 slots were
// taken, so the restarted follower could not rejoin for 32 s, and each refusal was logged with a
// new text (~4 MB/s). Now a full port closes its oldest silent connection for the newcomer and
// the log lines stay within the limiter's budget.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <unistd.h>

#include "proto/client.pb.h"
#include "tests/hostile/probes.h"
#include "tests/hostile/swarm.h"
#include "tests/integration/process_cluster.h"
#include "tests/integration/raw_client.h"

namespace raftlock::hostile {
namespace {

using integration::ProcessCluster;
using integration::RawConnection;
using Clock = std::chrono::steady_clock;

constexpr size_t kSilentConnections = 200;
constexpr auto kRejoinDeadline = std::chrono::seconds(3 * RAFTLOCK_HOSTILE_SLOWDOWN);

uint64_t field(ProcessCluster& c, uint64_t node, const std::string& name) {
    const std::optional<std::string> v = c.status_field(node, name);
    return v ? std::stoull(*v) : 0;
}

TEST_CASE("silent connections to the Raft ports cannot keep a restarted member out",
          "[hostile][peer_port]") {
    raise_fd_limit();
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint64_t restarted = leader % 3 + 1;
    const uint64_t other = 6 - leader - restarted;  // ids 1, 2, 3
    REQUIRE(other != leader);
    REQUIRE(other != restarted);

    c.kill(restarted);
    uint64_t request_id = 1;
    for (int i = 0; i < 20; ++i) {  // entries the restarted node must catch up on
        REQUIRE(write_answers(c, leader, request_id++));
    }
    const size_t leader_log_before = c.log_of(leader).size();

    Swarm at_leader(c.ports(leader).raft, kSilentConnections);
    Swarm at_other(c.ports(other).raft, kSilentConnections);
    for (int i = 0; i < 20; ++i) {  // the ports fill up and stay full
        at_leader.tend();
        at_other.tend();
        ::usleep(50 * 1000);
    }
    c.start(restarted);
    const auto started = Clock::now();
    const uint64_t target = field(c, leader, "commit");
    bool rejoined = false;
    while (Clock::now() < started + kRejoinDeadline * 3 && !rejoined) {
        at_leader.tend();
        at_other.tend();
        rejoined = field(c, restarted, "applied") >= target &&
                   c.status_field(restarted, "leader") == std::to_string(leader);
        ::usleep(20 * 1000);
    }
    const auto rejoin_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
    // Writes keep answering through the attack.
    CHECK(write_answers(c, leader, request_id++));
    const size_t leader_log_bytes = c.log_of(leader).size() - leader_log_before;
    const std::optional<std::string> metrics =
        integration::http_get(c.ports(leader).admin, "/metrics");

    INFO("rejoined after " << rejoin_ms << " ms; the leader logged " << leader_log_bytes
                           << " bytes; the swarms reopened " << at_leader.reopened() << " and "
                           << at_other.reopened() << " connections");
    INFO("restarted node's log:\n" << c.log_of(restarted));
    CHECK(rejoined);
    CHECK(std::chrono::milliseconds(rejoin_ms) < kRejoinDeadline);
    CHECK(at_leader.reopened() > 0);  // the attack ran: the node closed silent connections
    // About 10 lines a second at most, of ~150 bytes (the limiter's budget).
    CHECK(leader_log_bytes < 64 * 1024);
    REQUIRE(metrics.has_value());
    CHECK(metrics->find("raftlock_peer_incoming_evicted_total 0\n") == std::string::npos);
    CHECK(field(c, leader, "term") == field(c, other, "term"));
    for (uint64_t id : c.ids()) {
        CHECK(c.wait_exit(id, 1) == -1);
    }
    WARN("rejoined after " << rejoin_ms << " ms under " << kSilentConnections
                           << " silent connections per port; leader log +" << leader_log_bytes
                           << " bytes");
}

}  // namespace
}  // namespace raftlock::hostile
