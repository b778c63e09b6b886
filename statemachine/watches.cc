#include "statemachine/watches.h"

#include "base/assert.h"
#include "statemachine/codec.h"

namespace raftlock::statemachine {

WatchRegistry::Table& WatchRegistry::table(WatchKind kind) {
    switch (kind) {
        case WatchKind::kData:
        case WatchKind::kExists:
            return data_;
        case WatchKind::kChildren:
            return children_;
        case WatchKind::kPersistent:
            return persistent_;
        case WatchKind::kPersistentRecursive:
            return recursive_;
    }
    RL_PANIC("unknown watch kind");
}

const WatchRegistry::Table& WatchRegistry::table(WatchKind kind) const {
    return const_cast<WatchRegistry*>(this)->table(kind);
}

bool WatchRegistry::has(WatcherId watcher, std::string_view path, WatchKind kind) const {
    const Table& t = table(kind);
    auto it = t.find(path);
    return it != t.end() && it->second.count(watcher) != 0;
}

ErrorCode WatchRegistry::add(WatcherId watcher, std::string_view path, WatchKind kind) {
    if (!valid_path(path)) {
        return ErrorCode::kBadArguments;
    }
    size_t& count = counts_[watcher];
    if (count >= kWatchesPerWatcherMax) {
        if (count == 0) {
            counts_.erase(watcher);
        }
        return ErrorCode::kLimitExceeded;
    }
    Table& t = table(kind);
    auto it = t.find(path);
    if (it == t.end()) {
        it = t.emplace(std::string(path), std::set<WatcherId>{}).first;
    }
    if (it->second.insert(watcher).second) {
        count++;
    } else if (count == 0) {
        counts_.erase(watcher);
    }
    return ErrorCode::kOk;
}

bool WatchRegistry::remove(WatcherId watcher, std::string_view path, WatchKind kind) {
    Table& t = table(kind);
    auto it = t.find(path);
    if (it == t.end() || it->second.erase(watcher) == 0) {
        return false;
    }
    if (it->second.empty()) {
        t.erase(it);
    }
    auto c = counts_.find(watcher);
    RL_ASSERT(c != counts_.end() && c->second > 0);
    if (--c->second == 0) {
        counts_.erase(c);
    }
    return true;
}

void WatchRegistry::remove_watcher(WatcherId watcher) {
    for (Table* t : {&data_, &children_, &persistent_, &recursive_}) {
        for (auto it = t->begin(); it != t->end();) {
            it->second.erase(watcher);
            it = it->second.empty() ? t->erase(it) : std::next(it);
        }
    }
    counts_.erase(watcher);
}

size_t WatchRegistry::watch_count(WatcherId watcher) const {
    auto it = counts_.find(watcher);
    return it == counts_.end() ? 0 : it->second;
}

WatchRegistry::Totals WatchRegistry::totals() const {
    Totals t;
    t.watchers = counts_.size();
    for (const Table* table : {&data_, &children_, &persistent_, &recursive_}) {
        t.paths += table->size();
    }
    for (const auto& [watcher, count] : counts_) {
        t.watches += count;
    }
    return t;
}

void WatchRegistry::collect(Table& t,
                            std::string_view path,
                            bool one_shot,
                            std::set<WatcherId>& out) {
    auto it = t.find(path);
    if (it == t.end()) {
        return;
    }
    out.insert(it->second.begin(), it->second.end());
    if (!one_shot) {
        return;
    }
    for (WatcherId w : it->second) {
        auto c = counts_.find(w);
        RL_ASSERT(c != counts_.end() && c->second > 0);
        if (--c->second == 0) {
            counts_.erase(c);
        }
    }
    t.erase(it);
}

std::vector<WatchEvent> WatchRegistry::dispatch(const std::vector<WatchTrigger>& triggers) {
    std::vector<WatchEvent> events;
    for (const WatchTrigger& trigger : triggers) {
        std::set<WatcherId> watchers;
        const EventType type = trigger.type;
        if (type != EventType::kNodeChildrenChanged) {
            collect(data_, trigger.path, true, watchers);
        }
        if (type == EventType::kNodeChildrenChanged || type == EventType::kNodeDeleted) {
            collect(children_, trigger.path, true, watchers);
        }
        collect(persistent_, trigger.path, false, watchers);
        if (type != EventType::kNodeChildrenChanged) {
            // The path and each ancestor, up to the root: at most kPathDepthMax + 1 lookups.
            std::string_view p = trigger.path;
            while (true) {
                collect(recursive_, p, false, watchers);
                if (p == "/") {
                    break;
                }
                size_t slash = p.rfind('/');
                p = slash == 0 ? std::string_view("/") : p.substr(0, slash);
            }
        }
        for (WatcherId w : watchers) {
            events.push_back(WatchEvent{w, trigger.path, type, trigger.zxid});
        }
    }
    return events;
}

std::vector<std::string> WatchRegistry::watched_paths() const {
    std::set<std::string> paths;
    for (const Table* t : {&data_, &children_, &persistent_}) {
        for (const auto& [path, watchers] : *t) {
            paths.insert(path);
        }
    }
    return {paths.begin(), paths.end()};
}

std::vector<std::string> WatchRegistry::recursive_roots() const {
    std::vector<std::string> roots;
    for (const auto& [path, watchers] : recursive_) {
        roots.push_back(path);
    }
    return roots;
}

std::vector<WatchTrigger> restore_triggers(const WatchedView& before,
                                           const WatchedView& after,
                                           Index snapshot_index) {
    std::set<std::string_view> paths;
    for (const WatchedView* view : {&before, &after}) {
        for (const auto& [path, stat] : *view) {
            paths.insert(path);
        }
    }
    std::vector<WatchTrigger> triggers;
    for (std::string_view path : paths) {
        const auto b = before.find(path);
        const auto a = after.find(path);
        const bool existed = b != before.end();
        const bool exists = a != after.end();
        if (existed && (!exists || a->second.czxid != b->second.czxid)) {
            const Index zxid = exists ? a->second.czxid : snapshot_index;
            triggers.push_back(WatchTrigger{std::string(path), EventType::kNodeDeleted, zxid});
        }
        if (!exists) {
            continue;
        }
        const Stat& now = a->second;
        RL_ASSERT(now.czxid <= snapshot_index && now.mzxid <= snapshot_index);
        if (!existed || now.czxid != b->second.czxid) {
            triggers.push_back(WatchTrigger{std::string(path), EventType::kNodeCreated, now.czxid});
            continue;
        }
        if (now.mzxid != b->second.mzxid) {
            triggers.push_back(
                WatchTrigger{std::string(path), EventType::kNodeDataChanged, now.mzxid});
        }
        if (now.pzxid != b->second.pzxid) {
            triggers.push_back(
                WatchTrigger{std::string(path), EventType::kNodeChildrenChanged, now.pzxid});
        }
    }
    return triggers;
}

std::string_view to_string(WatchKind kind) {
    switch (kind) {
        case WatchKind::kData:
            return "data";
        case WatchKind::kExists:
            return "exists";
        case WatchKind::kChildren:
            return "children";
        case WatchKind::kPersistent:
            return "persistent";
        case WatchKind::kPersistentRecursive:
            return "persistent_recursive";
    }
    return "?";
}

}  // namespace raftlock::statemachine
