#include "raft/ready_loop.h"

#include "base/assert.h"
#include "raft/raft.h"

namespace raftlock::raft {

void ReadyLoop::drive() {
    RL_ASSERT_MSG(!stopped_, "a stopped Ready loop was driven again");
    if (driving_ || drive_deferred_) {
        return;  // the running drive() (or the deferred one) takes the next Ready
    }
    driving_ = true;
    bool applied = false;
    while (!persisting_ && !stopped_ && !drive_deferred_ && node_.has_ready()) {
        if (applied) {
            defer_drive();
            break;
        }
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
            break;
        }
        const bool carries_log = ready->snapshot.has_value() || !ready->entries.empty();
        // Entries and a snapshot always need a sync; a commit-only hard state does not (RawNode).
        RL_ASSERT(!carries_log || ready->must_sync);
        if (!carries_log && !ready->must_sync) {
            if (ready->hard_state) {
                host_.persist_commit(*ready->hard_state);
            }
            if (!proceed(ReadyStage::kPersisted)) {
                break;
            }
            applied = finish(*ready);
            continue;
        }
        persisting_ = true;
        // The host may complete the write before returning (a simulated disk): on_persisted()
        // then finishes the Ready inside this loop, which goes on (or stops) after it.
        host_.persist(ready, ready->must_sync, [this, ready] { on_persisted(*ready); });
    }
    driving_ = false;
}

void ReadyLoop::on_persisted(Ready& ready) {
    RL_ASSERT_MSG(persisting_, "a write completed that the Ready loop did not start");
    RL_ASSERT(!stopped_);
    persisting_ = false;
    // Until this Ready is advanced, a drive() from inside the host's callbacks (a proposal made
    // while applying) must not take the next one: it runs below, after advance().
    const bool inside_drive = driving_;
    driving_ = true;
    const bool applied = proceed(ReadyStage::kPersisted) && finish(ready);
    driving_ = inside_drive;
    if (stopped_) {
        return;
    }
    if (applied) {
        defer_drive();
    } else if (!inside_drive) {
        drive();
    }
}

bool ReadyLoop::finish(Ready& ready) {
    RL_ASSERT(!persisting_);
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
