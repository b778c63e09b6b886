#pragma once

// What applying one entry produces: the reply to the request, plus the events the server must push
// (watch triggers, lock grants to waiters, timed-out waits, ended sessions). All of it is
// deterministic: every replica computes the same ApplyResult for the same entry.

#include <cstdint>
#include <string>
#include <vector>

#include "statemachine/redis/value.h"
#include "statemachine/sql/engine.h"
#include "statemachine/types.h"

namespace raftlock::statemachine {

// What a lock request achieved.
enum class LockOutcome : uint8_t {
    kNone = 0,   // nothing held or waiting (e.g. cancel of an unknown wait)
    kGranted,    // held now: `token` is valid
    kQueued,     // waiting: a LockGrant or a WaitTimeout will follow
    kCancelled,  // the wait was removed; nothing is held
    kReleased,   // released (hold_count says how many counts remain)
};
inline constexpr uint8_t kLockOutcomeMax = static_cast<uint8_t>(LockOutcome::kReleased);

// Response::message holds names (users, paths, lock names), so it stays well below this.
inline constexpr size_t kResponseMessageBytesMax = 8192;

// The result of one sub-op of a Multi.
struct SubResult {
    ErrorCode code = ErrorCode::kOk;
    std::string path;  // create: the created path
    Stat stat;         // create, set: the node's new stat
    friend bool operator==(const SubResult&, const SubResult&) = default;
};

// The reply to a request; also what exactly-once saves and replays. Fields an op does not use keep
// their defaults.
struct Response {
    ErrorCode code = ErrorCode::kOk;
    SessionId session = kNoSession;  // OpenSession: the new session id
    std::string path;                // Create: the created path (with sequential suffix)
    Stat stat;                       // Create, SetData: the node's new stat
    LockOutcome lock = LockOutcome::kNone;
    Index token = 0;                 // kGranted: the fencing token of the hold
    uint32_t hold_count = 0;         // Acquire/Release: the hold's reentrancy count afterwards
    std::vector<SubResult> results;  // Multi: one per sub-op
    // RedisCommand and RedisTransaction: the reply. Redis commands carry no session, so it is never
    // saved (write_response leaves it out).
    redis::Value redis;
    // SqlStatement: the statement's result, unless it waits (sql_waiting): its result then comes
    // in a later entry's ApplyResult::sql_done, and replaces this saved reply.
    sql::StatementResult sql;
    bool sql_waiting = false;
    // Why, in words, when the state machine can say more than the code: a permission denied (which
    // one, on what), a user or role change refused. Empty otherwise.
    std::string message;
    friend bool operator==(const Response&, const Response&) = default;
};

// A change a watch may be waiting for. The watch registry (watches.h) of each server matches these
// against the watches its clients set, as ZooKeeper's documentation describes.
struct WatchTrigger {
    std::string path;
    EventType type = EventType::kNodeCreated;
    Index zxid = 0;
    friend bool operator==(const WatchTrigger&, const WatchTrigger&) = default;
};

// A waiter that this entry granted (hand-off): the server holding its connection pushes it.
struct LockGrant {
    SessionId session = kNoSession;
    std::string name;
    std::string owner_tag;
    Index token = 0;
    friend bool operator==(const LockGrant&, const LockGrant&) = default;
};

// A waiter whose deadline passed without a grant: it holds nothing, and its wait is gone. Also the
// locks of a multi-lock wait that a Cancel ended (a single lock's Cancel is its own answer).
struct WaitTimeout {
    SessionId session = kNoSession;
    std::string name;
    std::string owner_tag;
    friend bool operator==(const WaitTimeout&, const WaitTimeout&) = default;
};

// A hold taken away from its session by a ForceRelease: the servers holding the session's
// connections tell them, so that a holder that is still working learns it lost the lock.
struct HoldRevoked {
    SessionId session = kNoSession;
    std::string name;
    Index token = 0;
    friend bool operator==(const HoldRevoked&, const HoldRevoked&) = default;
};

struct SessionEnded {
    SessionId session = kNoSession;
    SessionEnd reason = SessionEnd::kClosed;
    friend bool operator==(const SessionEnded&, const SessionEnded&) = default;
};

struct ApplyResult {
    Index index = 0;
    SessionId client_id = kNoSession;  // who to answer (the request's envelope)
    uint64_t seq = 0;
    bool replayed = false;  // a retry answered from the saved result; nothing was applied
    Response response;
    std::vector<WatchTrigger> triggers;  // in the order the changes happened
    std::vector<LockGrant> grants;       // in grant order
    std::vector<WaitTimeout> wait_timeouts;
    std::vector<SessionEnded> sessions_ended;
    std::vector<HoldRevoked> holds_revoked;
    // SQL statements of any session that waited and finished in this entry (the server holding
    // the session's connection answers them).
    std::vector<sql::StatementDone> sql_done;
    // A RedisCommand's or RedisTransaction's PUBLISHes (its own, or its scripts'), in order: every
    // node delivers them to its own subscribers.
    std::vector<redis::Publication> published;
    friend bool operator==(const ApplyResult&, const ApplyResult&) = default;
};

std::string_view to_string(LockOutcome outcome);
std::string to_string(const Response& response);
std::string to_string(const ApplyResult& result);

}  // namespace raftlock::statemachine
