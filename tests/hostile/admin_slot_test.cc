// Issue 16, row 8, against a real three-node cluster: 300 connections to a node's admin port that
// never send a request (reopened as soon as closed). Before, the port's 256 slots filled and
// /healthz failed 20 of 20 probes for 40 s. Now a full port closes its oldest connection still
// waiting for a request for the newcomer, and every probe answers.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <catch2/catch.hpp>
#include <unistd.h>

#include "tests/hostile/swarm.h"
#include "tests/integration/process_cluster.h"

namespace raftlock::hostile {
namespace {

using integration::ProcessCluster;

constexpr size_t kIdleConnections = 300;
constexpr int kProbes = 20;

TEST_CASE("idle connections to the admin port cannot take /healthz away", "[hostile][admin_slot]") {
    raise_fd_limit();
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint16_t admin = c.ports(leader).admin;
    Swarm swarm(admin, kIdleConnections);
    for (int i = 0; i < 10; ++i) {
        swarm.tend();
        ::usleep(20 * 1000);
    }
    int answered = 0;
    for (int i = 0; i < kProbes; ++i) {
        swarm.tend();
        std::string status;
        const std::optional<std::string> body = integration::http_get(admin, "/healthz", &status);
        answered += body.has_value() && *body == "ok\n" ? 1 : 0;
        ::usleep(100 * 1000);
    }
    swarm.tend();
    const std::optional<std::string> metrics = integration::http_get(admin, "/metrics");
    INFO("probes answered " << answered << " of " << kProbes << "; the swarm reopened "
                            << swarm.reopened() << " connections");
    CHECK(answered == kProbes);
    WARN("/healthz answered " << answered << " of " << kProbes << " probes beside "
                              << kIdleConnections << " idle connections");
    CHECK(swarm.reopened() > 0);  // the port was full: connections were closed to make room
    REQUIRE(metrics.has_value());
    CHECK(metrics->find("raftlock_admin_connections_evicted_total 0\n") == std::string::npos);
    for (uint64_t id : c.ids()) {
        CHECK(c.wait_exit(id, 1) == -1);
    }
}

}  // namespace
}  // namespace raftlock::hostile
