#include "client/watch_registry.h"

#include "base/assert.h"

namespace raftlock::client {

namespace {

bool is_descendant(const std::string& ancestor, const std::string& path) {
    if (ancestor == "/") {
        return path.size() > 1 && path.front() == '/';
    }
    return path.size() > ancestor.size() + 1 && path.starts_with(ancestor) &&
           path[ancestor.size()] == '/';
}

}  // namespace

bool is_one_shot(WatchKind kind) {
    return kind == WatchKind::kData || kind == WatchKind::kExists || kind == WatchKind::kChildren;
}

bool watch_matches(WatchKind kind, const std::string& path, const WatchEvent& event) {
    const EventType t = event.type;
    if (kind == WatchKind::kPersistentRecursive) {
        const bool here_or_below = event.path == path || is_descendant(path, event.path);
        return here_or_below && t != EventType::kNodeChildrenChanged;
    }
    if (event.path != path) {
        return false;
    }
    switch (kind) {
        case WatchKind::kData:
            return t == EventType::kNodeDataChanged || t == EventType::kNodeDeleted;
        case WatchKind::kExists:
            return t != EventType::kNodeChildrenChanged;
        case WatchKind::kChildren:
            return t == EventType::kNodeChildrenChanged || t == EventType::kNodeDeleted;
        case WatchKind::kPersistent:
            return true;
        case WatchKind::kPersistentRecursive:
            break;
    }
    return false;
}

std::optional<EventType> change_since(WatchKind kind,
                                      const WatchSnapshot& seen,
                                      const WatchSnapshot& now) {
    RL_ASSERT(is_one_shot(kind));
    if (seen.exists && !now.exists) {
        return EventType::kNodeDeleted;
    }
    if (!seen.exists && now.exists) {
        // Only an exists watch can be set on a missing node.
        return EventType::kNodeCreated;
    }
    if (!now.exists) {
        return std::nullopt;
    }
    if (kind == WatchKind::kChildren) {
        if (seen.children != now.children) {
            return EventType::kNodeChildrenChanged;
        }
        return std::nullopt;
    }
    if (seen.mzxid != now.mzxid) {
        return EventType::kNodeDataChanged;
    }
    return std::nullopt;
}

WatchId WatchRegistry::add(Watch watch) {
    RL_ASSERT(!full());
    RL_ASSERT(watch.callback);
    const WatchId id = next_id_++;
    watches_.emplace(id, std::move(watch));
    return id;
}

Watch* WatchRegistry::find(WatchId id) {
    auto it = watches_.find(id);
    return it == watches_.end() ? nullptr : &it->second;
}

std::optional<Watch> WatchRegistry::remove(WatchId id) {
    auto it = watches_.find(id);
    if (it == watches_.end()) {
        return std::nullopt;
    }
    Watch out = std::move(it->second);
    watches_.erase(it);
    return out;
}

bool WatchRegistry::has_persistent(const std::string& path, WatchKind kind) const {
    for (const auto& [id, watch] : watches_) {
        if (watch.kind == kind && watch.path == path) {
            return true;
        }
    }
    return false;
}

std::vector<WatchCallback> WatchRegistry::dispatch(const WatchEvent& event) {
    std::vector<WatchCallback> fired;
    for (auto it = watches_.begin(); it != watches_.end();) {
        if (!watch_matches(it->second.kind, it->second.path, event)) {
            ++it;
            continue;
        }
        fired.push_back(it->second.callback);
        if (is_one_shot(it->second.kind)) {
            it = watches_.erase(it);
        } else {
            ++it;
        }
    }
    return fired;
}

std::vector<WatchId> WatchRegistry::ids() const {
    std::vector<WatchId> out;
    for (const auto& [id, watch] : watches_) {
        out.push_back(id);
    }
    return out;
}

}  // namespace raftlock::client
