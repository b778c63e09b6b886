#include "jepsen/labworker/recipe.h"

#include "base/assert.h"

namespace raftlock::labworker {

namespace rc = raftlock::client;

bool session_gone(rc::ErrorCode code) {
    return code == rc::ErrorCode::kSessionExpired || code == rc::ErrorCode::kSessionLost ||
           code == rc::ErrorCode::kNoSession;
}

StepResult failed_step(const rc::Error& error) {
    RL_ASSERT(error.code != rc::ErrorCode::kOk);
    StepResult result;
    result.outcome = rc::certainly_not_applied(error.code) ? Outcome::kFail : Outcome::kInfo;
    result.error = std::string(rc::to_string(error.code));
    result.abandon_session = result.outcome == Outcome::kInfo || session_gone(error.code);
    return result;
}

std::unique_ptr<Recipe> make_recipe(const WorkerOptions& options, Wakeup& wakeup) {
    if (is_native(options.family)) {
        return make_native_recipe(options);
    }
    return make_zk_recipe(options, wakeup);
}

}  // namespace raftlock::labworker
