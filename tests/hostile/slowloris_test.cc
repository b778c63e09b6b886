// Issue 16, row 7, against a real three-node cluster: connections to the native, Redis and
// PostgreSQL ports of one node, each sending one byte of a message every half second and never
// finishing it. Before, each byte restarted the 30 s inactivity timer, so such connections stayed
// open forever. Now a message must arrive whole within --client-message-deadline-ms of its first
// byte (2 s here): every one of them is closed by then, and a normal client's write answers
// within a second throughout.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

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

constexpr size_t kPerPort = 2000 / RAFTLOCK_HOSTILE_SLOWDOWN;
constexpr int kDeadlineMs = 2000;

TEST_CASE("a byte a second cannot hold a client connection open", "[hostile][slowloris]") {
    raise_fd_limit();
    ProcessCluster c(
        3, {"--redis-listen", "{redis}", "--pg-listen", "{pg}", "--client-message-deadline-ms",
            std::to_string(kDeadlineMs), "--max-connections-per-address", "10000"});
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    Swarm native(c.ports(leader).client, kPerPort);
    Swarm redis(c.ports(leader).redis, kPerPort);
    Swarm pg(c.ports(leader).pg, kPerPort);
    // Each a message that never ends: a native frame declaring 100 bytes, a RESP array of two
    // items, a PostgreSQL startup packet declaring 100 bytes.
    const std::string native_prefix("\0\0\0\x64", 4);
    const std::string redis_prefix = "*2\r\n$3\r\nGET\r\n$1";
    const std::string pg_prefix("\0\0\0\x64\0\x03\0\0", 8);
    const auto start = Clock::now();
    uint64_t request_id = 1;
    size_t slow_writes = 0;
    for (size_t i = 0; Clock::now() < start + std::chrono::milliseconds(kDeadlineMs * 2); ++i) {
        native.drip(std::string(1, native_prefix[i % native_prefix.size()]));
        redis.drip(std::string(1, redis_prefix[i % redis_prefix.size()]));
        pg.drip(std::string(1, pg_prefix[i % pg_prefix.size()]));
        slow_writes += write_answers(c, leader, request_id++) ? 0 : 1;
        ::usleep(500 * 1000);
    }
    // Counted once, at the end (tend() would reopen them).
    const size_t closed_native = native.tend();
    const size_t closed_redis = redis.tend();
    const size_t closed_pg = pg.tend();
    INFO("closed within " << kDeadlineMs * 2 << " ms: native " << closed_native << ", redis "
                          << closed_redis << ", pg " << closed_pg << " of " << kPerPort
                          << " each; late writes " << slow_writes);
    WARN("trickling connections closed within "
         << kDeadlineMs * 2 << " ms: native " << closed_native << ", redis " << closed_redis
         << ", pg " << closed_pg << " of " << kPerPort << " each; late writes " << slow_writes);
    CHECK(closed_native == kPerPort);
    CHECK(closed_redis == kPerPort);
    CHECK(closed_pg == kPerPort);
    CHECK(slow_writes == 0);
    // Closed by the deadline, not for a malformed message.
    for (const char* port : {"client port", "redis port", "postgres port"}) {
        INFO(port);
        CHECK(c.log_of(leader).find(std::string(port) + ": closed a connection that sent no whole "
                                                        "message within 2000 ms") !=
              std::string::npos);
    }
    for (uint64_t id : c.ids()) {
        INFO("node " << id << " log:\n" << c.log_of(id));
        CHECK(c.wait_exit(id, 1) == -1);
    }
}

}  // namespace
}  // namespace raftlock::hostile
