// raftlockd: one node of a raftlock cluster. Wires the replica (server/replica.h) to the Asio
// runtime: one io_context thread for the peer transport, the client port, the admin HTTP port, the
// tick timer and the Raft loop; the replica's storage thread does the synced writes.
//
// Exit status: 0 after a clean shutdown (SIGTERM/SIGINT), 1 when the node cannot start (ports,
// data directory), 2 for a configuration error. A disk error aborts the process (storage/fatal.h).

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/result.h"
#include "base/scram.h"
#include "net/admin_http.h"
#include "net/client_listener.h"
#include "net/peer_transport.h"
#include "net/pg_listener.h"
#include "net/resp_listener.h"
#include "net/tls.h"
#include "net/zk_listener.h"
#include "proto/client.pb.h"
#include "proto/peer.pb.h"
#include "server/admin_console.h"
#include "server/clock.h"
#include "server/config.h"
#include "server/metrics.h"
#include "server/open_files.h"
#include "server/pg_frontend.h"
#include "server/redis_frontend.h"
#include "server/replica.h"
#include "server/storage_worker.h"
#include "server/zk_frontend.h"
#include "statemachine/redis/lua_script.h"
#include "storage/durable_store.h"

namespace raftlock::server {
namespace {

namespace asio = boost::asio;

class TransportSink final : public PeerSink {
public:
    net::PeerTransport* transport = nullptr;
    bool send(uint64_t to, const proto::PeerFrame& frame) override {
        return transport->send(to, frame);
    }
    void set_peers(const std::vector<net::PeerAddress>& peers) override {
        transport->set_peers(peers);
    }
};

// The Replica's answers: to the client port, or to the ZooKeeper front end for the connections it
// opened (kZkConnectionBit), which it serves as native requests.
class ListenerSink final : public ClientSink {
public:
    net::ClientListener* listener = nullptr;
    ZkFrontend* zk_frontend = nullptr;
    net::ZkListener* zk_listener = nullptr;
    void send(net::ConnectionId id, const proto::ServerMessage& message) override {
        if ((id & net::kZkConnectionBit) != 0) {
            zk_frontend->on_server_message(id, message);
            return;
        }
        listener->send(id, message);
    }
    void close(net::ConnectionId id) override {
        if ((id & net::kZkConnectionBit) != 0) {
            zk_listener->close(id);
            return;
        }
        listener->close(id);
    }
};

class ZkSink final : public ZkOutput {
public:
    net::ZkListener* listener = nullptr;
    void send(net::ConnectionId id, std::string bytes) override {
        listener->send(id, std::move(bytes));
    }
    void close(net::ConnectionId id) override { listener->close(id); }
    void pause_reading(net::ConnectionId id, bool paused) override {
        listener->pause_reading(id, paused);
    }
};

class RespSink final : public RespOutput {
public:
    net::RespListener* listener = nullptr;
    void send(net::ConnectionId id, std::string bytes) override {
        listener->send(id, std::move(bytes));
    }
    void close(net::ConnectionId id) override { listener->close(id); }
    void pause_reading(net::ConnectionId id, bool paused) override {
        listener->pause_reading(id, paused);
    }
    bool is_open(net::ConnectionId id) const override { return listener->is_open(id); }
};

class PgSink final : public PgOutput {
public:
    net::PgListener* listener = nullptr;
    void send(uint64_t id, std::string bytes) override { listener->send(id, std::move(bytes)); }
    void close(uint64_t id) override { listener->close(id); }
    void pause_reading(uint64_t id, bool paused) override { listener->pause_reading(id, paused); }
};

// The data directory remembers which cluster and node it belongs to, so a directory copied to the
// wrong node or cluster is refused instead of joining with someone else's log.
bool check_identity(const ServerConfig& config) {
    const std::filesystem::path path = std::filesystem::path(config.data_dir) / "identity";
    const std::string expected =
        fmt::format("cluster={} node={}\n", config.cluster_id, config.node_id);
    if (std::filesystem::exists(path)) {
        std::ifstream in(path);
        std::string found((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (found != expected) {
            spdlog::critical(
                "{} belongs to another node or cluster ({}), not to {}: use the right "
                "--data-dir, or wipe it to join as a new member",
                path.string(), found.substr(0, found.find('\n')),
                expected.substr(0, expected.size() - 1));
            return false;
        }
        return true;
    }
    std::ofstream out(path);
    out << expected;
    out.close();
    if (!out) {
        spdlog::critical("cannot write {}", path.string());
        return false;
    }
    return true;
}

spdlog::level::level_enum to_spdlog(LogLevel level) {
    switch (level) {
        case LogLevel::kDebug:
            return spdlog::level::debug;
        case LogLevel::kInfo:
            return spdlog::level::info;
        case LogLevel::kWarn:
            return spdlog::level::warn;
        case LogLevel::kError:
            return spdlog::level::err;
    }
    return spdlog::level::info;
}

void add_gauges(Metrics& metrics, const Replica& replica) {
    metrics.add_gauge("raftlock_is_leader", "1 when this node is the leader",
                      [&replica] { return replica.is_leader() ? 1.0 : 0.0; });
    metrics.add_gauge("raftlock_applied_index", "the last applied log index",
                      [&replica] { return static_cast<double>(replica.applied_index()); });
    metrics.add_gauge("raftlock_sessions", "live sessions",
                      [&replica] { return static_cast<double>(replica.state().session_count()); });
    metrics.add_gauge("raftlock_locks_held", "locks with at least one holder", [&replica] {
        return static_cast<double>(replica.state().lock_totals().held);
    });
    metrics.add_gauge("raftlock_lock_waiters", "waiters queued on all locks", [&replica] {
        return static_cast<double>(replica.state().lock_totals().waiters);
    });
    metrics.add_gauge("raftlock_nodes", "nodes in the tree",
                      [&replica] { return static_cast<double>(replica.state().node_count()); });
    metrics.add_gauge("raftlock_client_connections", "open client connections",
                      [&replica] { return static_cast<double>(replica.connection_count()); });
    metrics.add_counter("raftlock_storage_writes_total",
                        "Raft batches written (batches queued behind a sync share the next one)",
                        [&replica] { return static_cast<double>(replica.storage_writes()); });
    metrics.add_counter("raftlock_storage_syncs_total", "synced storage writes (fdatasync)",
                        [&replica] { return static_cast<double>(replica.storage_syncs()); });
    metrics.add_counter("raftlock_storage_turns_total",
                        "storage turns that found writes queued (each a wake-up of the storage "
                        "thread, unless a follower ran it on its loop)",
                        [&replica] { return static_cast<double>(replica.storage_turns()); });
    metrics.add_counter(
        "raftlock_storage_writes_on_loop_total",
        "storage turns a follower ran on its loop thread (--follower-writes-on-loop)",
        [&replica] { return static_cast<double>(replica.storage_writes_on_loop()); });
}

// Connections closed for unread replies over --client-output-buffer-bytes-max, over the client,
// Redis and PostgreSQL ports (those not configured are null).
// The settings every client port shares (the listener option structs name them alike): its
// address, and the node's connection and output limits.
template <typename ListenerOptions>
ListenerOptions client_port_options(const ServerConfig& config,
                                    const Endpoint& listen,
                                    const std::shared_ptr<net::ConnectionBudget>& budget) {
    ListenerOptions options;
    options.listen_host = listen.host;
    options.listen_port = listen.port;
    options.connections_max = config.connections_max;
    options.send_queue_bytes_max = config.client_output_buffer_bytes_max;
    options.message_deadline_ms = config.client_message_deadline_ms;
    options.budget = budget;
    return options;
}

// A client port on a loopback address is reachable from this machine only: plain TCP there is
// the same trust as the machine's, not the network's.
bool is_loopback(const std::string& host) {
    boost::system::error_code ec;
    const asio::ip::address address = asio::ip::make_address(host, ec);
    return host == "localhost" || (!ec && address.is_loopback());
}

// The server contexts from --tls-cert-file and friends (null without TLS): one for the client
// ports, and one for the admin port, which asks for no client certificate: its routes only read
// (status, metrics, health, the console), and probes and scrapers seldom carry one; the console's
// actions (--console-actions) log in by password when authentication is on.
struct TlsContexts {
    std::shared_ptr<const net::TlsContext> clients;
    std::shared_ptr<const net::TlsContext> admin;
    // The Raft port's mutual TLS (--peer-tls-*): accepting and dialling.
    std::shared_ptr<const net::TlsContext> peer_server;
    std::shared_ptr<const net::TlsContext> peer_client;
};

Result<TlsContexts, std::string> make_tls(const ServerConfig& config) {
    TlsContexts made;
    if (!config.peer_tls_cert_file.empty()) {
        for (const net::TlsRole role : {net::TlsRole::kServer, net::TlsRole::kClient}) {
            auto context = net::TlsContext::make(
                {.role = role,
                 .cert_file = config.peer_tls_cert_file,
                 .key_file = config.peer_tls_key_file,
                 .ca_file = config.peer_tls_ca_file,
                 .require_client_certificate = role == net::TlsRole::kServer});
            if (!context.ok()) {
                return "the Raft port: " + context.error();
            }
            (role == net::TlsRole::kServer ? made.peer_server : made.peer_client) =
                std::move(context).value();
        }
    }
    if (config.tls_cert_file.empty()) {
        return made;
    }
    auto clients =
        net::TlsContext::make({.role = net::TlsRole::kServer,
                               .cert_file = config.tls_cert_file,
                               .key_file = config.tls_key_file,
                               .ca_file = config.tls_ca_file,
                               .require_client_certificate = config.tls_client_cert_required});
    if (!clients.ok()) {
        return clients.error();
    }
    auto admin = net::TlsContext::make({.role = net::TlsRole::kServer,
                                        .cert_file = config.tls_cert_file,
                                        .key_file = config.tls_key_file});
    if (!admin.ok()) {
        return admin.error();
    }
    made.clients = std::move(clients).value();
    made.admin = std::move(admin).value();
    return made;
}

// The client ports that are open, for what applies to all of them (and the admin port, for TLS).
struct ClientPorts {
    net::PeerTransport* peers = nullptr;
    net::AdminHttp* admin = nullptr;
    net::ClientListener* client = nullptr;
    net::RespListener* redis = nullptr;
    net::PgListener* pg = nullptr;
    net::ZkListener* zk = nullptr;

    template <typename Fn>
    void each(Fn&& fn) const {
        fn(*client);
        if (redis != nullptr) {
            fn(*redis);
        }
        if (pg != nullptr) {
            fn(*pg);
        }
        if (zk != nullptr) {
            fn(*zk);
        }
    }
    uint64_t total(uint64_t net::StreamListenerStats::*counter) const {
        uint64_t sum = 0;
        each([&](const auto& listener) { sum += listener.stats().*counter; });
        return sum;
    }
};

// SIGHUP: the certificate, key and CA files are read again, and new connections of every client
// port use them (open ones keep the session they have). A file that does not load leaves the
// previous context in place, with an error in the log.
void reload_tls_on_sighup(asio::signal_set& hangups,
                          const ServerConfig& config,
                          const ClientPorts& ports,
                          uint64_t& reloads,
                          uint64_t& failures) {
    hangups.async_wait([&](const boost::system::error_code& error, int) {
        if (error) {
            return;
        }
        auto tls = make_tls(config);
        if (!tls.ok()) {
            ++failures;
            spdlog::error("SIGHUP: TLS files not reloaded, the previous ones stay in use: {}",
                          tls.error());
        } else {
            if (tls.value().clients != nullptr) {
                ++reloads;
                ports.each([&](auto& listener) { listener.set_tls(tls.value().clients); });
                ports.admin->set_tls(tls.value().admin);
                spdlog::info("SIGHUP: TLS certificate {} reloaded for new connections",
                             config.tls_cert_file);
            }
            if (tls.value().peer_server != nullptr) {
                ++reloads;
                ports.peers->set_tls(tls.value().peer_server, tls.value().peer_client);
                spdlog::info("SIGHUP: peer TLS certificate {} reloaded for new connections",
                             config.peer_tls_cert_file);
            }
        }
        reload_tls_on_sighup(hangups, config, ports, reloads, failures);
    });
}

// Ticks at a fixed rate: each deadline is the previous one plus the period, so a slow turn does
// not stretch election timeouts. A node removed from the cluster stops ticking and stops.
void schedule_tick(asio::steady_timer& timer,
                   std::chrono::milliseconds period,
                   Replica& replica,
                   const std::function<void()>& stop) {
    timer.expires_at(timer.expiry() + period);
    timer.async_wait([&timer, period, &replica, &stop](const boost::system::error_code& ec) {
        if (ec) {
            return;
        }
        replica.tick();
        if (replica.removed()) {
            stop();
            return;
        }
        schedule_tick(timer, period, replica, stop);
    });
}

int run(const ServerConfig& config) {
    std::error_code ec;
    std::filesystem::create_directories(config.data_dir, ec);
    if (ec) {
        spdlog::critical("cannot create the data directory {}: {}", config.data_dir, ec.message());
        return 1;
    }
    if (!check_identity(config)) {
        return 1;
    }
    // Every replica runs every EVAL in the log, whether or not this node serves Redis clients.
    if (const std::string why = statemachine::redis::check_script_memory(); !why.empty()) {
        spdlog::critical("{}", why);
        return 1;
    }
    const auto connection_limit = client_connection_limit(config.connections_max);
    if (!connection_limit.ok()) {
        spdlog::critical("{}", connection_limit.error());
        return 1;
    }
    if (connection_limit.value().lowered) {
        spdlog::warn(
            "the open-file limit {} allows {} client connections, not --max-connections {}",
            connection_limit.value().open_files, connection_limit.value().client_connections_max,
            config.connections_max);
    }
    // One budget over the native, Redis and PostgreSQL ports (net/connection_budget.h).
    auto budget = std::make_shared<net::ConnectionBudget>(
        connection_limit.value().client_connections_max, config.connections_per_address_max);
    storage::DurableStoreOptions store_options;
    store_options.new_store_engine =
        config.storage_rocksdb ? storage::StoreEngine::kRocksDb : storage::StoreEngine::kJournal;
    store_options.journal_segment_bytes = config.journal_segment_bytes;
    auto store = storage::open_durable_store(config.data_dir, store_options);
    if (!store.ok()) {
        spdlog::critical("cannot open the store in {}: {}", config.data_dir, store.error().message);
        return 1;
    }
    spdlog::info("store: {} in {} (last index {})", store.value()->engine(), config.data_dir,
                 store.value()->last_index());
    asio::io_context io(1);
    SystemClock clock;
    Metrics metrics;
    TransportSink peer_sink;
    ListenerSink client_sink;
    auto post = [&io](std::function<void()> task) { asio::post(io, std::move(task)); };
    std::random_device entropy;
    Replica replica(config, std::move(store).value(), std::make_unique<StorageWorker>(post),
                    peer_sink, client_sink, post, clock, metrics,
                    (uint64_t{entropy()} << 32) ^ entropy());
    add_gauges(metrics, replica);

    net::PeerTransportOptions peer_options;
    peer_options.cluster_id = config.cluster_id;
    peer_options.self_id = config.node_id;
    peer_options.listen_host = config.self().raft.host;
    peer_options.listen_port = config.self().raft.port;
    for (const Member& m : config.members) {
        if (m.id != config.node_id) {
            peer_options.peers.push_back(net::PeerAddress{m.id, m.raft.host, m.raft.port});
        }
    }
    peer_options.on_removed = [&replica](uint64_t peer) { replica.on_removed_by_peer(peer); };
    peer_options.on_link_lost = [&replica](uint64_t peer) { replica.on_peer_link_lost(peer); };
    const auto tls = make_tls(config);
    if (!tls.ok()) {
        spdlog::critical("TLS: {}", tls.error());
        return 1;
    }
    peer_options.tls_server = tls.value().peer_server;
    peer_options.tls_client = tls.value().peer_client;
    if (peer_options.tls_server != nullptr) {
        spdlog::info("the Raft port speaks mutual TLS only (certificate {}, naming {})",
                     config.peer_tls_cert_file,
                     net::peer_tls_name(config.cluster_id, config.node_id));
    } else if (!is_loopback(config.self().raft.host)) {
        spdlog::warn(
            "the Raft port listens on {} without TLS: anyone who reaches it can send Raft "
            "messages as a member (--peer-tls-cert-file)",
            config.self().raft.host);
    }
    net::PeerTransport transport(io, peer_options, [&replica](uint64_t from, proto::PeerFrame&& f) {
        replica.on_peer_frame(from, std::move(f));
    });
    peer_sink.transport = &transport;

    auto client_options =
        client_port_options<net::ClientListenerOptions>(config, config.client_listen, budget);
    client_options.frame_bytes_max = config.client_frame_bytes_max;
    if (tls.value().clients != nullptr) {
        spdlog::info("every client port and the admin port speak TLS only (certificate {}{})",
                     config.tls_cert_file,
                     config.tls_client_cert_required ? ", client certificates required" : "");
    } else {
        for (const Endpoint* listen :
             {&config.client_listen, &config.redis_listen, &config.pg_listen, &config.zk_listen}) {
            if (!listen->host.empty() && !is_loopback(listen->host)) {
                spdlog::warn(
                    "a client port listens on {}:{} without TLS: anyone who reaches it can act "
                    "as any client (--tls-cert-file)",
                    listen->host, listen->port);
            }
        }
    }
    client_options.tls = tls.value().clients;
    net::ClientListener listener(io, client_options, replica);
    client_sink.listener = &listener;
    ClientPorts ports{.peers = &transport, .client = &listener};

    // The Redis port, when configured (docs/redis-mode.md).
    RespSink resp_sink;
    std::unique_ptr<RedisFrontend> redis_frontend;
    std::unique_ptr<net::RespListener> redis_listener;
    if (!config.redis_listen.host.empty()) {
        RedisFrontendOptions redis_options;
        redis_options.password = config.redis_password;
        redis_options.certificate_user = config.tls_client_cert_user;
        redis_options.node_id = config.node_id;
        redis_frontend = std::make_unique<RedisFrontend>(redis_options, resp_sink, replica);
        auto resp_options =
            client_port_options<net::RespListenerOptions>(config, config.redis_listen, budget);
        resp_options.tls = tls.value().clients;
        redis_listener = std::make_unique<net::RespListener>(io, resp_options, *redis_frontend);
        resp_sink.listener = redis_listener.get();
        ports.redis = redis_listener.get();
        replica.set_redis_frontend(redis_frontend.get());
        if (auto started = redis_listener->start(); !started.ok()) {
            spdlog::critical("cannot listen on the redis port: {}", started.error());
            return 1;
        }
        spdlog::info("node {} serving Redis clients on {}:{}", config.node_id,
                     config.redis_listen.host, redis_listener->port());
    }

    // The PostgreSQL port, when configured (docs/sql-mode.md).
    PgSink pg_sink;
    std::unique_ptr<PgFrontend> pg_frontend;
    std::unique_ptr<net::PgListener> pg_listener;
    if (!config.pg_listen.host.empty()) {
        PgFrontendOptions pg_options;
        pg_options.password = config.pg_password;
        pg_options.certificate_user = config.tls_client_cert_user;
        pg_options.node_id = config.node_id;
        pg_options.secret_seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
        pg_frontend = std::make_unique<PgFrontend>(pg_options, pg_sink, replica);
        auto listen_options =
            client_port_options<net::PgListenerOptions>(config, config.pg_listen, budget);
        listen_options.tls = tls.value().clients;
        pg_listener = std::make_unique<net::PgListener>(io, listen_options, *pg_frontend);
        pg_sink.listener = pg_listener.get();
        ports.pg = pg_listener.get();
        replica.set_pg_frontend(pg_frontend.get());
        if (auto started = pg_listener->start(); !started.ok()) {
            spdlog::critical("cannot listen on the postgres port: {}", started.error());
            return 1;
        }
        spdlog::info("node {} serving PostgreSQL clients on {}:{}", config.node_id,
                     config.pg_listen.host, pg_listener->port());
    }

    // The ZooKeeper port, when configured (docs/zookeeper-mode.md).
    ZkSink zk_sink;
    std::unique_ptr<ZkFrontend> zk_frontend;
    std::unique_ptr<net::ZkListener> zk_listener;
    if (!config.zk_listen.host.empty()) {
        ZkFrontendOptions zk_options;
        zk_options.session_timeout_ms_min = static_cast<int32_t>(config.session_timeout_ms_min);
        zk_options.session_timeout_ms_max = static_cast<int32_t>(config.session_timeout_ms_max);
        // Every node derives the same session passwords, so a session moves to any node.
        zk_options.password_seed = config.cluster_id;
        zk_options.local_reads = config.zk_local_reads;
        zk_options.super_digest = config.zk_super_digest;
        zk_options.server_facts = [&replica, &config] {
            ZkServerFacts facts;
            facts.node_id = config.node_id;
            facts.leader = replica.is_leader();
            facts.applied_index = replica.applied_index();
            facts.node_count = replica.state().node_count();
            for (const statemachine::SessionInfo& s : replica.state().sessions()) {
                ++facts.session_count;
                facts.ephemeral_count += s.ephemerals;
            }
            const statemachine::WatchRegistry::Totals watches = replica.watch_totals();
            facts.watchers = watches.watchers;
            facts.watched_paths = watches.paths;
            facts.watches = watches.watches;
            return facts;
        };
        zk_options.steady_ms = [&clock] { return clock.steady_ms(); };
        zk_frontend = std::make_unique<ZkFrontend>(zk_options, zk_sink, replica);
        auto listen_options =
            client_port_options<net::ZkListenerOptions>(config, config.zk_listen, budget);
        listen_options.tls = tls.value().clients;
        zk_listener = std::make_unique<net::ZkListener>(io, listen_options, *zk_frontend);
        zk_sink.listener = zk_listener.get();
        ports.zk = zk_listener.get();
        client_sink.zk_frontend = zk_frontend.get();
        client_sink.zk_listener = zk_listener.get();
        if (auto started = zk_listener->start(); !started.ok()) {
            spdlog::critical("cannot listen on the zookeeper port: {}", started.error());
            return 1;
        }
        spdlog::info("node {} serving ZooKeeper clients on {}:{}", config.node_id,
                     config.zk_listen.host, zk_listener->port());
    }

    metrics.add_counter(
        "raftlock_tls_failures_total",
        "Client connections closed because their TLS handshake or a record failed (a "
        "certificate refused, plain text on a TLS port), over every client port and the admin "
        "port.",
        [&ports] {
            return static_cast<double>(ports.total(&net::StreamListenerStats::tls_failures) +
                                       ports.admin->tls_failures());
        });
    uint64_t tls_reloads = 0;
    uint64_t tls_reload_failures = 0;
    metrics.add_counter("raftlock_tls_reloads_total",
                        "TLS file sets (the client ports', the Raft port's) loaded again on "
                        "SIGHUP.",
                        [&tls_reloads] { return static_cast<double>(tls_reloads); });
    metrics.add_counter(
        "raftlock_tls_reload_failures_total",
        "SIGHUPs whose TLS files did not load (the previous ones stayed in use).",
        [&tls_reload_failures] { return static_cast<double>(tls_reload_failures); });
    metrics.add_counter(
        "raftlock_client_output_buffer_disconnects_total",
        "Client connections closed because their unread replies exceeded "
        "--client-output-buffer-bytes-max.",
        [&ports] {
            return static_cast<double>(ports.total(&net::StreamListenerStats::slow_consumers));
        });
    metrics.add_counter("raftlock_client_connections_refused_total",
                        "Client connections refused at accept: over the node's client "
                        "connections or those of one address.",
                        [&budget] { return static_cast<double>(budget->refused()); });
    metrics.add_gauge(
        "raftlock_client_connections_max",
        "Client connections this node admits over all client ports (--max-connections, "
        "lowered to fit the open-file limit).",
        [&budget] { return static_cast<double>(budget->total_max()); });
    metrics.add_counter("raftlock_peer_tls_failures_total",
                        "Raft-port connections (either direction) closed because TLS failed: a "
                        "certificate of another CA, plain text on the port.",
                        [&transport] { return static_cast<double>(transport.tls_failures()); });
    metrics.add_counter("raftlock_peer_incoming_evicted_total",
                        "Connections to the Raft port closed before their Hello to make room "
                        "for a new one (every slot was taken).",
                        [&transport] { return static_cast<double>(transport.incoming_evicted()); });

    std::map<std::string, net::AdminHttp::Route> routes;
    routes["/status"] = [&replica] {
        return net::HttpReply{200, "application/json", replica.status_json() + "\n"};
    };
    routes["/metrics"] = [&metrics] {
        return net::HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", metrics.render()};
    };
    routes["/healthz"] = [&replica] {
        return net::HttpReply{replica.healthy() ? 200u : 503u, "text/plain; charset=utf-8",
                              replica.health() + "\n"};
    };
    net::AdminHttpOptions admin_options{.listen_host = config.admin_listen.host,
                                        .listen_port = config.admin_listen.port,
                                        .tls = tls.value().admin};
    net::AdminHttp admin(io, admin_options, std::move(routes));
    // The web console: GET / (docs/operations.md, "Web console").
    add_console_routes(admin, replica, clock, config.console_actions);
    ports.admin = &admin;
    metrics.add_counter("raftlock_admin_connections_evicted_total",
                        "Admin HTTP connections closed before a whole request to make room for a "
                        "new one (all were taken).",
                        [&admin] { return static_cast<double>(admin.evicted()); });
    metrics.add_gauge("raftlock_admin_parked_requests",
                      "Admin HTTP requests waiting for a later reply: the web console's "
                      "long-polls and actions.",
                      [&admin] { return static_cast<double>(admin.parked()); });

    for (auto [name, started] :
         {std::pair{"raft", transport.start()}, std::pair{"client", listener.start()},
          std::pair{"admin", admin.start()}}) {
        if (!started.ok()) {
            spdlog::critical("cannot listen on the {} port: {}", name, started.error());
            return 1;
        }
    }
    spdlog::info("node {} listening: raft {}:{}, clients {}:{}, admin {}://{}:{}", config.node_id,
                 config.self().raft.host, transport.port(), config.client_listen.host,
                 listener.port(), admin_options.tls != nullptr ? "https" : "http",
                 config.admin_listen.host, admin.port());

    asio::steady_timer ticker(io, std::chrono::steady_clock::now());
    asio::signal_set signals(io, SIGINT, SIGTERM);
    asio::signal_set hangups(io, SIGHUP);
    reload_tls_on_sighup(hangups, config, ports, tls_reloads, tls_reload_failures);
    const std::function<void()> stop = [&] {
        replica.shut_down();
        ticker.cancel();
        signals.cancel();
        hangups.cancel();
        admin.stop();
        // Let the SHUTTING_DOWN replies go out before the sockets close.
        asio::post(io, [&] {
            listener.stop();
            if (redis_listener) {
                redis_listener->stop();
            }
            if (pg_listener) {
                pg_listener->stop();
            }
            if (zk_listener) {
                zk_listener->stop();
            }
            transport.stop();
            io.stop();
        });
    };
    schedule_tick(ticker, std::chrono::milliseconds(config.tick_ms), replica, stop);
    signals.async_wait([&](const boost::system::error_code& error, int signal) {
        if (error) {
            return;
        }
        spdlog::info("signal {}: shutting down", signal);
        stop();
    });
    io.run();
    spdlog::info("node {} stopped{}", config.node_id,
                 replica.removed() ? ": it was removed from the cluster" : "");
    return 0;
}

// --root-password-file: the password on the file's first line (a final newline is not part of
// it). Only its SCRAM verifier is kept, with a fresh salt: the password never reaches the log.
Result<statemachine::Credentials, std::string> load_root_password(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        return fmt::format("--root-password-file {}: cannot read it", file);
    }
    std::string password;
    std::getline(in, password);
    if (!password.empty() && password.back() == '\r') {
        password.pop_back();
    }
    if (password.empty() || password.size() > 1024) {
        return fmt::format(
            "--root-password-file {}: the first line must hold the password "
            "(1 to 1024 bytes)",
            file);
    }
    std::error_code ec;
    const auto perms = std::filesystem::status(file, ec).permissions();
    if (!ec && (perms & (std::filesystem::perms::group_read |
                         std::filesystem::perms::others_read)) != std::filesystem::perms::none) {
        spdlog::warn("--root-password-file {} is readable by other users (chmod 600 it)", file);
    }
    namespace scram = base::scram;
    return statemachine::to_credentials(scram::make_verifier(
        password, scram::random_bytes(scram::kSaltBytes), scram::kIterationsMin));
}

}  // namespace
}  // namespace raftlock::server

int main(int argc, char** argv) {
    using namespace raftlock::server;
    std::signal(SIGPIPE, SIG_IGN);
    auto config = parse_config(argc, argv);
    if (!config.ok()) {
        if (config.error().message.empty()) {
            fmt::print("{}", config.error().help);
            return 0;
        }
        fmt::print(stderr, "raftlockd: {}\n(see raftlockd --help)\n", config.error().message);
        return 2;
    }
    spdlog::set_pattern(fmt::format("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ n{} %v", config->node_id));
    spdlog::set_level(to_spdlog(config->log_level));
    if (!config->root_password_file.empty()) {
        auto root = load_root_password(config->root_password_file);
        if (!root.ok()) {
            fmt::print(stderr, "raftlockd: {}\n", root.error());
            return 2;
        }
        config->root_credentials = std::move(root).value();
    }
    return run(*config);
}
