#include "client/error.h"

#include <fmt/format.h>

namespace raftlock::client {

std::string_view to_string(ErrorCode code) {
    switch (code) {
        case ErrorCode::kOk:
            return "ok";
        case ErrorCode::kNoNode:
            return "no_node";
        case ErrorCode::kNodeExists:
            return "node_exists";
        case ErrorCode::kNotEmpty:
            return "not_empty";
        case ErrorCode::kBadVersion:
            return "bad_version";
        case ErrorCode::kNoChildrenForEphemerals:
            return "no_children_for_ephemerals";
        case ErrorCode::kBadArguments:
            return "bad_arguments";
        case ErrorCode::kSessionExpired:
            return "session_expired";
        case ErrorCode::kMalformedCommand:
            return "malformed_command";
        case ErrorCode::kResultDiscarded:
            return "result_discarded";
        case ErrorCode::kLockBusy:
            return "lock_busy";
        case ErrorCode::kNotLockHolder:
            return "not_lock_holder";
        case ErrorCode::kFenceRejected:
            return "fence_rejected";
        case ErrorCode::kLimitExceeded:
            return "limit_exceeded";
        case ErrorCode::kAlreadyWaiting:
            return "already_waiting";
        case ErrorCode::kRolledBack:
            return "rolled_back";
        case ErrorCode::kNoAuth:
            return "no_auth";
        case ErrorCode::kInvalidAcl:
            return "invalid_acl";
        case ErrorCode::kPermissionDenied:
            return "permission_denied";
        case ErrorCode::kNoUser:
            return "no_user";
        case ErrorCode::kNoRole:
            return "no_role";
        case ErrorCode::kUserExists:
            return "user_exists";
        case ErrorCode::kRoleExists:
            return "role_exists";
        case ErrorCode::kUnavailable:
            return "unavailable";
        case ErrorCode::kServerTimeout:
            return "server_timeout";
        case ErrorCode::kTooManyRequests:
            return "too_many_requests";
        case ErrorCode::kBadRequest:
            return "bad_request";
        case ErrorCode::kWaitTimeout:
            return "wait_timeout";
        case ErrorCode::kShuttingDown:
            return "shutting_down";
        case ErrorCode::kChangeInProgress:
            return "change_in_progress";
        case ErrorCode::kConnectFailed:
            return "connect_failed";
        case ErrorCode::kTimeout:
            return "timeout";
        case ErrorCode::kNoSession:
            return "no_session";
        case ErrorCode::kSessionLost:
            return "session_lost";
        case ErrorCode::kInvalidArgument:
            return "invalid_argument";
        case ErrorCode::kClosed:
            return "closed";
        case ErrorCode::kProtocolError:
            return "protocol_error";
        case ErrorCode::kWrongThread:
            return "wrong_thread";
        case ErrorCode::kTooManyPending:
            return "too_many_pending";
    }
    return "unknown";
}

ErrorCode error_code_from_wire(int32_t wire_code) {
    if ((wire_code >= 0 && wire_code <= 22) || (wire_code >= 100 && wire_code <= 106)) {
        return static_cast<ErrorCode>(wire_code);
    }
    return ErrorCode::kBadRequest;
}

std::string to_string(const Error& error) {
    if (error.message.empty()) {
        return std::string(to_string(error.code));
    }
    return fmt::format("{}: {}", to_string(error.code), error.message);
}

bool certainly_not_applied(ErrorCode code) {
    switch (code) {
        case ErrorCode::kNoNode:
        case ErrorCode::kNodeExists:
        case ErrorCode::kNotEmpty:
        case ErrorCode::kBadVersion:
        case ErrorCode::kNoChildrenForEphemerals:
        case ErrorCode::kBadArguments:
        case ErrorCode::kMalformedCommand:
        case ErrorCode::kLockBusy:
        case ErrorCode::kNotLockHolder:
        case ErrorCode::kFenceRejected:
        case ErrorCode::kLimitExceeded:
        case ErrorCode::kAlreadyWaiting:
        case ErrorCode::kNoAuth:
        case ErrorCode::kInvalidAcl:
        case ErrorCode::kPermissionDenied:
        case ErrorCode::kNoUser:
        case ErrorCode::kNoRole:
        case ErrorCode::kUserExists:
        case ErrorCode::kRoleExists:
        case ErrorCode::kWaitTimeout:
        case ErrorCode::kTooManyRequests:
        case ErrorCode::kBadRequest:
        case ErrorCode::kConnectFailed:  // never sent
        case ErrorCode::kNoSession:
        case ErrorCode::kInvalidArgument:
        case ErrorCode::kWrongThread:
        case ErrorCode::kTooManyPending:
            return true;
        default:
            return false;
    }
}

}  // namespace raftlock::client
