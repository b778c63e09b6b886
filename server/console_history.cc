#include "server/console_history.h"

#include <nlohmann/json.hpp>

#include "base/assert.h"

namespace raftlock::server {

namespace {

constexpr int64_t kSpanMsMin = 100;

double mean_ms(uint64_t sum_us_delta, uint64_t count_delta) {
    return count_delta == 0
               ? 0.0
               : static_cast<double>(sum_us_delta) / 1000.0 / static_cast<double>(count_delta);
}

}  // namespace

ConsoleHistory::ConsoleHistory(size_t samples_max) : samples_max_(samples_max) {
    RL_ASSERT(samples_max_ > 0);
}

void ConsoleHistory::sample(const Counters& now) {
    if (!last_) {
        last_ = now;
        return;
    }
    const Counters& before = *last_;
    RL_ASSERT(now.steady_ms >= before.steady_ms);
    const int64_t span_ms = now.steady_ms - before.steady_ms;
    if (span_ms < kSpanMsMin) {
        return;
    }
    // Counters never go back: each is read from the same source every time.
    RL_ASSERT(now.commit_count >= before.commit_count);
    RL_ASSERT(now.fsync_count >= before.fsync_count);
    RL_ASSERT(now.applied_entries >= before.applied_entries);
    RL_ASSERT(now.storage_syncs >= before.storage_syncs);
    const double seconds = static_cast<double>(span_ms) / 1000.0;
    Sample s;
    s.wall_ms = now.wall_ms;
    s.commits = now.commit_count - before.commit_count;
    s.commit_ms_mean = mean_ms(now.commit_sum_us - before.commit_sum_us, s.commits);
    s.fsync_ms_mean =
        mean_ms(now.fsync_sum_us - before.fsync_sum_us, now.fsync_count - before.fsync_count);
    s.applied_per_s = static_cast<double>(now.applied_entries - before.applied_entries) / seconds;
    s.syncs_per_s = static_cast<double>(now.storage_syncs - before.storage_syncs) / seconds;
    if (samples_.size() == samples_max_) {
        samples_.pop_front();
    }
    samples_.push_back(s);
    last_ = now;
}

std::string ConsoleHistory::json() const {
    nlohmann::json list = nlohmann::json::array();
    for (const Sample& s : samples_) {
        list.push_back({{"wall_ms", s.wall_ms},
                        {"commit_ms", s.commit_ms_mean},
                        {"fsync_ms", s.fsync_ms_mean},
                        {"applied_per_s", s.applied_per_s},
                        {"syncs_per_s", s.syncs_per_s},
                        {"commits", s.commits}});
    }
    return nlohmann::json{{"interval_ms", 1000}, {"samples", std::move(list)}}.dump();
}

}  // namespace raftlock::server
