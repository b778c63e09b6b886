// The lock API against FakeServer: grants, waits across reconnects, cancel after a timeout.

#include <atomic>

#include <catch2/catch.hpp>

#include "client_test_util.h"

namespace raftlock::client::testing {

using namespace std::chrono_literals;

TEST_CASE("acquire returns a lease and release gives it back", "[client][locks]") {
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    AcquireOptions options;
    options.owner_tag = "worker";
    options.wait = 1s;
    auto lease = client.acquire("jobs", options);
    REQUIRE(lease.ok());
    CHECK(lease->name == "jobs");
    CHECK(lease->token == 77);
    CHECK(lease->session == 1000);
    CHECK(lease->owner_tag == "worker");
    REQUIRE(client.release(*lease).ok());
    const auto acquires = requests_of(server, proto::Request::kAcquire);
    const auto releases = requests_of(server, proto::Request::kRelease);
    REQUIRE(acquires.size() == 1);
    REQUIRE(releases.size() == 1);
    CHECK(acquires[0].acquire().mode() == proto::EXCLUSIVE);
    CHECK(acquires[0].acquire().wait_ms() == 1000);
    CHECK(releases[0].release().token() == 77);
    CHECK(releases[0].release().owner_tag() == "worker");
    CHECK(releases[0].seq() == acquires[0].seq() + 1);
}

TEST_CASE("try_acquire reports a busy lock", "[client][locks]") {
    FakeServer server;
    server.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_acquire()) {
            response.clear_lock();
            response.set_code(proto::LOCK_BUSY);
        }
        s.reply(conn, response);
    });
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    AcquireOptions options;
    options.permits = 3;
    auto lease = client.try_acquire("pool", options);
    REQUIRE(!lease.ok());
    CHECK(lease.error().code == ErrorCode::kLockBusy);
    const auto sent = requests_of(server, proto::Request::kAcquire);
    CHECK(sent[0].acquire().wait_ms() == 0);
    CHECK(sent[0].acquire().mode() == proto::SEMAPHORE);
    CHECK(sent[0].acquire().permits() == 3);
}

TEST_CASE("a waiting acquire whose connection broke waits on at the next node with the same seq",
          "[client][locks]") {
    FakeServer first;
    FakeServer second;
    first.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& request) {
        if (request.has_acquire()) {
            s.drop_connections();  // the node dies while the acquire waits in its queue
            return;
        }
        s.reply(conn, FakeServer::ok_response(request));
    });
    Client client(test_options(first_for_seed(1, first.endpoint(), second.endpoint())));
    REQUIRE(client.open_session(10s).ok());
    AcquireOptions options;
    options.wait = 5s;
    auto lease = client.acquire("jobs", options);
    REQUIRE(lease.ok());
    const auto a = requests_of(first, proto::Request::kAcquire);
    const auto b = requests_of(second, proto::Request::kAcquire);
    REQUIRE(a.size() == 1);
    REQUIRE(b.size() == 1);
    CHECK(a[0].seq() == b[0].seq());
    CHECK(b[0].acquire().wait_ms() == 5000);
}

TEST_CASE("an acquire past the caller's timeout is cancelled and a raced grant released",
          "[client][locks]") {
    FakeServer server;
    server.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_acquire()) {
            return;  // queued; the grant is decided by the cancel below
        }
        if (request.has_cancel()) {
            response.mutable_lock()->set_outcome(proto::LOCK_GRANTED);
            response.mutable_lock()->set_token(55);
        }
        s.reply(conn, response);
    });
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    AcquireOptions options;
    options.wait = 10s;
    options.timeout = 150ms;
    options.owner_tag = "t";
    auto lease = client.acquire("jobs", options);
    REQUIRE(!lease.ok());
    CHECK(lease.error().code == ErrorCode::kTimeout);
    CHECK_THAT(lease.error().message, Catch::Contains("released"));
    const auto acquires = requests_of(server, proto::Request::kAcquire);
    const auto cancels = requests_of(server, proto::Request::kCancel);
    const auto releases = requests_of(server, proto::Request::kRelease);
    REQUIRE(acquires.size() == 1);
    REQUIRE(cancels.size() == 1);
    REQUIRE(releases.size() == 1);
    CHECK(cancels[0].cancel().name() == "jobs");
    CHECK(cancels[0].cancel().owner_tag() == "t");
    // The abandoned acquire is acknowledged by the cancel: a late copy of it is never applied.
    CHECK(cancels[0].ack_seq() >= acquires[0].seq());
    CHECK(releases[0].release().token() == 55);
}

TEST_CASE("a wait that ends on the server is a WAIT_TIMEOUT", "[client][locks]") {
    FakeServer server;
    server.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_acquire()) {
            response.clear_lock();
            response.set_code(proto::WAIT_TIMEOUT);
        }
        s.reply(conn, response);
    });
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    AcquireOptions options;
    options.wait = 100ms;
    auto lease = client.acquire("jobs", options);
    REQUIRE(!lease.ok());
    CHECK(lease.error().code == ErrorCode::kWaitTimeout);
    CHECK(count_body(server.received(), proto::Request::kCancel) == 0);
}

TEST_CASE("a LockGuard releases when it goes out of scope", "[client][locks]") {
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    {
        auto lease = client.try_acquire("jobs");
        REQUIRE(lease.ok());
        LockGuard guard(client, *lease);
        LockGuard moved(std::move(guard));
        CHECK(!guard.owns_lock());
        CHECK(moved.owns_lock());
    }
    const auto releases = requests_of(server, proto::Request::kRelease);
    REQUIRE(releases.size() == 1);
    CHECK(releases[0].release().token() == 77);
}

TEST_CASE("a fenced write carries the lock and token", "[client][locks]") {
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    WriteOptions options;
    options.fence = Fence{"jobs", 77};
    REQUIRE(client.set("/resource", "x", options).ok());
    const auto sets = requests_of(server, proto::Request::kSetData);
    REQUIRE(sets.size() == 1);
    CHECK(sets[0].fence().lock() == "jobs");
    CHECK(sets[0].fence().token() == 77);
}

}  // namespace raftlock::client::testing
