#include "client/retry_policy.h"

#include <catch2/catch.hpp>

namespace raftlock::client {

using namespace std::chrono_literals;

TEST_CASE("responses map to deliver, retry here, or fail over", "[client][retry]") {
    struct Case {
        ErrorCode code;
        RequestClass request_class;
        RetryAction action;
    };
    const Case cases[] = {
        {ErrorCode::kOk, RequestClass::kSessionWrite, RetryAction::kDeliver},
        {ErrorCode::kLockBusy, RequestClass::kSessionWrite, RetryAction::kDeliver},
        {ErrorCode::kSessionExpired, RequestClass::kKeepAlive, RetryAction::kDeliver},
        {ErrorCode::kResultDiscarded, RequestClass::kSessionWrite, RetryAction::kDeliver},
        {ErrorCode::kWaitTimeout, RequestClass::kSessionWrite, RetryAction::kDeliver},
        {ErrorCode::kUnavailable, RequestClass::kSessionWrite, RetryAction::kFailover},
        {ErrorCode::kUnavailable, RequestClass::kRead, RetryAction::kFailover},
        {ErrorCode::kShuttingDown, RequestClass::kKeepAlive, RetryAction::kFailover},
        {ErrorCode::kServerTimeout, RequestClass::kSessionWrite, RetryAction::kRetryHere},
        {ErrorCode::kTooManyRequests, RequestClass::kRead, RetryAction::kRetryHere},
        {ErrorCode::kChangeInProgress, RequestClass::kRead, RetryAction::kRetryHere},
        {ErrorCode::kUnavailable, RequestClass::kPinned, RetryAction::kDeliver},
        {ErrorCode::kServerTimeout, RequestClass::kPinned, RetryAction::kDeliver},
    };
    for (const Case& c : cases) {
        INFO(to_string(c.code) << " class " << static_cast<int>(c.request_class));
        CHECK(on_response(c.code, c.request_class) == c.action);
    }
}

TEST_CASE("a broken connection moves every request but a pinned one", "[client][retry]") {
    CHECK(on_connection_lost(RequestClass::kSessionWrite) == RetryAction::kFailover);
    CHECK(on_connection_lost(RequestClass::kRead) == RetryAction::kFailover);
    CHECK(on_connection_lost(RequestClass::kOpenSession) == RetryAction::kFailover);
    CHECK(on_connection_lost(RequestClass::kPinned) == RetryAction::kDeliver);
}

TEST_CASE("backoff doubles with jitter up to its cap", "[client][retry]") {
    for (uint64_t random : {uint64_t{0}, uint64_t{7}, UINT64_MAX}) {
        CHECK(backoff(0, random) >= 10ms);
        CHECK(backoff(0, random) <= 20ms);
        CHECK(backoff(3, random) >= 80ms);
        CHECK(backoff(3, random) <= 160ms);
        CHECK(backoff(30, random) >= 500ms);
        CHECK(backoff(30, random) <= kBackoffMax);
    }
    CHECK(backoff(0, 0) == 10ms);
    CHECK(backoff(0, 10) == 20ms);
}

}  // namespace raftlock::client
