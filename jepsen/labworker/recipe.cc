#include "jepsen/labworker/recipe.h"

#include "raft/assert.h"

namespace raftlock::labworker {

namespace rc = raftlock::client;

bool certainly_not_applied(rc::ErrorCode code) {
    switch (code) {
        case rc::ErrorCode::kNoNode:
        case rc::ErrorCode::kNodeExists:
        case rc::ErrorCode::kNotEmpty:
        case rc::ErrorCode::kBadVersion:
        case rc::ErrorCode::kNoChildrenForEphemerals:
        case rc::ErrorCode::kBadArguments:
        case rc::ErrorCode::kMalformedCommand:
        case rc::ErrorCode::kLockBusy:
        case rc::ErrorCode::kNotLockHolder:
        case rc::ErrorCode::kFenceRejected:
        case rc::ErrorCode::kLimitExceeded:
        case rc::ErrorCode::kAlreadyWaiting:
        case rc::ErrorCode::kWaitTimeout:
        case rc::ErrorCode::kTooManyRequests:
        case rc::ErrorCode::kBadRequest:
        case rc::ErrorCode::kConnectFailed:  // never sent
        case rc::ErrorCode::kNoSession:
        case rc::ErrorCode::kInvalidArgument:
        case rc::ErrorCode::kWrongThread:
        case rc::ErrorCode::kTooManyPending:
            return true;
        default:
            return false;
    }
}

bool session_gone(rc::ErrorCode code) {
    return code == rc::ErrorCode::kSessionExpired || code == rc::ErrorCode::kSessionLost ||
           code == rc::ErrorCode::kNoSession;
}

StepResult failed_step(const rc::Error& error) {
    RL_ASSERT(error.code != rc::ErrorCode::kOk);
    StepResult result;
    result.outcome = certainly_not_applied(error.code) ? Outcome::kFail : Outcome::kInfo;
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
