// The client moves its connection to the leader it learns from responses (client/leader_routing.h).

#include <array>
#include <atomic>
#include <memory>

#include <catch2/catch.hpp>

#include "client_test_util.h"

namespace raftlock::client::testing {

using namespace std::chrono_literals;

namespace {

// Answers as node `id` of a cluster led by `leader` would.
void serve_as(FakeServer& server, uint64_t id, uint64_t leader) {
    server.set_handler([id, leader](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        response.set_node_id(id);
        response.set_leader_hint(leader);
        s.reply(conn, response);
    });
}

size_t creates_at(const FakeServer& server) {
    return count_body(server.received(), proto::Request::kCreate);
}

}  // namespace

TEST_CASE("the client moves to the leader and sends its writes there", "[client][routing]") {
    std::array<FakeServer, 3> nodes;
    for (uint64_t i = 0; i < nodes.size(); ++i) {
        serve_as(nodes[i], i + 1, 3);
    }
    // Every starting point: the client may begin on either follower or on the leader.
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        Client client(
            test_options({nodes[0].endpoint(), nodes[1].endpoint(), nodes[2].endpoint()}, seed));
        REQUIRE(client.open_session(10s).ok());
        const size_t before = creates_at(nodes[2]);
        // At most two moves (each follower met once) before the leader is found.
        for (int i = 0; i < 3; ++i) {
            REQUIRE(
                client.create("/warm" + std::to_string(seed) + "-" + std::to_string(i), "").ok());
        }
        const size_t on_followers = creates_at(nodes[0]) + creates_at(nodes[1]);
        for (int i = 0; i < 20; ++i) {
            REQUIRE(client.create("/x" + std::to_string(seed) + "-" + std::to_string(i), "").ok());
        }
        CHECK(creates_at(nodes[0]) + creates_at(nodes[1]) == on_followers);
        CHECK(creates_at(nodes[2]) >= before + 20);
    }
}

TEST_CASE("with prefer_leader off the client stays where it is", "[client][routing]") {
    std::array<FakeServer, 2> nodes;
    serve_as(nodes[0], 1, 2);
    serve_as(nodes[1], 2, 2);
    ClientOptions options =
        test_options(first_for_seed(1, nodes[0].endpoint(), nodes[1].endpoint()));
    options.prefer_leader = false;
    Client client(options);
    REQUIRE(client.open_session(10s).ok());
    for (int i = 0; i < 10; ++i) {
        REQUIRE(client.create("/x" + std::to_string(i), "").ok());
    }
    CHECK(creates_at(nodes[0]) == 10);
    CHECK(creates_at(nodes[1]) == 0);
    CHECK(nodes[1].accepted() == 0);
}

TEST_CASE("a leader the client cannot reach leaves it on a follower", "[client][routing]") {
    std::array<FakeServer, 2> followers;
    serve_as(followers[0], 1, 3);
    serve_as(followers[1], 2, 3);
    const Endpoint unreachable_leader{"127.0.0.1", unused_port()};
    Client client(
        test_options({followers[0].endpoint(), followers[1].endpoint(), unreachable_leader}, 2));
    REQUIRE(client.open_session(10s).ok());
    for (int i = 0; i < 30; ++i) {
        REQUIRE(client.create("/x" + std::to_string(i), "").ok());
    }
    // Each write was sent until answered once per attempt: a move never loses or repeats one
    // beyond a retry with the same seq.
    CHECK(creates_at(followers[0]) + creates_at(followers[1]) >= 30);
    // The unreachable endpoint is tried once (then avoided for kAvoidAfterFailure, longer than
    // this test), not once per answer.
    CHECK(followers[0].accepted() + followers[1].accepted() <= 4);
}

TEST_CASE("a node that answered UNAVAILABLE during an election is still a move target",
          "[client][routing]") {
    // Both nodes answer the first create UNAVAILABLE (no leader yet), then node 2 leads. The
    // client starts on node 1, is sent on to node 2 and back by the refusals, and must still move
    // to node 2 when node 1 names it.
    std::array<FakeServer, 2> nodes;
    for (uint64_t i = 0; i < nodes.size(); ++i) {
        auto refused = std::make_shared<std::atomic<bool>>(false);
        nodes[i].set_handler(
            [id = i + 1, refused](FakeServer& s, uint64_t conn, const proto::Request& request) {
                proto::Response response = FakeServer::ok_response(request);
                response.set_node_id(id);
                if (request.has_create() && !refused->exchange(true)) {
                    response.Clear();
                    response.set_request_id(request.request_id());
                    response.set_code(proto::UNAVAILABLE);
                    response.set_node_id(id);
                    response.set_message("no leader");
                } else if (refused->load()) {
                    response.set_leader_hint(2);  // the election is over
                }
                s.reply(conn, response);
            });
    }
    Client client(test_options(first_for_seed(1, nodes[0].endpoint(), nodes[1].endpoint())));
    REQUIRE(client.open_session(10s).ok());
    REQUIRE(client.create("/first", "").ok());  // refused by both, then answered by node 1
    const size_t at_follower = creates_at(nodes[0]);
    for (int i = 0; i < 10; ++i) {
        REQUIRE(client.create("/x" + std::to_string(i), "").ok());
    }
    CHECK(creates_at(nodes[0]) == at_follower);
    CHECK(creates_at(nodes[1]) >= 11);
}

}  // namespace raftlock::client::testing
