#pragma once

// A latency histogram in the manner of HdrHistogram: values (nanoseconds) fall into buckets whose
// width doubles with each power of two, each power split into kSubBuckets linear sub-buckets, so
// every recorded value is kept to within 1/kSubBuckets (< 0.8 %) of its size from 1 ns to ~1 hour,
// in a fixed ~37 KiB array. Recording is O(1) with no allocation; merging adds counts.
//
// Not thread-safe: each load thread records into its own histogram; the runner merges them.

#include <array>
#include <cstddef>
#include <cstdint>

namespace raftlock::bench {

class Histogram {
public:
    static constexpr int kSubBucketBits = 7;  // 128 sub-buckets per power of two
    static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;
    static constexpr int kPowers = 36;  // values up to 2^(36+7) ns (~2.4 h) before clamping
    static constexpr size_t kBuckets = (kPowers + 1) * kSubBuckets;

    void record(uint64_t value_ns);
    void merge(const Histogram& other);

    uint64_t count() const { return count_; }
    uint64_t min_ns() const { return count_ == 0 ? 0 : min_ns_; }
    uint64_t max_ns() const { return max_ns_; }
    double mean_ns() const;
    // The smallest recorded value v (to bucket precision) such that at least q of all values are
    // <= v; q in [0, 1]. 0 for an empty histogram. q = 1 gives the exact maximum.
    uint64_t percentile_ns(double q) const;

private:
    static size_t index_of(uint64_t value_ns);
    // The highest value that falls in bucket `index` (what percentile_ns reports).
    static uint64_t upper_of(size_t index);

    std::array<uint64_t, kBuckets> counts_{};
    uint64_t count_ = 0;
    uint64_t min_ns_ = UINT64_MAX;
    uint64_t max_ns_ = 0;
    long double sum_ns_ = 0;
};

}  // namespace raftlock::bench
