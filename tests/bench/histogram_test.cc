// bench/histogram.h: every value is kept to within its bucket's precision, percentiles follow
// the nearest-rank definition, and merging equals recording everything in one histogram.

#include "bench/histogram.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

namespace raftlock::bench {
namespace {

// Nearest rank: the smallest value with at least q of all values <= it.
uint64_t exact_percentile(std::vector<uint64_t> values, double q) {
    std::sort(values.begin(), values.end());
    const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
    return values[std::max<size_t>(rank, 1) - 1];
}

TEST_CASE("small values are exact and large ones within 1/128", "[bench][histogram]") {
    for (uint64_t v : {0ull, 1ull, 127ull, 128ull, 255ull}) {
        Histogram h;
        h.record(v);
        CHECK(h.percentile_ns(0.5) == v);
    }
    std::mt19937_64 rng(7);
    for (int i = 0; i < 10000; ++i) {
        // Spread over the histogram's whole range (up to 2^43 ns), many powers of two.
        const uint64_t v = rng() >> (22 + rng() % 42);
        Histogram h;
        h.record(v);
        h.record(uint64_t{1} << 42);  // so the median is v's bucket, not the exact maximum
        const uint64_t got = h.percentile_ns(0.5);
        INFO(v);
        CHECK(got >= v);
        CHECK(static_cast<double>(got - v) <= static_cast<double>(v) / 128.0);
    }
}

TEST_CASE("percentiles follow the nearest-rank definition to bucket precision",
          "[bench][histogram]") {
    std::mt19937_64 rng(11);
    std::lognormal_distribution<double> latency(13.0, 1.0);  // around 0.4 ms, long tail
    std::vector<uint64_t> values;
    Histogram h;
    for (int i = 0; i < 100000; ++i) {
        const auto v = static_cast<uint64_t>(latency(rng));
        values.push_back(v);
        h.record(v);
    }
    CHECK(h.count() == values.size());
    CHECK(h.min_ns() == *std::min_element(values.begin(), values.end()));
    CHECK(h.max_ns() == *std::max_element(values.begin(), values.end()));
    CHECK(h.percentile_ns(1.0) == h.max_ns());
    for (double q : {0.0, 0.5, 0.9, 0.99, 0.999}) {
        const uint64_t want = exact_percentile(values, q);
        const uint64_t got = h.percentile_ns(q);
        INFO("q " << q << " want " << want << " got " << got);
        CHECK(got >= want);
        CHECK(static_cast<double>(got - want) <= static_cast<double>(want) / 128.0 + 1.0);
    }
}

TEST_CASE("merging equals recording into one histogram", "[bench][histogram]") {
    Histogram a, b, all;
    for (uint64_t v = 1; v < 1'000'000; v = v * 3 + 1) {
        (v % 2 ? a : b).record(v);
        all.record(v);
    }
    a.merge(b);
    CHECK(a.count() == all.count());
    CHECK(a.min_ns() == all.min_ns());
    CHECK(a.max_ns() == all.max_ns());
    CHECK(a.mean_ns() == Approx(all.mean_ns()));
    for (double q : {0.1, 0.5, 0.9, 1.0}) {
        CHECK(a.percentile_ns(q) == all.percentile_ns(q));
    }
    CHECK(Histogram().percentile_ns(0.5) == 0);
}

}  // namespace
}  // namespace raftlock::bench
