#include "net/log_limiter.h"

#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace raftlock::net {

bool LogLimiter::allow(const std::string& key,
                       const std::string& message,
                       Clock::time_point now,
                       uint64_t& suppressed) {
    suppressed = 0;
    auto it = last_.find(key);
    if (it == last_.end()) {
        if (last_.size() >= keys_max_) {
            // Forgetting costs at most one extra line per key; keeping every key costs memory an
            // attacker controls.
            last_.clear();
        }
        last_.emplace(key, Last{message, now, 0});
        return true;
    }
    Last& last = it->second;
    if (last.message == message && now - last.printed_at < interval_) {
        ++last.suppressed;
        return false;
    }
    suppressed = last.suppressed;
    last = Last{message, now, 0};
    return true;
}

void LogLimiter::log(const std::string& key, const std::string& message) {
    uint64_t suppressed = 0;
    if (!allow(key, message, Clock::now(), suppressed)) {
        return;
    }
    // Through spdlog, so the server's log has one format and one level filter.
    if (suppressed > 0) {
        spdlog::info("net: {} ({} similar lines held back)", message, suppressed);
    } else {
        spdlog::info("net: {}", message);
    }
}

}  // namespace raftlock::net
