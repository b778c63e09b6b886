#include "tests/sim/disk.h"

#include <utility>

#include "raft/assert.h"

namespace raftlock::sim {

void SimDisk::bootstrap(const raft::Bootstrap& boot) {
    RL_ASSERT(unsynced_.empty());
    durable_.append({boot.entry});
    durable_.set_hard_state(boot.hard_state);
    cached_ = durable_;
}

void SimDisk::apply(raft::MemoryStorage& storage, const Write& write) {
    if (write.snapshot) {
        storage.apply_snapshot(*write.snapshot);
    }
    if (write.entry) {
        storage.append({*write.entry});
    }
    if (write.hard_state) {
        storage.set_hard_state(*write.hard_state);
    }
}

void SimDisk::push(Write write) {
    apply(cached_, write);
    // A commit-only hard state right after another one replaces it: both are unsynced, and a
    // torn write keeps either none, the first, or both, which the replacement still allows
    // (none or the newer); it keeps the cache bounded between syncs.
    if (write.hard_state && !write.snapshot && !write.entry && !unsynced_.empty() &&
        unsynced_.back().hard_state && !unsynced_.back().snapshot && !unsynced_.back().entry) {
        unsynced_.back() = std::move(write);
        return;
    }
    RL_ASSERT_MSG(unsynced_.size() < kMaxUnsyncedWrites, "simulated disk: never synced");
    unsynced_.push_back(std::move(write));
}

void SimDisk::write_snapshot(const raft::Snapshot& snapshot) {
    push(Write{.snapshot = snapshot});
}

void SimDisk::write_entries(const std::vector<raft::Entry>& entries) {
    for (const raft::Entry& e : entries) {
        push(Write{.entry = e});
    }
}

void SimDisk::write_hard_state(const raft::HardState& hard_state) {
    push(Write{.hard_state = hard_state});
}

void SimDisk::sync() {
    for (const Write& w : unsynced_) {
        apply(durable_, w);
    }
    unsynced_.clear();
}

void SimDisk::save_app_snapshot(raft::Index index,
                                const raft::ConfState& conf,
                                std::string data,
                                raft::Index compact_index) {
    sync();
    RL_ASSERT(compact_index <= index);
    for (raft::MemoryStorage* s : {&durable_, &cached_}) {
        s->create_snapshot(index, conf, data);
        s->compact(compact_index);
    }
}

CrashLoss SimDisk::crash(Rng& rng) {
    CrashLoss loss;
    loss.unsynced_writes = static_cast<uint32_t>(unsynced_.size());
    loss.kept_writes = static_cast<uint32_t>(rng.uniform(unsynced_.size() + 1));
    for (uint32_t i = 0; i < loss.kept_writes; ++i) {
        apply(durable_, unsynced_[i]);
    }
    unsynced_.clear();
    cached_ = durable_;
    return loss;
}

}  // namespace raftlock::sim
