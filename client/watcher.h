#pragma once

// Watches, inside the client's core (client/core.h): the registry (client/watch_registry.h), the
// dispatch of pushed events, and the re-registration after a reconnect. Internal to the library.

#include <optional>

#include "client/core.h"
#include "client/watch_registry.h"

namespace raftlock::client {

class Watcher {
public:
    Watcher(Core& core, size_t watches_max) : core_(core), registry_(watches_max) {}

    // --- inside the core ---
    std::optional<Error> check_room() const;
    // Precondition: check_room() passed.
    WatchId add(Watch watch) { return registry_.add(std::move(watch)); }
    // The removed watch, if it was there; `still_needed` says whether another persistent watch of
    // the same path and kind stays (then the server's watch must stay too).
    std::optional<Watch> remove(WatchId id, bool& still_needed);
    void on_event(const proto::WatchEvent& event);
    void on_connected();
    bool wants_connection() const { return registry_.size() > 0; }

private:
    void reregister(WatchId id, const Watch& watch);
    void on_reread(WatchId id, const ClientResult<proto::Response>& answer);

    Core& core_;
    WatchRegistry registry_;
};

// The request that sets a watch of `kind` on `path` (a read with watch = true, or AddWatch).
proto::Request watch_request(WatchKind kind, const std::string& path);
// What a successful answer to watch_request() says about the node.
WatchSnapshot snapshot_of(WatchKind kind, const proto::Response& response);

}  // namespace raftlock::client
