#pragma once

// The raftlock client library (DESIGN.md §5, issue 5 "Client library").
//
// A Client talks to a cluster through one TCP connection at a time to any node of `endpoints`
// (followers forward writes, so any node serves any request). It starts at a random endpoint and
// moves to the next one when the connection fails or the node answers UNAVAILABLE/SHUTTING_DOWN;
// requests in flight are sent again there, writes with the same (session, seq) so they apply
// exactly once. Watches are re-registered on the new connection. Once it knows which endpoint is
// the leader's (every answer names the answering node and its leader), it moves there, so its
// writes skip a follower's forwarding hop (ClientOptions::prefer_leader, client/leader_routing.h).
//
// A Client owns at most one session at a time. While it is open the client sends keepalives at a
// third of its timeout and tracks the session's safe-until deadline (client/safe_until.h); the
// session callback fires when it passes without a newer acknowledged keepalive, or when the
// session ends, so the holder can stop before the cluster hands its locks to anyone else.
//
// Threads: every public method is thread-safe and blocking with a deadline. The client runs its
// own network thread, which reads every answer and push; a call sends its request from the
// calling thread (docs/decisions/0022-client-calls-write-directly.md). Callbacks run on the
// network thread and must not call blocking methods (they get kWrongThread). Destroying the
// Client does not close its session (see close_session()).

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/endpoints.h"
#include "client/error.h"
#include "client/safe_until.h"
#include "client/types.h"
#include "net/tls.h"

namespace raftlock::client {

struct ClientOptions {
    std::vector<Endpoint> endpoints;  // at least one
    std::chrono::milliseconds connect_timeout{1000};
    // The deadline of a call that has no deadline of its own.
    std::chrono::milliseconds request_timeout{10000};
    // Subtracted from the session timeout for safe-until; default: default_safety_margin().
    std::optional<std::chrono::milliseconds> safety_margin;
    // A call that was never sent fails with kConnectFailed after this many rounds in which every
    // endpoint refused a connection (rounds are paced by the retry backoff).
    uint32_t connect_rounds_max = 3;
    uint32_t frame_bytes_max = 4u << 20;
    size_t pending_requests_max = 1024;
    size_t watches_max = 10000;
    uint64_t seed = 0;  // first endpoint and backoff jitter; 0 picks a random seed
    // Keep the connection on the leader once the client knows which endpoint that is
    // (client/leader_routing.h): a write then skips the follower's forwarding hop. Off: the
    // client stays on the endpoint it reached, as a ZooKeeper or etcd client does.
    bool prefer_leader = true;
    // Non-null: every connection speaks TLS with this client context (net::TlsContext::make with
    // TlsRole::kClient), and each endpoint's host must be a name or address in its node's
    // certificate.
    std::shared_ptr<const net::TlsContext> tls;
    // Not empty: every connection logs in as this user with `password` (SCRAM-SHA-256: the
    // password itself never travels) before its first request. Needed once the cluster has
    // authentication enabled (docs/security.md).
    std::string user;
    std::string password;
};

class Client {
public:
    // Precondition: options.endpoints is not empty. Connects lazily, on the first call.
    explicit Client(ClientOptions options);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    // --- sessions ----------------------------------------------------------------------------
    // Opens the client's session; kInvalidArgument if one is open or the margin is >= timeout.
    ClientResult<SessionId> open_session(std::chrono::milliseconds timeout);
    // Uses a session another process opened, for single operations (no keepalives, no
    // safe-until): the cluster numbers this client's writes above every seq the session used
    // (AttachSession); writes of the session not applied yet are refused from then on.
    ClientResult<Done> attach_session(SessionId id);
    // One keepalive now (the open session sends them by itself too).
    ClientResult<Done> keep_alive();
    // Ends the session: its locks are released, its ephemeral nodes deleted. An already expired
    // session counts as closed.
    ClientResult<Done> close_session();
    std::optional<SessionId> session_id() const;
    // The current safe-until deadline (possibly passed: compare with SteadyClock::now()); empty
    // without an open session, or for an attached one.
    std::optional<SteadyTime> safe_until() const;
    // Replaces the session callback. It fires once per safe-until crossing and once at the end.
    void set_session_callback(SessionCallback callback);
    // Called (on the client's network thread) when an administrator takes one of this session's
    // holds away (force_release): the session lives on, the lock is no longer held.
    void set_lock_revoked_callback(LockRevokedCallback callback);

    // --- locks --------------------------------------------------------------------------------
    // Needs an open session. Answers when granted (the lease), or kWaitTimeout when the server's
    // wait ended, kLockBusy for wait 0, kTimeout when the caller's timeout passed first (then the
    // client has cancelled the wait and released any grant that raced the cancel).
    ClientResult<Lease> acquire(const std::string& name, const AcquireOptions& options = {});
    // acquire() with wait 0.
    ClientResult<Lease> try_acquire(const std::string& name, AcquireOptions options = {});
    // Every lock of `names` or none (1..64 distinct names, none held or awaited by this session
    // yet), each in the mode `options` names: one lease per name, in the order given, all with the
    // same token. With a wait the set queues on every lock at once and is granted when it heads
    // every queue (FIFO; crossing sets cannot deadlock). Answers as acquire() does; on kTimeout the
    // client has cancelled the wait and released a grant that raced the cancel, on every lock.
    ClientResult<std::vector<Lease>> acquire_many(const std::vector<std::string>& names,
                                                  const AcquireOptions& options = {});
    // acquire_many with each lock in its own mode (say a configuration shared and the data it
    // describes exclusive); options' shared and permits are not used. (Not an overload of
    // acquire_many: two string literals in braces would also make a vector of LockRequest.)
    ClientResult<std::vector<Lease>> acquire_locks(const std::vector<LockRequest>& locks,
                                                   const AcquireOptions& options = {});
    // Returns the hold count left (reentrant holds). kNotLockHolder if the lease is not held.
    ClientResult<uint32_t> release(const Lease& lease);
    // Takes `session`'s hold of `name` granted with `token` away, every count at once, without
    // that session (needs admin on the lock under authentication; no session of this client's
    // own). kNotLockHolder when that session holds no grant with that token, which is also what a
    // retry after a lost reply finds: `describe` tells which.
    ClientResult<Done> force_release(const std::string& name, SessionId session, uint64_t token);
    ClientResult<LockInfo> describe(const std::string& name);
    // Names with `prefix`, byte order; limit 0 is the server's default (1000).
    ClientResult<std::vector<std::string>> list_locks(const std::string& prefix,
                                                      uint32_t limit = 0);

    // --- nodes (writes need an open or attached session) --------------------------------------
    ClientResult<CreatedNode> create(const std::string& path,
                                     const std::string& data,
                                     const CreateOptions& options = {});
    // A callback sets a one-shot data watch (fires on data change or delete).
    ClientResult<NodeData> get(const std::string& path, WatchCallback watch = {});
    ClientResult<Stat> set(const std::string& path,
                           const std::string& data,
                           const WriteOptions& options = {});
    ClientResult<Done> remove(const std::string& path, const WriteOptions& options = {});
    // Empty when the node does not exist. A callback sets a one-shot exists watch.
    ClientResult<std::optional<Stat>> exists(const std::string& path, WatchCallback watch = {});
    // A callback sets a one-shot children watch.
    ClientResult<std::vector<std::string>> children(const std::string& path,
                                                    WatchCallback watch = {});
    // All or nothing. On failure the error names the failing sub-op (index and code).
    ClientResult<std::vector<SubResult>> multi(const std::vector<MultiOp>& ops,
                                               const std::optional<Fence>& fence = std::nullopt);
    ClientResult<WatchId> add_watch(const std::string& path,
                                    bool recursive,
                                    WatchCallback callback);
    ClientResult<Done> remove_watch(WatchId id);

    // --- cluster ------------------------------------------------------------------------------
    // Asks exactly this endpoint (not necessarily one of ours) about itself.
    ClientResult<NodeStatus> node_status(const Endpoint& endpoint);
    ClientResult<std::vector<SessionInfo>> list_sessions();
    // The committed configuration, by id (a linearizable read).
    ClientResult<std::vector<Member>> members();
    // One membership change (Raft thesis §4.1), answered with the new configuration once it is
    // committed. `address` (HOST:PORT of the node's Raft port) is needed for a new node. Not
    // idempotent: after a lost answer the library's retry may find the change made (kBadArguments
    // "already a voter" / "not a member"). kChangeInProgress: another change is not committed yet.
    ClientResult<std::vector<Member>> change_member(MemberChange change,
                                                    uint64_t node_id,
                                                    const std::string& address = {});
    // Hands leadership to voter `node_id` (Raft thesis §3.10): answered once the node that took
    // the request sees it lead, with its id. kTimeout: it did not take over within two election
    // timeouts (behind or unreachable), and the leader stayed. Safe to retry.
    ClientResult<uint64_t> transfer_leadership(uint64_t node_id);
    // --- users and permissions (docs/security.md) ------------------------------------------
    // The password is turned into a SCRAM verifier here; only the verifier reaches the cluster.
    // Without one the user logs in by client certificate only. These need the root role, except
    // set_password of one's own user. Like change_member, a retry after a lost answer may find
    // the change made (kUserExists, ...).
    ClientResult<Done> add_user(const std::string& name,
                                const std::optional<std::string>& password);
    ClientResult<Done> delete_user(const std::string& name);
    ClientResult<Done> set_password(const std::string& name, const std::string& password);
    ClientResult<Done> grant_role(const std::string& user, const std::string& role);
    ClientResult<Done> revoke_role(const std::string& user, const std::string& role);
    ClientResult<Done> add_role(const std::string& name);
    ClientResult<Done> delete_role(const std::string& name);
    ClientResult<Done> grant_permission(const std::string& role, const Permission& permission);
    ClientResult<Done> revoke_permission(const std::string& role, const Permission& permission);
    // Turning authentication on needs a user holding the root role.
    ClientResult<Done> set_auth_enabled(bool enabled);
    // name "": the client's own user.
    ClientResult<UserInfo> get_user(const std::string& name);
    ClientResult<std::vector<std::string>> list_users();
    ClientResult<RoleInfo> get_role(const std::string& name);
    ClientResult<std::vector<std::string>> list_roles();
    ClientResult<AuthStatus> auth_status();

    // How many connections the client has made so far (1 after the first). Persistent watches
    // do not replay changes made while no connection was up, so a watch callback that sees this
    // number change knows events before it may be missing.
    uint64_t connection_count() const;

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
};

// Holds a lease and releases it when it goes out of scope (errors are ignored then: a lease whose
// session is gone is released by the cluster). Movable, not copyable.
class LockGuard {
public:
    LockGuard(Client& client, Lease lease) : client_(&client), lease_(std::move(lease)) {}
    ~LockGuard();
    LockGuard(LockGuard&& other) noexcept;
    LockGuard& operator=(LockGuard&& other) noexcept;
    LockGuard(const LockGuard&) = delete;
    LockGuard& operator=(const LockGuard&) = delete;

    const Lease& lease() const { return *lease_; }
    bool owns_lock() const { return lease_.has_value(); }
    // Releases now; the guard then holds nothing.
    ClientResult<uint32_t> release();

private:
    Client* client_;
    std::optional<Lease> lease_;
};

}  // namespace raftlock::client
