// Majority quorum math, checked exhaustively for small clusters against brute-force definitions.

#include "raft/quorum.h"

#include <vector>

#include <catch2/catch.hpp>

namespace raftlock::raft {
namespace {

// The largest index held by at least a majority, straight from the definition.
Index brute_majority_index(const std::vector<Index>& acked) {
    Index best = 0;
    for (Index candidate : acked) {
        size_t holders = 0;
        for (Index a : acked) {
            holders += a >= candidate ? 1 : 0;
        }
        if (holders * 2 > acked.size() && candidate > best) {
            best = candidate;
        }
    }
    return best;
}

TEST_CASE("majority is more than half of the voters", "[raft][quorum]") {
    const size_t want[] = {1, 1, 2, 2, 3, 3, 4, 4, 5};
    for (size_t n = 0; n < 9; ++n) {
        INFO("voters=" << n);
        CHECK(majority(n) == want[n]);
        CHECK(majority(n) * 2 > n);
        if (n > 0) {
            CHECK((majority(n) - 1) * 2 <= n);
        }
    }
}

TEST_CASE("majority_index matches the brute-force definition for every 1..7-voter cluster",
          "[raft][quorum]") {
    // Every assignment of match indexes from {0..4} to up to 7 voters (4^7 = 16384 at most), plus
    // large indexes to catch truncation.
    const Index values[] = {0, 1, 2, 3, UINT64_MAX - 1};
    size_t checked = 0;
    for (size_t n = 1; n <= 7; ++n) {
        std::vector<size_t> digits(n, 0);
        for (;;) {
            std::vector<Index> acked(n);
            for (size_t i = 0; i < n; ++i) {
                acked[i] = values[digits[i]];
            }
            const Index want = brute_majority_index(acked);
            const Index got = majority_index(acked);
            if (got != want) {
                std::string list;
                for (Index a : acked) {
                    list += std::to_string(a) + " ";
                }
                FAIL("majority_index(" << list << ") = " << got << ", want " << want);
            }
            ++checked;
            size_t i = 0;
            while (i < n && ++digits[i] == std::size(values)) {
                digits[i++] = 0;
            }
            if (i == n) {
                break;
            }
        }
    }
    CHECK(checked == 5 + 25 + 125 + 625 + 3125 + 15625 + 78125);
    CHECK(majority_index({}) == 0);
}

TEST_CASE("vote_result is won, lost or pending exactly as the counts allow", "[raft][quorum]") {
    for (size_t voters = 1; voters <= 7; ++voters) {
        for (size_t granted = 0; granted <= voters; ++granted) {
            for (size_t rejected = 0; granted + rejected <= voters; ++rejected) {
                const size_t missing = voters - granted - rejected;
                VoteResult want = VoteResult::kPending;
                if (granted * 2 > voters) {
                    want = VoteResult::kWon;
                } else if ((granted + missing) * 2 <= voters) {
                    want = VoteResult::kLost;
                }
                INFO("voters=" << voters << " granted=" << granted << " rejected=" << rejected);
                CHECK(vote_result(voters, granted, rejected) == want);
            }
        }
    }
}

}  // namespace
}  // namespace raftlock::raft
