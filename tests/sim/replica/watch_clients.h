#pragma once

// Simulated watchers on the client port: each keeps a one-shot data watch on one of the lock
// clients' nodes (lock_clients.h writes /c0, /c1, ... while holding the lock) and reads the node
// again now and then on the same connection. ZooKeeper's ordering promise, which raftlock keeps
// (docs/protocol.md, Pushes): a client sees the watch event before any later state.
//
// Checked on every message:
//   event first    a read on the watching connection that returns a newer version of the node
//                  than the read that set the watch arrives after that watch's event
//   event is new   an event is for a change after the read that set the watch (its zxid is above
//                  that read's mzxid)
//   answered       a read sent to a cluster with no fault active is answered within the request
//                  timeout
// A lost connection loses its watches (they live on the node); the watcher sets them again.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/sim/replica/client_group.h"

namespace raftlock::sim::replica {

struct WatchClientParams {
    size_t watchers = 2;
    size_t watched_nodes = 4;  // /c0 .. /c{n-1}, as many as there are lock clients
    uint64_t peek_min_ms = 20;
    uint64_t peek_max_ms = 300;
    bool trace = false;
};

struct WatchClientStats {
    uint64_t watches_set = 0;
    uint64_t events = 0;
    uint64_t changes_seen = 0;  // reads that found a newer version (each after its event)
    uint64_t retries = 0;
};

struct Watcher;  // watch_clients.cc

class WatchClients final : public ClientGroup<Watcher> {
public:
    WatchClients(World& world, const WatchClientParams& params);
    ~WatchClients() override;

    const WatchClientStats& stats() const { return stats_; }

    // ClientObserver
    void on_message(ConnId conn, const proto::ServerMessage& message) override;
    void on_closed(ConnId conn) override;

private:
    void step(Watcher& w) override;
    void read(Watcher& w, bool watch);
    void on_response(Watcher& w, const proto::Response& r);
    void on_event(Watcher& w, const proto::WatchEvent& e);
    void drop_connection(Watcher& w);
    // A trace line, formatted only when tracing is on.
    template <typename... Args>
    void trace(const Watcher& w, fmt::format_string<Args...> format, Args&&... args) {
        if (params_.trace) {
            trace_line(w, fmt::format(format, std::forward<Args>(args)...));
        }
    }
    void trace_line(const Watcher& w, std::string_view what);

    WatchClientParams params_;
    WatchClientStats stats_;
};

}  // namespace raftlock::sim::replica
