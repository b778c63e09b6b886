// The state machine's invariants, checked by the tests after every step and by restore(). They
// return the first violation as text instead of asserting, so a test can print it with context.

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "statemachine/codec.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine {

std::string StateMachine::check_invariants() const {
    if (last_token_ > last_applied_) {
        return "a token is newer than the last applied entry";
    }
    if (std::string tree = check_tree_invariants(); !tree.empty()) {
        return tree;
    }
    if (std::string redis = keyspace_.check_invariants(); !redis.empty()) {
        return redis;
    }
    if (std::string sql = sql_.check_invariants(); !sql.empty()) {
        return sql;
    }
    if (std::string auth = auth_.check_invariants(); !auth.empty()) {
        return auth;
    }
    if (std::optional<TimeMs> next = keyspace_.next_expiry_ms(); next && *next <= now_ms_) {
        return "a redis key outlived its deadline";
    }
    return check_lock_invariants();
}

std::string StateMachine::check_tree_invariants() const {
    if (!nodes_.contains("/")) {
        return "the root is missing";
    }
    size_t ephemeral_nodes = 0;
    for (const auto& [path, node] : nodes_) {
        if (!valid_path(path)) {
            return "invalid path " + path;
        }
        if (node.stat.num_children != static_cast<int32_t>(node.children.size()) ||
            node.stat.data_length != static_cast<int32_t>(node.data.size())) {
            return "stat out of step with the node at " + path;
        }
        for (const std::string& child : node.children) {
            if (!nodes_.contains(path == "/" ? "/" + child : path + "/" + child)) {
                return "missing child " + child + " of " + path;
            }
        }
        if (path != "/") {
            size_t slash = path.rfind('/');
            auto parent = nodes_.find(std::string_view(path).substr(0, slash == 0 ? 1 : slash));
            if (parent == nodes_.end() ||
                !parent->second.children.contains(path.substr(slash + 1))) {
                return "orphan node " + path;
            }
        }
        if (is_ephemeral(node.kind) != (node.stat.ephemeral_owner != kNoSession)) {
            return "ephemeral owner does not match the kind of " + path;
        }
        if (is_ttl(node.kind) != (node.ttl_ms > 0)) {
            return "a TTL out of step with the kind of " + path;
        }
        if (!valid_acl(node.acl) || node.acl != canonical_acl(node.acl) || node.stat.aversion < 0) {
            return "an invalid or non-canonical ACL at " + path;
        }
        if (node.stat.czxid > last_applied_ || node.stat.mzxid > last_applied_) {
            return "zxid from the future at " + path;
        }
        if (node.stat.ephemeral_owner != kNoSession) {
            ephemeral_nodes++;
            auto s = sessions_.find(node.stat.ephemeral_owner);
            // Ephemeral nodes exist only for live sessions.
            if (s == sessions_.end() || !s->second.ephemerals.contains(path)) {
                return "ephemeral node without a live owner: " + path;
            }
            if (!node.children.empty()) {
                return "ephemeral node with children: " + path;
            }
        }
    }
    size_t indexed = 0;
    for (const auto& [id, s] : sessions_) {
        indexed += s.ephemerals.size();
        if (s.saved.size() > kSavedResultsPerSessionMax) {
            return "too many saved results";
        }
        if (!s.saved.empty() && s.saved.begin()->first <= s.discarded_through_seq) {
            return "a saved result below the discarded mark";
        }
    }
    if (indexed != ephemeral_nodes) {
        return "the sessions' ephemeral index is out of step with the tree";
    }
    return {};
}

std::string StateMachine::check_lock_invariants() const {
    // First: check_lock follows the sets' names.
    if (std::string broken = check_multi_waits(); !broken.empty()) {
        return broken;
    }
    size_t waiters_total = 0;
    for (const auto& [name, lock] : locks_) {
        if (std::string broken = check_lock(name, lock); !broken.empty()) {
            return broken;
        }
        waiters_total += lock.waiters.size();
    }
    size_t wait_timers = 0;
    for (const Timer& t : timers_) {
        wait_timers += t.kind == TimerKind::kWaitDeadline ? 1 : 0;
    }
    if (wait_timers != waiters_total) {
        return "wait timers out of step with waiters";
    }
    for (const auto& [id, s] : sessions_) {
        for (const std::string& name : s.locks) {
            if (!locks_.contains(name)) {
                return "a session refers to a missing lock " + name;
            }
        }
    }
    return {};
}

std::string StateMachine::check_lock(const std::string& name, const Lock& lock) const {
    if (lock.holders.empty() && lock.waiters.empty() && lock.free_at_ms == 0) {
        return "an unused lock record: " + name;
    }
    if (lock.semaphore ? lock.holders.size() > lock.permits : lock.permits != 1) {
        return "too many holders of " + name;
    }
    // At most one exclusive holder, or only shared holders.
    if (!lock.semaphore && lock.holders.size() > 1 && lock.mode != LockMode::kShared) {
        return "several holders of the exclusive lock " + name;
    }
    if (lock.semaphore != (lock.mode == LockMode::kSemaphore) && !lock.holders.empty()) {
        return "holder mode does not match the kind of " + name;
    }
    std::set<std::pair<SessionId, std::string>> owners;
    for (const Holder& h : lock.holders) {
        auto s = sessions_.find(h.session);
        // No holder without a live session.
        if (s == sessions_.end() || !s->second.locks.contains(name)) {
            return "holder without a live session on " + name;
        }
        if (h.count == 0 || h.token == 0 || h.token > last_token_) {
            return "bad hold on " + name;
        }
        if (!owners.emplace(h.session, h.owner_tag).second) {
            return "duplicate owner on " + name;
        }
    }
    TimeMs enqueued_ms = INT64_MIN;
    Index group = 0;
    for (const Waiter& w : lock.waiters) {
        // Multi-lock waits keep their log order in every queue (what makes them deadlock-free).
        if (w.group != 0 && w.group <= group) {
            return "multi-lock waits out of log order on " + name;
        }
        group = std::max(group, w.group);
        auto wait = multi_waits_.find(w.group);
        if (w.group != 0 &&
            (wait == multi_waits_.end() || wait->second.session != w.session ||
             wait->second.owner_tag != w.owner_tag ||
             !std::binary_search(wait->second.names.begin(), wait->second.names.end(), name))) {
            return "a multi-lock waiter out of step with its set on " + name;
        }
        auto s = sessions_.find(w.session);
        if (s == sessions_.end() || !s->second.locks.contains(name)) {
            return "waiter without a live session on " + name;
        }
        if (!owners.emplace(w.session, w.owner_tag).second) {
            return "duplicate owner on " + name;
        }
        // Waiters are FIFO: enqueue times never go down along the queue.
        if (w.enqueued_ms < enqueued_ms) {
            return "waiters out of FIFO order on " + name;
        }
        enqueued_ms = w.enqueued_ms;
        if (!timers_.contains(
                Timer{w.deadline_ms, TimerKind::kWaitDeadline, name, w.session, w.owner_tag})) {
            return "waiter without a deadline timer on " + name;
        }
    }
    // Hand-off is never missed: a head of queue that could be granted has been, unless a
    // lock-delay end is due but not fired yet.
    bool delay_set = lock.free_at_ms != 0;
    if (!lock.waiters.empty() && lock.waiters.front().group != 0) {
        const MultiWait& wait = multi_waits_.at(lock.waiters.front().group);
        delay_set = std::any_of(wait.names.begin(), wait.names.end(), [&](const std::string& n) {
            auto other = locks_.find(n);
            return other == locks_.end() || other->second.free_at_ms != 0;
        });
    }
    if (!lock.waiters.empty() && !delay_set && head_grantable(lock)) {
        return "a grantable waiter was left waiting on " + name;
    }
    return {};
}

std::string StateMachine::check_multi_waits() const {
    for (const auto& entry : multi_waits_) {
        const Index group = entry.first;  // (clang captures no structured binding in a lambda)
        const MultiWait& wait = entry.second;
        if (wait.names.empty() || wait.names.size() > kMultiLockMax ||
            !std::is_sorted(wait.names.begin(), wait.names.end()) ||
            std::adjacent_find(wait.names.begin(), wait.names.end()) != wait.names.end()) {
            return "a multi-lock wait with a bad set";
        }
        std::optional<TimeMs> deadline_ms;
        for (const std::string& name : wait.names) {
            auto lock = locks_.find(name);
            if (lock == locks_.end()) {
                return "a multi-lock wait on a missing lock " + name;
            }
            const auto& waiters = lock->second.waiters;
            const auto count = std::count_if(waiters.begin(), waiters.end(),
                                             [&](const Waiter& w) { return w.group == group; });
            if (count != 1) {
                return "a multi-lock wait without exactly one waiter on " + name;
            }
            const Waiter& w = *std::find_if(waiters.begin(), waiters.end(),
                                            [&](const Waiter& x) { return x.group == group; });
            // One wait, one deadline: its timers fire together.
            if (deadline_ms.value_or(w.deadline_ms) != w.deadline_ms) {
                return "a multi-lock wait with two deadlines";
            }
            deadline_ms = w.deadline_ms;
        }
    }
    return {};
}

}  // namespace raftlock::statemachine
