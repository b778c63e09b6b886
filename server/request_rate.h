#pragma once

// The request rate of one client connection (DESIGN.md §5: "request rate per connection"), as a
// token bucket: `rate` requests a second on average, and bursts of up to one second's worth. A
// client that sends faster gets its excess refused (and counted) instead of taking the node's
// loop from every other client. Integer arithmetic on the caller's clock, so that the simulator
// can drive it like the rest of the Replica.

#include <algorithm>
#include <cstdint>

namespace raftlock::server {

class RequestRate {
public:
    // True when a request at `now_ms` is within `rate` (>= 1) requests a second; counts it.
    bool admit(int64_t now_ms, uint32_t rate) {
        const uint64_t capacity = uint64_t{rate} * kMilli;  // one second's worth
        if (!started_) {
            started_ = true;
            tokens_ = capacity;
        } else if (now_ms > last_ms_) {
            tokens_ = std::min(capacity, tokens_ + static_cast<uint64_t>(now_ms - last_ms_) * rate);
        }
        last_ms_ = std::max(last_ms_, now_ms);
        if (tokens_ < kMilli) {
            return false;
        }
        tokens_ -= kMilli;
        return true;
    }

private:
    static constexpr uint64_t kMilli = 1000;  // tokens are thousandths of a request
    bool started_ = false;
    uint64_t tokens_ = 0;
    int64_t last_ms_ = 0;
};

}  // namespace raftlock::server
