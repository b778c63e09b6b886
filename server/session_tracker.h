#pragma once

// Session liveness as the leader sees it (DESIGN.md §4): deadlines in the leader's monotonic clock,
// kept in memory only. The leader proposes ExpireSession for a session whose deadline passed; the
// session ends when that entry applies. A new leader starts every session with a fresh full
// timeout (reset()), so no session dies because of a failover.
//
// Why a keepalive acknowledged by the leader is safe to trust (the client's safe-until): the
// server acknowledges only after a ReadIndex round confirms it is still the leader and it applied
// up to the read index, so no other leader was elected before it recorded the keepalive, and any
// later leader gives the session a full timeout from its election on.
//
// Pure: time comes in as arguments.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace raftlock::server {

class SessionTracker {
public:
    struct Entry {
        int64_t timeout_ms = 0;
        int64_t deadline_ms = 0;
        // When take_expired() may offer the session again: its deadline, or after an expiry was
        // proposed, that time + retry_ms (the proposal may be lost with a leader change).
        int64_t due_ms = 0;
    };

    // Becoming leader: every live session gets now + its timeout.
    void reset(const std::vector<std::pair<uint64_t, int64_t>>& sessions_and_timeouts,
               int64_t now_ms);
    void clear() {
        sessions_.clear();
        by_due_.clear();
    }

    // A session appeared (its OpenSession applied): deadline now + timeout.
    void add(uint64_t session, int64_t timeout_ms, int64_t now_ms);
    enum class Touch : uint8_t {
        kRenewed,   // the deadline moved to now + timeout
        kUnknown,   // not tracked (its OpenSession may not be applied here yet)
        kExpiring,  // its deadline already passed: an expiry may be in the log, so a keepalive
                    // must not be acknowledged (the session is treated as expired)
    };
    // A keepalive received at now_ms.
    Touch touch(uint64_t session, int64_t now_ms);
    void remove(uint64_t session);

    // Sessions whose deadline passed and whose expiry was not proposed within the last
    // `retry_ms` (a proposal can be lost with a leader change), at most `max` of them, oldest
    // deadline first. Marks them as proposed at now_ms.
    std::vector<uint64_t> take_expired(int64_t now_ms, int64_t retry_ms, size_t max);

    bool contains(uint64_t session) const { return sessions_.count(session) != 0; }
    const Entry* find(uint64_t session) const;
    size_t size() const { return sessions_.size(); }

private:
    void set_due(uint64_t session, Entry& entry, int64_t due_ms);

    std::map<uint64_t, Entry> sessions_;
    std::set<std::pair<int64_t, uint64_t>> by_due_;  // (due_ms, session): expiry scans stay cheap
};

}  // namespace raftlock::server
