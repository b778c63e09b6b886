#pragma once

// What the simulated clients share: their findings, stamped with the simulated time, and wake-ups
// that a later one supersedes.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tests/sim/replica/world.h"

namespace raftlock::sim::replica {

// Broken promises (what a negative control must cause) apart from liveness failures (requests
// unanswered, or answered in a way no client expects).
class Verdicts {
public:
    explicit Verdicts(const World& world) : world_(world) {}

    void fail(const std::string& message) { failures_.push_back(stamped(message)); }
    void fail_liveness(const std::string& message) {
        liveness_failures_.push_back(stamped(message));
    }
    const std::vector<std::string>& failures() const { return failures_; }
    const std::vector<std::string>& liveness_failures() const { return liveness_failures_; }

private:
    std::string stamped(const std::string& message) const {
        return fmt::format("t={:.3f}s {}", world_.now_us() / 1e6, message);
    }

    const World& world_;
    std::vector<std::string> failures_;
    std::vector<std::string> liveness_failures_;
};

// Runs `wake_up` after `after_us` unless another wake-up with the same `token` is scheduled
// meanwhile: a client has one pending wake-up, the latest.
inline void wake_after(World& world,
                       uint64_t& token,
                       uint64_t after_us,
                       std::function<void()> wake_up) {
    const uint64_t mine = ++token;
    world.agenda().at(world.now_us() + after_us, [&token, mine, wake_up = std::move(wake_up)] {
        if (token == mine) {
            wake_up();
        }
    });
}

}  // namespace raftlock::sim::replica
