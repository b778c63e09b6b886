#pragma once

// Shared pieces of the scenario runners: the run's timeline, error counting, and nanosecond
// arithmetic on steady-clock times.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "bench/driver.h"

namespace raftlock::bench {

// start -> (warm-up) -> measure_from -> (measured) -> end.
struct Timeline {
    Clock::time_point start;
    Clock::time_point measure_from;
    Clock::time_point end;

    static Timeline from_now(double warmup_s, double duration_s) {
        Timeline t;
        t.start = Clock::now();
        t.measure_from = t.start + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(warmup_s));
        t.end = t.measure_from + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(duration_s));
        return t;
    }
    bool measured(Clock::time_point t) const { return t >= measure_from && t < end; }
};

inline uint64_t ns_between(Clock::time_point from, Clock::time_point to) {
    return to <= from
               ? 0
               : static_cast<uint64_t>(
                     std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

// Counts errors from many threads and keeps the first one's text.
class ErrorLog {
public:
    void add(const std::string& error) {
        if (count_.fetch_add(1) == 0) {
            std::lock_guard lock(mutex_);
            first_ = error;
        }
    }
    uint64_t count() const { return count_.load(); }
    std::string first() const {
        std::lock_guard lock(mutex_);
        return first_;
    }

private:
    std::atomic<uint64_t> count_{0};
    mutable std::mutex mutex_;
    std::string first_;
};

// A value of `bytes` printable bytes (JSON- and shell-safe), different per client.
std::string make_value(size_t bytes, int client);

}  // namespace raftlock::bench
