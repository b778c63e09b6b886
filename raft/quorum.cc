#include "raft/quorum.h"

#include <algorithm>
#include <cstddef>
#include <functional>

namespace raftlock::raft {

Index majority_index(std::vector<Index> acked) {
    if (acked.empty()) {
        return 0;
    }
    // With acks sorted high to low, the (majority-1)th value is held by a majority.
    const size_t k = majority(acked.size()) - 1;
    std::nth_element(acked.begin(), acked.begin() + static_cast<std::ptrdiff_t>(k), acked.end(),
                     std::greater<Index>());
    return acked[k];
}

VoteResult vote_result(size_t voters, size_t granted, size_t rejected) {
    const size_t need = majority(voters);
    if (granted >= need) {
        return VoteResult::kWon;
    }
    // Lost once enough rejections arrived that the missing votes cannot make a majority.
    if (voters - rejected < need) {
        return VoteResult::kLost;
    }
    return VoteResult::kPending;
}

}  // namespace raftlock::raft
