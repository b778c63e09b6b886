#pragma once

// The loop every lab worker family shares (docs/lock-lab.md, "A worker's loop"):
//
//   event invoke acquire → acquire → event ok (grant, token) | fail | info
//   → read → sleep work → write value + 1 → event invoke release → release → event ok | info
//
// It never stops on an error: it reports the outcome, backs off 50–100 ms and goes on, on a new
// session when the old one was lost or is in an unknown state, and as a new Jepsen process
// (worker + k × workers) after the k-th `info`. At the end of its time, or on a stop request, it
// releases what it holds and returns.

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "jepsen/labworker/recipe.h"
#include "jepsen/labworker/resource_client.h"
#include "jepsen/labworker/session.h"
#include "jepsen/labworker/wakeup.h"
#include "jepsen/labworker/worker_options.h"

namespace raftlock::labworker {

struct WorkerTotals {
    uint64_t grants = 0;
    uint64_t sections = 0;  // grants whose write the resource accepted
    uint64_t refused = 0;   // accesses the resource refused (stale or missing token)
    uint64_t fails = 0;
    uint64_t infos = 0;
    uint64_t resource_errors = 0;  // requests the resource never answered
};

class WorkerLoop {
public:
    WorkerLoop(const WorkerOptions& options,
               ResourceClient& resource,
               LabSession& session,
               Recipe& recipe,
               Wakeup& wakeup);

    // Runs until options.run_time has passed since the call, or a stop is requested. Returns with
    // nothing held and the session closed.
    void run();

    const WorkerTotals& totals() const { return totals_; }

private:
    // A grant the worker holds: its number (1, 2, … per worker) and its fencing token.
    struct Held {
        uint64_t grant = 0;
        client::Token token = 0;
    };

    bool running() const;
    void round();
    void critical_section(const Held& held);
    void release(const Held& held);
    // The aftermath of a step that did not succeed: a new process after kInfo, a new session
    // when the old one cannot be trusted.
    void settle(const StepResult& result);
    void backoff();

    void send_event(Outcome outcome,
                    std::string_view f,
                    const nlohmann::json& value,
                    uint64_t grant,
                    const std::string& error);
    void send_invoke(std::string_view f, const nlohmann::json& value, uint64_t grant);
    void send(const nlohmann::json& request);
    // A read or write of the counter; empty when refused or unanswered.
    std::optional<nlohmann::json> access(nlohmann::json request);
    nlohmann::json token_for_resource(const Held& held) const;

    const WorkerOptions& options_;
    ResourceClient& resource_;
    LabSession& session_;
    Recipe& recipe_;
    Wakeup& wakeup_;
    std::mt19937_64 rng_;
    uint64_t process_;
    uint64_t grants_ = 0;
    SteadyTime deadline_{};
    WorkerTotals totals_;
};

}  // namespace raftlock::labworker
