// Watches against FakeServer: dispatch, one-shot semantics, and re-registration after reconnects.

#include <atomic>

#include <catch2/catch.hpp>

#include "client_test_util.h"

namespace raftlock::client::testing {

using namespace std::chrono_literals;

namespace {

proto::ServerMessage watch_event(const std::string& path, proto::EventType type, uint64_t zxid) {
    proto::ServerMessage message;
    message.mutable_watch_event()->set_path(path);
    message.mutable_watch_event()->set_type(type);
    message.mutable_watch_event()->set_zxid(zxid);
    return message;
}

uint64_t last_conn(const FakeServer& server) {
    return server.received().back().conn;
}

}  // namespace

TEST_CASE("a one-shot data watch fires once", "[client][watch]") {
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<WatchEvent> events;
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    auto got = client.get("/a", [&](const WatchEvent& e) { events.set(e); });
    REQUIRE(got.ok());
    CHECK(got->data == "v");
    CHECK(requests_of(server, proto::Request::kGet)[0].get().watch());
    server.send(last_conn(server), watch_event("/a", proto::NODE_DATA_CHANGED, 8));
    server.send(last_conn(server), watch_event("/a", proto::NODE_DATA_CHANGED, 9));
    REQUIRE(events.wait());
    // A read after the pushes orders them: both were dispatched before its answer.
    REQUIRE(client.get("/other").ok());
    REQUIRE(events.values().size() == 1);
    CHECK(events.values()[0].type == EventType::kNodeDataChanged);
    CHECK(events.values()[0].zxid == 8);
}

TEST_CASE("a get without a callback sets no watch", "[client][watch]") {
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.get("/a").ok());
    CHECK(!requests_of(server, proto::Request::kGet)[0].get().watch());
}

TEST_CASE("a persistent recursive watch is re-added after a reconnect", "[client][watch]") {
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<WatchEvent> events;
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    auto id = client.add_watch("/p", true, [&](const WatchEvent& e) { events.set(e); });
    REQUIRE(id.ok());
    server.send(last_conn(server), watch_event("/p/x", proto::NODE_CREATED, 3));
    REQUIRE(events.wait(1));
    server.drop_connections();
    REQUIRE(server.wait_until(has_body(proto::Request::kAddWatch, 2)));
    const auto adds = requests_of(server, proto::Request::kAddWatch);
    CHECK(adds[1].add_watch().path() == "/p");
    CHECK(adds[1].add_watch().recursive());
    server.send(last_conn(server), watch_event("/p/y", proto::NODE_DELETED, 4));
    REQUIRE(events.wait(2));
    CHECK(events.values()[1].path == "/p/y");
    REQUIRE(client.remove_watch(*id).ok());
    CHECK(count_body(server.received(), proto::Request::kRemoveWatch) == 1);
}

TEST_CASE("a watch callback sees the connection its event came on", "[client][watch]") {
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<uint64_t> connections;
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    CHECK(client.connection_count() == 0);  // connects lazily
    auto id = client.add_watch(
        "/p", false, [&](const WatchEvent&) { connections.set(client.connection_count()); });
    REQUIRE(id.ok());
    CHECK(client.connection_count() == 1);
    server.send(last_conn(server), watch_event("/p", proto::NODE_DATA_CHANGED, 3));
    REQUIRE(connections.wait(1));
    server.drop_connections();
    REQUIRE(server.wait_until(has_body(proto::Request::kAddWatch, 2)));
    server.send(last_conn(server), watch_event("/p", proto::NODE_DATA_CHANGED, 7));
    REQUIRE(connections.wait(2));
    // Events before and after the reconnect are told apart: a persistent watch's gap is visible.
    CHECK(connections.values() == std::vector<uint64_t>{1, 2});
}

TEST_CASE("a one-shot watch reports a change that happened while disconnected", "[client][watch]") {
    std::atomic<uint64_t> mzxid{5};
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<WatchEvent> events;
    FakeServer server;
    server.set_handler([&](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_get()) {
            response.mutable_get()->mutable_stat()->set_mzxid(mzxid);
        }
        s.reply(conn, response);
    });
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.get("/a", [&](const WatchEvent& e) { events.set(e); }).ok());
    mzxid = 6;  // changed while the client cannot hear about it
    server.drop_connections();
    REQUIRE(events.wait());
    CHECK(events.values()[0].type == EventType::kNodeDataChanged);
    CHECK(events.values()[0].zxid == 0);  // inferred, not pushed
    const auto gets = requests_of(server, proto::Request::kGet);
    REQUIRE(gets.size() == 2);
    CHECK(gets[1].get().watch());
}

TEST_CASE("an unchanged node keeps its one-shot watch across a reconnect", "[client][watch]") {
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<WatchEvent> events;
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.children("/a", [&](const WatchEvent& e) { events.set(e); }).ok());
    server.drop_connections();
    REQUIRE(server.wait_until(has_body(proto::Request::kChildren, 2)));
    server.send(last_conn(server), watch_event("/a", proto::NODE_CHILDREN_CHANGED, 12));
    REQUIRE(events.wait());
    CHECK(events.values()[0].zxid == 12);
}

TEST_CASE("a blocking call from a callback is refused instead of deadlocking", "[client][watch]") {
    // Declared before the client: its callbacks may run until the client is gone.
    Signal<ErrorCode> codes;
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client
                .exists("/a",
                        [&](const WatchEvent&) {
                            auto inner = client.get("/a");
                            codes.set(inner.ok() ? ErrorCode::kOk : inner.error().code);
                        })
                .ok());
    server.send(last_conn(server), watch_event("/a", proto::NODE_DELETED, 2));
    REQUIRE(codes.wait());
    CHECK(codes.values()[0] == ErrorCode::kWrongThread);
}

}  // namespace raftlock::client::testing
