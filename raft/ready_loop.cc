#include "raft/ready_loop.h"

#include "base/assert.h"
#include "raft/raft.h"

namespace raftlock::raft {

ReadyLoop::ReadyLoop(RawNode& node, ReadyHost& host, size_t max_in_flight)
    : node_(node), host_(host), max_in_flight_(max_in_flight) {
    RL_ASSERT_MSG(max_in_flight_ >= 1, "a Ready loop needs room for one write in flight");
}

void ReadyLoop::drive() {
    RL_ASSERT_MSG(!stopped_, "a stopped Ready loop was driven again");
    if (driving_ || drive_deferred_) {
        return;  // the running drive() (or the deferred one) takes the next Ready
    }
    driving_ = true;
    bool applied = false;
    // Each turn finishes the oldest Ready if its write is done, else takes a new one. Bounded:
    // every turn either removes a Ready from the queue or adds one the node had ready.
    while (!stopped_ && !drive_deferred_) {
        const bool finishable = !in_flight_.empty() && in_flight_.front().durable;
        const bool takeable = in_flight_.size() < max_in_flight_ && node_.has_ready();
        if (!finishable && !takeable) {
            break;
        }
        if (applied) {
            // Ticks, peers and clients get a turn before more is applied (or taken).
            defer_drive();
            break;
        }
        if (finishable) {
            InFlight done = std::move(in_flight_.front());
            in_flight_.pop_front();
            if (!proceed(ReadyStage::kPersisted)) {
                break;
            }
            applied = finish(*done.ready);
            if (applied && !done.commit_only) {
                // A completed write ends the turn after it applied, whether or not more is
                // ready now: what arrives before the deferred drive() joins the next Ready.
                defer_drive();
                break;
            }
            continue;
        }
        if (!take_next()) {
            break;
        }
    }
    driving_ = false;
}

bool ReadyLoop::take_next() {
    host_.before_ready();
    auto ready = std::make_shared<Ready>(node_.ready());
    host_.on_ready(*ready);
    if (ready->soft_state) {
        host_.on_soft_state(*ready->soft_state);
    }
    if (!ready->early_messages.empty()) {
        host_.send(ready->early_messages);
    }
    if (!proceed(ReadyStage::kEarlySent)) {
        return false;
    }
    const bool carries_log = ready->snapshot.has_value() || !ready->entries.empty();
    // Entries and a snapshot always need a sync; a commit-only hard state does not (RawNode).
    RL_ASSERT(!carries_log || ready->must_sync);
    if (!carries_log && !ready->must_sync) {
        if (ready->hard_state) {
            host_.persist_commit(*ready->hard_state);
        }
        // Nothing to wait for of its own: it finishes as soon as the Readies before it have.
        in_flight_.push_back(InFlight{std::move(ready), true, true});
        return true;
    }
    in_flight_.push_back(InFlight{ready, false, false});
    // The host may complete the write before returning (a simulated disk): on_persisted() marks
    // it durable and the drive() loop finishes it on its next turn.
    const Ready* key = ready.get();
    host_.persist(std::move(ready), in_flight_.back().ready->must_sync,
                  [this, key] { on_persisted(key); });
    return true;
}

void ReadyLoop::on_persisted(const Ready* ready) {
    RL_ASSERT(!stopped_);
    // Writes complete in the order they started: this is the oldest one not yet durable.
    InFlight* first_pending = nullptr;
    for (InFlight& f : in_flight_) {
        if (!f.durable) {
            first_pending = &f;
            break;
        }
    }
    RL_ASSERT_MSG(first_pending != nullptr, "a write completed that the Ready loop did not start");
    RL_ASSERT_MSG(first_pending->ready.get() == ready, "writes completed out of order");
    first_pending->durable = true;
    if (driving_) {
        return;  // completed inline, inside drive(): its loop finishes the Ready next
    }
    // Finish what is durable now, even while a drive() is deferred: the write's completion is
    // this turn of the host's loop. Until a Ready is advanced, a drive() from inside the host's
    // callbacks (a proposal made while applying) must not take the next one: driving_ says so.
    driving_ = true;
    bool applied = false;
    while (!stopped_ && !applied && !in_flight_.empty() && in_flight_.front().durable) {
        std::shared_ptr<Ready> next = std::move(in_flight_.front().ready);
        in_flight_.pop_front();
        applied = proceed(ReadyStage::kPersisted) && finish(*next);
    }
    driving_ = false;
    if (stopped_) {
        return;
    }
    if (applied) {
        defer_drive();
    } else {
        drive();
    }
}

bool ReadyLoop::finish(Ready& ready) {
    if (!ready.messages.empty()) {
        host_.send(ready.messages);
    }
    if (!proceed(ReadyStage::kSent)) {
        return false;
    }
    if (ready.snapshot) {
        host_.apply_snapshot(*ready.snapshot);
    }
    if (!ready.committed_entries.empty()) {
        host_.apply_entries(ready.committed_entries);
    }
    if (!ready.read_states.empty()) {
        host_.serve_reads(ready.read_states);
    }
    if (!proceed(ReadyStage::kApplied)) {
        return false;
    }
    const bool applied = ready.snapshot.has_value() || !ready.committed_entries.empty();
    node_.advance(ready);
    ++readies_handled_;
    node_.raft().check_invariants();
    host_.after_ready();
    return applied;
}

bool ReadyLoop::proceed(ReadyStage stage) {
    if (host_.proceed(stage)) {
        return true;
    }
    stopped_ = true;
    return false;
}

void ReadyLoop::defer_drive() {
    RL_ASSERT(!stopped_);
    if (drive_deferred_) {
        return;
    }
    drive_deferred_ = true;
    host_.defer([this] {
        drive_deferred_ = false;
        if (!stopped_) {
            drive();
        }
    });
}

}  // namespace raftlock::raft
