#include "client/retry_policy.h"

#include <algorithm>

namespace raftlock::client {

RetryAction on_response(ErrorCode code, RequestClass request_class) {
    switch (code) {
        case ErrorCode::kUnavailable:
        case ErrorCode::kShuttingDown:
            return request_class == RequestClass::kPinned ? RetryAction::kDeliver
                                                          : RetryAction::kFailover;
        case ErrorCode::kServerTimeout:
        case ErrorCode::kTooManyRequests:
        case ErrorCode::kChangeInProgress:  // nothing was done: the change waits its turn
            return request_class == RequestClass::kPinned ? RetryAction::kDeliver
                                                          : RetryAction::kRetryHere;
        default:
            return RetryAction::kDeliver;
    }
}

RetryAction on_connection_lost(RequestClass request_class) {
    return request_class == RequestClass::kPinned ? RetryAction::kDeliver : RetryAction::kFailover;
}

std::chrono::milliseconds backoff(uint32_t attempt, uint64_t random) {
    const uint32_t shift = std::min<uint32_t>(attempt, 16);
    const int64_t ceiling = std::min<int64_t>(kBackoffBase.count() << shift, kBackoffMax.count());
    const int64_t half = ceiling / 2;
    return std::chrono::milliseconds(half + static_cast<int64_t>(random % (half + 1)));
}

}  // namespace raftlock::client
