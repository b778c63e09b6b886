#include "server/console_feed.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/assert.h"

namespace raftlock::server {

std::string_view to_string(ConsoleEventKind kind) {
    switch (kind) {
        case ConsoleEventKind::kGrant:
            return "grant";
        case ConsoleEventKind::kQueued:
            return "queued";
        case ConsoleEventKind::kRelease:
            return "release";
        case ConsoleEventKind::kRevoke:
            return "revoke";
        case ConsoleEventKind::kWaitTimeout:
            return "wait-timeout";
        case ConsoleEventKind::kSessionOpen:
            return "session-open";
        case ConsoleEventKind::kSessionClose:
            return "session-close";
        case ConsoleEventKind::kSessionExpiry:
            return "session-expiry";
        case ConsoleEventKind::kElection:
            return "election";
        case ConsoleEventKind::kLeaderChange:
            return "leader-change";
    }
    return "unknown";
}

ConsoleFeed::ConsoleFeed(size_t events_max, size_t waiters_max)
    : events_max_(events_max), waiters_max_(waiters_max) {
    RL_ASSERT(events_max_ > 0);
    RL_ASSERT(waiters_max_ > 0);
}

void ConsoleFeed::record(ConsoleEvent event) {
    RL_ASSERT(events_.size() <= events_max_);
    if (event.lock.size() > kTextBytesMax) {
        event.lock.resize(kTextBytesMax);
    }
    if (event.owner.size() > kTextBytesMax) {
        event.owner.resize(kTextBytesMax);
    }
    event.seq = next_seq_++;
    if (events_.size() == events_max_) {
        events_.pop_front();
    }
    events_.push_back(std::move(event));
    // Every waiter asked for an event above a number it saw, so the new one is above it. The
    // list is swapped out first: a wake may reply at once, and a reply never parks again here,
    // but the list stays consistent even if it did.
    std::vector<Waiter> woken = std::move(waiters_);
    waiters_.clear();
    for (Waiter& w : woken) {
        RL_ASSERT(w.after < last_seq());
        if (w.waiting()) {
            w.wake();
        }
    }
}

std::vector<ConsoleEvent> ConsoleFeed::since(uint64_t after, size_t max) const {
    std::vector<ConsoleEvent> out;
    if (events_.empty() || after >= last_seq()) {
        return out;
    }
    // Numbers are consecutive in the ring: the first event above `after` is found by offset.
    const uint64_t first = std::max(after + 1, first_seq());
    RL_ASSERT(first >= first_seq());
    RL_ASSERT(first <= last_seq());
    for (size_t i = first - first_seq(); i < events_.size() && out.size() < max; ++i) {
        RL_ASSERT(events_[i].seq > after);
        out.push_back(events_[i]);
    }
    return out;
}

std::string ConsoleFeed::events_json(uint64_t after) const {
    nlohmann::json j;
    j["first_seq"] = first_seq();
    j["last_seq"] = last_seq();
    // The reader saw up to `after`: anything between that and the oldest kept was dropped.
    j["missed"] = after + 1 < first_seq() && after < last_seq();
    nlohmann::json list = nlohmann::json::array();
    for (const ConsoleEvent& e : since(after, kBatchMax)) {
        nlohmann::json item{{"seq", e.seq}, {"kind", to_string(e.kind)}, {"wall_ms", e.wall_ms}};
        if (e.index != 0) {
            item["index"] = e.index;
            item["cluster_ms"] = e.cluster_ms;
        }
        if (!e.lock.empty()) {
            item["lock"] = e.lock;
        }
        if (e.session != 0) {
            item["session"] = e.session;
        }
        if (!e.owner.empty()) {
            item["owner"] = e.owner;
        }
        if (e.token != 0) {
            item["token"] = e.token;
        }
        if (e.term != 0) {
            item["term"] = e.term;
            item["node"] = e.node;
        }
        list.push_back(std::move(item));
    }
    j["events"] = std::move(list);
    // Names are arbitrary bytes: replace what is not UTF-8 rather than fail.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void ConsoleFeed::drop_gone_waiters() {
    std::erase_if(waiters_, [](const Waiter& w) { return !w.waiting(); });
}

ConsoleFeed::Park ConsoleFeed::park(Waiter waiter) {
    RL_ASSERT(waiter.waiting != nullptr);
    RL_ASSERT(waiter.wake != nullptr);
    // Above the last number too: a reader of an earlier run of this node, told now to start over.
    if (waiter.after != last_seq()) {
        return Park::kReady;
    }
    drop_gone_waiters();
    if (waiters_.size() >= waiters_max_) {
        return Park::kFull;
    }
    waiters_.push_back(std::move(waiter));
    RL_ASSERT(waiters_.size() <= waiters_max_);
    return Park::kParked;
}

void ConsoleFeed::expire(int64_t now_ms) {
    std::vector<Waiter> due;
    std::erase_if(waiters_, [&](Waiter& w) {
        if (!w.waiting()) {
            return true;
        }
        if (w.deadline_ms <= now_ms) {
            due.push_back(std::move(w));
            return true;
        }
        return false;
    });
    for (Waiter& w : due) {
        w.wake();
    }
}

}  // namespace raftlock::server
