#pragma once

// A lock recipe: how a family takes and gives back the lab's lock over a raftlock session. The
// worker loop (worker_loop.h) does the rest the same way for every family: the history events,
// the resource accesses, the backoff and the change of session and process.
//
// Outcomes follow the history (DESIGN.md §6): kFail only when the step certainly did not happen
// (the lock is certainly not held after a failed acquire, certainly still held after a failed
// release), kInfo when it may or may not have.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "client/client.h"
#include "jepsen/labworker/session.h"
#include "jepsen/labworker/wakeup.h"
#include "jepsen/labworker/worker_options.h"

namespace raftlock::labworker {

enum class Outcome : uint8_t { kOk, kFail, kInfo };

struct StepResult {
    Outcome outcome = Outcome::kOk;
    client::Token token = 0;  // acquire ok: the grant's fencing token
    std::string error;        // not ok: a stable name ("lock_busy", "wait_timeout", ...)
    // The session can no longer be trusted with this lock (gone, or in an unknown state): the
    // worker abandons it before its next step. Always true with kInfo.
    bool abandon_session = false;
};

class Recipe {
public:
    virtual ~Recipe() = default;

    // Takes the lab's lock on `session`, waiting at most options.acquire_wait(). Precondition:
    // nothing is held. Ok: the lock is held until release().
    virtual StepResult acquire(LabSession& session) = 0;
    // Gives back what the last ok acquire took. Afterwards nothing is held by this recipe,
    // whatever the outcome (a lock left behind goes with the session, which the worker abandons).
    virtual StepResult release(LabSession& session) = 0;
};

// The recipe of options.family. `wakeup` wakes waits for watches and is cut short by a stop.
std::unique_ptr<Recipe> make_recipe(const WorkerOptions& options, Wakeup& wakeup);
std::unique_ptr<Recipe> make_native_recipe(const WorkerOptions& options);
std::unique_ptr<Recipe> make_zk_recipe(const WorkerOptions& options, Wakeup& wakeup);

// The session is gone: it needs replacing.
bool session_gone(client::ErrorCode code);

// The result of a failed step: kFail when certainly_not_applied, else kInfo; abandon_session
// for kInfo and whenever the session is gone or missing.
StepResult failed_step(const client::Error& error);

}  // namespace raftlock::labworker
