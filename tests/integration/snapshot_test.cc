// A follower that falls behind the leader's compacted log catches up through InstallSnapshot.

#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "client/client.h"
#include "process_cluster.h"

namespace raftlock::integration {
namespace {

using namespace std::chrono_literals;
namespace rc = raftlock::client;

TEST_CASE("a lagging follower catches up from a snapshot and serves the same state",
          "[integration][snapshot]") {
    ProcessCluster c(3, {"--snapshot-every-entries", "100", "--compaction-lag-entries", "10"});
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    uint64_t lagging = 0;
    for (uint64_t id : c.ids()) {
        if (id != leader) {
            lagging = id;
            break;
        }
    }
    c.kill(lagging);
    rc::ClientOptions o;
    o.endpoints = *rc::parse_endpoints(c.client_endpoint(leader));
    rc::Client client(o);
    REQUIRE(client.open_session(30s).ok());
    REQUIRE(client.create("/data", "").ok());
    for (int i = 0; i < 300; ++i) {
        REQUIRE(client.create("/data/n" + std::to_string(i), std::to_string(i)).ok());
    }
    auto lease = client.acquire("snap-lock");
    REQUIRE(lease.ok());

    c.start(lagging);
    rc::ClientOptions lo;
    lo.endpoints = *rc::parse_endpoints(c.client_endpoint(lagging));
    rc::Client on_lagging(lo);
    std::optional<std::vector<std::string>> children;
    for (int i = 0; i < 1000; ++i) {
        auto r = on_lagging.children("/data");
        if (r.ok() && r->size() == 300) {
            children = *r;
            break;
        }
        std::this_thread::sleep_for(10ms);
    }
    INFO(c.log_of(lagging));
    REQUIRE(children.has_value());
    auto info = on_lagging.describe("snap-lock");
    REQUIRE(info.ok());
    REQUIRE(info->holders.size() == 1);
    CHECK(info->holders[0].token == lease->token);
    CHECK(c.log_of(lagging).find("installed a snapshot") != std::string::npos);
    auto snapshot_index = c.status_field(lagging, "snapshot_index");
    REQUIRE(snapshot_index.has_value());
    CHECK(std::stoull(*snapshot_index) >= 100);
}

}  // namespace
}  // namespace raftlock::integration
