#pragma once

// Three (or more) replicas in one process, without sockets: peer frames and client messages pass
// through one task queue run on the test's thread, time is a fake clock the fixture advances, and
// each replica has a real RocksDB store in a scratch directory and its real storage thread. It
// exercises the replica's request paths (forwarding, ReadIndex reads, keepalives, waits, expiry,
// restart) quickly; the real-process tests in tests/integration cover the sockets.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/replica.h"

namespace raftlock::server::test {

class FakeClock final : public Clock {
public:
    int64_t steady_ms() const override { return now_ms.load(); }
    int64_t steady_us() const override { return now_ms.load() * 1000; }
    int64_t wall_ms() const override { return 1'700'000'000'000 + now_ms.load(); }
    std::atomic<int64_t> now_ms{1000};
};

// The one "loop thread": tasks posted from any thread (storage completions) run on the test's.
class TaskQueue {
public:
    void post(std::function<void()> task);
    // Runs one task; waits up to wait_ms of real time for one to arrive. False when none came.
    bool run_one(int wait_ms);

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> tasks_;
};

class ReplicaCluster {
public:
    explicit ReplicaCluster(size_t size = 3);
    ~ReplicaCluster();

    // Runs tasks and advances time one tick at a time until `done` or `max_ms` of fake time.
    bool run_until(const std::function<bool()>& done, int64_t max_ms = 10000);
    // The leader, after running until there is one that every live replica knows.
    uint64_t wait_for_leader(int64_t max_ms = 10000);
    uint64_t follower() const;  // a live non-leader

    // Client side: connection `conn` on node `node`. send() returns immediately; call() waits.
    void connect(uint64_t node, net::ConnectionId conn);
    void disconnect(uint64_t node, net::ConnectionId conn);
    void send(uint64_t node, net::ConnectionId conn, proto::Request request);
    std::optional<proto::Response> call(uint64_t node,
                                        net::ConnectionId conn,
                                        proto::Request request,
                                        int64_t max_ms = 10000);
    // The response with this request id, once it arrived (consumed).
    std::optional<proto::Response> take_response(net::ConnectionId conn, uint64_t request_id);
    // Pushes (watch events, session ends) that arrived on a connection, in order (consumed).
    std::vector<proto::ServerMessage> take_pushes(net::ConnectionId conn);

    // A new node with an empty store, started with --initial-cluster-state existing: it waits to
    // be added (ChangeMember), knowing the founding members from its --member list.
    void add_node(uint64_t node);

    // Faults.
    void crash(uint64_t node);    // drop the replica (its store stays on disk)
    void restart(uint64_t node);  // a new replica on the same store
    void isolate(uint64_t node, bool isolated);
    // The link from -> to loses every frame delivered while it is broken (TCP took them; the
    // peer's kernel discarded them), unnoticed by `from` until restore_link reports the loss as
    // net::PeerTransport::on_link_lost does.
    void break_link(uint64_t from, uint64_t to);
    void restore_link(uint64_t from, uint64_t to);

    Replica& replica(uint64_t node) { return *nodes_.at(node).replica; }
    const Metrics& metrics(uint64_t node) const { return *nodes_.at(node).metrics; }
    bool alive(uint64_t node) const { return nodes_.at(node).replica != nullptr; }
    FakeClock clock;
    ServerConfig config_template;

private:
    struct PeerLink final : PeerSink {
        ReplicaCluster* cluster = nullptr;
        uint64_t from = 0;
        bool send(uint64_t to, const proto::PeerFrame& frame) override;
        // As net::PeerTransport: frames go only to, and are taken only from, current peers.
        void set_peers(const std::vector<net::PeerAddress>& list) override;
        std::set<uint64_t> peers;
        std::set<uint64_t> retired;  // were peers, then left out: told they were removed
    };
    struct ClientLink final : ClientSink {
        ReplicaCluster* cluster = nullptr;
        void send(net::ConnectionId id, const proto::ServerMessage& message) override;
        void close(net::ConnectionId id) override { (void)id; }
    };
    struct Node {
        ServerConfig config;
        std::string dir;
        std::unique_ptr<Metrics> metrics;
        PeerLink peers;
        ClientLink clients;
        std::unique_ptr<Replica> replica;
        uint64_t epoch = 0;  // bumped by crash(): tasks of a dead incarnation are dropped
    };

    void tick_all();
    bool any_writing() const;  // a live replica waits for its storage thread
    void start_node(uint64_t id, const ServerConfig& config);

    std::string root_;
    TaskQueue queue_;
    std::map<uint64_t, Node> nodes_;
    std::set<uint64_t> isolated_;
    std::set<std::pair<uint64_t, uint64_t>> broken_links_;  // (from, to)
    std::map<net::ConnectionId, std::map<uint64_t, proto::Response>> responses_;
    std::map<net::ConnectionId, std::vector<proto::ServerMessage>> pushes_;
    std::map<net::ConnectionId, uint64_t> conn_node_;
};

}  // namespace raftlock::server::test
