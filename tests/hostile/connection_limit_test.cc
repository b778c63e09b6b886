// Issue 16, row 3, against a real three-node cluster whose nodes may open 2,048 files: thousands of
// idle native and Redis connections to the leader. Before, the ports accepted until the process ran
// out of file descriptors: every port stopped accepting ("Too many open files") and the store
// could fail next. Now a node admits client connections only up to its open-file limit minus a
// reserve for the store, the peers and the admin port, and at most --max-connections-per-address
// from one address: an attacking host gets its share and no more, a normal client still connects
// and writes, and the node never nears its descriptor limit.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <sys/resource.h>
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

constexpr size_t kNodeOpenFiles = 2048;
constexpr size_t kPerAddress = 256;

size_t open_files(pid_t pid) {
    size_t n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        ++n;
    }
    return n;
}

// Connections this test process can still open, keeping some for itself.
size_t descriptors_to_spare() {
    rlimit limit{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
    return limit.rlim_cur > 512 ? static_cast<size_t>(limit.rlim_cur) - 512 : 0;
}

// The node has accepted or refused every connection of the swarms.
void settle() {
    ::usleep(2000 * 1000);
}

TEST_CASE("idle connections cannot exhaust a node's file descriptors", "[hostile][connections]") {
    raise_fd_limit();
    ProcessCluster c(
        3,
        {"--redis-listen", "{redis}", "--max-connections-per-address", std::to_string(kPerAddress)},
        {"/usr/bin/prlimit", "--nofile=" + std::to_string(kNodeOpenFiles), "--"});
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const pid_t pid = node_pid(c, leader);
    REQUIRE(pid > 0);
    RawConnection held(c.ports(leader).client);  // a client connected before the attack
    uint64_t request_id = 1;
    REQUIRE(session_opens(held, request_id++));

    // One host: as many idle native and Redis connections as this process can open, up to
    // 10,000 each.
    const size_t per_port = std::min<size_t>(10000, descriptors_to_spare() / 4);
    REQUIRE(per_port > kNodeOpenFiles);  // enough to exhaust the node without the limits
    std::vector<std::unique_ptr<Swarm>> swarms;
    swarms.push_back(std::make_unique<Swarm>(c.ports(leader).client, per_port, "127.0.0.10"));
    swarms.push_back(std::make_unique<Swarm>(c.ports(leader).redis, per_port, "127.0.0.10"));
    settle();
    {
        INFO("one host's attack: the node holds " << open_files(pid) << " files");
        // Another client still connects and writes; the one connected before still writes.
        RawConnection fresh(c.ports(leader).client);
        CHECK(session_opens(fresh, request_id++));
        CHECK(session_opens(held, request_id++));
    }

    // Many hosts: 16 more addresses, together past the node's budget.
    const size_t per_address = std::min<size_t>(kPerAddress, descriptors_to_spare() / 4 / 16);
    for (int host = 0; host < 16; ++host) {
        swarms.push_back(std::make_unique<Swarm>(c.ports(leader).redis, per_address,
                                                 "127.0.1." + std::to_string(host + 1)));
    }
    settle();
    const size_t files = open_files(pid);
    const std::optional<std::string> metrics =
        integration::http_get(c.ports(leader).admin, "/metrics");
    INFO("many hosts' attack: the node holds " << files << " of " << kNodeOpenFiles << " files");
    INFO("leader log:\n" << c.log_of(leader));
    // The store's reserve stays free: RocksDB may open its 256 table files and its logs.
    CHECK(files + 256 < kNodeOpenFiles);
    CHECK(session_opens(held, request_id++));  // through the store, on the leader
    REQUIRE(metrics.has_value());
    CHECK(metrics->find("raftlock_client_connections_refused_total 0\n") == std::string::npos);
    CHECK(c.log_of(leader).find("Too many open files") == std::string::npos);
    const std::optional<std::string> health =
        integration::http_get(c.ports(leader).admin, "/healthz");
    CHECK(health == std::optional<std::string>("ok\n"));

    WARN("node under prlimit --nofile=" << kNodeOpenFiles << ": " << files
                                        << " files open under the attack of " << per_port << " + "
                                        << per_port << " connections from one host and "
                                        << 16 * per_address << " from 16 more");

    // The attack ends: its slots come back.
    swarms.clear();
    ::usleep(500 * 1000);
    RawConnection after(c.ports(leader).client);
    CHECK(session_opens(after, request_id++));
    for (uint64_t id : c.ids()) {
        CHECK(c.wait_exit(id, 1) == -1);
    }
}

}  // namespace
}  // namespace raftlock::hostile
