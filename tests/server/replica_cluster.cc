#include "replica_cluster.h"

#include <chrono>
#include <filesystem>

#include <catch2/catch.hpp>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include "server/storage_worker.h"
#include "storage/durable_store.h"

namespace raftlock::server::test {

void TaskQueue::post(std::function<void()> task) {
    {
        std::lock_guard lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
}

bool TaskQueue::run_one(int wait_ms) {
    std::function<void()> task;
    {
        std::unique_lock lock(mutex_);
        if (!cv_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                          [this] { return !tasks_.empty(); })) {
            return false;
        }
        task = std::move(tasks_.front());
        tasks_.pop_front();
    }
    task();
    return true;
}

ReplicaCluster::ReplicaCluster(size_t size) {
    // Quiet unless asked: RAFTLOCK_TEST_LOG=debug shows the replicas' logs.
    const char* level = std::getenv("RAFTLOCK_TEST_LOG");
    spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
    std::string tmpl = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : "/tmp") +
                       "/raftlock-replica-XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    root_ = tmpl;
    config_template.cluster_id = 7;
    config_template.tick_ms = 10;
    config_template.election_timeout_ms = 100;
    config_template.heartbeat_interval_ms = 20;
    config_template.request_timeout_ms = 5000;
    config_template.session_timeout_ms_min = 100;
    // Off by default in raftlockd; on here, so these tests (and their TSan build) run a follower's
    // writes on its loop thread (Replica::write_on_loop).
    config_template.follower_writes_on_loop = true;
    for (uint64_t id = 1; id <= size; ++id) {
        config_template.members.push_back(
            Member{id, Endpoint{"127.0.0.1", static_cast<uint16_t>(7000 + id)}});
    }
    for (uint64_t id = 1; id <= size; ++id) {
        start_node(id, config_template);
    }
}

void ReplicaCluster::start_node(uint64_t id, const ServerConfig& config) {
    Node& n = nodes_[id];
    n.config = config;
    n.config.node_id = id;
    n.config.client_listen = Endpoint{"127.0.0.1", static_cast<uint16_t>(7100 + id)};
    n.dir = root_ + "/node" + std::to_string(id);
    n.config.data_dir = n.dir;
    n.peers.cluster = this;
    n.peers.from = id;
    n.clients.cluster = this;
    restart(id);
}

void ReplicaCluster::add_node(uint64_t id) {
    REQUIRE(nodes_.count(id) == 0);
    ServerConfig config = config_template;
    config.join_existing = true;
    config.members.push_back(Member{id, Endpoint{"127.0.0.1", static_cast<uint16_t>(7000 + id)}});
    start_node(id, config);
}

ReplicaCluster::~ReplicaCluster() {
    for (auto& [id, n] : nodes_) {
        n.replica.reset();
    }
    std::filesystem::remove_all(root_);
}

void ReplicaCluster::restart(uint64_t id) {
    Node& n = nodes_.at(id);
    REQUIRE(n.replica == nullptr);
    storage::DurableStoreOptions options;
    options.journal_segment_bytes = 1 << 20;  // each is zero-filled when made
    auto store = storage::open_durable_store(n.dir, options);
    REQUIRE(store.ok());
    const uint64_t epoch = ++n.epoch;
    auto post = [this, id, epoch](std::function<void()> task) {
        queue_.post([this, id, epoch, task = std::move(task)] {
            if (nodes_.at(id).epoch == epoch && nodes_.at(id).replica) {
                task();
            }
        });
    };
    n.metrics = std::make_unique<Metrics>();
    n.replica = std::make_unique<Replica>(n.config, std::move(store).value(),
                                          std::make_unique<StorageWorker>(post), n.peers, n.clients,
                                          post, clock, *n.metrics, id * 1000 + epoch);
}

void ReplicaCluster::crash(uint64_t id) {
    Node& n = nodes_.at(id);
    ++n.epoch;
    n.replica.reset();
}

void ReplicaCluster::isolate(uint64_t id, bool isolated) {
    if (isolated) {
        isolated_.insert(id);
    } else {
        isolated_.erase(id);
    }
}

void ReplicaCluster::break_link(uint64_t from, uint64_t to) {
    broken_links_.insert({from, to});
}

void ReplicaCluster::restore_link(uint64_t from, uint64_t to) {
    broken_links_.erase({from, to});
    if (alive(from)) {
        replica(from).on_peer_link_lost(to);
    }
}

void ReplicaCluster::PeerLink::set_peers(const std::vector<net::PeerAddress>& list) {
    std::set<uint64_t> next;
    for (const net::PeerAddress& a : list) {
        next.insert(a.id);
        retired.erase(a.id);
    }
    for (uint64_t id : peers) {
        if (next.count(id) == 0) {
            retired.insert(id);
        }
    }
    peers = std::move(next);
}

bool ReplicaCluster::PeerLink::send(uint64_t to, const proto::PeerFrame& frame) {
    if (cluster->isolated_.count(from) || cluster->isolated_.count(to) || peers.count(to) == 0 ||
        cluster->nodes_.count(to) == 0) {
        return false;
    }
    if (cluster->nodes_.at(to).peers.retired.count(from) != 0) {
        // The real transport's HelloReply{removed}.
        const uint64_t epoch = cluster->nodes_.at(from).epoch;
        cluster->queue_.post([c = cluster, from = from, to, epoch] {
            ReplicaCluster::Node& n = c->nodes_.at(from);
            if (n.epoch == epoch && n.replica) {
                n.replica->on_removed_by_peer(to);
            }
        });
        return false;
    }
    const uint64_t epoch = cluster->nodes_.at(to).epoch;
    cluster->queue_.post([c = cluster, from = from, to, epoch, frame] {
        ReplicaCluster::Node& n = c->nodes_.at(to);
        if (n.epoch == epoch && n.replica && n.peers.peers.count(from) != 0 &&
            c->broken_links_.count({from, to}) == 0) {
            proto::PeerFrame copy = frame;
            n.replica->on_peer_frame(from, std::move(copy));
        }
    });
    return true;
}

void ReplicaCluster::ClientLink::send(net::ConnectionId id, const proto::ServerMessage& message) {
    if (message.has_response()) {
        cluster->responses_[id][message.response().request_id()] = message.response();
    } else {
        cluster->pushes_[id].push_back(message);
    }
}

void ReplicaCluster::tick_all() {
    clock.now_ms += config_template.tick_ms;
    for (auto& [id, n] : nodes_) {
        if (n.replica) {
            n.replica->tick();
        }
    }
}

bool ReplicaCluster::run_until(const std::function<bool()>& done, int64_t max_ms) {
    const int64_t end_ms = clock.now_ms + max_ms;
    while (!done()) {
        if (queue_.run_one(0)) {
            continue;
        }
        // Idle: let the storage threads finish their writes before time moves on, so a slow
        // disk (a loaded machine) does not look like a dead leader. A replica whose Ready is on
        // its storage thread sends nothing until the write is done: wait for it (a second of
        // real time at most), else a short grace for other completions.
        if (queue_.run_one(any_writing() ? 1000 : 2)) {
            continue;
        }
        if (clock.now_ms >= end_ms) {
            return false;
        }
        tick_all();
    }
    return true;
}

bool ReplicaCluster::any_writing() const {
    for (const auto& [id, n] : nodes_) {
        if (n.replica && n.replica->writing()) {
            return true;
        }
    }
    return false;
}

uint64_t ReplicaCluster::wait_for_leader(int64_t max_ms) {
    uint64_t leader = 0;
    const bool found = run_until(
        [&] {
            leader = 0;
            for (auto& [id, n] : nodes_) {
                if (n.replica && !isolated_.count(id) && n.replica->is_leader()) {
                    leader = id;
                }
            }
            if (leader == 0) {
                return false;
            }
            for (auto& [id, n] : nodes_) {
                if (n.replica && !isolated_.count(id) && n.replica->leader() != leader) {
                    return false;
                }
            }
            return true;
        },
        max_ms);
    REQUIRE(found);
    return leader;
}

uint64_t ReplicaCluster::follower() const {
    for (const auto& [id, n] : nodes_) {
        if (n.replica && !isolated_.count(id) && !n.replica->is_leader()) {
            return id;
        }
    }
    FAIL("no live follower");
    return 0;
}

void ReplicaCluster::connect(uint64_t node, net::ConnectionId conn) {
    conn_node_[conn] = node;
    nodes_.at(node).replica->on_client_open(conn, "test");
}

void ReplicaCluster::disconnect(uint64_t node, net::ConnectionId conn) {
    nodes_.at(node).replica->on_client_close(conn);
}

void ReplicaCluster::send(uint64_t node, net::ConnectionId conn, proto::Request request) {
    nodes_.at(node).replica->on_client_request(conn, std::move(request));
}

std::optional<proto::Response> ReplicaCluster::take_response(net::ConnectionId conn,
                                                             uint64_t request_id) {
    auto c = responses_.find(conn);
    if (c == responses_.end()) {
        return std::nullopt;
    }
    auto r = c->second.find(request_id);
    if (r == c->second.end()) {
        return std::nullopt;
    }
    proto::Response out = std::move(r->second);
    c->second.erase(r);
    return out;
}

std::optional<proto::Response> ReplicaCluster::call(uint64_t node,
                                                    net::ConnectionId conn,
                                                    proto::Request request,
                                                    int64_t max_ms) {
    const uint64_t id = request.request_id();
    send(node, conn, std::move(request));
    std::optional<proto::Response> out;
    run_until(
        [&] {
            out = take_response(conn, id);
            return out.has_value();
        },
        max_ms);
    return out;
}

std::vector<proto::ServerMessage> ReplicaCluster::take_pushes(net::ConnectionId conn) {
    std::vector<proto::ServerMessage> out = std::move(pushes_[conn]);
    pushes_[conn].clear();
    return out;
}

}  // namespace raftlock::server::test
