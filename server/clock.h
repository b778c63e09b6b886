#pragma once

// The server's only clocks, behind an interface so tests can drive time. The Raft core and the
// state machine never read a clock: ticks and entry timestamps are derived from these at the edge.

#include <chrono>
#include <cstdint>

namespace raftlock::server {

class Clock {
public:
    virtual ~Clock() = default;
    // Monotonic milliseconds (session liveness, request timeouts, cluster time while leader).
    virtual int64_t steady_ms() const = 0;
    // Microseconds of the same monotonic clock (latency metrics).
    virtual int64_t steady_us() const = 0;
    // Wall-clock milliseconds since the Unix epoch (only to start cluster time of a new cluster).
    virtual int64_t wall_ms() const = 0;
};

class SystemClock final : public Clock {
public:
    int64_t steady_ms() const override { return steady_us() / 1000; }
    int64_t steady_us() const override {
        return std::chrono::duration_cast<std::chrono::microseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    int64_t wall_ms() const override {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    }
};

}  // namespace raftlock::server
