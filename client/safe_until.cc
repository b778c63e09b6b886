#include "client/safe_until.h"

#include <algorithm>

#include "base/assert.h"

namespace raftlock::client {

std::chrono::milliseconds default_safety_margin(std::chrono::milliseconds timeout) {
    RL_ASSERT(timeout.count() > 0);
    const auto margin = std::max(timeout / 10, kSafetyMarginMin);
    return std::min(margin, timeout / 2);
}

std::chrono::milliseconds keepalive_interval(std::chrono::milliseconds timeout) {
    RL_ASSERT(timeout.count() > 0);
    return std::max(timeout / 3, std::chrono::milliseconds(1));
}

SafeUntil::SafeUntil(std::chrono::milliseconds timeout, std::chrono::milliseconds margin)
    : timeout_(timeout), margin_(margin) {
    RL_ASSERT(margin.count() >= 0);
    RL_ASSERT(margin < timeout);
}

void SafeUntil::on_acknowledged(SteadyTime sent_at) {
    if (!last_acked_send_ || sent_at > *last_acked_send_) {
        last_acked_send_ = sent_at;
    }
}

std::optional<SteadyTime> SafeUntil::deadline() const {
    if (!last_acked_send_) {
        return std::nullopt;
    }
    return *last_acked_send_ + timeout_ - margin_;
}

bool SafeUntil::passed(SteadyTime now) const {
    const auto until = deadline();
    return !until || now >= *until;
}

}  // namespace raftlock::client
