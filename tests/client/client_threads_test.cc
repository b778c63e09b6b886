// One Client shared by many threads against FakeServer: calls send their requests from the calling
// threads while the network thread reads answers and pushes (decision 0022). Run under TSan by
// scripts/test.sh.

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "client_test_util.h"

namespace raftlock::client::testing {

using namespace std::chrono_literals;

namespace {

constexpr int kThreads = 8;
constexpr int kCallsPerThread = 150;

proto::ServerMessage data_changed(const std::string& path, uint64_t zxid) {
    proto::ServerMessage message;
    message.mutable_watch_event()->set_path(path);
    message.mutable_watch_event()->set_type(proto::NODE_DATA_CHANGED);
    message.mutable_watch_event()->set_zxid(zxid);
    return message;
}

// Runs `body(thread index, call index)` on kThreads threads at once; counts the calls that failed.
template <typename Body>
int run_threads(Body body) {
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kCallsPerThread; i++) {
                if (!body(t, i)) {
                    failed++;
                }
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    return failed.load();
}

}  // namespace

TEST_CASE("calls from many threads on one client all get their own answers", "[client][threads]") {
    // Declared before the client: its callbacks may run until the client is gone.
    std::atomic<int> events{0};
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client.open_session(10s).ok());
    REQUIRE(client.add_watch("/w", false, [&](const WatchEvent&) { events++; }).ok());
    const uint64_t conn = server.received().back().conn;
    std::atomic<bool> pushing{true};
    // Pushes arrive on the network thread while the callers send.
    std::thread pusher([&] {
        for (uint64_t zxid = 1; pushing.load(); zxid++) {
            server.send(conn, data_changed("/w", zxid));
            std::this_thread::sleep_for(200us);
        }
    });
    const int failed = run_threads([&](int t, int i) {
        const std::string path = "/t" + std::to_string(t);
        if (i % 2 == 0) {
            return client.set(path, std::to_string(i)).ok();
        }
        auto got = client.get(path);
        return got.ok() && got->data == "v";
    });
    pushing = false;
    pusher.join();
    CHECK(failed == 0);
    CHECK(events.load() > 0);
    const auto sets = requests_of(server, proto::Request::kSetData);
    REQUIRE(sets.size() == kThreads * kCallsPerThread / 2);
    // One session: its writes reach the server numbered 1, 2, 3, ... in the order they arrive,
    // though eight threads sent them (each seq is stamped and sent under the core's lock).
    for (size_t i = 0; i < sets.size(); i++) {
        CHECK(sets[i].seq() == sets[0].seq() + i);
    }
}

TEST_CASE("calls from many threads ride out connections that drop under them",
          "[client][threads]") {
    FakeServer server;
    // A deadline no reconnect comes near, whatever the scheduling: every call must succeed.
    ClientOptions options = test_options({server.endpoint()});
    options.request_timeout = 20s;
    Client client(options);
    REQUIRE(client.open_session(30s).ok());
    std::atomic<bool> dropping{true};
    std::thread dropper([&] {
        for (int drops = 0; drops < 10 && dropping.load(); drops++) {
            std::this_thread::sleep_for(20ms);
            server.drop_connections();
        }
    });
    const int failed = run_threads([&](int t, int i) {
        if (i % 3 == 0) {
            return client.set("/d" + std::to_string(t), "x").ok();
        }
        return client.get("/d" + std::to_string(t)).ok();
    });
    dropping = false;
    dropper.join();
    CHECK(failed == 0);
    CHECK(server.accepted() > 1);
    // Every write was answered once to its caller, whatever number of times it was sent: the
    // distinct seqs the server saw are exactly the writes made.
    std::set<uint64_t> seqs;
    for (const auto& set : requests_of(server, proto::Request::kSetData)) {
        seqs.insert(set.seq());
    }
    CHECK(seqs.size() == kThreads * ((kCallsPerThread + 2) / 3));
}

TEST_CASE("a callback's blocking call is refused while other threads call", "[client][threads]") {
    Signal<ErrorCode> codes;
    FakeServer server;
    Client client(test_options({server.endpoint()}));
    REQUIRE(client
                .add_watch("/cb", false,
                           [&](const WatchEvent&) {
                               auto got = client.get("/cb");
                               codes.set(got.ok() ? ErrorCode::kOk : got.error().code);
                           })
                .ok());
    const uint64_t conn = server.received().back().conn;
    std::thread caller([&] {
        for (int i = 0; i < 100; i++) {
            (void)client.get("/other");
        }
    });
    server.send(conn, data_changed("/cb", 1));
    REQUIRE(codes.wait());
    caller.join();
    CHECK(codes.values()[0] == ErrorCode::kWrongThread);
}

}  // namespace raftlock::client::testing
