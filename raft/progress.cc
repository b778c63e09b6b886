#include "raft/progress.h"

#include <algorithm>

#include "base/assert.h"

namespace raftlock::raft {

void Inflights::add(Index last_index) {
    RL_ASSERT_MSG(!full(), "in-flight window overflow");
    if (buffer_.empty()) {
        buffer_.resize(capacity_);  // allocated on first use: idle peers cost nothing
    }
    // Appends in flight cover increasing ranges: each starts after the last one sent.
    RL_ASSERT(count_ == 0 || buffer_[(start_ + count_ - 1) % capacity_] < last_index);
    const uint32_t slot = (start_ + count_) % capacity_;
    buffer_[slot] = last_index;
    ++count_;
    RL_ASSERT(count_ <= capacity_);
}

void Inflights::free_le(Index index) {
    RL_ASSERT(count_ <= capacity_ && start_ < std::max<uint32_t>(capacity_, 1));
    while (count_ > 0 && buffer_[start_] <= index) {
        start_ = (start_ + 1) % capacity_;
        --count_;
    }
    if (count_ == 0) {
        start_ = 0;
    }
    RL_ASSERT(count_ == 0 || buffer_[start_] > index);
}

void Inflights::free_first_one() {
    if (count_ > 0) {
        free_le(buffer_[start_]);
    }
}

void Inflights::reset() {
    start_ = 0;
    count_ = 0;
}

void Progress::become_probe() {
    // Coming back from a snapshot, the peer has at least the snapshot.
    if (state == ProgressState::kSnapshot) {
        next = std::max(match + 1, pending_snapshot + 1);
    } else {
        next = match + 1;
    }
    state = ProgressState::kProbe;
    probe_sent = false;
    pending_snapshot = 0;
    inflights.reset();
    snapshot.reset();
    RL_ASSERT(next > match);  // the next probe asks for what the peer is not known to have
}

void Progress::become_replicate() {
    state = ProgressState::kReplicate;
    next = match + 1;
    probe_sent = false;
    pending_snapshot = 0;
    inflights.reset();
    snapshot.reset();
}

void Progress::become_snapshot(std::shared_ptr<const Snapshot> snap) {
    RL_ASSERT(snap != nullptr && snap->metadata.index > 0);
    state = ProgressState::kSnapshot;
    pending_snapshot = snap->metadata.index;
    probe_sent = false;
    inflights.reset();
    snapshot = std::move(snap);
    snapshot_acked_bytes = 0;
    snapshot_progressed = true;
}

void Progress::sent_entries(Index last_index, bool any_entries) {
    // Entries go out from `next` on, and never during a snapshot transfer (is_paused()).
    RL_ASSERT(state != ProgressState::kSnapshot);
    RL_ASSERT(!any_entries || last_index >= next);
    if (state == ProgressState::kReplicate) {
        if (any_entries) {
            next = last_index + 1;
            inflights.add(last_index);
        }
    } else if (state == ProgressState::kProbe) {
        probe_sent = true;
    }
}

bool Progress::maybe_update(Index n) {
    bool updated = false;
    if (match < n) {
        match = n;
        updated = true;
        probe_sent = false;
    }
    next = std::max(next, n + 1);
    RL_ASSERT(match >= n && next > match);
    return updated;
}

bool Progress::maybe_decrease_to(Index rejected, Index match_hint) {
    if (state == ProgressState::kReplicate) {
        // A rejection at or below match is stale (it answered an older append).
        if (rejected <= match) {
            return false;
        }
        next = match + 1;
        return true;
    }
    // Probe (or snapshot): only the answer to the latest probe counts.
    if (next - 1 != rejected) {
        return false;
    }
    next = std::max(std::min(rejected, match_hint + 1), match + 1);
    probe_sent = false;
    // Backing off never goes below what the peer acknowledged, nor past the rejected probe.
    RL_ASSERT(next > match && next <= std::max(rejected, match + 1));
    return true;
}

bool Progress::is_paused() const {
    switch (state) {
        case ProgressState::kProbe:
            return probe_sent;
        case ProgressState::kReplicate:
            return inflights.full();
        case ProgressState::kSnapshot:
            return true;
    }
    RL_PANIC("unknown progress state");
}

}  // namespace raftlock::raft
