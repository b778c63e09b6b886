#include "client/error.h"

#include <catch2/catch.hpp>

namespace raftlock::client {

TEST_CASE("refused and unsent calls certainly had no effect; the rest may have",
          "[client][error]") {
    for (ErrorCode code : {ErrorCode::kLockBusy, ErrorCode::kWaitTimeout, ErrorCode::kNotLockHolder,
                           ErrorCode::kFenceRejected, ErrorCode::kConnectFailed,
                           ErrorCode::kNoSession, ErrorCode::kTooManyPending}) {
        INFO(to_string(code));
        CHECK(certainly_not_applied(code));
    }
    // A write that timed out, lost its connection or outlived its session may still apply.
    for (ErrorCode code :
         {ErrorCode::kOk, ErrorCode::kTimeout, ErrorCode::kUnavailable, ErrorCode::kServerTimeout,
          ErrorCode::kSessionExpired, ErrorCode::kSessionLost, ErrorCode::kShuttingDown,
          ErrorCode::kClosed, ErrorCode::kProtocolError, ErrorCode::kResultDiscarded}) {
        INFO(to_string(code));
        CHECK_FALSE(certainly_not_applied(code));
    }
}

}  // namespace raftlock::client
