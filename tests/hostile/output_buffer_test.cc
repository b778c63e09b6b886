// Issue 16, row 2, against a real raftlockd: 30 Redis connections pipeline GET of a 4 MiB value
// and never read a reply. Each connection's unread replies are capped by
// --client-output-buffer-bytes-max (32 MiB by default); a connection over it is closed, so the
// node's memory stays under 30 caps plus its own, it keeps running, and a normal client's write
// answers within a second throughout (the reads' replies are built 16 MiB per turn of the loop).
// RAFTLOCK_HOSTILE_OUTPUT_BUFFER_BYTES sets the cap for a run by hand (a huge one shows the
// failure this test guards against).

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/hostile/probes.h"
#include "tests/hostile/resp_raw.h"
#include "tests/integration/process_cluster.h"
#include "tests/integration/raw_client.h"
#include "tests/test_ports.h"

namespace raftlock::hostile {
// Named, not anonymous: in a unity build its helpers stay apart from other test files'.
namespace output_buffer_test {

using integration::ProcessCluster;
using integration::RawConnection;
using Clock = std::chrono::steady_clock;

constexpr size_t kAttackers = 30;
constexpr size_t kValueBytes = size_t{4} << 20;
constexpr uint64_t kCapBytesDefault = uint64_t{32} << 20;
constexpr auto kAttack = std::chrono::seconds(8);

// SET big <4 MiB> on a connection that reads its "+OK".
void set_big_value(uint16_t port) {
    const int fd = connect_loopback(port);
    const std::string set = resp_command({"SET", "big", std::string(kValueBytes, 'v')});
    REQUIRE(::send(fd, set.data(), set.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(set.size()));
    char reply[16] = {};
    REQUIRE(::recv(fd, reply, 5, MSG_WAITALL) == 5);
    CHECK(std::string(reply, 5) == "+OK\r\n");
    ::close(fd);
}

// VmRSS of a process in bytes; 0 when it is gone.
uint64_t rss_bytes(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("VmRSS:", 0) == 0) {
            return std::stoull(line.substr(6)) * 1024;  // "VmRSS:  123 kB"
        }
    }
    return 0;
}

// One round of pipelined GETs on every attacker, never blocking; a closed one reconnects, as a
// hostile client would. Returns how many were found closed.
size_t pipeline_round(std::vector<int>& fds, uint16_t port, const std::string& gets) {
    size_t closed = 0;
    for (int& fd : fds) {
        const ssize_t n = ::send(fd, gets.data(), gets.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            ++closed;
            ::close(fd);
            fd = connect_loopback(port);
        }
    }
    return closed;
}

TEST_CASE("30 Redis clients pipelining GETs of 4 MiB without reading cannot exhaust the node",
          "[hostile][output_buffer]") {
    const char* env = std::getenv("RAFTLOCK_HOSTILE_OUTPUT_BUFFER_BYTES");
    const uint64_t cap = env != nullptr ? std::stoull(env) : kCapBytesDefault;
    const uint16_t redis_port = test_ports::unused_port();
    std::vector<std::string> flags = {"--redis-listen", "127.0.0.1:" + std::to_string(redis_port)};
    if (env != nullptr) {
        flags.insert(flags.end(), {"--client-output-buffer-bytes-max", std::to_string(cap)});
    }
    ProcessCluster c(1, flags);
    REQUIRE(c.wait_for_leader() == 1);
    const pid_t pid = node_pid(c, 1);
    REQUIRE(pid > 0);
    set_big_value(redis_port);
    const uint64_t rss_before = rss_bytes(pid);
    // Every attacker may hold one cap of replies plus one reply being built; 256 MiB for the rest.
    const uint64_t bound = rss_before + kAttackers * (cap + kValueBytes) + (uint64_t{256} << 20);

    std::vector<int> fds;
    for (size_t i = 0; i < kAttackers; ++i) {
        fds.push_back(connect_loopback(redis_port));
    }
    std::string gets;
    for (int i = 0; i < 500; ++i) {
        gets += resp_command({"GET", "big"});
    }
    uint64_t rss_peak = 0;
    size_t closed = 0;
    WriteProbe probe(c, {1}, 250);
    for (const auto end = Clock::now() + kAttack; Clock::now() < end;) {
        closed += pipeline_round(fds, redis_port, gets);
        const uint64_t rss = rss_bytes(pid);
        REQUIRE(rss > 0);  // the node still runs
        rss_peak = std::max(rss_peak, rss);
        probe.poll();
        ::usleep(20000);
    }
    for (int fd : fds) {
        ::close(fd);
    }
    const std::optional<std::string> metrics = integration::http_get(c.ports(1).admin, "/metrics");
    INFO("cap " << cap << ", RSS before " << (rss_before >> 20) << " MiB, peak " << (rss_peak >> 20)
                << " MiB, bound " << (bound >> 20) << " MiB, connections "
                << "closed " << closed << ", writes late " << probe.late() << " of "
                << probe.writes() << " (slowest " << probe.slowest_ms() << " ms)");
    INFO("node log:\n" << c.log_of(1));
    CHECK(rss_peak < bound);
    CHECK(probe.late() == 0);
    CHECK(closed > 0);
    REQUIRE(metrics.has_value());
    CHECK(metrics->find("raftlock_client_output_buffer_disconnects_total 0\n") ==
          std::string::npos);
    CHECK(c.log_of(1).find("--client-output-buffer-bytes-max") != std::string::npos);
    // The backlog of the closed connections is not run: the node is idle again at once.
    CHECK(write_answers(c, 1, probe.next_request_id()));
    CHECK(c.wait_exit(1, 1) == -1);
    WARN("cap " << (cap >> 20) << " MiB: RSS before " << (rss_before >> 20) << " MiB, peak "
                << (rss_peak >> 20) << " MiB (bound " << (bound >> 20) << " MiB), slowest write "
                << probe.slowest_ms() << " ms");
}

}  // namespace output_buffer_test
}  // namespace raftlock::hostile
