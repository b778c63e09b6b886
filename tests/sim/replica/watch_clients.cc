#include "tests/sim/replica/watch_clients.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::sim::replica {

struct Watcher {
    size_t index = 0;
    std::string path;
    std::optional<ConnId> conn;
    uint64_t next_request_id = 0;

    bool in_flight = false;
    bool watch_read = false;  // the read in flight sets the watch
    uint64_t sent_us = 0;
    uint64_t answer_by_us = 0;

    // The watch set on this connection: by the read that returned (armed_version, armed_mzxid).
    bool armed = false;
    bool fired = false;
    int32_t armed_version = 0;
    uint64_t armed_mzxid = 0;
    int32_t last_version = -1;  // the newest version a read on this connection returned
};

WatchClients::WatchClients(World& world, const WatchClientParams& params)
    : ClientGroup(world, params.watchers), params_(params) {
    RL_ASSERT(params.watched_nodes > 0 && params.peek_min_ms <= params.peek_max_ms);
    for (auto& w : clients_) {
        w->path = fmt::format("/c{}", w->index % params.watched_nodes);
    }
}

WatchClients::~WatchClients() = default;

void WatchClients::trace_line(const Watcher& w, std::string_view what) {
    fmt::print("t={:.6f}s w{} (conn {}{}): {}\n", world_.now_us() / 1e6, w.index,
               w.conn.value_or(0), w.conn ? fmt::format(" to n{}", world_.node_of(*w.conn)) : "",
               what);
}

void WatchClients::step(Watcher& w) {
    if (w.in_flight) {
        if (!overdue(w, w.sent_us, w.answer_by_us, true,
                     [&] { return fmt::format("watcher w{}: a read of {}", w.index, w.path); })) {
            return;
        }
        ++stats_.retries;
        drop_connection(w);
        wake(w, kBackoffUs);
        return;
    }
    if (stopping_) {
        return;
    }
    if (!w.conn) {
        if (!connect_to_any(w, &World::open)) {
            wake(w, kBackoffUs);
            return;
        }
        w.armed = false;
        w.last_version = -1;
    }
    // Set the watch again once it fired (it is one-shot); otherwise look at the node.
    read(w, !w.armed || w.fired);
}

void WatchClients::read(Watcher& w, bool watch) {
    RL_ASSERT(w.conn && !w.in_flight);
    proto::Request r;
    r.set_request_id(++w.next_request_id);
    r.mutable_get()->set_path(w.path);
    r.mutable_get()->set_watch(watch);
    w.in_flight = true;
    w.watch_read = watch;
    w.sent_us = world_.now_us();
    const uint64_t answer_us =
        uint64_t{world_.params().config.request_timeout_ms} * 1000 + kAnswerSlackUs;
    w.answer_by_us = w.sent_us + answer_us;
    trace(w, "reads {}{}", w.path, watch ? " and sets a watch" : "");
    world_.send(*w.conn, std::move(r));
    wake(w, answer_us);
}

void WatchClients::on_message(ConnId conn, const proto::ServerMessage& message) {
    auto it = by_conn_.find(conn);
    if (it == by_conn_.end()) {
        return;  // a connection the watcher has left
    }
    Watcher& w = *it->second;
    trace(w, "hears {}", Brief{message});
    if (message.has_watch_event()) {
        on_event(w, message.watch_event());
    } else if (message.has_response()) {
        on_response(w, message.response());
    }
}

void WatchClients::on_event(Watcher& w, const proto::WatchEvent& e) {
    if (e.path() != w.path || !w.armed || w.fired) {
        verdicts_.fail(fmt::format("watcher w{}: an event for {} (zxid {}) with no watch set on it",
                                   w.index, e.path(), e.zxid()));
        return;
    }
    if (e.zxid() <= w.armed_mzxid) {
        verdicts_.fail(fmt::format(
            "watcher w{}: the event for {} has zxid {}, not after the watch's read (mzxid {})",
            w.index, w.path, e.zxid(), w.armed_mzxid));
    }
    w.fired = true;
    ++stats_.events;
}

void WatchClients::on_response(Watcher& w, const proto::Response& r) {
    if (!w.in_flight || r.request_id() != w.next_request_id) {
        verdicts_.fail_liveness(fmt::format("watcher w{}: an answer to nothing", w.index));
        return;
    }
    w.in_flight = false;
    if (r.code() != proto::OK) {
        if (r.code() != proto::NO_NODE && r.code() != proto::UNAVAILABLE &&
            r.code() != proto::TIMEOUT) {
            verdicts_.fail_liveness(fmt::format("watcher w{}: a read of {} answered {}", w.index,
                                                w.path, proto::Code_Name(r.code())));
        }
        wake(w, kBackoffUs);  // not created yet, or no leader: read again later
        return;
    }
    const int32_t version = r.get().stat().version();
    if (version < w.last_version) {
        verdicts_.fail(
            fmt::format("watcher w{}: {} went back from version {} to {} on one "
                        "connection",
                        w.index, w.path, w.last_version, version));
    }
    w.last_version = version;
    if (w.watch_read) {
        w.armed = true;
        w.fired = false;
        w.armed_version = version;
        w.armed_mzxid = r.get().stat().mzxid();
        ++stats_.watches_set;
    } else if (version > w.armed_version) {
        if (!w.fired) {
            verdicts_.fail(fmt::format(
                "watcher w{}: a read returned version {} of {} before the event of the watch set "
                "at version {}",
                w.index, version, w.path, w.armed_version));
        }
        ++stats_.changes_seen;
        w.armed_version = version;  // a second newer read is not a second change to count
    }
    const uint64_t peek_us =
        1000 *
        (params_.peek_min_ms + world_.rng().uniform(params_.peek_max_ms - params_.peek_min_ms + 1));
    wake(w, peek_us);
}

void WatchClients::on_closed(ConnId conn) {
    if (Watcher* w = take_closed(conn)) {
        w->in_flight = false;
        w->armed = false;  // the watch lived on the node's side of the connection
        wake(*w, kBackoffUs);
    }
}

void WatchClients::drop_connection(Watcher& w) {
    if (w.conn) {
        by_conn_.erase(*w.conn);
        world_.close(*w.conn);
        w.conn.reset();
    }
    w.in_flight = false;
    w.armed = false;
}

}  // namespace raftlock::sim::replica
