#pragma once

// The web console's charts: one sample per second of the counters /metrics exports (commit and
// fsync latency as the mean over the second, from the histograms' sums and counts; applied
// entries and synced writes per second), for the last samples_max seconds.
//
// Pure: the caller reads the counters and the clocks. Threads: the replica's loop thread only.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace raftlock::server {

class ConsoleHistory {
public:
    // Cumulative counters at one moment.
    struct Counters {
        int64_t steady_ms = 0;
        int64_t wall_ms = 0;
        uint64_t commit_count = 0;
        uint64_t commit_sum_us = 0;
        uint64_t fsync_count = 0;
        uint64_t fsync_sum_us = 0;
        uint64_t applied_entries = 0;
        uint64_t storage_syncs = 0;
    };
    struct Sample {
        int64_t wall_ms = 0;
        double commit_ms_mean = 0;  // 0 when nothing committed in the span
        double fsync_ms_mean = 0;
        double applied_per_s = 0;
        double syncs_per_s = 0;
        uint64_t commits = 0;  // commits measured in the span (this node's clients' writes)
    };

    explicit ConsoleHistory(size_t samples_max = 300);

    // A sample of the span since the previous call (the first call only remembers `now`). A
    // span shorter than 100 ms is skipped: rates over it would mostly be noise.
    void sample(const Counters& now);
    size_t size() const { return samples_.size(); }
    const Sample& back() const { return samples_.back(); }
    // {"interval_ms":1000,"samples":[{"wall_ms":..,"commit_ms":..,"fsync_ms":..,
    //   "applied_per_s":..,"syncs_per_s":..,"commits":..},...]}, oldest first.
    std::string json() const;

private:
    size_t samples_max_;
    std::optional<Counters> last_;
    std::deque<Sample> samples_;
};

}  // namespace raftlock::server
