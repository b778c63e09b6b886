#pragma once

// The replicated lock state machine (DESIGN.md §4): sessions with exactly-once requests, a
// ZooKeeper-style node tree, watch triggers, and native locks with fencing tokens.
//
// Contract:
// - Pure and deterministic: the same entries applied in the same order give the same state and the
//   same ApplyResults on every replica. No clock, randomness, I/O or threads; every container whose
//   order is observable is ordered (std::map / std::set).
// - Time: every Command carries the leader's clock; `now` is the maximum seen so far (cluster
//   time). Wait deadlines, lock-delays and TTLs are measured in it and fire at the first entry
//   whose time reaches them (proposing Noop entries keeps time moving when the cluster is idle).
// - zxid = the Raft index of the entry. Sessions ids, czxid/mzxid/pzxid and lock tokens are zxids,
//   so tokens only grow, across all locks.
// - Not thread-safe; the owner (the server's apply loop or the simulator) serialises all calls.
//
// The class is large, so its definition is split by concern: state_machine.cc (apply, time,
// exactly-once), sessions.cc, tree.cc, locks.cc, snapshot.cc, queries.cc, invariants.cc.

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_io.h"
#include "base/result.h"
#include "statemachine/auth.h"
#include "statemachine/codec.h"
#include "statemachine/command.h"
#include "statemachine/output.h"
#include "statemachine/redis/keyspace.h"
#include "statemachine/sql/engine.h"
#include "statemachine/types.h"

namespace raftlock::statemachine {

// get(): a node's data and stat.
struct NodeView {
    std::string data;
    Stat stat;
    NodeKind kind = NodeKind::kPersistent;
};

struct HolderInfo {
    SessionId session = kNoSession;
    std::string owner_tag;
    Index token = 0;
    TimeMs since_ms = 0;  // cluster time of the grant
    uint32_t count = 0;   // reentrancy count
    friend bool operator==(const HolderInfo&, const HolderInfo&) = default;
};

struct WaiterInfo {
    SessionId session = kNoSession;
    std::string owner_tag;
    LockMode mode = LockMode::kExclusive;
    TimeMs enqueued_ms = 0;
    TimeMs deadline_ms = 0;
    std::vector<std::string> together;  // a multi-lock wait: the other locks of its set, sorted
    friend bool operator==(const WaiterInfo&, const WaiterInfo&) = default;
};

// describe(name).
struct LockInfo {
    std::string name;
    bool semaphore = false;
    uint32_t permits = 1;                  // semaphore size; 1 for exclusive/shared locks
    LockMode mode = LockMode::kExclusive;  // the holders' mode (meaningful when holders exist)
    std::vector<HolderInfo> holders;       // in grant order
    std::vector<WaiterInfo> waiters;       // FIFO order
    TimeMs lock_delay_ms = 0;
    TimeMs free_at_ms = 0;  // > now: lock-delay in force, nothing is granted before this time
    friend bool operator==(const LockInfo&, const LockInfo&) = default;
};

struct SessionInfo {
    SessionId id = kNoSession;
    TimeMs timeout_ms = 0;
    TimeMs last_keepalive_ms = 0;
    size_t ephemerals = 0;
    size_t locks = 0;   // locks held or waited for
    std::string owner;  // the user that opened it (empty: none authenticated)
    friend bool operator==(const SessionInfo&, const SessionInfo&) = default;
};

// Stable text forms (text.cc), e.g.
//   lock "db" exclusive holder=s3/"w"/17@1200x1 waiter=s5/""/shared@1300..2300 delay=500 free_at=0
std::string to_string(const LockInfo& info);

class StateMachine final {
public:
    explicit StateMachine(Config config = {});

    // Applies the committed entry at `index` (> last_applied(); gaps are fine, since configuration
    // entries are not passed in). `command_bytes` is what encode_command produced; an empty entry
    // (the leader's term-start no-op) only advances last_applied, and undecodable bytes give
    // kMalformedCommand and change nothing else.
    ApplyResult apply(Index index, std::string_view command_bytes);
    // Same, for an already decoded command (tests, benchmarks, the simulator), applied as an
    // entry of command format `format` (codec.h: the version decides how a session's request
    // applies; apply() passes the entry's own).
    ApplyResult apply_command(Index index,
                              const Command& command,
                              uint8_t format = kCommandFormatVersion);

    // A self-contained, versioned, checksummed serialisation of the whole replicated state
    // (format in snapshot.cc and docs/statemachine.md). Watches are per connection, not included.
    std::string snapshot() const;
    // Replaces the whole state with a snapshot's. On kMalformedCommand (bad magic, version,
    // checksum, structure or invariants) the machine is unchanged.
    ErrorCode restore(std::string_view bytes);

    // Read-only queries, linearizable when served after ReadIndex (thesis §6.4).
    Result<NodeView, ErrorCode> get(std::string_view path) const;  // kNoNode, kBadArguments
    std::optional<Stat> exists(std::string_view path) const;
    // The node's ACL as stored (empty: open; displayed_acl gives getACL's form).
    std::optional<Acl> acl(std::string_view path) const;
    // Whether `caller` may read (or do what `perms` names) at `path`: true for a path without a
    // node, whose read answers kNoNode anyway. Reads are checked where they are served.
    bool permits(std::string_view path, uint8_t perms, const Caller& caller) const;
    // Child names in byte order. kNoNode, kBadArguments.
    Result<std::vector<std::string>, ErrorCode> children(std::string_view path) const;
    // How many nodes lie below `path`, at any depth (ZooKeeper's getAllChildrenNumber). kNoNode,
    // kBadArguments.
    Result<size_t, ErrorCode> descendant_count(std::string_view path) const;
    // The ephemeral nodes `session` owns whose paths start with `prefix`, in byte order
    // (ZooKeeper's getEphemerals); empty for an unknown session.
    std::vector<std::string> ephemerals_of(SessionId session, std::string_view prefix) const;
    std::optional<LockInfo> describe_lock(std::string_view name) const;
    // Names of locks starting with `prefix`, in order, at most `limit_max` of them.
    std::vector<std::string> list_locks(std::string_view prefix, size_t limit_max) const;
    std::optional<SessionInfo> session(SessionId id) const;
    // The highest seq `session` used as far as this replica knows (its newest saved reply, or its
    // discarded prefix): an AttachSession must name a first seq more than kAttachSeqGap above it.
    // Nullopt for no such session.
    std::optional<uint64_t> highest_seq_used(SessionId id) const;
    // The saved reply to request `seq` of `session`, if still saved (exactly-once).
    std::optional<Response> saved_response(SessionId id, uint64_t seq) const;
    // A read-only Redis command (redis::Route::kRead) at the current cluster time.
    redis::Value redis_query(const redis::Argv& argv) const;
    size_t redis_key_count() const { return keyspace_.key_count(); }
    // A read-only SQL statement (sql::is_read_only) of `session`, served after ReadIndex.
    sql::StatementResult sql_query(SessionId session, const sql::StatementRequest& request) const {
        return sql_.query(session, request, now_ms_);
    }
    Result<sql::Description, sql::SqlError> sql_describe(std::string_view statement) const {
        return sql_.describe(statement);
    }
    size_t sql_table_count() const { return sql_.table_count(); }
    sql::TxStatus sql_tx_status(SessionId session) const { return sql_.tx_status(session); }
    // Every live session: a new leader starts tracking each with a fresh full timeout.
    std::vector<SessionInfo> sessions() const;

    // Locks with at least one holder, and waiters across all locks (metrics; O(locks)).
    struct LockTotals {
        size_t held = 0;
        size_t waiters = 0;
    };
    LockTotals lock_totals() const;
    // Cluster time of the earliest pending timer (wait deadline, lock-delay end, TTL), if any. A
    // leader proposes a Noop once its clock passes it, so the timer fires on an idle cluster.
    std::optional<TimeMs> next_timer_ms() const;

    Index last_applied() const { return last_applied_; }
    TimeMs now_ms() const { return now_ms_; }
    size_t node_count() const { return nodes_.size(); }
    size_t lock_count() const { return locks_.size(); }
    size_t session_count() const { return sessions_.size(); }
    // Users, roles and permissions, for the checks of reads (made where they are served) and for
    // logins (the credentials to check a password against).
    const AuthStore& auth() const { return auth_; }
    // Whether `user` may act on `session`: its owner or a root user (true for an unknown session,
    // which what applies refuses anyway). Meaningful while authentication is enabled.
    bool may_use_session(const std::string& user, SessionId session) const;
    // The refusal `command` would get if it applied now (permissions.cc), so that a node can
    // refuse a write before it reaches the log. Nullopt: allowed.
    std::optional<Response> refusal(const Command& command) const;
    // A 64-bit hash of the replicated state (of the snapshot), for comparing replicas.
    uint64_t state_hash() const;
    // Empty when every invariant holds, else a description of the first broken one. Run by the
    // tests after every step and by restore().
    std::string check_invariants() const;

private:
    struct Node {
        std::string data;
        Stat stat;
        NodeKind kind = NodeKind::kPersistent;
        TimeMs ttl_ms = 0;
        Acl acl;                         // canonical_acl: empty when open
        std::set<std::string> children;  // child names (last path component)
    };
    struct Session {
        TimeMs timeout_ms = 0;
        TimeMs last_keepalive_ms = 0;
        // Saved replies by seq (Raft thesis §6.3), at most kSavedResultsPerSessionMax.
        std::map<uint64_t, Response> saved;
        // Replies of requests with seq <= this were acknowledged or evicted.
        uint64_t discarded_through_seq = 0;
        std::set<std::string> ephemerals;  // paths
        std::set<std::string> locks;       // locks this session holds or waits for
        std::string owner;  // the user whose OpenSession made it (auth.h); empty: none
    };
    struct Holder {
        SessionId session = kNoSession;
        std::string owner_tag;
        Index token = 0;
        TimeMs since_ms = 0;
        uint32_t count = 1;
    };
    struct Waiter {
        SessionId session = kNoSession;
        std::string owner_tag;
        LockMode mode = LockMode::kExclusive;
        TimeMs enqueued_ms = 0;
        TimeMs deadline_ms = 0;
        // 0: a single acquire's wait. Else the zxid of the AcquireMany that queued it, the same in
        // the queue of every lock of its set: granted on all of them in one entry, or on none.
        Index group = 0;
    };
    // A multi-lock wait (AcquireMany with a wait): which locks its waiters are queued in. Derived
    // from the waiters' groups (rebuilt on restore), so it needs no place in the snapshot.
    struct MultiWait {
        SessionId session = kNoSession;
        std::string owner_tag;
        std::vector<std::string> names;  // sorted; every lock of the set has one waiter of it
    };
    struct Lock {
        bool semaphore = false;
        uint32_t permits = 1;
        LockMode mode = LockMode::kExclusive;
        TimeMs lock_delay_ms = 0;
        TimeMs free_at_ms = 0;
        std::vector<Holder> holders;
        std::deque<Waiter> waiters;  // FIFO, at most kWaitersPerLockMax
    };
    enum class TimerKind : uint8_t { kWaitDeadline = 0, kLockDelayEnd, kTtl };
    // Ordered by (at, kind, key, id, tag): deterministic firing order.
    struct Timer {
        TimeMs at_ms = 0;
        TimerKind kind = TimerKind::kWaitDeadline;
        std::string key;  // lock name or node path
        uint64_t id = 0;  // kWaitDeadline: session; kTtl: the node's czxid
        std::string tag;  // kWaitDeadline: owner tag
        auto operator<=>(const Timer&) const = default;
    };
    // Undo journal of a Multi (all or nothing): each record restores one change.
    struct Undo {
        enum class Kind : uint8_t { kCreated, kDeleted, kSet } kind = Kind::kCreated;
        std::string path;
        Node before;              // kDeleted: the node; kSet: its data and stat
        Stat parent_stat_before;  // kCreated, kDeleted
    };
    // Where tree changes report to: triggers, an optional undo journal, new timers.
    struct TreeCtx {
        Index zxid = 0;
        std::vector<WatchTrigger>* triggers = nullptr;
        std::vector<Undo>* undo = nullptr;  // null outside a Multi
        std::vector<Timer>* timers = nullptr;
        // Set inside a Multi with containers_at_end: containers emptied by its sub-ops, removed
        // (if still empty) once they all applied. Null: an emptied container goes at once.
        std::vector<std::string>* emptied_containers = nullptr;
        // Whose permissions the node ACLs are checked against; null: not checked.
        const Caller* caller = nullptr;
    };

    // state_machine.cc
    void advance_time(TimeMs time_ms, Index zxid, ApplyResult& out);
    void fire_timer(const Timer& timer, Index zxid, ApplyResult& out);
    void apply_session_request(const Command& command,
                               uint8_t format,
                               Index zxid,
                               ApplyResult& out);
    Response dispatch(SessionId session, const Command& command, Index zxid, ApplyResult& out);
    ErrorCode check_fence(const Fence& fence) const;

    // sessions.cc
    Response open_session(const OpenSession& op, const std::string& owner, Index zxid);
    Response attach_session(const AttachSession& op);
    static uint64_t highest_seq_used(const Session& session);
    // Why a session's request may not apply from command format 5 on: its seq is more than
    // kSeqAheadMax beyond the session's highest; nullopt if fine.
    static std::optional<std::string> seq_refusal(const Session& session, const Command& command);
    void end_session(SessionId id, SessionEnd reason, Index zxid, ApplyResult& out);
    static void discard_acknowledged(Session& session, uint64_t ack_seq);
    static void save_result(Session& session, uint64_t seq, const Response& response);

    // tree.cc
    Response create_node(
        SessionId session, const Create& op, const Caller* caller, Index zxid, ApplyResult& out);
    ErrorCode do_create(
        SessionId session, const Create& op, TreeCtx& ctx, std::string* created_path, Stat* stat);
    ErrorCode do_delete(std::string_view path, int32_t version, TreeCtx& ctx);
    ErrorCode do_set(
        std::string_view path, std::string_view data, int32_t version, TreeCtx& ctx, Stat* stat);
    ErrorCode do_check(std::string_view path, int32_t version, const TreeCtx& ctx) const;
    Response set_acl(const SetAcl& op, const Caller* caller);
    // Whether the operation's caller may do what needs one of `perms` on `node`.
    static bool permitted(const Node& node, uint8_t perms, const TreeCtx& ctx) {
        return ctx.caller == nullptr || acl_permits(node.acl, perms, *ctx.caller);
    }
    void remove_node(const std::string& path, TreeCtx& ctx);
    Response apply_multi(
        SessionId session, const Multi& op, const Caller* caller, Index zxid, ApplyResult& out);
    Response apply_single_write(const Op& op, const Caller* caller, Index zxid, ApplyResult& out);
    void roll_back(std::vector<Undo>& undo);
    void fire_ttl(const Timer& timer, Index zxid, ApplyResult& out);

    // locks.cc
    Response acquire(SessionId session, const Acquire& op, Index zxid);
    Response release(SessionId session, const Release& op, Index zxid, ApplyResult& out);
    Response cancel(SessionId session, const Cancel& op, Index zxid, ApplyResult& out);
    Response force_release(const ForceRelease& op, Index zxid, ApplyResult& out);
    // A hold ended without its holder letting go (an expiry, a forced release): the lock is
    // granted to nobody for its lock-delay.
    void start_lock_delay(const std::string& name, Lock& lock);
    Response acquire_many(SessionId session, const AcquireMany& op, Index zxid);
    void queue_multi_wait(SessionId session, const AcquireMany& op, Index zxid);
    bool grantable(const Lock& lock, LockMode mode) const;
    // The negative control of the unsafe build (Config); always false in a normal build.
    bool breaks_exclusion(const Lock& lock, LockMode mode) const;
    static bool kind_matches(const Lock& lock, LockMode mode, uint32_t permits);
    void add_holder(const std::string& name,
                    Lock& lock,
                    SessionId session,
                    const std::string& owner_tag,
                    LockMode mode,
                    Index zxid);
    // Grants what the queues allow, from `name`'s on: its head waiters while they can be granted,
    // and, when a multi-lock wait is granted, the queues of the other locks of its set in turn.
    void grant_waiters(const std::string& name, Lock& lock, Index zxid, ApplyResult& out);
    void grant_queue(const std::string& name,
                     Lock& lock,
                     Index zxid,
                     ApplyResult& out,
                     std::vector<std::string>& moved);
    // A multi-lock wait can be granted when it heads the queue of every lock of its set and each
    // of those locks can take it.
    bool multi_grantable(Index group) const;
    void grant_multi(Index group, Index zxid, ApplyResult& out, std::vector<std::string>& moved);
    // Whether the head of `lock`'s queue could be granted now (a single wait, or a multi-lock one
    // on all of its locks): never true between entries.
    bool head_grantable(const Lock& lock) const;
    void remove_waiter(const std::string& name, Lock& lock, size_t position);
    // Takes a multi-lock wait out of every queue of its set (without granting anything). The
    // deadline timer of `timer_fired_on`, if given, has been taken out already.
    MultiWait drop_multi_wait(Index group, const std::string* timer_fired_on);
    // drop_multi_wait, then what its leaving allows: grants behind it, unused records forgotten.
    // `report_ended`: a WaitTimeout for each of its locks (its deadline, a cancel).
    void end_multi_wait(Index group,
                        const std::string* timer_fired_on,
                        bool report_ended,
                        Index zxid,
                        ApplyResult& out);
    void forget_if_unused(const std::string& name, SessionId session);
    void release_session_locks(SessionId id, SessionEnd reason, Index zxid, ApplyResult& out);
    void fire_wait_deadline(const Timer& timer, Index zxid, ApplyResult& out);
    void fire_lock_delay_end(const Timer& timer, Index zxid, ApplyResult& out);

    // SQL mode (state_machine.cc).
    Response sql_statement(SessionId session,
                           uint64_t seq,
                           const SqlStatement& op,
                           ApplyResult& out);
    void finish_sql(sql::EngineEvents& events, ApplyResult& out);

    // permissions.cc: with authentication enabled, the refusal of a command whose user may not
    // use the session it names (checked before exactly-once, so that nobody moves another
    // user's sequence numbers), and of one whose user lacks a permission its op needs. Nullopt:
    // allowed (always, while authentication is disabled).
    std::optional<Response> identity_refusal(const Command& command) const;
    std::optional<Response> op_refusal(const Command& command) const;
    // Gives a refusal the Redis or SQL reply its port sends (NOPERM, SQLSTATE 42501).
    static void in_protocol_terms(const Op& op, Response& refused);
    Response apply_auth_change(const Command& command);

    // snapshot.cc: each returns false on malformed input.
    bool restore_sessions(Reader& r, bool with_sql, bool with_acls, bool with_owners);
    bool restore_nodes(Reader& r, bool with_acls);
    bool restore_locks(Reader& r, bool with_groups);
    bool link_lock_sessions(const std::string& name, const Lock& lock);
    bool link_multi_waits();
    bool restore_timers(Reader& r);

    // invariants.cc
    std::string check_tree_invariants() const;
    std::string check_lock_invariants() const;
    std::string check_lock(const std::string& name, const Lock& lock) const;
    std::string check_multi_waits() const;

    Config config_;
    Index last_applied_ = 0;
    // The command format of the entry being applied (apply_command sets it): what a Redis command
    // may run depends on it (redis::CommandSpec::since_format).
    uint8_t format_ = kCommandFormatVersion;
    TimeMs now_ms_ = 0;
    Index last_token_ = 0;  // the newest token granted (tokens only grow)
    std::map<std::string, Node, std::less<>> nodes_;
    std::map<SessionId, Session> sessions_;
    std::map<std::string, Lock, std::less<>> locks_;
    std::map<Index, MultiWait> multi_waits_;  // by group: the waits of AcquireMany
    std::set<Timer> timers_;
    redis::Keyspace keyspace_;
    sql::Engine sql_;
    AuthStore auth_;
};

}  // namespace raftlock::statemachine
