#include "tests/sim/replica/world.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::sim::replica {

void Agenda::at(uint64_t time_us, std::function<void()> event) {
    RL_ASSERT(time_us >= now_us_);
    RL_ASSERT_MSG(heap_.size() < (1u << 22), "server simulator: runaway agenda");
    uint32_t slot = 0;
    if (free_slots_.empty()) {
        slot = static_cast<uint32_t>(events_.size());
        events_.push_back(std::move(event));
    } else {
        slot = free_slots_.back();
        free_slots_.pop_back();
        events_[slot] = std::move(event);
    }
    heap_.push(Item{time_us, next_seq_++, slot});
}

bool Agenda::run_next(uint64_t until_us) {
    if (heap_.empty() || heap_.top().time_us > until_us) {
        return false;
    }
    const Item item = heap_.top();
    heap_.pop();
    RL_ASSERT(item.time_us >= now_us_);
    RL_ASSERT(events_[item.slot] != nullptr);
    now_us_ = item.time_us;
    // The event is moved out and its slot freed before it runs: it may schedule more.
    std::function<void()> event = std::move(events_[item.slot]);
    events_[item.slot] = nullptr;
    free_slots_.push_back(item.slot);
    event();
    return true;
}

namespace {

// Every node reads the one simulated clock (no skew: the safe-until check has no margin).
class SimClock final : public server::Clock {
public:
    explicit SimClock(const Agenda& agenda) : agenda_(agenda) {}
    int64_t steady_ms() const override { return steady_us() / 1000; }
    int64_t steady_us() const override { return static_cast<int64_t>(agenda_.now_us()); }
    int64_t wall_ms() const override { return 1'800'000'000'000 + steady_ms(); }

private:
    const Agenda& agenda_;
};

// The node's disk as the replica's store. The disk outlives the replica (it is the node's, across
// crashes); no write faults are injected here, so every write succeeds.
class SimLogStore final : public storage::LogStore {
public:
    explicit SimLogStore(storage::FaultInjectingStorage& disk) : disk_(disk) {}

    raft::InitialState initial_state() const override { return disk_.initial_state(); }
    raft::StorageResult<std::vector<raft::Entry>> entries(raft::Index lo,
                                                          raft::Index hi,
                                                          uint64_t max_bytes) const override {
        return disk_.entries(lo, hi, max_bytes);
    }
    raft::StorageResult<raft::Term> term(raft::Index i) const override { return disk_.term(i); }
    raft::Index first_index() const override { return disk_.first_index(); }
    raft::Index last_index() const override { return disk_.last_index(); }
    raft::StorageResult<raft::Snapshot> snapshot() const override { return disk_.snapshot(); }

    void bootstrap(const raft::Bootstrap& boot) override {
        RL_ASSERT(disk_.last_index() == 0);
        written(disk_.write_entries({boot.entry}));
        written(disk_.write_hard_state(boot.hard_state));
        written(disk_.sync());
    }
    void persist(const raft::Ready& ready, bool sync) override {
        if (ready.snapshot) {
            written(disk_.write_snapshot(*ready.snapshot));
        }
        if (!ready.entries.empty()) {
            written(disk_.write_entries(ready.entries));
        }
        if (ready.hard_state) {
            written(disk_.write_hard_state(*ready.hard_state));
        }
        if (sync) {
            written(disk_.sync());
        }
    }
    void save_snapshot(raft::Index index,
                       const raft::ConfState& conf,
                       std::string data,
                       raft::Index compact_index) override {
        written(disk_.save_snapshot(index, conf, std::move(data), compact_index));
    }

private:
    static void written(storage::WriteStatus status) {
        RL_ASSERT_MSG(status == storage::WriteStatus::kOk, "no write fault is injected here");
    }
    storage::FaultInjectingStorage& disk_;
};

}  // namespace

struct World::Node {
    NodeId id = 0;
    server::ServerConfig config;
    storage::FaultInjectingStorage disk;
    Rng disk_rng{0};
    std::unique_ptr<SimClock> clock;
    std::unique_ptr<server::Metrics> metrics;
    std::unique_ptr<server::PeerSink> peers;
    std::unique_ptr<server::ClientSink> clients;
    std::unique_ptr<server::Replica> replica;
    std::unique_ptr<server::RedisFrontend> redis;  // the Redis port, in front of the replica
    std::unique_ptr<server::PgFrontend> pg;        // the PostgreSQL port, likewise
    uint32_t incarnation = 0;
    bool paused = false;
    // The loop thread is inside a write it runs itself (SimExecutor::run_on_loop): events due
    // meanwhile wait in `busy_deferred` and run, in order, right after the write completes.
    bool loop_busy = false;
    std::vector<std::function<void()>> busy_deferred;
    // Events that came due while paused; `true` marks the completion of a write on the loop.
    std::vector<std::pair<std::function<void()>, bool>> deferred;
    std::function<void()> deferred_tick;  // the tick that came due while paused
};

// The storage thread of a simulated node: one write at a time, in order, each taking a seeded
// disk latency; the completion runs on the node's loop. Destroyed with its replica (a crash):
// the writes it has not run are lost, and its events find the incarnation gone.
class SimExecutor final : public server::StorageExecutor {
public:
    SimExecutor(World& world, NodeId node) : world_(world), node_(node) {}

    void submit(Task job, Task done) override {
        jobs_.emplace_back(std::move(job), std::move(done));
        if (!busy_) {
            start_next();
        }
    }

private:
    void start_next() {
        RL_ASSERT(!jobs_.empty());
        busy_ = true;
        const uint64_t at = world_.now_us() + world_.latency(world_.params_.disk_latency_min_us,
                                                             world_.params_.disk_latency_max_us);
        world_.node_at(node_, at, [this] {
            std::pair<Task, Task> next = std::move(jobs_.front());
            jobs_.pop_front();
            next.first();
            if (next.second) {
                world_.node_at(node_, world_.now_us(), std::move(next.second));
            }
            busy_ = false;
            if (!jobs_.empty()) {
                start_next();
            }
        });
    }

public:
    // The loop blocks in the write for a seeded disk latency: the node handles nothing else
    // until the write and its completion have run (a crash meanwhile loses the write).
    void run_on_loop(Task job, Task done) override {
        RL_ASSERT_MSG(!busy_ && jobs_.empty(),
                      "a write on the loop while the storage thread works");
        const uint64_t at = world_.now_us() + world_.latency(world_.params_.disk_latency_min_us,
                                                             world_.params_.disk_latency_max_us);
        world_.write_on_loop(node_, at, [job = std::move(job), done = std::move(done)] {
            job();
            if (done) {
                done();
            }
        });
    }

private:
    World& world_;
    NodeId node_;
    std::deque<std::pair<Task, Task>> jobs_;
    bool busy_ = false;
};

struct SimPeerSink final : server::PeerSink {
    SimPeerSink(World& world, NodeId from) : world(world), from(from) {}
    bool send(uint64_t to, const proto::PeerFrame& frame) override {
        if (world.nodes_.count(to) == 0) {
            return false;
        }
        if (!world.linked(from, to)) {
            world.lost_links_.insert({from, to});
            return true;  // the kernel took it; the link is dead and will say so
        }
        uint64_t& busy = world.link_busy_until_us_[{from, to}];
        const uint64_t at =
            std::max(busy, world.now_us() + world.latency(world.params_.net_latency_min_us,
                                                          world.params_.net_latency_max_us));
        busy = at;
        world.agenda_.at(
            at, [w = &world, from = from, to, frame] { w->deliver_frame(from, to, frame); });
        return true;
    }
    void set_peers(const std::vector<net::PeerAddress>& peers) override { (void)peers; }

    World& world;
    NodeId from;
};

struct SimClientSink final : server::ClientSink {
    explicit SimClientSink(World& world) : world(world) {}
    void send(net::ConnectionId id, const proto::ServerMessage& message) override {
        world.to_client(id, [id, message](ClientObserver& o) { o.on_message(id, message); });
    }
    void close(net::ConnectionId id) override { world.closed_by_server(id); }

    World& world;
};

struct SimRespOutput final : server::RespOutput {
    explicit SimRespOutput(World& world) : world(world) {}
    void send(net::ConnectionId id, std::string bytes) override {
        world.to_client(
            id, [id, bytes = std::move(bytes)](ClientObserver& o) { o.on_resp(id, bytes); });
    }
    void close(net::ConnectionId id) override { world.closed_by_server(id); }
    // The simulated clients send one command at a time: nothing to hold back.
    void pause_reading(net::ConnectionId id, bool paused) override { (void)id, (void)paused; }
    bool is_open(net::ConnectionId id) const override { return world.conns_.count(id) != 0; }

    World& world;
};

struct SimPgOutput final : server::PgOutput {
    explicit SimPgOutput(World& world) : world(world) {}
    void send(uint64_t id, std::string bytes) override {
        world.to_client(id,
                        [id, bytes = std::move(bytes)](ClientObserver& o) { o.on_pg(id, bytes); });
    }
    void close(uint64_t id) override { world.pg_closed_by_server(id); }
    // The simulated clients send one statement at a time: nothing to hold back.
    void pause_reading(uint64_t id, bool paused) override { (void)id, (void)paused; }

    World& world;
};

void World::to_client(ConnId conn, std::function<void(ClientObserver&)> deliver) {
    auto it = conns_.find(conn);
    if (it == conns_.end()) {
        return;
    }
    Conn& c = it->second;
    c.to_client_us = std::max(
        c.to_client_us, now_us() + latency(params_.net_latency_min_us, params_.net_latency_max_us));
    agenda_.at(c.to_client_us, [this, conn, deliver = std::move(deliver)] {
        auto open = conns_.find(conn);
        if (open != conns_.end()) {
            deliver(*open->second.observer);
        }
    });
}

void World::closed_by_server(ConnId conn) {
    auto it = conns_.find(conn);
    if (it == conns_.end()) {
        return;
    }
    ClientObserver* observer = it->second.observer;
    // The connection lives on, closing, until its client hears of the close: a client that sends
    // before then (an event at this same time) sends into a closed socket, and nothing arrives.
    // (Erasing it here made such a send look like one on a connection that never existed: seed
    // 29892, a SQL client's next query.)
    it->second.closing = true;
    agenda_.at(now_us(), [this, observer, conn] {
        conns_.erase(conn);
        observer->on_closed(conn);
    });
}

void World::pg_closed_by_server(ConnId conn) {
    auto it = conns_.find(conn);
    if (it == conns_.end() || it->second.closing) {
        return;
    }
    Conn& c = it->second;
    c.closing = true;
    const NodeId node = c.node;
    node_at(node, now_us(), [this, node, conn] { nodes_.at(node)->pg->on_pg_close(conn); });
    agenda_.at(std::max(c.to_client_us, now_us()), [this, conn] { closed_by_server(conn); });
}

World::World(uint64_t seed, const WorldParams& params)
    : params_(params),
      rng_(seed),
      resp_output_(std::make_unique<SimRespOutput>(*this)),
      pg_output_(std::make_unique<SimPgOutput>(*this)) {
    RL_ASSERT(params.nodes >= 1);
    server::ServerConfig base = params.config;
    base.members.clear();
    for (NodeId id = 1; id <= params.nodes; ++id) {
        base.members.push_back(
            server::Member{id, server::Endpoint{"10.0.0." + std::to_string(id), 7001}});
    }
    for (NodeId id = 1; id <= params.nodes; ++id) {
        auto n = std::make_unique<Node>();
        n->id = id;
        n->config = base;
        n->config.node_id = id;
        n->config.client_listen = server::Endpoint{"10.0.0." + std::to_string(id), 7101};
        n->disk_rng = Rng(rng_.next());
        n->clock = std::make_unique<SimClock>(agenda_);
        n->peers = std::make_unique<SimPeerSink>(*this, id);
        n->clients = std::make_unique<SimClientSink>(*this);
        nodes_.emplace(id, std::move(n));
    }
    for (auto& [id, n] : nodes_) {
        start(*n);
    }
}

World::~World() {
    // Replicas first: their destructors must not find the sinks gone.
    for (auto& [id, n] : nodes_) {
        n->replica.reset();
        n->redis.reset();
    }
}

std::vector<NodeId> World::ids() const {
    std::vector<NodeId> out;
    for (const auto& [id, n] : nodes_) {
        out.push_back(id);
    }
    return out;
}

bool World::up(NodeId id) const {
    return nodes_.at(id)->replica != nullptr;
}

bool World::paused(NodeId id) const {
    return nodes_.at(id)->paused;
}

const server::Replica& World::replica(NodeId id) const {
    RL_ASSERT(up(id));
    return *nodes_.at(id)->replica;
}

uint64_t World::latency(uint64_t min_us, uint64_t max_us) {
    RL_ASSERT(min_us <= max_us);
    return min_us + rng_.uniform(max_us - min_us + 1);
}

void World::run_until(uint64_t until_us) {
    while (agenda_.run_next(until_us)) {
    }
}

void World::node_at(NodeId id, uint64_t time_us, std::function<void()> event, bool tick) {
    Node& n = *nodes_.at(id);
    agenda_.at(time_us, [this, &n, incarnation = n.incarnation, event = std::move(event),
                         tick]() mutable { run_on_node(n, incarnation, std::move(event), tick); });
}

void World::run_on_node(
    Node& n, uint32_t incarnation, std::function<void()> event, bool tick, bool loop_write) {
    if (n.replica == nullptr || n.incarnation != incarnation) {
        return;  // that incarnation is gone
    }
    if (n.paused) {
        // The tick re-arms itself when it runs, so a paused node holds at most one.
        if (tick) {
            RL_ASSERT(!n.deferred_tick);
            n.deferred_tick = std::move(event);
        } else {
            n.deferred.emplace_back(std::move(event), loop_write);
        }
        return;
    }
    if (loop_write) {
        finish_write_on_loop(n, incarnation, event);
        return;
    }
    if (n.loop_busy) {
        n.busy_deferred.push_back(std::move(event));  // a tick too: it re-arms when it runs
        return;
    }
    event();
}

void World::write_on_loop(NodeId id, uint64_t time_us, std::function<void()> write) {
    Node& n = *nodes_.at(id);
    RL_ASSERT_MSG(!n.loop_busy, "a second write on a loop already inside one");
    n.loop_busy = true;
    ++writes_on_loop_;
    agenda_.at(
        time_us, [this, &n, incarnation = n.incarnation, write = std::move(write)]() mutable {
            run_on_node(n, incarnation, std::move(write), /*tick=*/false, /*loop_write=*/true);
        });
}

// The write and its completion, then what came due meanwhile, in the order it came (every event
// still in the agenda is later), until one of them starts another write on the loop.
void World::finish_write_on_loop(Node& n, uint32_t incarnation, std::function<void()>& write) {
    RL_ASSERT(n.loop_busy);
    n.loop_busy = false;
    write();
    size_t next = 0;
    while (next < n.busy_deferred.size() && !n.loop_busy && n.replica != nullptr &&
           n.incarnation == incarnation) {
        std::function<void()> event = std::move(n.busy_deferred[next]);
        ++next;
        event();
    }
    n.busy_deferred.erase(n.busy_deferred.begin(),
                          n.busy_deferred.begin() + static_cast<std::ptrdiff_t>(next));
}

void World::start(Node& n) {
    RL_ASSERT(n.replica == nullptr);
    ++n.incarnation;
    n.loop_busy = false;
    n.busy_deferred.clear();
    const std::optional<storage::StorageError> error = n.disk.open();
    RL_ASSERT_MSG(!error, "the simulated disk is never corrupted here");
    n.metrics = std::make_unique<server::Metrics>();
    const NodeId id = n.id;
    const uint32_t incarnation = n.incarnation;
    auto post = [this, id](std::function<void()> task) { node_at(id, now_us(), std::move(task)); };
    n.replica = std::make_unique<server::Replica>(
        n.config, std::make_unique<SimLogStore>(n.disk), std::make_unique<SimExecutor>(*this, id),
        *n.peers, *n.clients, post, *n.clock, *n.metrics, rng_.next());
    server::RedisFrontendOptions redis_options;
    redis_options.node_id = id;
    n.redis = std::make_unique<server::RedisFrontend>(redis_options, *resp_output_, *n.replica);
    n.replica->set_redis_frontend(n.redis.get());
    server::PgFrontendOptions pg_options;  // trust: no password
    pg_options.node_id = id;
    pg_options.secret_seed = rng_.next();
    n.pg = std::make_unique<server::PgFrontend>(pg_options, *pg_output_, *n.replica);
    n.replica->set_pg_frontend(n.pg.get());
    // Ticks start at a random phase, as processes do.
    const uint64_t tick_us = uint64_t{n.config.tick_ms} * 1000;
    node_at(
        id, now_us() + rng_.uniform(tick_us), [this, id, incarnation] { tick(id, incarnation); },
        /*tick=*/true);
}

void World::tick(NodeId id, uint32_t incarnation) {
    Node& n = *nodes_.at(id);
    n.replica->tick();
    node_at(
        id, now_us() + uint64_t{n.config.tick_ms} * 1000,
        [this, id, incarnation] { tick(id, incarnation); }, /*tick=*/true);
}

bool World::linked(NodeId from, NodeId to) const {
    return !isolated_ || (*isolated_ != from && *isolated_ != to);
}

void World::deliver_frame(NodeId from, NodeId to, proto::PeerFrame frame) {
    // A frame of a link that broke never arrives. A lossy network breaks the TCP connection
    // that carried the frame (TCP itself does not lose frames): the sender notices and redials
    // a moment later.
    if (!linked(from, to)) {
        lost_links_.insert({from, to});
        return;
    }
    if (loss_per_mille_ > 0 && rng_.chance(loss_per_mille_, 1000)) {
        lost_links_.insert({from, to});
        agenda_.at(now_us() + latency(50'000, 500'000), [this] { report_lost_links(); });
        return;
    }
    node_at(to, now_us(), [this, from, to, frame = std::move(frame)]() mutable {
        nodes_.at(to)->replica->on_peer_frame(from, std::move(frame));
    });
}

void World::report_lost_links() {
    std::set<std::pair<NodeId, NodeId>> lost;
    for (const auto& link : lost_links_) {
        if (linked(link.first, link.second)) {
            lost.insert(link);
        }
    }
    for (const auto& [from, to] : lost) {
        lost_links_.erase({from, to});
        node_at(from, now_us(),
                [this, from = from, to = to] { nodes_.at(from)->replica->on_peer_link_lost(to); });
    }
}

void World::crash(NodeId id) {
    Node& n = *nodes_.at(id);
    RL_ASSERT(n.replica != nullptr);
    n.replica.reset();  // its executor's unrun writes go with it
    n.redis.reset();
    n.pg.reset();
    n.deferred.clear();
    n.deferred_tick = nullptr;
    n.paused = false;
    n.loop_busy = false;  // inside a write on the loop: the write is lost with the process
    n.busy_deferred.clear();
    (void)n.disk.crash(n.disk_rng);
    drop_conns_of(id);
    note_faults();
    // Peers lose what they had in flight to it: their links break.
    for (const auto& [other, o] : nodes_) {
        if (other != id) {
            lost_links_.insert({other, id});
        }
    }
}

void World::restart(NodeId id) {
    Node& n = *nodes_.at(id);
    start(n);
    report_lost_links();
    note_faults();
}

void World::pause(NodeId id) {
    Node& n = *nodes_.at(id);
    RL_ASSERT(n.replica != nullptr);
    n.paused = true;
    note_faults();
}

// As a process resumed after SIGSTOP: what arrived meanwhile (frames, requests, completed
// writes) runs first, in order, and the overdue tick after it (Asio runs the ready descriptors'
// handlers before the expired timers'), so the first tick finds the core already stepped by
// frames its soft state has not seen yet.
void World::resume(NodeId id) {
    Node& n = *nodes_.at(id);
    if (!n.paused) {
        return;
    }
    n.paused = false;
    note_faults();
    std::vector<std::pair<std::function<void()>, bool>> due = std::move(n.deferred);
    n.deferred.clear();
    if (n.deferred_tick) {
        due.emplace_back(std::move(n.deferred_tick), false);
        n.deferred_tick = nullptr;
    }
    const uint32_t incarnation = n.incarnation;
    for (auto& [event, loop_write] : due) {
        agenda_.at(now_us(), [this, &n, incarnation, event = std::move(event),
                              loop_write = loop_write]() mutable {
            run_on_node(n, incarnation, std::move(event), /*tick=*/false, loop_write);
        });
    }
}

void World::isolate(NodeId id) {
    RL_ASSERT(nodes_.count(id) != 0);
    isolated_ = id;
    note_faults();
}

void World::heal() {
    isolated_.reset();
    report_lost_links();
    note_faults();
}

std::optional<ConnId> World::open_conn(NodeId node, ClientObserver& observer, ConnId port_bit) {
    Node& n = *nodes_.at(node);
    if (n.replica == nullptr) {
        return std::nullopt;
    }
    const ConnId conn = next_conn_++ | port_bit;
    conns_.emplace(conn, Conn{node, &observer, now_us(), now_us()});
    node_at(node, now_us(), [this, node, conn] {
        if (conns_.count(conn) == 0) {
            return;
        }
        Node& to = *nodes_.at(node);
        if ((conn & net::kRespConnectionBit) != 0) {
            to.redis->on_resp_open(conn, "sim");
        } else if ((conn & net::kPgConnectionBit) != 0) {
            to.pg->on_pg_open(conn, "sim");
        } else {
            to.replica->on_client_open(conn, "sim");
        }
    });
    return conn;
}

void World::to_server(ConnId conn, std::function<void(Node&)> deliver) {
    auto it = conns_.find(conn);
    RL_ASSERT(it != conns_.end());
    Conn& c = it->second;
    c.to_server_us = std::max(
        c.to_server_us, now_us() + latency(params_.net_latency_min_us, params_.net_latency_max_us));
    const NodeId node = c.node;
    node_at(node, c.to_server_us, [this, node, conn, deliver = std::move(deliver)] {
        auto open = conns_.find(conn);
        if (open != conns_.end() && !open->second.closing) {
            deliver(*nodes_.at(node));
        }
    });
}

std::optional<ConnId> World::open(NodeId node, ClientObserver& observer) {
    return open_conn(node, observer, 0);
}

void World::send(ConnId conn, proto::Request request) {
    RL_ASSERT((conn & net::kRespConnectionBit) == 0);
    to_server(conn, [conn, request = std::move(request)](Node& n) mutable {
        n.replica->on_client_request(conn, std::move(request));
    });
}

NodeId World::node_of(ConnId conn) const {
    auto it = conns_.find(conn);
    return it == conns_.end() ? 0 : it->second.node;
}

std::optional<ConnId> World::open_resp(NodeId node, ClientObserver& observer) {
    return open_conn(node, observer, net::kRespConnectionBit);
}

void World::send_resp(ConnId conn, statemachine::redis::Argv argv) {
    RL_ASSERT((conn & net::kRespConnectionBit) != 0);
    to_server(conn, [conn, argv = std::move(argv)](Node& n) mutable {
        n.redis->on_resp_command(conn, std::move(argv));
    });
}

std::optional<ConnId> World::open_pg(NodeId node, ClientObserver& observer) {
    return open_conn(node, observer, net::kPgConnectionBit);
}

void World::send_pg(ConnId conn, net::PgFrontendMessage message) {
    RL_ASSERT((conn & net::kPgConnectionBit) != 0);
    to_server(conn, [conn, message = std::move(message)](Node& n) mutable {
        n.pg->on_pg_message(conn, std::move(message));
    });
}

void World::close(ConnId conn) {
    auto it = conns_.find(conn);
    if (it == conns_.end()) {
        return;
    }
    const NodeId node = it->second.node;
    const bool server_closes = it->second.closing;  // and tells its front end itself
    conns_.erase(it);
    if (server_closes) {
        return;
    }
    node_at(node, now_us(), [this, node, conn] {
        Node& n = *nodes_.at(node);
        if ((conn & net::kRespConnectionBit) != 0) {
            n.redis->on_resp_close(conn);
        } else if ((conn & net::kPgConnectionBit) != 0) {
            n.pg->on_pg_close(conn);
        } else {
            n.replica->on_client_close(conn);
        }
    });
}

void World::drop_conns_of(NodeId id) {
    std::vector<ConnId> gone;
    for (const auto& [conn, c] : conns_) {
        if (c.node == id) {
            gone.push_back(conn);
        }
    }
    for (ConnId conn : gone) {
        closed_by_server(conn);
    }
}

void World::note_faults() {
    bool active = isolated_.has_value() || loss_per_mille_ > 0;
    for (const auto& [id, n] : nodes_) {
        active = active || n->replica == nullptr || n->paused;
    }
    if (active) {
        calm_since_us_.reset();
    } else if (!calm_since_us_) {
        calm_since_us_ = now_us();
    }
}

std::optional<uint64_t> World::calm_since_us() const {
    return calm_since_us_;
}

std::string World::describe() const {
    std::string out;
    for (const auto& [id, n] : nodes_) {
        if (n->replica == nullptr) {
            out += fmt::format("n{} down (#{})\n", id, n->incarnation);
            continue;
        }
        const server::Replica& r = *n->replica;
        out += fmt::format("n{} #{} {}{} leader={} applied={}\n", id, n->incarnation,
                           r.is_leader() ? "leader" : "follower", n->paused ? " paused" : "",
                           r.leader(), r.applied_index());
    }
    return out;
}

}  // namespace raftlock::sim::replica
