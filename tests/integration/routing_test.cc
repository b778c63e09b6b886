// The client library keeps its connection on the leader (docs/decisions/0012): against real
// raftlockd processes, the followers stop forwarding its writes, also after a leader change.

#include <charconv>
#include <chrono>

#include <catch2/catch.hpp>

#include "client/client.h"
#include "process_cluster.h"

namespace raftlock::integration {
namespace {

using namespace std::chrono_literals;
namespace rc = raftlock::client;

// raftlock_forwarded_writes_total of a running node.
uint64_t forwarded_writes(ProcessCluster& c, uint64_t node) {
    const auto body = http_get(c.ports(node).admin, "/metrics");
    REQUIRE(body.has_value());
    const std::string name = "\nraftlock_forwarded_writes_total ";
    const size_t at = body->find(name);
    REQUIRE(at != std::string::npos);
    const char* first = body->data() + at + name.size();
    uint64_t value = 0;
    REQUIRE(std::from_chars(first, body->data() + body->size(), value).ec == std::errc());
    return value;
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

}  // namespace raftlock::integration
