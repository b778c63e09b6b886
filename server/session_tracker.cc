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
}

void SessionTracker::set_due(uint64_t session, Entry& entry, int64_t due_ms) {
    by_due_.erase({entry.due_ms, session});
    entry.due_ms = due_ms;
    by_due_.insert({due_ms, session});
}

void SessionTracker::add(uint64_t session, int64_t timeout_ms, int64_t now_ms) {
    RL_ASSERT(timeout_ms > 0);
    remove(session);
    Entry& e = sessions_[session];
    e.timeout_ms = timeout_ms;
    e.deadline_ms = now_ms + timeout_ms;
    e.due_ms = e.deadline_ms;
    by_due_.insert({e.due_ms, session});
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
    e.deadline_ms = now_ms + e.timeout_ms;
    set_due(session, e, e.deadline_ms);
    return Touch::kRenewed;
}

void SessionTracker::remove(uint64_t session) {
    auto it = sessions_.find(session);
    if (it == sessions_.end()) {
        return;
    }
    by_due_.erase({it->second.due_ms, session});
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
