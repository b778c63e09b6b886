#include "net/log_limiter.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace raftlock::net {

bool LogLimiter::take_token(Clock::time_point now) {
    if (!refill_started_ || now < refilled_at_) {
        refill_started_ = true;
        refilled_at_ = now;
    }
    const double elapsed_s = std::chrono::duration<double>(now - refilled_at_).count();
    tokens_ = std::min<double>(burst_, tokens_ + elapsed_s * lines_per_second_);
    refilled_at_ = now;
    if (tokens_ < 1) {
        ++over_budget_;
        return false;
    }
    tokens_ -= 1;
    return true;
}

bool LogLimiter::allow(const std::string& key,
                       const std::string& message,
                       Clock::time_point now,
                       uint64_t& suppressed) {
    suppressed = 0;
    auto it = last_.find(key);
    if (it != last_.end() && it->second.message == message &&
        now - it->second.printed_at < interval_) {
        ++it->second.suppressed;
        return false;
    }
    if (!take_token(now)) {
        return false;
    }
    if (it == last_.end()) {
        if (last_.size() >= keys_max_) {
            // Forgetting costs at most one extra line per key (within the budget); keeping every
            // key costs memory an attacker controls.
            last_.clear();
        }
        it = last_.emplace(key, Last{}).first;
    }
    suppressed = it->second.suppressed + over_budget_;
    over_budget_ = 0;
    it->second = Last{message, now, 0};
    return true;
}

void LogLimiter::log(const std::string& key, const std::string& message) {
    uint64_t suppressed = 0;
    if (!allow(key, message, Clock::now(), suppressed)) {
        return;
    }
    // Through spdlog, so the server's log has one format and one level filter.
    if (suppressed > 0) {
        spdlog::info("net: {} ({} lines held back)", message, suppressed);
    } else {
        spdlog::info("net: {}", message);
    }
}

}  // namespace raftlock::net
