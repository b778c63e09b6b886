#pragma once

// What the client does with a response or a broken connection, by kind of request. Pure.
//
// Any node serves any request (followers forward writes), so a node that cannot serve now
// (UNAVAILABLE: it knows no leader; SHUTTING_DOWN) is left for the next endpoint, while a node that
// is merely slow (TIMEOUT: it stopped waiting for the outcome; TOO_MANY_REQUESTS) is asked again.
// Writes are retried with the same (session, seq), so every retry is exactly-once; reads are
// idempotent. Only a request pinned to one endpoint (NodeStatus) is never moved.

#include <chrono>
#include <cstdint>

#include "client/error.h"

namespace raftlock::client {

enum class RequestClass : uint8_t {
    kRead,          // queries and watch registrations: idempotent
    kSessionWrite,  // carries (session, seq): a retry is answered with the saved reply
    kKeepAlive,     // seq 0, idempotent
    kOpenSession,   // seq 0: a retry after a lost reply may leave an unused session to expire
    kPinned,        // NodeStatus: about one node, so only that node may answer
};

enum class RetryAction : uint8_t {
    kDeliver,    // the response is the answer
    kRetryHere,  // send again on the same connection after backoff()
    kFailover,   // drop this connection, send again on the next endpoint
};

RetryAction on_response(ErrorCode code, RequestClass request_class);
// The connection broke with the request sent or queued: kFailover, or kDeliver (an error) for a
// pinned request.
RetryAction on_connection_lost(RequestClass request_class);

inline constexpr std::chrono::milliseconds kBackoffBase{20};
inline constexpr std::chrono::milliseconds kBackoffMax{1000};

// Exponential backoff with "equal jitter": attempt 0 waits in [10, 20] ms, then doubling up to
// [500, 1000] ms. `random` is any 64-bit random number (the caller's seeded generator).
std::chrono::milliseconds backoff(uint32_t attempt, uint64_t random);

}  // namespace raftlock::client
