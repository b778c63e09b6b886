#include "bench/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace raftlock::bench {

// Values below kSubBuckets map to themselves (power 0, exact). Above, the power p is how many bits
// the value has beyond kSubBucketBits; the sub-bucket is the value's top kSubBucketBits + 1 bits
// minus the implied leading one, so each power holds kSubBuckets buckets of width 2^p.
size_t Histogram::index_of(uint64_t value_ns) {
    if (value_ns < kSubBuckets) {
        return static_cast<size_t>(value_ns);
    }
    const int bits = 64 - std::countl_zero(value_ns);
    const int power = bits - kSubBucketBits;
    if (power > kPowers) {
        return kBuckets - 1;
    }
    const uint64_t sub = (value_ns >> (power - 1)) - kSubBuckets;
    return static_cast<size_t>(power) * kSubBuckets + static_cast<size_t>(sub);
}

uint64_t Histogram::upper_of(size_t index) {
    const uint64_t power = index / kSubBuckets;
    const uint64_t sub = index % kSubBuckets;
    if (power == 0) {
        return sub;
    }
    const uint64_t low = (kSubBuckets + sub) << (power - 1);
    return low + (uint64_t{1} << (power - 1)) - 1;
}

void Histogram::record(uint64_t value_ns) {
    counts_[index_of(value_ns)]++;
    count_++;
    min_ns_ = std::min(min_ns_, value_ns);
    max_ns_ = std::max(max_ns_, value_ns);
    sum_ns_ += static_cast<long double>(value_ns);
}

void Histogram::merge(const Histogram& other) {
    for (size_t i = 0; i < counts_.size(); ++i) {
        counts_[i] += other.counts_[i];
    }
    count_ += other.count_;
    min_ns_ = std::min(min_ns_, other.min_ns_);
    max_ns_ = std::max(max_ns_, other.max_ns_);
    sum_ns_ += other.sum_ns_;
}

double Histogram::mean_ns() const {
    return count_ == 0 ? 0.0 : static_cast<double>(sum_ns_ / static_cast<long double>(count_));
}

uint64_t Histogram::percentile_ns(double q) const {
    if (count_ == 0) {
        return 0;
    }
    if (q >= 1.0) {
        return max_ns_;
    }
    const auto rank =
        static_cast<uint64_t>(std::ceil(std::max(0.0, q) * static_cast<double>(count_)));
    const uint64_t wanted = std::max<uint64_t>(1, rank);
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
        seen += counts_[i];
        if (seen >= wanted) {
            // A bucket's upper edge can exceed the largest value actually seen.
            return std::min(upper_of(i), max_ns_);
        }
    }
    return max_ns_;
}

}  // namespace raftlock::bench
