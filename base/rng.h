#pragma once

// The core's only source of randomness: a small, fast, seeded PRNG (SplitMix64, Steele et al.
// 2014). The same seed gives the same sequence on every platform, which is what lets the
// simulator replay a run from its seed.

#include <cstddef>
#include <cstdint>

#include "base/assert.h"

namespace raftlock {

class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}

    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // Uniform in [0, bound); bound > 0. The modulo bias is below 2^-40 for bounds under 2^24.
    uint64_t uniform(uint64_t bound) {
        RL_ASSERT(bound > 0);
        return next() % bound;
    }
    // True with probability numerator / denominator.
    bool chance(uint64_t numerator, uint64_t denominator) {
        return uniform(denominator) < numerator;
    }
    // One of `choices`, each as likely.
    template <typename T, size_t N>
    T pick(const T (&choices)[N]) {
        return choices[uniform(N)];
    }

private:
    uint64_t state_;
};

}  // namespace raftlock
