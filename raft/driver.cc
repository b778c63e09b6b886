#include "raft/driver.h"

#include <utility>

#include "raft/assert.h"

namespace raftlock::raft {

DriveResult Driver::handle_ready() {
    RL_ASSERT_MSG(!stopped_, "a stopped driver was used again");
    if (!node_.has_ready()) {
        return DriveResult::kIdle;
    }
    Ready ready = node_.ready();
    if (!handle(ready)) {
        stopped_ = true;
        return DriveResult::kStopped;
    }
    node_.advance(ready);
    ++readies_handled_;
    return DriveResult::kHandled;
}

DriveResult Driver::run(uint32_t max_readies) {
    DriveResult result = DriveResult::kIdle;
    for (uint32_t i = 0; i < max_readies; ++i) {
        const DriveResult one = handle_ready();
        if (one == DriveResult::kIdle) {
            break;
        }
        result = one;
        if (one == DriveResult::kStopped) {
            break;
        }
    }
    return result;
}

bool Driver::handle(Ready& ready) {
    host_.on_ready(ready);
    if (ready.soft_state) {
        host_.on_soft_state(*ready.soft_state);
    }
    if (!ready.early_messages.empty()) {
        host_.send(std::exchange(ready.early_messages, {}));
    }
    if (!host_.proceed(DriverStage::kEarlySent)) {
        return false;
    }
    const bool anything_to_persist =
        ready.snapshot.has_value() || !ready.entries.empty() || ready.hard_state.has_value();
    // Entries and a snapshot always need a sync; a commit-only hard state does not (RawNode).
    if (!ready.entries.empty() || ready.snapshot) {
        RL_ASSERT(ready.must_sync);
    }
    if (anything_to_persist) {
        host_.persist(ready, ready.must_sync);
    }
    if (!host_.proceed(DriverStage::kPersisted)) {
        return false;
    }
    if (!ready.messages.empty()) {
        host_.send(std::exchange(ready.messages, {}));
    }
    if (!host_.proceed(DriverStage::kSent)) {
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
    return host_.proceed(DriverStage::kApplied);
}

}  // namespace raftlock::raft
