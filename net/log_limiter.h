#pragma once

// Rate limit for the network's log lines: a peer that is down or refuses us must not print a line
// per reconnect attempt. A line is printed when its key's message changes, or when the same message
// repeats after `interval`; the next printed line says how many were held back.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace raftlock::net {

class LogLimiter {
public:
    using Clock = std::chrono::steady_clock;

    explicit LogLimiter(std::chrono::milliseconds interval, size_t keys_max = 1024)
        : interval_(interval), keys_max_(keys_max) {}

    // Logs "net: <message>" (spdlog, level info) unless held back.
    void log(const std::string& key, const std::string& message);

    // The decision alone, for tests: true when the line should be printed now; `suppressed` is the
    // number of lines held back for `key` since the last printed one.
    bool allow(const std::string& key,
               const std::string& message,
               Clock::time_point now,
               uint64_t& suppressed);

private:
    struct Last {
        std::string message;
        Clock::time_point printed_at;
        uint64_t suppressed = 0;
    };
    std::chrono::milliseconds interval_;
    size_t keys_max_;  // keys can come from the network (node ids): bound the map
    std::map<std::string, Last> last_;
};

}  // namespace raftlock::net
