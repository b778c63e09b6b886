#include "raft/quorum.h"

#include <algorithm>
#include <cstddef>
#include <functional>

#include "base/assert.h"

namespace raftlock::raft {

Index majority_index(std::vector<Index> acked) {
    if (acked.empty()) {
        return 0;
    }
    // With acks sorted high to low, the (majority-1)th value is held by a majority.
    const size_t k = majority(acked.size()) - 1;
    RL_ASSERT(k < acked.size());
    std::nth_element(acked.begin(), acked.begin() + static_cast<std::ptrdiff_t>(k), acked.end(),
                     std::greater<Index>());
    const Index index = acked[k];
    // A majority holds it: the k+1 values at the front are all at least `index`.
    RL_ASSERT(static_cast<size_t>(std::count_if(acked.begin(), acked.end(), [index](Index a) {
                  return a >= index;
              })) >= majority(acked.size()));
    return index;
}

VoteResult vote_result(size_t voters, size_t granted, size_t rejected) {
    const size_t need = majority(voters);
    RL_ASSERT(granted + rejected <= voters);
    RL_ASSERT(need > voters / 2 && (voters == 0 || need <= voters));
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
