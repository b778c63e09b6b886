#pragma once

// Value types shared by the lock state machine, its codec and its users (the server, the simulator,
// the tests). Everything here is plain data with a stable text form (text.h).

#include <cstdint>
#include <string>
#include <string_view>

namespace raftlock::statemachine {

// The Raft log index of an entry. It doubles as the ZooKeeper zxid: czxid/mzxid/pzxid of nodes and
// the fencing token of lock grants are the index of the entry that made the change.
using Index = uint64_t;
// A session id is the index of the entry that opened the session, so it is unique and never reused.
using SessionId = uint64_t;
inline constexpr SessionId kNoSession = 0;
// Cluster time in milliseconds: the maximum leader timestamp carried by the entries applied so far.
using TimeMs = int64_t;

// Errors a client (or a malformed entry) can cause. Closed: adding a code is a protocol change.
// Tree errors are named after ZooKeeper's KeeperException codes.
enum class ErrorCode : uint8_t {
    kOk = 0,
    kNoNode,                   // the node (or the parent of a node to create) does not exist
    kNodeExists,               // create on an existing path
    kNotEmpty,                 // delete of a node that has children
    kBadVersion,               // expected version does not match
    kNoChildrenForEphemerals,  // create under an ephemeral node
    kBadArguments,             // a field out of range, an invalid path, a mode mismatch
    kSessionExpired,           // the request's session does not exist (closed, expired, unknown)
    kMalformedCommand,         // the entry bytes do not decode (never applied)
    kResultDiscarded,          // a retry of a request whose saved result was already discarded
    kLockBusy,                 // a try-acquire (wait 0) of a lock that cannot be granted now
    kNotLockHolder,            // release by a session/token that does not hold the lock
    kFenceRejected,            // a fenced write whose (lock, token) is not a current holder's
    kLimitExceeded,            // too many waiters, saved results, ephemeral nodes, ...
    kAlreadyWaiting,           // the same session + owner tag already waits for this lock
    kRolledBack,               // a multi sub-op that was not applied because another one failed
    kNoAuth,                   // the node's ACL does not grant the caller the permission
    kInvalidAcl,               // an ACL that is empty or names an unknown scheme or a bad id
    kPermissionDenied,         // the request's user lacks a permission it needs (auth.h)
    kNoUser,                   // a user change names a user that does not exist
    kNoRole,                   // ... a role that does not exist (or that the user does not hold)
    kUserExists,               // a user added twice, or a root password on a cluster with users
    kRoleExists,               // a role added twice
};
inline constexpr uint8_t kErrorCodeMax = static_cast<uint8_t>(ErrorCode::kRoleExists);

// ZooKeeper's CreateMode, plus the TTL mode of 3.5.3 (persistent with a time to live).
enum class NodeKind : uint8_t {
    kPersistent = 0,
    kEphemeral,
    kPersistentSequential,
    kEphemeralSequential,
    kContainer,      // deleted when its last child is deleted
    kTtl,            // deleted when unmodified for ttl_ms and without children
    kTtlSequential,  // a kTtl node named as a sequential one is (ZooKeeper 3.5.3's too)
};
inline constexpr uint8_t kNodeKindMax = static_cast<uint8_t>(NodeKind::kTtlSequential);

inline bool is_ephemeral(NodeKind k) {
    return k == NodeKind::kEphemeral || k == NodeKind::kEphemeralSequential;
}
inline bool is_sequential(NodeKind k) {
    return k == NodeKind::kPersistentSequential || k == NodeKind::kEphemeralSequential ||
           k == NodeKind::kTtlSequential;
}
inline bool is_ttl(NodeKind k) {
    return k == NodeKind::kTtl || k == NodeKind::kTtlSequential;
}

// A node's metadata, with ZooKeeper's field meanings.
struct Stat {
    Index czxid = 0;       // entry that created the node
    Index mzxid = 0;       // entry that last set its data
    Index pzxid = 0;       // entry that last added or removed a child
    TimeMs ctime = 0;      // cluster time of creation
    TimeMs mtime = 0;      // cluster time of the last data change
    int32_t version = 0;   // number of data changes
    int32_t cversion = 0;  // number of child additions + removals
    SessionId ephemeral_owner = kNoSession;
    int32_t num_children = 0;
    int32_t data_length = 0;
    int32_t aversion = 0;  // number of ACL changes

    friend bool operator==(const Stat&, const Stat&) = default;
};

// Lock modes: exclusive (one holder), shared (any number of shared holders, no exclusive one), and
// semaphore (up to `permits` holders, one permit each).
enum class LockMode : uint8_t { kExclusive = 0, kShared, kSemaphore };
inline constexpr uint8_t kLockModeMax = static_cast<uint8_t>(LockMode::kSemaphore);

// ZooKeeper's WatchedEvent types for node changes.
enum class EventType : uint8_t {
    kNodeCreated = 0,
    kNodeDeleted,
    kNodeDataChanged,
    kNodeChildrenChanged,
};
inline constexpr uint8_t kEventTypeMax = static_cast<uint8_t>(EventType::kNodeChildrenChanged);

// Why a session ended.
enum class SessionEnd : uint8_t { kClosed = 0, kExpired };

// Limits. Every replica must use the same values (they shape the replicated state), so they are
// compile-time constants except for the session timeout bounds in Config.
inline constexpr size_t kPathBytesMax = 4096;
inline constexpr size_t kDataBytesMax = 1 << 20;  // ZooKeeper's jute.maxbuffer default
inline constexpr size_t kLockNameBytesMax = 1024;
inline constexpr size_t kOwnerTagBytesMax = 256;
inline constexpr size_t kMultiOpsMax = 1000;
inline constexpr size_t kMultiLockMax = 64;
inline constexpr size_t kPathDepthMax = 256;
inline constexpr uint32_t kSemaphorePermitsMax = 1 << 20;
inline constexpr size_t kWaitersPerLockMax = 10000;
inline constexpr size_t kSavedResultsPerSessionMax = 64;
// AttachSession: how far above every seq a session used a new connection's first seq must be. A
// connection keeps fewer writes than this in flight (a ZooKeeper connection at most its
// pipeline), so none of an earlier connection's unapplied writes can share a seq with the new one.
inline constexpr uint64_t kAttachSeqGap = uint64_t{1} << 24;
// How far beyond the highest seq a session used a request's seq may be (command format 5 on): as
// no connection keeps kAttachSeqGap writes in flight, a seq beyond that is a client's bug or an
// attack, and is refused rather than remembered (a remembered one would move the session's
// numbering there and refuse every honest seq below it).
inline constexpr uint64_t kSeqAheadMax = kAttachSeqGap;
// Redis mode: a command's arguments (a 4 MiB value plus the rest of the command).
inline constexpr size_t kRedisArgsMax = 1 << 20;
inline constexpr size_t kRedisCommandBytesMax = (4u << 20) + (64u << 10);
// The keys one MULTI ... EXEC may watch (a connection's WATCH commands together).
inline constexpr size_t kRedisWatchedKeysMax = 10000;
// A script's instruction budget (statemachine/redis/lua_script.h) as a Redis entry carries it: at
// most this, and this much for an entry written before entries carried one (codec tag 13).
inline constexpr uint64_t kScriptInstructionsMax = 1'000'000'000;
inline constexpr uint64_t kScriptInstructionsUnstamped = 50'000'000;
inline constexpr size_t kEphemeralsPerSessionMax = 100000;
inline constexpr size_t kLocksPerSessionMax = 10000;
inline constexpr TimeMs kWaitMsMax = 24LL * 3600 * 1000;
inline constexpr TimeMs kLockDelayMsMax = 3600LL * 1000;
inline constexpr TimeMs kTtlMsMax = 365LL * 24 * 3600 * 1000;
// Timers (wait deadlines, lock-delay ends, TTLs) fired per applied entry; the rest fire with the
// next entries. Bounds the work of one apply.
inline constexpr size_t kTimersPerApplyMax = 100000;

// State machine configuration. It shapes replicated state, so it must be identical on all replicas.
struct Config {
    TimeMs session_timeout_ms_min = 1000;
    TimeMs session_timeout_ms_max = 600000;
    // Live sessions at most; OpenSession beyond it gets kLimitExceeded. A session holding one lock
    // costs about 700 bytes (docs/statemachine.md), so the default bounds them to about 1.4 GB.
    size_t sessions_max = 2000000;
#ifdef RAFTLOCK_NEGATIVE_CONTROLS
    // Negative control, compiled only into the simulator's unsafe build: an exclusive request is
    // granted while one exclusive holder holds the lock (two exclusive holders), so the
    // simulator's lock checks must report it.
    bool negative_control_double_grant = false;
#endif
};

std::string_view to_string(ErrorCode code);
std::string_view to_string(NodeKind kind);
std::string_view to_string(LockMode mode);
std::string_view to_string(EventType type);
std::string_view to_string(SessionEnd end);
std::string to_string(const Stat& stat);

}  // namespace raftlock::statemachine
