#pragma once

// Majority quorum math, free of any other state so it can be tested exhaustively.

#include <cstddef>
#include <vector>

#include "raft/types.h"

namespace raftlock::raft {

inline size_t majority(size_t voters) {
    return voters / 2 + 1;
}

// The largest index acknowledged by a majority of `acked` (one entry per voter). 0 for no voters.
Index majority_index(std::vector<Index> acked);

enum class VoteResult : uint8_t { kPending, kWon, kLost };

// granted/rejected: votes received from voters; voters: size of the voter set.
VoteResult vote_result(size_t voters, size_t granted, size_t rejected);

}  // namespace raftlock::raft
