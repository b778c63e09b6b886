#pragma once

// The commands the state machine applies: one Command per Raft entry. A Command is an envelope
// (who sent it, its sequence number for exactly-once, the leader's clock, an optional fence) around
// one operation. Bytes on the log are produced by encode_command (codec.h).

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "statemachine/acl.h"
#include "statemachine/auth.h"
#include "statemachine/redis/value.h"
#include "statemachine/sql/engine.h"
#include "statemachine/types.h"

namespace raftlock::statemachine {

// --- sessions -----------------------------------------------------------------------------------

// Opens a session; the new id is the entry's index. Sent with client_id = kNoSession.
struct OpenSession {
    TimeMs timeout_ms = 0;  // within Config's [session_timeout_ms_min, session_timeout_ms_max]
    friend bool operator==(const OpenSession&, const OpenSession&) = default;
};
// Records that the session is alive. Liveness is tracked by the leader in memory; a replicated
// keepalive is optional and only refreshes `last_keepalive_ms` (describe/list show it).
struct KeepAlive {
    friend bool operator==(const KeepAlive&, const KeepAlive&) = default;
};
// The client ends its own session (a clean end: no lock-delay).
struct CloseSession {
    friend bool operator==(const CloseSession&, const CloseSession&) = default;
};
// Proposed by the leader when `session`'s deadline passed in its in-memory tracking. Sent with
// client_id = kNoSession. Expiry is unclean: locks with a lock-delay stay unavailable for it.
struct ExpireSession {
    SessionId session = kNoSession;
    friend bool operator==(const ExpireSession&, const ExpireSession&) = default;
};
// Carries only the leader's clock (a heartbeat entry), so that waits, lock-delays and TTLs fire.
struct Noop {
    friend bool operator==(const Noop&, const Noop&) = default;
};

// --- node tree (ZooKeeper) ----------------------------------------------------------------------

struct Create {
    std::string path;  // for sequential kinds the 10-digit suffix is appended to this
    std::string data;  // <= kDataBytesMax
    NodeKind kind = NodeKind::kPersistent;
    TimeMs ttl_ms = 0;  // kTtl and kTtlSequential only: (0, kTtlMsMax]; otherwise 0
    Acl acl;            // the new node's (empty: open to everyone)
    friend bool operator==(const Create&, const Create&) = default;
};
struct Delete {
    std::string path;
    int32_t version = -1;  // -1: any version
    friend bool operator==(const Delete&, const Delete&) = default;
};
struct SetData {
    std::string path;
    std::string data;
    int32_t version = -1;  // -1: any version
    friend bool operator==(const SetData&, const SetData&) = default;
};
// Multi only: fails the whole multi unless the node exists with this version (-1: any).
struct Check {
    std::string path;
    int32_t version = -1;
    friend bool operator==(const Check&, const Check&) = default;
};
using MultiOp = std::variant<Create, Delete, SetData, Check>;
// Replaces a node's ACL (ZooKeeper's setACL): needs ADMIN on it, and its aversion to be `version`
// (-1: any). Not part of a Multi, as in ZooKeeper.
struct SetAcl {
    std::string path;
    Acl acl;
    int32_t version = -1;
    friend bool operator==(const SetAcl&, const SetAcl&) = default;
};
// All sub-ops are applied, or none (ZooKeeper's multi).
struct Multi {
    std::vector<MultiOp> ops;  // 1..kMultiOpsMax
    // A container whose last child a sub-op deletes is removed when the whole multi has applied,
    // if it is still empty then, so that later sub-ops still find it (delete it, or create a child
    // in it), as in ZooKeeper, whose container manager removes it later still. False: at once, as
    // the multis logged before this existed (op tag 9) were applied; they replay the same way.
    bool containers_at_end = true;
    friend bool operator==(const Multi&, const Multi&) = default;
};

// --- locks --------------------------------------------------------------------------------------

// Acquires `name` for (session = client_id, owner_tag). Granted now when compatible with the
// holders and nobody waits (FIFO: no barging); else queued for up to wait_ms of cluster time, or
// refused with kLockBusy when wait_ms = 0. Re-acquiring a lock the same session + tag holds counts
// up.
struct Acquire {
    std::string name;
    std::string owner_tag;
    LockMode mode = LockMode::kExclusive;
    uint32_t permits = 1;      // kSemaphore: the semaphore's size N (1..kSemaphorePermitsMax)
    TimeMs wait_ms = 0;        // 0: try only; else <= kWaitMsMax
    TimeMs lock_delay_ms = 0;  // taken by the acquire that creates the lock record
    friend bool operator==(const Acquire&, const Acquire&) = default;
};
// Releases one count of the hold identified by (session = client_id, owner_tag, token).
struct Release {
    std::string name;
    std::string owner_tag;
    Index token = 0;
    friend bool operator==(const Release&, const Release&) = default;
};
// An administrator takes `session`'s hold of `name` granted with `token` away, all its counts at
// once, without being that session (`raftlock release --force`): for a holder that is stuck, not
// gone. Needs admin on the lock (permissions.cc); session-less, like a user change. Unclean, as an
// expiry is: the holder did not let go, so the lock's lock-delay applies, and fencing rejects the
// token from this entry on.
struct ForceRelease {
    std::string name;
    SessionId session = kNoSession;
    Index token = 0;
    friend bool operator==(const ForceRelease&, const ForceRelease&) = default;
};
// Cancels a queued wait. If the wait was already granted, the reply carries that grant's token.
struct Cancel {
    std::string name;
    std::string owner_tag;
    friend bool operator==(const Cancel&, const Cancel&) = default;
};
struct LockSpec {
    std::string name;
    LockMode mode = LockMode::kExclusive;
    uint32_t permits = 1;
    friend bool operator==(const LockSpec&, const LockSpec&) = default;
};
// Acquires every lock or none, never some of them. With wait_ms 0: kLockBusy if any is unavailable.
// Else the set queues in every lock's queue at once, as one wait, granted in one entry when it
// heads every queue and each lock can take it (locks.cc says why this cannot deadlock).
struct AcquireMany {
    std::vector<LockSpec> locks;  // 1..kMultiLockMax, distinct names
    std::string owner_tag;
    TimeMs lock_delay_ms = 0;
    TimeMs wait_ms = 0;  // <= kWaitMsMax; written from format version 9 on
    friend bool operator==(const AcquireMany&, const AcquireMany&) = default;
};

// --- Redis mode (statemachine/redis/) ------------------------------------------------------------

// One Redis command, replicated as sent (EVAL scripts too: every replica runs them). Sent with
// client_id = kNoSession and seq = the submitting server's sequence number for `origin`, which
// the keyspace uses for at-most-once (redis/keyspace.h).
struct RedisCommand {
    uint64_t origin = 0;  // the submitting server process's random id, never 0
    redis::Argv argv;     // 1..kRedisArgsMax items, kRedisCommandBytesMax bytes in all
    // The instruction budget of a script this command runs, stamped by the proposing server so
    // that every replica (and every replay) stops it at the same instruction whatever its own
    // configuration: 1..kScriptInstructionsMax, or 0 in an entry written before budgets were
    // stamped, which runs with kScriptInstructionsUnstamped.
    uint64_t script_instructions_max = 0;
    friend bool operator==(const RedisCommand&, const RedisCommand&) = default;
};

// MULTI ... EXEC (command format 8 on): the queued keyspace commands and the watched keys, one
// entry, at most once per (origin, seq) like a RedisCommand. Bounded together as one command is:
// kRedisArgsMax arguments and kRedisCommandBytesMax bytes over every command and watched key, and
// at most kRedisWatchedKeysMax watched keys.
struct RedisTransaction {
    uint64_t origin = 0;  // as in RedisCommand
    redis::Transaction transaction;
    // The budget that the transaction's scripts share (RedisCommand's, never 0 here).
    uint64_t script_instructions_max = 0;
    friend bool operator==(const RedisTransaction&, const RedisTransaction&) = default;
};

// --- SQL mode (statemachine/sql/) ---------------------------------------------------------------

// One statement of a PostgreSQL connection, whose session is client_id (docs/sql-mode.md). Every
// replica parses and runs it; a statement that waits for a lock is answered by a later entry
// (ApplyResult::sql_done).
struct SqlStatement {
    sql::StatementRequest request;  // sql::valid_request
    friend bool operator==(const SqlStatement&, const SqlStatement&) = default;
};
// Ends `session`'s waiting statement with SQLSTATE 57014 (a CancelRequest). Sent with client_id =
// kNoSession (the cancelling connection is not the session's) and, like OpenSession, seq = the
// proposing server's nonce.
struct SqlCancel {
    SessionId session = kNoSession;
    friend bool operator==(const SqlCancel&, const SqlCancel&) = default;
};

// A client connection takes over a session another connection (of any node) used: the session's
// later writes number from `first_seq`, and every write of the session numbered below it that has
// not applied yet is refused (kResultDiscarded) when it does, as ZooKeeper refuses the requests of
// a connection whose session moved. Accepted only when `first_seq` exceeds every seq the session
// used (its saved replies and its discarded prefix) by more than kAttachSeqGap: the writes an
// earlier connection may still have in flight number below that. A refused attach changes nothing,
// so a copy applied twice (a resubmission) is refused the second time and harms no one. Sent with
// client_id = kNoSession and, like OpenSession, seq = the proposing server's nonce.
struct AttachSession {
    SessionId session = kNoSession;
    uint64_t first_seq = 0;
    friend bool operator==(const AttachSession&, const AttachSession&) = default;
};

// --- users, roles and permissions (auth.h) -------------------------------------------------------

// Numbers are on the log.
enum class UserAction : uint8_t {
    kAdd = 1,          // name, credentials (none: a user who logs in by certificate only)
    kDelete = 2,       // name
    kSetPassword = 3,  // name, credentials
    kGrantRole = 4,    // name, role
    kRevokeRole = 5,   // name, role
};
inline constexpr uint8_t kUserActionMax = static_cast<uint8_t>(UserAction::kRevokeRole);
// Needs the root role, except a user setting its own password.
struct UserChange {
    UserAction action = UserAction::kAdd;
    std::string name;
    Credentials credentials;  // kAdd, kSetPassword; else empty
    std::string role;         // kGrantRole, kRevokeRole; else empty
    friend bool operator==(const UserChange&, const UserChange&) = default;
};
enum class RoleAction : uint8_t {
    kAdd = 1,     // name
    kDelete = 2,  // name (revoked from every user)
    kGrant = 3,   // name, permission
    kRevoke = 4,  // name, permission
};
inline constexpr uint8_t kRoleActionMax = static_cast<uint8_t>(RoleAction::kRevoke);
// Needs the root role.
struct RoleChange {
    RoleAction action = RoleAction::kAdd;
    std::string name;
    Permission permission;  // kGrant, kRevoke; else the default
    friend bool operator==(const RoleChange&, const RoleChange&) = default;
};
// Turns the checks on (needs a user holding root) or off (needs root). Sent with client_id =
// kNoSession and seq = the proposing server's nonce, like the other session-less changes.
struct AuthEnable {
    bool enabled = true;
    friend bool operator==(const AuthEnable&, const AuthEnable&) = default;
};
// Proposed by a leader started with a root password file (never by a client): creates `root`,
// holding the root role, and enables authentication, if the cluster has no user yet.
struct AuthBootstrap {
    Credentials root;  // has_password()
    friend bool operator==(const AuthBootstrap&, const AuthBootstrap&) = default;
};

using Op = std::variant<OpenSession,
                        KeepAlive,
                        CloseSession,
                        ExpireSession,
                        Noop,
                        Create,
                        Delete,
                        SetData,
                        Multi,
                        Acquire,
                        Release,
                        Cancel,
                        AcquireMany,
                        RedisCommand,
                        SqlStatement,
                        SqlCancel,
                        AttachSession,
                        SetAcl,
                        UserChange,
                        RoleChange,
                        AuthEnable,
                        AuthBootstrap,
                        ForceRelease,
                        RedisTransaction>;

// A fenced write (the protected-resource side of fencing): the request is rejected with
// kFenceRejected unless `token` is the token of a current holder of `lock`.
struct Fence {
    std::string lock;
    Index token = 0;
    friend bool operator==(const Fence&, const Fence&) = default;
};

struct Command {
    // The session the request belongs to (kNoSession for OpenSession, ExpireSession and Noop).
    SessionId client_id = kNoSession;
    // Exactly-once (Raft thesis §6.3): the client numbers its requests 1, 2, 3, ...; `ack_seq` says
    // it has received the replies of every request <= ack_seq, so their saved results can go.
    // seq = 0: not deduplicated (only allowed without a session). Exception: an OpenSession may
    // carry a nonzero seq chosen by the server that proposes it (a nonce, echoed in
    // ApplyResult::seq so the server can find its waiting client); it is not deduplicated.
    uint64_t seq = 0;
    uint64_t ack_seq = 0;
    TimeMs time_ms = 0;  // the leader's clock when it proposed the entry
    std::optional<Fence> fence;
    // Whose ACL permissions a tree operation (Create, Delete, SetData, Multi, SetAcl) is checked
    // against (acl.h): set by the ZooKeeper front end. Absent: not checked (the native, Redis and
    // SQL ports, which ACLs do not restrict).
    std::optional<Caller> caller;
    // The authenticated user the request came from (auth.h), stamped by the node its client
    // reached and carried unchanged when the write is forwarded: what permissions are checked
    // against at apply while authentication is enabled. Empty: no user authenticated.
    std::string user;
    Op op;
    friend bool operator==(const Command&, const Command&) = default;
};

std::string to_string(const Command& command);

// Session-less ops that carry the proposing server's nonce as their seq (echoed in
// ApplyResult::seq so the server can match the entry to its waiting request; never deduplicated).
bool carries_nonce(const Op& op);
// Ops only a leader originates (ExpireSession, Noop, AuthBootstrap): they carry no user, and a node
// refuses them from a client or a forwarding peer before they reach a log.
bool leader_only(const Op& op);
// Its name, for logs ("ExpireSession").
std::string_view op_name(const Op& op);

}  // namespace raftlock::statemachine
