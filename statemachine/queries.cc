// Read-only queries. They read the applied state only; linearizability comes from serving them
// after a ReadIndex round (Raft thesis §6.4), which is the caller's job.

#include <iterator>

#include "base/assert.h"
#include "statemachine/codec.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine {

Result<NodeView, ErrorCode> StateMachine::get(std::string_view path) const {
    if (!valid_path(path)) {
        return ErrorCode::kBadArguments;
    }
    auto it = nodes_.find(path);
    if (it == nodes_.end()) {
        return ErrorCode::kNoNode;
    }
    return NodeView{it->second.data, it->second.stat, it->second.kind};
}

std::optional<Stat> StateMachine::exists(std::string_view path) const {
    auto it = nodes_.find(path);
    if (it == nodes_.end()) {
        return std::nullopt;
    }
    return it->second.stat;
}

std::optional<Acl> StateMachine::acl(std::string_view path) const {
    auto it = nodes_.find(path);
    if (it == nodes_.end()) {
        return std::nullopt;
    }
    return it->second.acl;
}

bool StateMachine::permits(std::string_view path, uint8_t perms, const Caller& caller) const {
    RL_ASSERT(perms != 0 && perms <= kPermAll);
    auto it = nodes_.find(path);
    return it == nodes_.end() || acl_permits(it->second.acl, perms, caller);
}

Result<std::vector<std::string>, ErrorCode> StateMachine::children(std::string_view path) const {
    if (!valid_path(path)) {
        return ErrorCode::kBadArguments;
    }
    auto it = nodes_.find(path);
    if (it == nodes_.end()) {
        return ErrorCode::kNoNode;
    }
    return std::vector<std::string>(it->second.children.begin(), it->second.children.end());
}

Result<size_t, ErrorCode> StateMachine::descendant_count(std::string_view path) const {
    if (!valid_path(path)) {
        return ErrorCode::kBadArguments;
    }
    auto it = nodes_.find(path);
    if (it == nodes_.end()) {
        return ErrorCode::kNoNode;
    }
    if (path == "/") {
        return nodes_.size() - 1;  // every node but the root
    }
    // Paths sort in byte order, so the nodes below `path` are exactly the keys from "path/" up to
    // "path0" ('0' follows '/'): a range of the map, not a walk of the subtree.
    const std::string below = std::string(path) + '/';
    const std::string beyond = std::string(path) + static_cast<char>('/' + 1);
    const auto first = nodes_.lower_bound(below);
    const auto last = nodes_.lower_bound(beyond);
    const auto count = static_cast<size_t>(std::distance(first, last));
    RL_ASSERT(count >= it->second.children.size());
    return count;
}

std::vector<std::string> StateMachine::ephemerals_of(SessionId session,
                                                     std::string_view prefix) const {
    std::vector<std::string> out;
    auto it = sessions_.find(session);
    if (it == sessions_.end()) {
        return out;
    }
    for (auto p = it->second.ephemerals.lower_bound(std::string(prefix));
         p != it->second.ephemerals.end() && p->starts_with(prefix); ++p) {
        out.push_back(*p);
    }
    return out;
}

std::optional<LockInfo> StateMachine::describe_lock(std::string_view name) const {
    auto it = locks_.find(name);
    if (it == locks_.end()) {
        return std::nullopt;
    }
    const Lock& lock = it->second;
    LockInfo info;
    info.name = it->first;
    info.semaphore = lock.semaphore;
    info.permits = lock.permits;
    info.mode = lock.mode;
    info.lock_delay_ms = lock.lock_delay_ms;
    info.free_at_ms = lock.free_at_ms;
    for (const Holder& h : lock.holders) {
        info.holders.push_back(HolderInfo{h.session, h.owner_tag, h.token, h.since_ms, h.count});
    }
    for (const Waiter& w : lock.waiters) {
        WaiterInfo waiter{w.session, w.owner_tag, w.mode, w.enqueued_ms, w.deadline_ms, {}};
        if (w.group != 0) {
            for (const std::string& other : multi_waits_.at(w.group).names) {
                if (other != name) {
                    waiter.together.push_back(other);
                }
            }
        }
        info.waiters.push_back(std::move(waiter));
    }
    return info;
}

std::vector<std::string> StateMachine::list_locks(std::string_view prefix, size_t limit_max) const {
    std::vector<std::string> names;
    for (auto it = locks_.lower_bound(prefix); it != locks_.end() && names.size() < limit_max;
         ++it) {
        if (it->first.compare(0, prefix.size(), prefix) != 0) {
            break;
        }
        names.push_back(it->first);
    }
    return names;
}

std::optional<SessionInfo> StateMachine::session(SessionId id) const {
    auto it = sessions_.find(id);
    if (it == sessions_.end()) {
        return std::nullopt;
    }
    const Session& s = it->second;
    return SessionInfo{
        id, s.timeout_ms, s.last_keepalive_ms, s.ephemerals.size(), s.locks.size(), s.owner};
}

std::vector<SessionInfo> StateMachine::sessions() const {
    std::vector<SessionInfo> out;
    out.reserve(sessions_.size());
    for (const auto& [id, s] : sessions_) {
        out.push_back(SessionInfo{id, s.timeout_ms, s.last_keepalive_ms, s.ephemerals.size(),
                                  s.locks.size(), s.owner});
    }
    return out;
}

uint64_t StateMachine::state_hash() const {
    // FNV-1a over the snapshot without its CRC trailer (a CRC over data that ends with its own CRC
    // is a constant).
    std::string bytes = snapshot();
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i + 4 < bytes.size(); i++) {
        hash = (hash ^ static_cast<uint8_t>(bytes[i])) * 0x100000001b3ull;
    }
    return hash;
}

}  // namespace raftlock::statemachine

namespace raftlock::statemachine {

std::optional<TimeMs> StateMachine::next_timer_ms() const {
    std::optional<TimeMs> next = keyspace_.next_expiry_ms();
    if (!timers_.empty() && (!next || timers_.begin()->at_ms < *next)) {
        next = timers_.begin()->at_ms;
    }
    if (std::optional<TimeMs> sql = sql_.next_deadline_ms(); sql && (!next || *sql < *next)) {
        next = sql;
    }
    return next;
}

std::optional<uint64_t> StateMachine::highest_seq_used(SessionId id) const {
    auto s = sessions_.find(id);
    if (s == sessions_.end()) {
        return std::nullopt;
    }
    return highest_seq_used(s->second);
}

std::optional<Response> StateMachine::saved_response(SessionId id, uint64_t seq) const {
    auto s = sessions_.find(id);
    if (s == sessions_.end()) {
        return std::nullopt;
    }
    auto saved = s->second.saved.find(seq);
    if (saved == s->second.saved.end()) {
        return std::nullopt;
    }
    return saved->second;
}

redis::Value StateMachine::redis_query(const redis::Argv& argv) const {
    return keyspace_.query(argv, now_ms_);
}

StateMachine::LockTotals StateMachine::lock_totals() const {
    LockTotals totals;
    for (const auto& [name, lock] : locks_) {
        totals.held += lock.holders.empty() ? 0 : 1;
        totals.waiters += lock.waiters.size();
    }
    return totals;
}

}  // namespace raftlock::statemachine
