#include "server/session_tracker.h"

#include <algorithm>

#include "base/assert.h"

namespace raftlock::server {

void SessionTracker::reset(const std::vector<std::pair<uint64_t, int64_t>>& sessions_and_timeouts,
                           int64_t now_ms) {
    clear();
    for (const auto& [session, timeout_ms] : sessions_and_timeouts) {
        add(session, timeout_ms, now_ms);
    }
    // A new leader gives every session a full timeout from now: none is expiring yet.
    RL_ASSERT(sessions_.size() == sessions_and_timeouts.size() &&
              by_due_.size() == sessions_.size());
    RL_ASSERT(by_due_.empty() || by_due_.begin()->first > now_ms);
}

void SessionTracker::set_due(uint64_t session, Entry& entry, int64_t due_ms) {
    const size_t erased = by_due_.erase({entry.due_ms, session});
    RL_ASSERT(erased == 1);  // every tracked session is in by_due_ exactly once
    entry.due_ms = due_ms;
    by_due_.insert({due_ms, session});
    RL_ASSERT(by_due_.size() == sessions_.size());
}

void SessionTracker::add(uint64_t session, int64_t timeout_ms, int64_t now_ms) {
    RL_ASSERT(timeout_ms > 0);
    remove(session);
    Entry& e = sessions_[session];
    e.timeout_ms = timeout_ms;
    e.deadline_ms = now_ms + timeout_ms;
    e.due_ms = e.deadline_ms;
    by_due_.insert({e.due_ms, session});
    RL_ASSERT(by_due_.size() == sessions_.size());
}

SessionTracker::Touch SessionTracker::touch(uint64_t session, int64_t now_ms) {
    auto it = sessions_.find(session);
    if (it == sessions_.end()) {
        return Touch::kUnknown;
    }
    Entry& e = it->second;
    if (e.deadline_ms <= now_ms) {
        return Touch::kExpiring;
    }
    // A deadline only moves later: a renewal never shortens what a client was promised.
    const int64_t before = e.deadline_ms;
    e.deadline_ms = now_ms + e.timeout_ms;
    RL_ASSERT(e.deadline_ms >= before);
    set_due(session, e, e.deadline_ms);
    return Touch::kRenewed;
}

void SessionTracker::remove(uint64_t session) {
    auto it = sessions_.find(session);
    if (it == sessions_.end()) {
        return;
    }
    const size_t erased = by_due_.erase({it->second.due_ms, session});
    RL_ASSERT(erased == 1);
    sessions_.erase(it);
}

const SessionTracker::Entry* SessionTracker::find(uint64_t session) const {
    auto it = sessions_.find(session);
    return it == sessions_.end() ? nullptr : &it->second;
}

std::vector<uint64_t> SessionTracker::take_expired(int64_t now_ms, int64_t retry_ms, size_t max) {
    RL_ASSERT(retry_ms > 0);
    std::vector<uint64_t> out;
    while (out.size() < max && !by_due_.empty() && by_due_.begin()->first <= now_ms) {
        const uint64_t session = by_due_.begin()->second;
        Entry& e = sessions_.at(session);
        RL_ASSERT(e.deadline_ms <= now_ms);
        set_due(session, e, now_ms + retry_ms);
        out.push_back(session);
    }
    return out;
}

}  // namespace raftlock::server
