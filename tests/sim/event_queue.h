#pragma once

// The simulator's clock and agenda: events ordered by (time, insertion order), so two events at
// the same microsecond always run in the order they were scheduled and a run replays exactly.
// Messages in flight live in a slab beside the heap, so heap operations move small keys only.

#include <cstdint>
#include <queue>
#include <vector>

#include "base/assert.h"
#include "raft/types.h"

namespace raftlock::sim {

enum class EventKind : uint8_t {
    kTick,     // node: one tick of its clock (the chain continues while the node is down)
    kDeliver,  // slot: a message arrives
    kRestart,  // node: a crashed node comes back
    kClient,   // arg: client id; token: which wake-up of that client this is
    kNemesis,  // arg: a NemesisAction; token 0: the regular cadence, 1: a follow-up of an action
    // arg: a lock client's id (its poll timer, lock_workload.h)
    kLockClient,
};

struct Event {
    uint64_t time_us = 0;
    uint64_t seq = 0;
    EventKind kind = EventKind::kTick;
    raft::NodeId node = raft::kNoNode;
    uint32_t arg = 0;
    uint64_t token = 0;
    uint32_t repeat = 0;  // kNemesis follow-ups: how many more times the action repeats
};

class EventQueue {
public:
    // Far above what a run schedules; reaching it means a runaway feedback loop in a test.
    static constexpr size_t kMaxEvents = 1 << 20;

    uint64_t now_us() const { return now_us_; }
    bool empty() const { return heap_.empty(); }
    size_t size() const { return heap_.size(); }

    void schedule(uint64_t at_us, Event event) {
        RL_ASSERT(at_us >= now_us_);
        RL_ASSERT_MSG(heap_.size() < kMaxEvents, "simulator event queue overflow");
        event.time_us = at_us;
        event.seq = next_seq_++;
        heap_.push(event);
    }
    // A message in flight: parked in the slab until its delivery event runs.
    void schedule_delivery(uint64_t at_us, raft::Message message) {
        uint32_t slot = 0;
        if (free_slots_.empty()) {
            slot = static_cast<uint32_t>(slots_.size());
            slots_.push_back(std::move(message));
        } else {
            slot = free_slots_.back();
            free_slots_.pop_back();
            slots_[slot] = std::move(message);
        }
        schedule(at_us, Event{.kind = EventKind::kDeliver, .arg = slot});
    }
    raft::Message take_message(uint32_t slot) {
        RL_ASSERT(slot < slots_.size());
        free_slots_.push_back(slot);
        return std::move(slots_[slot]);
    }

    Event pop() {
        RL_ASSERT(!heap_.empty());
        Event e = heap_.top();
        heap_.pop();
        now_us_ = e.time_us;
        return e;
    }
    uint64_t next_time_us() const { return heap_.empty() ? now_us_ : heap_.top().time_us; }

private:
    struct Later {
        bool operator()(const Event& a, const Event& b) const {
            return a.time_us != b.time_us ? a.time_us > b.time_us : a.seq > b.seq;
        }
    };
    std::priority_queue<Event, std::vector<Event>, Later> heap_;
    std::vector<raft::Message> slots_;
    std::vector<uint32_t> free_slots_;
    uint64_t now_us_ = 0;
    uint64_t next_seq_ = 0;
};

}  // namespace raftlock::sim
