#pragma once

// The client library's one error type. Server codes keep their numbers from proto::Code
// (proto/client.proto); codes the library itself produces (nothing reached a server, the caller's
// deadline passed, a misuse) start at 1000 so the two ranges never meet.

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace raftlock::client {

enum class ErrorCode : uint32_t {
    kOk = 0,
    // Server codes (proto::Code, same numbers).
    kNoNode = 1,
    kNodeExists = 2,
    kNotEmpty = 3,
    kBadVersion = 4,
    kNoChildrenForEphemerals = 5,
    kBadArguments = 6,
    kSessionExpired = 7,
    kMalformedCommand = 8,
    kResultDiscarded = 9,
    kLockBusy = 10,
    kNotLockHolder = 11,
    kFenceRejected = 12,
    kLimitExceeded = 13,
    kAlreadyWaiting = 14,
    kRolledBack = 15,
    kNoAuth = 16,  // a ZooKeeper ACL refused it (the native port is not restricted by ACLs)
    kInvalidAcl = 17,
    kPermissionDenied = 18,  // the user lacks a permission the request needs (message names it)
    kNoUser = 19,
    kNoRole = 20,
    kUserExists = 21,
    kRoleExists = 22,
    kUnavailable = 100,
    kServerTimeout = 101,
    kTooManyRequests = 102,
    kBadRequest = 103,
    kWaitTimeout = 104,
    kShuttingDown = 105,
    kChangeInProgress = 106,  // another membership change is not committed yet; retry shortly
    // Client-side codes.
    kConnectFailed = 1000,  // no endpoint accepted a connection before the deadline
    kTimeout = 1001,        // the caller's deadline passed; a write's outcome is unknown
    kNoSession = 1002,      // the call needs a session and none is open
    kSessionLost = 1003,    // the session expired or was closed; open a new one
    kInvalidArgument = 1004,
    kClosed = 1005,          // the client is shutting down
    kProtocolError = 1006,   // the server sent bytes that are not a ServerMessage
    kWrongThread = 1007,     // a blocking call from a callback (it would deadlock)
    kTooManyPending = 1008,  // the client's own bound on outstanding requests
};

struct Error {
    ErrorCode code = ErrorCode::kOk;
    std::string message;  // for people: the cause and, where there is one, the fix
};

// Results carry nothing on success when there is nothing to say.
struct Done {};

template <typename T>
using ClientResult = Result<T, Error>;

// Stable lower-case name ("lock_busy", "connect_failed"), used in text and JSON output.
std::string_view to_string(ErrorCode code);
// Known server code, or kBadRequest for numbers this client does not know.
ErrorCode error_code_from_wire(int32_t wire_code);
// "lock_busy: <message>"
std::string to_string(const Error& error);
// True when a call that failed with `code` certainly had no effect: the server refused it, or it
// was never sent. Any other failure (a timeout, a lost connection, UNAVAILABLE after sending)
// leaves a write's outcome unknown: it may still apply. Jepsen histories record the first kind as
// `fail` and the second as `info`.
bool certainly_not_applied(ErrorCode code);

}  // namespace raftlock::client
