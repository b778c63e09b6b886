#pragma once

// Rate limit for the network's log lines: a peer that is down or refuses us must not print a line
// per reconnect attempt, and nothing a peer or client sends may make the log grow faster than a
// fixed rate. A line is printed when its key's message changes, or when the same message repeats
// after `interval`, and only while the limiter's budget lasts: at most `burst` lines at once and
// `lines_per_second` after that, over all keys together (keys and messages can come from the
// network: a remote address or a count in the text changes the message every time). The next
// printed line says how many were held back.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace raftlock::net {

// How often the same line repeats, at most, for the listeners and the peer transport.
inline constexpr std::chrono::milliseconds kRepeatedLineInterval{30000};

class LogLimiter {
public:
    using Clock = std::chrono::steady_clock;

    explicit LogLimiter(std::chrono::milliseconds interval,
                        size_t keys_max = 1024,
                        uint32_t lines_per_second = 10,
                        uint32_t burst = 20)
        : interval_(interval),
          keys_max_(keys_max),
          lines_per_second_(lines_per_second),
          burst_(burst),
          tokens_(burst) {}

    // Logs "net: <message>" (spdlog, level info) unless held back.
    void log(const std::string& key, const std::string& message);

    // The decision alone, for tests: true when the line should be printed now; `suppressed` is the
    // number of lines held back since the last printed one: those of `key`, and any of any key
    // that the budget held back.
    bool allow(const std::string& key,
               const std::string& message,
               Clock::time_point now,
               uint64_t& suppressed);

private:
    bool take_token(Clock::time_point now);

    struct Last {
        std::string message;
        Clock::time_point printed_at;
        uint64_t suppressed = 0;
    };
    std::chrono::milliseconds interval_;
    size_t keys_max_;  // keys can come from the network (node ids): bound the map
    uint32_t lines_per_second_;
    uint32_t burst_;
    double tokens_;  // lines the budget allows now, <= burst_
    bool refill_started_ = false;
    Clock::time_point refilled_at_{};  // when tokens_ was last brought up to date
    uint64_t over_budget_ = 0;         // lines held back by the budget since the last printed
    std::map<std::string, Last> last_;
};

}  // namespace raftlock::net
