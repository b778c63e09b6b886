// The client library keeps its connection on the leader (docs/decisions/0012): against real
// raftlockd processes, the followers stop forwarding its writes, also after a leader change.

#include <atomic>
#include <charconv>
#include <chrono>
#include <map>
#include <thread>

#include <catch2/catch.hpp>

#include "client/client.h"
#include "process_cluster.h"

namespace raftlock::integration {
namespace {

using namespace std::chrono_literals;
namespace rc = raftlock::client;

// A counter of a running node's /metrics.
uint64_t counter(ProcessCluster& c, uint64_t node, const std::string& metric) {
    const auto body = http_get(c.ports(node).admin, "/metrics");
    REQUIRE(body.has_value());
    const std::string name = "\n" + metric + " ";
    const size_t at = body->find(name);
    REQUIRE(at != std::string::npos);
    const char* first = body->data() + at + name.size();
    uint64_t value = 0;
    REQUIRE(std::from_chars(first, body->data() + body->size(), value).ec == std::errc());
    return value;
}

uint64_t forwarded_writes(ProcessCluster& c, uint64_t node) {
    return counter(c, node, "raftlock_forwarded_writes_total");
}

uint64_t forwarded_by_followers(ProcessCluster& c, uint64_t leader) {
    uint64_t total = 0;
    for (uint64_t id : c.ids()) {
        if (id != leader && c.running(id)) {
            total += forwarded_writes(c, id);
        }
    }
    return total;
}

void write_n(rc::Client& client, const std::string& prefix, int n) {
    for (int i = 0; i < n; ++i) {
        auto created = client.create(prefix + std::to_string(i), "v");
        REQUIRE(created.ok());
    }
}

}  // namespace

TEST_CASE("a client on every endpoint moves to the leader, and again after a leader change",
          "[integration][routing]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    // Seeds 1..3 start the clients on different endpoints, followers among them.
    std::vector<std::unique_ptr<rc::Client>> clients;
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        rc::ClientOptions o;
        o.endpoints = *rc::parse_endpoints(c.endpoints());
        o.request_timeout = 10s;
        o.seed = seed;
        clients.push_back(std::make_unique<rc::Client>(o));
        REQUIRE(clients.back()->open_session(10s).ok());
        write_n(*clients.back(), "/warm-" + std::to_string(seed) + "-", 3);
    }
    const uint64_t before = forwarded_by_followers(c, leader);
    for (size_t i = 0; i < clients.size(); ++i) {
        write_n(*clients[i], "/a-" + std::to_string(i) + "-", 20);
    }
    CHECK(forwarded_by_followers(c, leader) == before);

    c.kill(leader);
    const uint64_t next = c.wait_for_leader();
    REQUIRE(next != 0);
    REQUIRE(next != leader);
    for (size_t i = 0; i < clients.size(); ++i) {
        write_n(*clients[i], "/settle-" + std::to_string(i) + "-", 3);
    }
    const uint64_t after_change = forwarded_by_followers(c, next);
    for (size_t i = 0; i < clients.size(); ++i) {
        write_n(*clients[i], "/b-" + std::to_string(i) + "-", 20);
    }
    CHECK(forwarded_by_followers(c, next) == after_change);
}

TEST_CASE("a client whose node stops answering moves on before its session's safe-until",
          "[integration][routing][session]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    // Staying on the node it reached while that node answers (as a ZooKeeper or etcd client
    // would); which one it is, its requests counter tells.
    rc::ClientOptions o;
    o.endpoints = *rc::parse_endpoints(c.endpoints());
    o.prefer_leader = false;
    rc::Client client(o);
    std::atomic<int> losses{0};
    client.set_session_callback([&](rc::SessionLoss) { losses++; });
    std::map<uint64_t, uint64_t> before;
    for (uint64_t id : c.ids()) {
        before[id] = counter(c, id, "raftlock_client_requests_total");
    }
    const auto timeout = 3000ms;  // a keepalive every second, safe-until 2.7 s after one
    auto session = client.open_session(timeout);
    REQUIRE(session.ok());
    auto lease = client.acquire("paused-node");
    REQUIRE(lease.ok());
    uint64_t on = 0;
    for (uint64_t id : c.ids()) {
        if (counter(c, id, "raftlock_client_requests_total") > before[id]) {
            CHECK(on == 0);
            on = id;
        }
    }
    REQUIRE(on != 0);

    // Stopped, the node keeps its TCP connections open but answers nothing: the keepalive sent
    // there goes unanswered for a keepalive interval, and the client moves to another node with
    // the next one, long before the session could expire (3 s; the default request timeout is
    // 10 s). (If the node leads, the others elect a leader meanwhile, which gives every session
    // a new timeout.)
    c.pause(on);
    std::this_thread::sleep_for(2 * timeout);
    c.resume(on);
    CHECK(losses == 0);
    const std::optional<rc::SteadyTime> safe = client.safe_until();
    REQUIRE(safe.has_value());
    CHECK(*safe > rc::SteadyClock::now());
    auto info = client.describe("paused-node");
    REQUIRE(info.ok());
    REQUIRE(info->holders.size() == 1);
    CHECK(info->holders[0].session == *session);
    CHECK(client.release(*lease).ok());
}

}  // namespace raftlock::integration
