#pragma once

// The server simulator's world (issue 19): real server::Replica objects, the code raftlockd runs,
// in one thread under one seeded agenda. Everything a Replica takes from its process is simulated
// here and decided by the run's seed:
//
//   time       one simulated clock (microseconds); each node's server::Clock reads it
//   loop       a node's post() is an event at the current time, behind those already due
//   disk       storage::FaultInjectingStorage behind storage::LogStore; its writes run on a
//              seeded executor that completes them after a simulated disk latency, in order,
//              and a crash drops what it has not run and a random part of what is unsynced
//   network    peer frames in order per link with a seeded latency; a partition loses them and
//              the sender hears of the lost link when it heals (net::PeerTransport::on_link_lost)
//   clients    connections to one node each, to its client port, its Redis port or its
//              PostgreSQL port (the real server::RedisFrontend and server::PgFrontend in front
//              of the replica); requests and answers in order with a latency; a crash of the
//              node closes them
//   faults     crash and restart, pause and resume (a node runs none of its events meanwhile),
//              partitions of one node, lossy links that break (main.cc's Nemesis chooses them)
//
// A run is a pure function of its seed: replay one with `raftlock-replica-sim --seed N -v`.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "base/rng.h"
#include "proto/client.pb.h"
#include "proto/peer.pb.h"
#include "server/config.h"
#include "server/metrics.h"
#include "server/pg_frontend.h"
#include "server/redis_frontend.h"
#include "server/replica.h"
#include "storage/fault_injecting_storage.h"

namespace raftlock::sim::replica {

using NodeId = uint64_t;
using ConnId = net::ConnectionId;

// The agenda: events run in (time, scheduling order), so a run replays exactly.
class Agenda {
public:
    uint64_t now_us() const { return now_us_; }
    void at(uint64_t time_us, std::function<void()> event);
    // Runs the next event if it is due by `until_us`; false when there is none that early.
    bool run_next(uint64_t until_us);
    size_t pending() const { return heap_.size(); }

private:
    // The heap orders small, trivially copied items; the events wait in `events_` (a slot freed
    // when its event runs is reused). Moving each std::function through the heap's sifts took a
    // tenth of a sweep's time.
    struct Item {
        uint64_t time_us = 0;
        uint64_t seq = 0;
        uint32_t slot = 0;
    };
    struct Later {
        bool operator()(const Item& a, const Item& b) const {
            return a.time_us != b.time_us ? a.time_us > b.time_us : a.seq > b.seq;
        }
    };
    std::priority_queue<Item, std::vector<Item>, Later> heap_;
    std::vector<std::function<void()>> events_;
    std::vector<uint32_t> free_slots_;
    uint64_t now_us_ = 0;
    uint64_t next_seq_ = 0;
};

// What the clients (lock_clients.h) hear from the world.
class ClientObserver {
public:
    virtual ~ClientObserver() = default;
    virtual void on_message(ConnId conn, const proto::ServerMessage& message) {
        (void)conn, (void)message;
    }
    // Bytes from a Redis port (RESP replies, in order).
    virtual void on_resp(ConnId conn, const std::string& bytes) { (void)conn, (void)bytes; }
    // Bytes from a PostgreSQL port (backend messages, in order).
    virtual void on_pg(ConnId conn, const std::string& bytes) { (void)conn, (void)bytes; }
    // The connection is gone: its node crashed or closed it.
    virtual void on_closed(ConnId conn) = 0;
};

struct WorldParams {
    size_t nodes = 3;
    server::ServerConfig config;  // node_id, members and client_listen are set per node
    uint64_t net_latency_min_us = 500;
    uint64_t net_latency_max_us = 3000;
    uint64_t disk_latency_min_us = 100;
    uint64_t disk_latency_max_us = 4000;
};

class World {
public:
    World(uint64_t seed, const WorldParams& params);
    ~World();
    World(const World&) = delete;
    World& operator=(const World&) = delete;

    Agenda& agenda() { return agenda_; }
    uint64_t now_us() const { return agenda_.now_us(); }
    Rng& rng() { return rng_; }
    const WorldParams& params() const { return params_; }
    std::vector<NodeId> ids() const;
    bool up(NodeId id) const;
    bool paused(NodeId id) const;
    // The replica of a running node (precondition: up).
    const server::Replica& replica(NodeId id) const;
    // Runs events until `until_us` of simulated time.
    void run_until(uint64_t until_us);

    // Faults.
    void crash(NodeId id);
    void restart(NodeId id);
    void pause(NodeId id);
    void resume(NodeId id);
    // Cuts every link of `id` (both ways) until heal(); nullopt heals all.
    void isolate(NodeId id);
    void heal();
    // Each peer frame is lost with this probability (per mille) until set back to 0.
    void set_loss_per_mille(uint32_t per_mille) {
        loss_per_mille_ = per_mille;
        note_faults();
    }

    // Clients. open() connects to `node` (a down node refuses: nullopt); the observer hears
    // everything for the connection from then on.
    std::optional<ConnId> open(NodeId node, ClientObserver& observer);
    void send(ConnId conn, proto::Request request);
    // The same for a node's Redis port: a connection, and one command (an argv) on it.
    std::optional<ConnId> open_resp(NodeId node, ClientObserver& observer);
    void send_resp(ConnId conn, statemachine::redis::Argv argv);
    // And for its PostgreSQL port: a connection, and one decoded frontend message on it.
    std::optional<ConnId> open_pg(NodeId node, ClientObserver& observer);
    void send_pg(ConnId conn, net::PgFrontendMessage message);
    void close(ConnId conn);
    bool connected(ConnId conn) const { return conns_.count(conn) != 0; }
    NodeId node_of(ConnId conn) const;  // 0 when closed

    // Since when no fault has been active (no node down or paused, no partition, no loss);
    // nullopt while one is.
    std::optional<uint64_t> calm_since_us() const;
    // Writes a follower ran on its loop thread (server::StorageExecutor::run_on_loop).
    uint64_t writes_on_loop() const { return writes_on_loop_; }

    std::string describe() const;  // one line per node, for traces and failures

private:
    struct Node;
    struct Conn {
        NodeId node = 0;
        ClientObserver* observer = nullptr;
        uint64_t to_server_us = 0;  // delivery time of the last request (in order)
        uint64_t to_client_us = 0;
        bool closing = false;  // the server closes it once what it sent has arrived
    };

    // Runs `event` on node `id` at `time_us` if the same incarnation still runs; a paused node
    // keeps it until it resumes. `tick`: the event is the node's tick (see resume()).
    void node_at(NodeId id, uint64_t time_us, std::function<void()> event, bool tick = false);
    // `loop_write`: the completion of a write the node's loop runs itself (write_on_loop).
    void run_on_node(Node& n,
                     uint32_t incarnation,
                     std::function<void()> event,
                     bool tick,
                     bool loop_write = false);
    // The node's loop is inside a write until `time_us` (server::StorageExecutor::run_on_loop):
    // its other events wait, in order, and run right after `write`.
    void write_on_loop(NodeId id, uint64_t time_us, std::function<void()> write);
    void finish_write_on_loop(Node& n, uint32_t incarnation, std::function<void()>& write);
    void start(Node& n);
    void tick(NodeId id, uint32_t incarnation);
    uint64_t latency(uint64_t min_us, uint64_t max_us);
    bool linked(NodeId from, NodeId to) const;
    void deliver_frame(NodeId from, NodeId to, proto::PeerFrame frame);
    // A connection to `node`'s client port (port_bit 0) or Redis port (net::kRespConnectionBit).
    std::optional<ConnId> open_conn(NodeId node, ClientObserver& observer, ConnId port_bit);
    // Runs `deliver` on the connection's node after a latency, in order, if it is still open.
    void to_server(ConnId conn, std::function<void(Node&)> deliver);
    void drop_conns_of(NodeId id);
    // Delivers what a node sends on a connection to its client, in order, after a latency.
    void to_client(ConnId conn, std::function<void(ClientObserver&)> deliver);
    // Closes a connection from the server's side.
    void closed_by_server(ConnId conn);
    // The PostgreSQL front end closes a connection: after what it sent has arrived, and the front
    // end hears of it on its node's next turn (as from net::PgListener).
    void pg_closed_by_server(ConnId conn);
    // After a partition heals or a node restarts: every live sender whose link lost frames hears
    // of the lost link.
    void report_lost_links();
    void note_faults();  // after any fault starts or ends: keeps calm_since_us_

    friend struct SimPeerSink;
    friend struct SimClientSink;
    friend struct SimRespOutput;
    friend struct SimPgOutput;
    friend class SimExecutor;

    WorldParams params_;
    Agenda agenda_;
    Rng rng_;
    std::map<NodeId, std::unique_ptr<Node>> nodes_;
    std::optional<NodeId> isolated_;
    uint32_t loss_per_mille_ = 0;
    std::set<std::pair<NodeId, NodeId>> lost_links_;  // (from, to): frames lost since last report
    std::map<std::pair<NodeId, NodeId>, uint64_t> link_busy_until_us_;  // in-order delivery
    std::map<ConnId, Conn> conns_;
    ConnId next_conn_ = 1;
    std::optional<uint64_t> calm_since_us_ = 0;
    uint64_t writes_on_loop_ = 0;
    std::unique_ptr<server::RespOutput> resp_output_;
    std::unique_ptr<server::PgOutput> pg_output_;
};

}  // namespace raftlock::sim::replica
