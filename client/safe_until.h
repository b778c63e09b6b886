#pragma once

// The safe-until deadline of a session (Chubby §2.8, "jeopardy"): until then the client may act as
// the holder of its locks, because the cluster cannot have expired the session yet.
//
// The leader expires a session `timeout` after the last keepalive it *received*. A keepalive is
// received after it was *sent*, so `send time of the last acknowledged keepalive + timeout` is a
// lower bound of the expiry, measured on the client's own steady clock. The margin covers clock
// rate differences between client and leader and the time the client needs to react (stop the
// protected work). Opening the session counts as the first keepalive.
//
// Pure arithmetic: the caller passes the times, so tests drive it with any clock.

#include <chrono>
#include <optional>

namespace raftlock::client {

using SteadyClock = std::chrono::steady_clock;
using SteadyTime = SteadyClock::time_point;

inline constexpr std::chrono::milliseconds kSafetyMarginMin{500};

// max(timeout / 10, 500ms), but never more than half the timeout (a 1 s session would otherwise
// have a safe window of 500 ms only after each keepalive, and nothing below that).
std::chrono::milliseconds default_safety_margin(std::chrono::milliseconds timeout);
// Keepalives go out at a third of the timeout, so two can be lost before the margin is reached.
std::chrono::milliseconds keepalive_interval(std::chrono::milliseconds timeout);

class SafeUntil {
public:
    // Preconditions: 0 <= margin < timeout.
    SafeUntil(std::chrono::milliseconds timeout, std::chrono::milliseconds margin);

    // A keepalive (or the open) sent at `sent_at` was acknowledged. Out-of-order acknowledgements
    // are fine: the latest send time wins.
    void on_acknowledged(SteadyTime sent_at);

    // send time of the latest acknowledged keepalive + timeout - margin; empty before the first.
    std::optional<SteadyTime> deadline() const;
    // True when there is no deadline yet or `now` is at or past it.
    bool passed(SteadyTime now) const;

    std::chrono::milliseconds timeout() const { return timeout_; }
    std::chrono::milliseconds margin() const { return margin_; }

private:
    std::chrono::milliseconds timeout_;
    std::chrono::milliseconds margin_;
    std::optional<SteadyTime> last_acked_send_;
};

}  // namespace raftlock::client
