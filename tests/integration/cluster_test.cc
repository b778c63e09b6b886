// Real raftlockd processes on loopback, driven through the client library.

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include <catch2/catch.hpp>

#include "client/client.h"
#include "process_cluster.h"
#include "raw_client.h"

namespace raftlock::integration {
namespace {

using namespace std::chrono_literals;
namespace rc = raftlock::client;

rc::ClientOptions options_for(const std::string& endpoints) {
    rc::ClientOptions o;
    auto parsed = rc::parse_endpoints(endpoints);
    REQUIRE(parsed.ok());
    o.endpoints = *parsed;
    o.request_timeout = 10s;
    return o;
}

std::unique_ptr<rc::Client> client_on(ProcessCluster& c, uint64_t node) {
    return std::make_unique<rc::Client>(options_for(c.client_endpoint(node)));
}

uint64_t other_than(ProcessCluster& c, uint64_t a, uint64_t b = 0) {
    for (uint64_t id : c.ids()) {
        if (id != a && id != b && c.running(id)) {
            return id;
        }
    }
    FAIL("no such node");
    return 0;
}

TEST_CASE("locks are acquired and released through any node", "[integration]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint64_t follower = other_than(c, leader);
    auto a = client_on(c, follower);  // writes are forwarded to the leader
    auto b = client_on(c, leader);
    REQUIRE(a->open_session(5s).ok());
    REQUIRE(b->open_session(5s).ok());

    auto lease = a->acquire("orders");
    REQUIRE(lease.ok());
    CHECK(lease->token > 0);
    auto busy = b->try_acquire("orders");
    REQUIRE(!busy.ok());
    CHECK(busy.error().code == rc::ErrorCode::kLockBusy);
    auto info = b->describe("orders");
    REQUIRE(info.ok());
    REQUIRE(info->holders.size() == 1);
    CHECK(info->holders[0].token == lease->token);

    REQUIRE(a->release(*lease).ok());
    auto second = b->try_acquire("orders");
    REQUIRE(second.ok());
    CHECK(second->token > lease->token);  // fencing tokens only grow
}

TEST_CASE("multi-locks wait in FIFO order on every lock and are granted as one, across nodes",
          "[integration][multi]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint64_t follower = other_than(c, leader);
    auto a = client_on(c, leader);
    auto b = client_on(c, follower);
    auto d = client_on(c, other_than(c, leader, follower));
    for (auto* client : {a.get(), b.get(), d.get()}) {
        REQUIRE(client->open_session(10s).ok());
    }
    auto held = a->acquire("m1");
    REQUIRE(held.ok());
    rc::AcquireOptions wait;
    wait.wait = 10s;
    std::optional<rc::ClientResult<std::vector<rc::Lease>>> b_got;
    std::thread waiter([&] { b_got = b->acquire_many({"m2", "m1"}, wait); });
    // b waits on m2 too, though m2 is free, and nobody overtakes it there.
    bool queued = false;
    for (int i = 0; i < 500 && !queued; ++i) {
        auto info = d->describe("m2");
        queued = info.ok() && info->waiters.size() == 1;
        std::this_thread::sleep_for(10ms);
    }
    REQUIRE(queued);
    CHECK(d->describe("m2")->waiters[0].together == std::vector<std::string>{"m1"});
    auto busy = d->try_acquire("m2");
    REQUIRE(!busy.ok());
    CHECK(busy.error().code == rc::ErrorCode::kLockBusy);
    // d queues behind b on m2.
    std::optional<rc::ClientResult<rc::Lease>> d_got;
    std::thread behind([&] { d_got = d->acquire("m2", wait); });
    std::this_thread::sleep_for(200ms);
    REQUIRE(a->release(*held).ok());
    waiter.join();
    REQUIRE(b_got.has_value());
    REQUIRE(b_got->ok());
    const std::vector<rc::Lease>& leases = b_got->value();
    REQUIRE(leases.size() == 2);
    CHECK(leases[0].name == "m2");
    CHECK(leases[1].name == "m1");
    CHECK(leases[0].token == leases[1].token);
    CHECK(leases[0].token > held->token);
    for (const char* name : {"m1", "m2"}) {
        auto info = a->describe(name);
        REQUIRE(info.ok());
        REQUIRE(info->holders.size() == 1);
        CHECK(info->holders[0].token == leases[0].token);
    }
    // Releasing one lock of the set hands it on by itself.
    REQUIRE(b->release(leases[0]).ok());
    behind.join();
    REQUIRE(d_got.has_value());
    REQUIRE(d_got->ok());
    CHECK(d_got->value().token > leases[0].token);
    // A wait that ends unanswered leaves nothing queued on any lock of the set.
    rc::AcquireOptions brief;
    brief.wait = 300ms;
    auto late = a->acquire_many({"m1", "m4"}, brief);
    REQUIRE(!late.ok());
    CHECK(late.error().code == rc::ErrorCode::kWaitTimeout);
    for (const char* name : {"m1", "m4"}) {
        auto info = a->describe(name);
        CHECK((!info.ok() || info->waiters.empty()));  // m4's record went with the wait
    }
}

TEST_CASE("a multi-lock takes each lock in its own mode", "[integration][multi]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    auto a = client_on(c, leader);
    auto b = client_on(c, other_than(c, leader));
    REQUIRE(a->open_session(10s).ok());
    REQUIRE(b->open_session(10s).ok());
    // Both read the configuration (shared); each writes its own data (exclusive).
    auto first = a->acquire_locks({rc::LockRequest{"config", true}, rc::LockRequest{"data/a"}});
    REQUIRE(first.ok());
    auto second = b->acquire_locks({rc::LockRequest{"config", true}, rc::LockRequest{"data/b"}});
    REQUIRE(second.ok());
    auto info = a->describe("config");
    REQUIRE(info.ok());
    CHECK(info->holders.size() == 2);
    // A writer of the configuration is refused while readers hold it, on every lock of its set.
    auto writer =
        b->acquire_locks({rc::LockRequest{"config-writer"}, rc::LockRequest{"config", false}});
    REQUIRE(!writer.ok());
    CHECK(writer.error().code == rc::ErrorCode::kBadArguments);  // b already holds config
    auto other = client_on(c, leader);
    REQUIRE(other->open_session(10s).ok());
    auto busy = other->acquire_locks({rc::LockRequest{"config-writer"}, rc::LockRequest{"config"}});
    REQUIRE(!busy.ok());
    CHECK(busy.error().code == rc::ErrorCode::kLockBusy);
    auto untouched = other->describe("config-writer");
    CHECK((!untouched.ok() || untouched->holders.empty()));
}

TEST_CASE("kill -9 of the leader keeps holders and the queue; hand-off continues",
          "[integration][failover]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint64_t f1 = other_than(c, leader);
    const uint64_t f2 = other_than(c, leader, f1);
    const std::string survivors = c.client_endpoint(f1) + "," + c.client_endpoint(f2);
    rc::Client holder(options_for(survivors));
    rc::Client waiter(options_for(survivors));
    REQUIRE(holder.open_session(10s).ok());
    REQUIRE(waiter.open_session(10s).ok());
    auto lease = holder.acquire("db");
    REQUIRE(lease.ok());

    std::atomic<bool> done{false};
    rc::ClientResult<rc::Lease> granted = rc::Error{rc::ErrorCode::kTimeout, "not yet"};
    std::thread wait_thread([&] {
        rc::AcquireOptions o;
        o.wait = 60s;
        granted = waiter.acquire("db", o);
        done = true;
    });
    // The waiter is queued before the crash.
    for (int i = 0; i < 200; ++i) {
        auto info = holder.describe("db");
        if (info.ok() && info->waiters.size() == 1) {
            break;
        }
        std::this_thread::sleep_for(10ms);
    }
    c.kill(leader);
    const uint64_t next = c.wait_for_leader();
    REQUIRE(next != 0);
    CHECK(next != leader);
    auto info = holder.describe("db");
    REQUIRE(info.ok());
    REQUIRE(info->holders.size() == 1);
    CHECK(info->holders[0].token == lease->token);
    REQUIRE(info->waiters.size() == 1);
    CHECK(!done);

    REQUIRE(holder.release(*lease).ok());
    wait_thread.join();
    REQUIRE(granted.ok());
    CHECK(granted->token > lease->token);
    c.start(leader);  // the old leader catches up and serves the same state
    REQUIRE(c.wait_for_leader() != 0);
    auto on_old = client_on(c, leader);
    std::optional<rc::LockInfo> seen;
    for (int i = 0; i < 500 && !seen; ++i) {
        auto d = on_old->describe("db");
        if (d.ok()) {
            seen = *d;
        } else {
            std::this_thread::sleep_for(10ms);
        }
    }
    REQUIRE(seen.has_value());
    REQUIRE(seen->holders.size() == 1);
    CHECK(seen->holders[0].token == granted->token);
}

TEST_CASE("an expired session releases its lock to the next waiter", "[integration][sessions]") {
    ProcessCluster c;
    REQUIRE(c.wait_for_leader() != 0);
    // A session nobody keeps alive: opened over the raw protocol.
    RawConnection raw(c.ports(1).client);
    proto::Request open;
    open.set_request_id(1);
    open.mutable_open_session()->set_timeout_ms(1000);
    const proto::Response opened = raw.call(open);
    REQUIRE(opened.code() == proto::OK);
    const uint64_t session = opened.open_session().session_id();
    proto::Request acquire;
    acquire.set_request_id(2);
    acquire.set_session_id(session);
    acquire.set_seq(1);
    acquire.mutable_acquire()->set_name("job");
    const proto::Response held = raw.call(acquire);
    REQUIRE(held.lock().outcome() == proto::LOCK_GRANTED);

    auto waiter = client_on(c, 2);
    REQUIRE(waiter->open_session(10s).ok());
    rc::AcquireOptions o;
    o.wait = 30s;
    const auto start = std::chrono::steady_clock::now();
    auto granted = waiter->acquire("job", o);
    const auto waited = std::chrono::steady_clock::now() - start;
    REQUIRE(granted.ok());
    CHECK(granted->token > held.lock().token());
    CHECK(waited < 5s);
    // The raw connection hears that its session ended.
    bool ended = false;
    while (auto m = raw.receive(2000)) {
        ended = ended || (m->has_session_ended() && m->session_ended().session_id() == session);
        if (ended) {
            break;
        }
    }
    CHECK(ended);
}

TEST_CASE("a retry after a leader change is applied exactly once", "[integration][failover]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint64_t f1 = other_than(c, leader);
    const uint64_t f2 = other_than(c, leader, f1);
    RawConnection first(c.ports(leader).client);
    proto::Request open;
    open.set_request_id(1);
    open.mutable_open_session()->set_timeout_ms(10000);
    const uint64_t session = first.call(open).open_session().session_id();
    REQUIRE(session != 0);
    proto::Request create;
    create.set_request_id(2);
    create.set_session_id(session);
    create.set_seq(1);
    create.mutable_create()->set_path("/job-");
    create.mutable_create()->set_kind(proto::PERSISTENT_SEQUENTIAL);
    const proto::Response created = first.call(create);
    REQUIRE(created.code() == proto::OK);

    c.kill(leader);  // as if the reply had been lost with the leader
    REQUIRE(c.wait_for_leader() != 0);
    RawConnection second(c.ports(f1).client);
    create.set_request_id(3);
    const proto::Response again = second.call(create);
    REQUIRE(again.code() == proto::OK);
    CHECK(again.node().path() == created.node().path());

    RawConnection third(c.ports(f2).client);
    proto::Request children;
    children.set_request_id(4);
    children.mutable_children()->set_path("/");
    const proto::Response list = third.call(children);
    REQUIRE(list.code() == proto::OK);
    CHECK(list.children().names_size() == 1);
}

TEST_CASE("watch events arrive in zxid order, before later state", "[integration][watches]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    auto watcher = client_on(c, other_than(c, leader));
    auto writer = client_on(c, leader);
    REQUIRE(watcher->open_session(10s).ok());
    REQUIRE(writer->open_session(10s).ok());
    std::mutex mutex;
    std::vector<rc::WatchEvent> events;
    auto id = watcher->add_watch("/app", true, [&](const rc::WatchEvent& e) {
        std::lock_guard lock(mutex);
        events.push_back(e);
    });
    REQUIRE(id.ok());
    REQUIRE(writer->create("/app", "").ok());
    for (int i = 0; i < 20; ++i) {
        REQUIRE(writer->create("/app/n" + std::to_string(i), "x").ok());
    }
    REQUIRE(writer->set("/app/n3", "y").ok());
    // A read on the watcher's node after the last write: every event is in before its reply.
    REQUIRE(watcher->get("/app/n3").ok());
    std::lock_guard lock(mutex);
    REQUIRE(events.size() == 22);
    for (size_t i = 1; i < events.size(); ++i) {
        CHECK(events[i].zxid > events[i - 1].zxid);
    }
    CHECK(events.front().path == "/app");
    CHECK(events.back().type == rc::EventType::kNodeDataChanged);
}

}  // namespace
}  // namespace raftlock::integration
