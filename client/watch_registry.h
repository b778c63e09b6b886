#pragma once

// The client's side of watches (docs/statemachine.md "Watches"). The server keeps watches per
// connection, so the client remembers what it registered, fans a pushed event out to the callbacks
// it matches, and after a reconnect re-registers everything on the new connection. For a one-shot
// watch it also compares the re-read with what the caller last saw, so a change that happened
// while no connection was up is still reported (with zxid 0). Persistent watches are re-added;
// changes during the gap are not replayed, as in ZooKeeper.
//
// Pure bookkeeping, used only on the client's network thread.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/types.h"

namespace raftlock::client {

enum class WatchKind : uint8_t {
    kData,                 // get: data change or delete, then gone
    kExists,               // exists: create, data change or delete, then gone
    kChildren,             // children: child list change or delete, then gone
    kPersistent,           // add_watch: every event on the path, stays
    kPersistentRecursive,  // add_watch recursive: create/delete/data on the path and below, stays
};

// What the caller saw when the watch was set (one-shot watches).
struct WatchSnapshot {
    bool exists = false;
    uint64_t mzxid = 0;
    std::vector<std::string> children;
};

struct Watch {
    std::string path;
    WatchKind kind = WatchKind::kData;
    WatchSnapshot seen;
    WatchCallback callback;
};

bool is_one_shot(WatchKind kind);
// Whether `event` fires a watch of `kind` set on `path`.
bool watch_matches(WatchKind kind, const std::string& path, const WatchEvent& event);
// The event a one-shot watch would have fired for the change from `seen` to `now`, if any.
std::optional<EventType> change_since(WatchKind kind,
                                      const WatchSnapshot& seen,
                                      const WatchSnapshot& now);

class WatchRegistry {
public:
    explicit WatchRegistry(size_t watches_max) : watches_max_(watches_max) {}

    bool full() const { return watches_.size() >= watches_max_; }
    size_t size() const { return watches_.size(); }

    // Precondition: !full().
    WatchId add(Watch watch);
    Watch* find(WatchId id);
    std::optional<Watch> remove(WatchId id);
    // Another persistent watch of this path and recursion remains (then the server's one stays).
    bool has_persistent(const std::string& path, WatchKind kind) const;

    // The callbacks `event` fires, in registration order; fired one-shot watches are removed.
    std::vector<WatchCallback> dispatch(const WatchEvent& event);

    std::vector<WatchId> ids() const;

private:
    size_t watches_max_;
    WatchId next_id_ = 1;
    std::map<WatchId, Watch> watches_;
};

}  // namespace raftlock::client
