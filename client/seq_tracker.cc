#include "client/seq_tracker.h"

#include "base/assert.h"

namespace raftlock::client {

SeqTracker::SeqTracker(uint64_t first_seq) : next_seq_(first_seq), ack_seq_(first_seq - 1) {
    RL_ASSERT(first_seq >= 1);
}

bool SeqTracker::can_allocate() const {
    return window() < kSeqWindowMax;
}

uint64_t SeqTracker::allocate() {
    RL_ASSERT(can_allocate());
    return next_seq_++;
}

void SeqTracker::settle(uint64_t seq) {
    RL_ASSERT(seq < next_seq_);
    if (seq <= ack_seq_) {
        return;
    }
    settled_above_.insert(seq);
    while (!settled_above_.empty() && *settled_above_.begin() == ack_seq_ + 1) {
        settled_above_.erase(settled_above_.begin());
        ack_seq_++;
    }
    RL_ASSERT(settled_above_.size() < kSeqWindowMax);
    RL_ASSERT(ack_seq_ < next_seq_);
}

}  // namespace raftlock::client
