#pragma once

// The web console's live feed (docs/operations.md, "Web console"): what this node saw happen, as
// its entries applied (grants, releases, expiries, sessions) and as its Raft role changed
// (elections, leaders), in a ring of the last events_max, each numbered 1, 2, 3, ... A reader
// asks for the events after the last number it saw (GET /api/events?after=N); when there are
// none it may wait for the next one as a parked long-poll (server/admin_console.h), of which
// the feed keeps at most waiters_max.
//
// Pure: time comes in as arguments. Threads: the replica's loop thread only.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace raftlock::server {

enum class ConsoleEventKind : uint8_t {
    kGrant,        // a hold granted: at once, or handed to a waiter
    kQueued,       // an acquire waits
    kRelease,      // the last count of a hold released
    kRevoke,       // a hold taken away by an admin's force-release
    kWaitTimeout,  // a waiter's deadline passed without a grant
    kSessionOpen,
    kSessionClose,   // closed by its client
    kSessionExpiry,  // expired (its holds released, with lock-delay)
    kElection,       // this node campaigns
    kLeaderChange,   // the leader this node knows changed (node 0: none)
};
std::string_view to_string(ConsoleEventKind kind);

struct ConsoleEvent {
    uint64_t seq = 0;  // set by ConsoleFeed::record
    ConsoleEventKind kind = ConsoleEventKind::kGrant;
    int64_t wall_ms = 0;     // this node's wall clock when it recorded the event
    int64_t cluster_ms = 0;  // the entry's cluster time (0: not from an entry)
    uint64_t index = 0;      // the entry's Raft index (0: not from an entry)
    std::string lock;
    uint64_t session = 0;
    std::string owner;   // the hold's or waiter's owner tag
    uint64_t token = 0;  // grants, releases, revokes
    uint64_t term = 0;   // elections, leader changes
    uint64_t node = 0;   // elections: this node; leader changes: the new leader
};

class ConsoleFeed {
public:
    // One answer carries at most this many events (a reader far behind asks again).
    static constexpr size_t kBatchMax = 256;
    // A lock name or owner tag longer than this is cut (the feed's memory stays bounded).
    static constexpr size_t kTextBytesMax = 256;

    explicit ConsoleFeed(size_t events_max = 2048, size_t waiters_max = 32);

    // Numbers `event` and keeps it, dropping the oldest beyond events_max, and wakes every waiter.
    void record(ConsoleEvent event);
    uint64_t last_seq() const { return next_seq_ - 1; }
    // The oldest number still kept (last_seq() + 1 when none is).
    uint64_t first_seq() const { return events_.empty() ? next_seq_ : events_.front().seq; }
    // The events numbered above `after`, oldest first, at most `max` of them.
    std::vector<ConsoleEvent> since(uint64_t after, size_t max) const;
    // {"first_seq":..,"last_seq":..,"missed":true when events after `after` were dropped,
    //  "events":[...]}: what GET /api/events answers.
    std::string events_json(uint64_t after) const;

    // A long-poll for an event numbered above `after`: `wake` runs once, when one is recorded or
    // at `deadline_ms`; `waiting` says whether its client still waits (false: dropped unwoken).
    struct Waiter {
        uint64_t after = 0;
        int64_t deadline_ms = 0;
        std::function<bool()> waiting;
        std::function<void()> wake;
    };
    enum class Park : uint8_t {
        kParked,
        kReady,  // events above `after` exist, or `after` is above last_seq(): answer now
        kFull,   // waiters_max wait already
    };
    // Drops the waiters whose clients left first, so that only live ones count toward the bound.
    Park park(Waiter waiter);
    // Wakes the waiters whose deadline is at or before now_ms; drops those that left.
    void expire(int64_t now_ms);
    size_t waiters() const { return waiters_.size(); }
    size_t events() const { return events_.size(); }

private:
    void drop_gone_waiters();

    size_t events_max_;
    size_t waiters_max_;
    std::deque<ConsoleEvent> events_;
    uint64_t next_seq_ = 1;
    std::vector<Waiter> waiters_;
};

}  // namespace raftlock::server
