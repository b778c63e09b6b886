// Node operations against FakeServer: request shapes and answers.

#include <catch2/catch.hpp>

#include "client_test_util.h"

namespace raftlock::client::testing {

using namespace std::chrono_literals;

TEST_CASE("create sends the node kind and TTL", "[client][nodes]") {
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    CreateOptions options;
    options.kind = NodeKind::kTtl;
    options.ttl = 5s;
    auto created = client.create("/t", "d", options);
    REQUIRE(created.ok());
    CHECK(created->path == "/t");
    const auto sent = requests_of(server, proto::Request::kCreate);
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].create().kind() == proto::TTL);
    CHECK(sent[0].create().ttl_ms() == 5000);
    CHECK(sent[0].create().data() == "d");
}

TEST_CASE("exists tells a missing node from an error", "[client][nodes]") {
    FakeServer server;
    server.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_exists() && request.exists().path() == "/missing") {
            response.mutable_exists()->set_exists(false);
        }
        if (request.has_get()) {
            response.clear_get();
            response.set_code(proto::NO_NODE);
        }
        s.reply(conn, response);
    });
    Client client(test_options({server.endpoint()}));
    auto missing = client.exists("/missing");
    REQUIRE(missing.ok());
    CHECK(!missing->has_value());
    auto present = client.exists("/here");
    REQUIRE(present.ok());
    REQUIRE(present->has_value());
    CHECK((*present)->mzxid == 5);
    auto got = client.get("/missing");
    REQUIRE(!got.ok());
    CHECK(got.error().code == ErrorCode::kNoNode);
    CHECK_THAT(got.error().message, Catch::Contains("/missing"));
}

TEST_CASE("a failed multi names the sub-op that failed", "[client][nodes]") {
    FakeServer server;
    server.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_multi()) {
            response.set_code(proto::BAD_VERSION);
            auto* first = response.mutable_multi()->add_results();
            first->set_code(proto::ROLLED_BACK);
            first->set_path("/a");
            auto* second = response.mutable_multi()->add_results();
            second->set_code(proto::BAD_VERSION);
            second->set_path("/b");
        }
        s.reply(conn, response);
    });
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    auto result = client.multi({CreateOp{"/a", "x"}, CheckOp{"/b", 3}});
    REQUIRE(!result.ok());
    CHECK(result.error().code == ErrorCode::kBadVersion);
    CHECK_THAT(result.error().message, Catch::Contains("multi op 1 (/b)"));
    const auto sent = requests_of(server, proto::Request::kMulti);
    REQUIRE(sent.size() == 1);
    REQUIRE(sent[0].multi().ops_size() == 2);
    CHECK(sent[0].multi().ops(0).has_create());
    CHECK(sent[0].multi().ops(1).check().version() == 3);
}

TEST_CASE("list_sessions and list_locks return what the server lists", "[client][nodes]") {
    FakeServer server;
    server.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_list_sessions()) {
            auto* info = response.mutable_sessions()->add_sessions();
            info->set_id(9);
            info->set_locks(2);
        }
        if (request.has_list_locks()) {
            response.mutable_list_locks()->add_names(request.list_locks().prefix() + "1");
        }
        s.reply(conn, response);
    });
    Client client(test_options({server.endpoint()}));
    auto sessions = client.list_sessions();
    REQUIRE(sessions.ok());
    REQUIRE(sessions->size() == 1);
    CHECK(sessions->at(0).id == 9);
    CHECK(sessions->at(0).locks == 2);
    auto locks = client.list_locks("jobs/", 10);
    REQUIRE(locks.ok());
    CHECK(*locks == std::vector<std::string>{"jobs/1"});
    CHECK(requests_of(server, proto::Request::kListLocks)[0].list_locks().limit() == 10);
}

}  // namespace raftlock::client::testing
