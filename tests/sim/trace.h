#pragma once

// The simulator's event trace. Every line starts with the simulated time, so a trace is a pure
// function of the seed: two replays of one seed print identical traces (diff them to find where a
// change in the core or the simulator altered a run). When disabled, nothing is formatted.

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace raftlock::sim {

class Trace {
public:
    // Lines go to `out`, or into `capture` when it is set (determinism self-check).
    Trace(bool enabled, std::FILE* out, std::string* capture = nullptr)
        : enabled_(enabled), out_(out), capture_(capture) {}

    bool enabled() const { return enabled_; }
    void set_time(uint64_t now_us) { now_us_ = now_us; }

    template <typename... Args>
    void log(fmt::format_string<Args...> format, Args&&... args) {
        if (!enabled_) {
            return;
        }
        std::string line = fmt::format("{:>10} ", now_us_);
        fmt::format_to(std::back_inserter(line), format, std::forward<Args>(args)...);
        line += '\n';
        write(line);
    }
    // A multi-line block (e.g. a Ready) printed under the current line, already indented.
    void block(const std::string& text) {
        if (enabled_ && !text.empty()) {
            write(text);
        }
    }

private:
    void write(const std::string& text) {
        if (capture_ != nullptr) {
            *capture_ += text;
        } else {
            std::fwrite(text.data(), 1, text.size(), out_);
        }
    }

    bool enabled_;
    std::FILE* out_;
    std::string* capture_;
    uint64_t now_us_ = 0;
};

}  // namespace raftlock::sim
