#pragma once

// Plain value types of the client API. They mirror proto/client.proto without exposing protobuf to
// users of the library (client/convert.h translates).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "client/error.h"

namespace raftlock::client {

using SessionId = uint64_t;
using Token = uint64_t;  // a lock grant's fencing token: the zxid of the granting entry
using WatchId = uint64_t;

enum class NodeKind : uint8_t {
    kPersistent,
    kEphemeral,
    kPersistentSequential,
    kEphemeralSequential,
    kContainer,
    kTtl,
    kTtlSequential,  // a TTL node with a sequential name
};

enum class LockMode : uint8_t { kExclusive, kShared, kSemaphore };

enum class EventType : uint8_t {
    kNodeCreated,
    kNodeDeleted,
    kNodeDataChanged,
    kNodeChildrenChanged,
};

std::string_view to_string(NodeKind kind);
std::string_view to_string(LockMode mode);
std::string_view to_string(EventType type);

struct Stat {
    uint64_t czxid = 0;
    uint64_t mzxid = 0;
    uint64_t pzxid = 0;
    int64_t ctime_ms = 0;
    int64_t mtime_ms = 0;
    int32_t version = 0;
    int32_t cversion = 0;
    SessionId ephemeral_owner = 0;
    int32_t num_children = 0;
    int32_t data_length = 0;
};

struct NodeData {
    std::string data;
    Stat stat;
    NodeKind kind = NodeKind::kPersistent;
};

struct CreatedNode {
    std::string path;  // with the sequence suffix for sequential kinds
    Stat stat;
};

// A fenced write is applied only while `token` is a current holder's token of `lock`.
struct Fence {
    std::string lock;
    Token token = 0;
};

struct CreateOptions {
    NodeKind kind = NodeKind::kPersistent;
    std::chrono::milliseconds ttl{0};  // kTtl and kTtlSequential only
    std::optional<Fence> fence;
};

struct WriteOptions {
    int32_t version = -1;  // -1: any version
    std::optional<Fence> fence;
};

struct CreateOp {
    std::string path;
    std::string data;
    NodeKind kind = NodeKind::kPersistent;
    std::chrono::milliseconds ttl{0};
};
struct DeleteOp {
    std::string path;
    int32_t version = -1;
};
struct SetOp {
    std::string path;
    std::string data;
    int32_t version = -1;
};
struct CheckOp {
    std::string path;
    int32_t version = -1;
};
using MultiOp = std::variant<CreateOp, DeleteOp, SetOp, CheckOp>;

struct SubResult {
    ErrorCode code = ErrorCode::kOk;
    std::string path;
    Stat stat;
};

struct AcquireOptions {
    // How long the server keeps the request queued; 0 answers LOCK_BUSY at once (try_acquire).
    std::chrono::milliseconds wait{0};
    // The caller's own deadline; default wait + ClientOptions::request_timeout. When it passes
    // first, the client cancels the wait and releases a grant that raced the cancel.
    std::optional<std::chrono::milliseconds> timeout;
    bool shared = false;
    uint32_t permits = 0;  // > 0: a semaphore of this many permits (shared is ignored)
    std::string owner_tag;
    std::chrono::milliseconds lock_delay{0};  // taken by the acquire that creates the lock
};

// One lock of a multi-lock, in its own mode (Client::acquire_many).
struct LockRequest {
    std::string name;
    bool shared = false;
    uint32_t permits = 0;  // > 0: a semaphore of this many permits (shared is ignored)
};

struct Lease {
    std::string name;
    std::string owner_tag;
    Token token = 0;
    SessionId session = 0;
    uint32_t hold_count = 1;  // > 1 after reentrant acquires
};

struct LockHolder {
    SessionId session = 0;
    std::string owner_tag;
    Token token = 0;
    int64_t since_ms = 0;
    uint32_t count = 0;
};

struct LockWaiter {
    SessionId session = 0;
    std::string owner_tag;
    LockMode mode = LockMode::kExclusive;
    int64_t enqueued_ms = 0;
    int64_t deadline_ms = 0;
    std::vector<std::string> together;  // a multi-lock wait: the other locks it waits for with this
};

struct LockInfo {
    std::string name;
    bool semaphore = false;
    uint32_t permits = 0;
    LockMode mode = LockMode::kExclusive;
    std::vector<LockHolder> holders;
    std::vector<LockWaiter> waiters;
    int64_t lock_delay_ms = 0;
    int64_t free_at_ms = 0;
    int64_t now_ms = 0;
};

struct SessionInfo {
    SessionId id = 0;
    int64_t timeout_ms = 0;
    int64_t last_keepalive_ms = 0;
    uint64_t ephemerals = 0;
    uint64_t locks = 0;
    std::string owner;  // the user that opened it; empty: none logged in
};

// Users and permissions (docs/security.md). Each access includes the ones before it.
enum class Access : uint8_t { kRead = 1, kWrite = 2, kAdmin = 3 };
// What a permission's prefix is a prefix of: lock names, node paths, or (prefix "" only) the
// Redis and PostgreSQL ports' commands.
enum class Space : uint8_t { kLock = 1, kNode = 2, kRedis = 3, kSql = 4 };
struct Permission {
    Access access = Access::kRead;
    Space space = Space::kLock;
    std::string prefix;
    friend bool operator==(const Permission&, const Permission&) = default;
};
// "read", "lock"; parse_* give nullopt for other words.
std::string_view to_string(Access access);
std::string_view to_string(Space space);
std::optional<Access> parse_access(std::string_view word);
std::optional<Space> parse_space(std::string_view word);

struct UserInfo {
    std::string name;
    bool has_password = false;
    std::vector<std::string> roles;
};
struct RoleInfo {
    std::string name;
    std::vector<Permission> permissions;
};
struct AuthStatus {
    bool enabled = false;
    std::string user;  // this client's connection's; empty: not logged in
    bool root = false;
};

struct PeerProgress {
    uint64_t id = 0;
    uint64_t match = 0;
    uint64_t next = 0;
    bool learner = false;
};

struct NodeStatus {
    uint64_t id = 0;
    std::string role;
    uint64_t term = 0;
    uint64_t leader = 0;
    uint64_t commit = 0;
    uint64_t applied = 0;
    uint64_t last_index = 0;
    uint64_t snapshot_index = 0;
    std::vector<PeerProgress> peers;
    uint64_t sessions = 0;
    uint64_t locks = 0;
    uint64_t nodes = 0;
    std::string client_endpoint;
};

// A member of the cluster's committed configuration.
struct Member {
    uint64_t id = 0;
    std::string address;  // HOST:PORT of its Raft port
    bool learner = false;
};

enum class MemberChange : uint8_t {
    kAddVoter,    // a new node, or the promotion of a learner
    kAddLearner,  // a new non-voting node, or the demotion of a voter
    kRemove,
};

struct WatchEvent {
    std::string path;
    EventType type = EventType::kNodeDataChanged;
    uint64_t zxid = 0;  // 0 when the client inferred the event after a reconnect
};

// Watch and session callbacks run on the client's network thread: keep them short and do not call
// blocking Client methods from them (those return kWrongThread).
using WatchCallback = std::function<void(const WatchEvent&)>;

enum class SessionLoss : uint8_t {
    // The safe-until deadline passed without a newer acknowledged keepalive: the cluster may expire
    // the session soon, so stop acting as a lock holder now. The session may still recover.
    kSafeUntilPassed,
    kExpired,  // the cluster expired the session: its locks and ephemeral nodes are gone
    kClosed,   // the session was closed from elsewhere
};
std::string_view to_string(SessionLoss loss);

using SessionCallback = std::function<void(SessionLoss)>;
// An administrator took the hold of `name` granted with `token` from this client's session.
using LockRevokedCallback = std::function<void(const std::string& name, uint64_t token)>;

}  // namespace raftlock::client
