// Failover, retries with the same seq, and unreachable clusters, against FakeServer.

#include <atomic>

#include <catch2/catch.hpp>

#include "client_test_util.h"

namespace raftlock::client::testing {

using namespace std::chrono_literals;

TEST_CASE("the client skips a refusing endpoint and uses the next", "[client][failover]") {
    FakeServer live;
    const Endpoint dead{"127.0.0.1", unused_port()};
    Client client(test_options(first_for_seed(1, dead, live.endpoint())));
    auto info = client.describe("x");
    REQUIRE(info.ok());
    CHECK(live.accepted() == 1);
}

TEST_CASE("UNAVAILABLE moves a write to the next node with the same seq", "[client][failover]") {
    FakeServer unavailable;
    FakeServer healthy;
    unavailable.set_handler([](FakeServer& server, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_create()) {
            response.Clear();
            response.set_request_id(request.request_id());
            response.set_code(proto::UNAVAILABLE);
            response.set_message("no leader");
        }
        server.reply(conn, response);
    });
    Client client(test_options(first_for_seed(1, unavailable.endpoint(), healthy.endpoint())));
    REQUIRE(client.open_session(10s).ok());
    auto created = client.create("/x", "data");
    REQUIRE(created.ok());
    CHECK(created->path == "/x");
    const auto first = requests_of(unavailable, proto::Request::kCreate);
    const auto second = requests_of(healthy, proto::Request::kCreate);
    REQUIRE(first.size() == 1);
    REQUIRE(second.size() == 1);
    CHECK(first[0].seq() == second[0].seq());
    CHECK(first[0].session_id() == second[0].session_id());
}

TEST_CASE("a write whose connection broke is retried with the same seq", "[client][failover]") {
    std::atomic<int> creates{0};
    FakeServer server;
    server.set_handler([&](FakeServer& s, uint64_t conn, const proto::Request& request) {
        if (request.has_create() && creates++ == 0) {
            s.drop_connections();  // the reply is lost: did it apply? only the retry can tell
            return;
        }
        s.reply(conn, FakeServer::ok_response(request));
    });
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    REQUIRE(client.create("/x", "").ok());
    const auto sent = requests_of(server, proto::Request::kCreate);
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].seq() == 1);
    CHECK(sent[1].seq() == 1);
    CHECK(server.accepted() >= 2);
}

TEST_CASE("a server TIMEOUT is retried on the same connection with the same seq",
          "[client][failover]") {
    std::atomic<int> sets{0};
    FakeServer server;
    server.set_handler([&](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_set_data() && sets++ < 2) {
            response.set_code(proto::TIMEOUT);
        }
        s.reply(conn, response);
    });
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    REQUIRE(client.set("/x", "v").ok());
    const auto sent = requests_of(server, proto::Request::kSetData);
    REQUIRE(sent.size() == 3);
    CHECK(sent[0].seq() == sent[2].seq());
    CHECK(server.accepted() == 1);
}

TEST_CASE("ack_seq tells the server which replies arrived", "[client][seq]") {
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    for (int i = 0; i < 3; i++) {
        REQUIRE(client.create("/n" + std::to_string(i), "").ok());
    }
    const auto sent = requests_of(server, proto::Request::kCreate);
    REQUIRE(sent.size() == 3);
    for (size_t i = 0; i < 3; i++) {
        CHECK(sent[i].seq() == i + 1);
        CHECK(sent[i].ack_seq() == i);
        CHECK(sent[i].session_id() == 1000);
    }
    // Reads carry no seq.
    REQUIRE(client.get("/n0").ok());
    CHECK(requests_of(server, proto::Request::kGet)[0].seq() == 0);
}

TEST_CASE("an attached session writes from the first seq the cluster gave", "[client][seq]") {
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.attach_session(5).ok());
    const auto attach = requests_of(server, proto::Request::kAttachSession);
    REQUIRE(attach.size() == 1);
    CHECK(attach[0].session_id() == 5);
    CHECK(attach[0].seq() == 0);  // the attach takes none of the session's seqs
    REQUIRE(client.remove("/x").ok());
    const auto sent = requests_of(server, proto::Request::kDelete);
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].session_id() == 5);
    CHECK(sent[0].seq() == 1000);
    CHECK(sent[0].ack_seq() == 999);
}

TEST_CASE("writes without a session fail before reaching the network", "[client][seq]") {
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    auto created = client.create("/x", "");
    REQUIRE(!created.ok());
    CHECK(created.error().code == ErrorCode::kNoSession);
    CHECK(server.received().empty());
}

TEST_CASE("an unreachable cluster fails fast with a message naming the fix", "[client][failover]") {
    const std::vector<Endpoint> dead{{"127.0.0.1", unused_port()}, {"127.0.0.1", unused_port()}};
    Client client(test_options(dead));
    const auto start = SteadyClock::now();
    auto info = client.describe("x");
    const auto elapsed = SteadyClock::now() - start;
    REQUIRE(!info.ok());
    CHECK(info.error().code == ErrorCode::kConnectFailed);
    CHECK_THAT(info.error().message, Catch::Contains(to_string(dead)));
    CHECK_THAT(info.error().message, Catch::Contains("scripts/cluster.sh up"));
    CHECK(elapsed < 1500ms);
}

TEST_CASE("node status asks exactly the given endpoint", "[client][cluster]") {
    FakeServer main;
    FakeServer other;
    Client client(test_options({main.endpoint()}));
    auto status = client.node_status(other.endpoint());
    REQUIRE(status.ok());
    CHECK(status->role == "leader");
    CHECK(count_body(other.received(), proto::Request::kNodeStatus) == 1);
    CHECK(main.received().empty());
    auto down = client.node_status(Endpoint{"127.0.0.1", unused_port()});
    REQUIRE(!down.ok());
    CHECK(down.error().code == ErrorCode::kConnectFailed);
}

TEST_CASE("a request the server never answers times out at its deadline", "[client][failover]") {
    FakeServer server;
    server.set_handler([](FakeServer&, uint64_t, const proto::Request&) {});
    ClientOptions options = test_options({server.endpoint()});
    options.request_timeout = 150ms;
    Client client(options);
    auto listed = client.list_locks("");
    REQUIRE(!listed.ok());
    CHECK(listed.error().code == ErrorCode::kTimeout);
}

}  // namespace raftlock::client::testing
