#pragma once

// The watch registry of one server. Watches are not replicated (DESIGN.md §4): a client sets them
// on the server it is connected to, and that server matches the WatchTriggers of every entry it
// applies against them, before it answers any later request, so a client sees the event before it
// sees any later state.
//
// Matching follows ZooKeeper's documentation ("ZooKeeper Watches" and "Persistent, Recursive
// Watches", 3.6):
//   data watch (getData, or exists on an existing node) fires on NodeDataChanged and NodeDeleted;
//   exists watch on a missing node fires on NodeCreated (then behaves as a data watch: same table);
//   child watch (getChildren) fires on NodeChildrenChanged and NodeDeleted;
//   one-shot watches are removed when they fire;
//   a persistent watch fires on every event type for its path and stays;
//   a persistent recursive watch fires on NodeCreated, NodeDeleted and NodeDataChanged for its
//   path and every descendant (never NodeChildrenChanged), and stays.
// A watcher gets at most one event per trigger, however many of its watches match it.
// Deterministic: events come out in trigger order, then watcher order.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "statemachine/output.h"
#include "statemachine/types.h"

namespace raftlock::statemachine {

// Who to deliver to: a connection (or session) id local to this server.
using WatcherId = uint64_t;

enum class WatchKind : uint8_t {
    kData = 0,  // getData / exists on an existing node
    kExists,    // exists on any node, fires on creation too
    kChildren,  // getChildren
    kPersistent,
    kPersistentRecursive,
};

struct WatchEvent {
    WatcherId watcher = 0;
    std::string path;
    EventType type = EventType::kNodeCreated;
    Index zxid = 0;
    friend bool operator==(const WatchEvent&, const WatchEvent&) = default;
};

inline constexpr size_t kWatchesPerWatcherMax = 10000;

class WatchRegistry final {
public:
    // kLimitExceeded when the watcher already has kWatchesPerWatcherMax watches; kBadArguments on
    // an invalid path. Setting the same watch twice is one watch.
    ErrorCode add(WatcherId watcher, std::string_view path, WatchKind kind);
    // Removes a persistent (recursive or not) watch, as ZooKeeper's removeWatches. Returns whether
    // one was there.
    bool remove(WatcherId watcher, std::string_view path, WatchKind kind);
    // Whether the watcher has a watch of `kind` on exactly `path` (kData and kExists are one).
    bool has(WatcherId watcher, std::string_view path, WatchKind kind) const;
    // The watcher's connection closed: drop all its watches.
    void remove_watcher(WatcherId watcher);
    // The events the triggers of one applied entry produce, removing the one-shot watches that
    // fired.
    std::vector<WatchEvent> dispatch(const std::vector<WatchTrigger>& triggers);

    size_t watch_count(WatcherId watcher) const;
    // For operators (ZooKeeper's `wchs`): watchers with a watch, (path, kind) entries, watches.
    struct Totals {
        size_t watchers = 0;
        size_t paths = 0;
        size_t watches = 0;
    };
    Totals totals() const;

    // For a snapshot restore (restore_triggers below): every path with a watch that is not
    // recursive, and the root of every recursive watch (whose subtree the caller adds), sorted.
    std::vector<std::string> watched_paths() const;
    std::vector<std::string> recursive_roots() const;

private:
    using Table = std::map<std::string, std::set<WatcherId>, std::less<>>;
    Table& table(WatchKind kind);
    const Table& table(WatchKind kind) const;
    void collect(Table& table, std::string_view path, bool one_shot, std::set<WatcherId>& out);

    // exists and data watches share a table, as in ZooKeeper's WatchManager (dataWatches).
    Table data_;
    Table children_;
    Table persistent_;
    Table recursive_;
    std::map<WatcherId, size_t> counts_;
};

// The watched part of a tree: path -> stat of each node that exists.
using WatchedView = std::map<std::string, Stat, std::less<>>;

// A restored snapshot skips the entries whose triggers would have fired this server's watches.
// These are the triggers that take the watched nodes from `before` to `after` (views of the same
// paths, taken around the restore), as ZooKeeper's setWatches does for a reconnecting client:
// NodeDeleted, NodeCreated (both when the node was recreated), NodeDataChanged when its mzxid
// moved, NodeChildrenChanged when its pzxid moved; each with the zxid of the change, or
// `snapshot_index` for a deletion. In path order.
std::vector<WatchTrigger> restore_triggers(const WatchedView& before,
                                           const WatchedView& after,
                                           Index snapshot_index);

std::string_view to_string(WatchKind kind);
std::string to_string(const WatchEvent& event);  // "w7 NodeCreated /job @12"

}  // namespace raftlock::statemachine
