#pragma once

// One raftlockd node's core (DESIGN.md §5): the Raft core, the durable store, the lock state
// machine, the watches of this node's clients, session liveness (leader), and the requests of
// this node's clients. No sockets: the runtime (cli/raftlockd.cc) feeds it peer frames, client
// requests and ticks on its one loop thread, and it answers through PeerSink and ClientSink.
//
// The Ready loop is raft::ReadyLoop (raft/ready_loop.h), the one the simulators run, with the
// write on the storage thread:
//   ready() -> send early messages -> storage thread persists (one synced batch: group commit)
//   -> back on the loop: send messages, apply committed entries, serve reads -> advance()
// While writes are in flight the loop keeps stepping messages and taking requests; up to
// --max-writes-in-flight Readies are handed to the storage thread at once, which writes what is
// queued with one sync (group commit across Readies), so a busy node writes big batches. With
// --follower-writes-on-loop, a follower whose storage thread is idle writes on the loop thread
// itself (write_on_loop), so its acknowledgement leaves without two thread wake-ups.
//
// Request paths:
//   writes     a Command stamped with cluster time by the leader (a follower forwards it as a
//              ForwardWrite); the node holding the client's connection answers when it applies
//              the entry, matched by (session, seq), or (0, nonce) for OpenSession. Pending writes
//              are resubmitted to each new leader; exactly-once makes that safe.
//   reads      batched into one ReadIndex request per loop turn; served once applied >= index.
//   keepalive  recorded by the leader, acknowledged after a ReadIndex round (session_tracker.h).
//   acquire    with a wait: answered when the grant (or the wait's end) applies.
//
// Threads: every public method runs on the loop thread. The storage thread runs only the jobs
// this class gives StorageWorker.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/scram.h"
#include "net/client_listener.h"
#include "net/log_limiter.h"
#include "net/peer_transport.h"
#include "net/pg_listener.h"
#include "proto/client.pb.h"
#include "proto/peer.pb.h"
#include "raft/raw_node.h"
#include "raft/ready_loop.h"
#include "server/clock.h"
#include "server/config.h"
#include "server/console_feed.h"
#include "server/console_history.h"
#include "server/metrics.h"
#include "server/pg_frontend.h"
#include "server/redis_frontend.h"
#include "server/request_rate.h"
#include "server/session_tracker.h"
#include "server/storage_executor.h"
#include "statemachine/state_machine.h"
#include "statemachine/watches.h"
#include "storage/log_store.h"

namespace raftlock::server {

class PeerSink {
public:
    virtual ~PeerSink() = default;
    // False when the frame was dropped (unknown peer, full queue); Raft recovers from that.
    virtual bool send(uint64_t to, const proto::PeerFrame& frame) = 0;
    // The nodes this one talks to, after a membership change (net::PeerTransport::set_peers).
    virtual void set_peers(const std::vector<net::PeerAddress>& peers) = 0;
};

class ClientSink {
public:
    virtual ~ClientSink() = default;
    virtual void send(net::ConnectionId id, const proto::ServerMessage& message) = 0;
    virtual void close(net::ConnectionId id) = 0;
};

class Replica final : public net::ClientHandler,
                      public RedisBackend,
                      public SqlBackend,
                      private raft::ReadyHost {
public:
    using Post = std::function<void(std::function<void()>)>;

    // Opens nothing itself: `storage` is an open store (bootstrapped here when new), written
    // after that only through `executor`. `post` runs a task later on the loop thread. Every random
    // choice (the core's election jitter, the session nonces, the Redis origin) derives from
    // `seed`: random in a server, the run's seed in the simulator. All references must outlive the
    // replica.
    Replica(const ServerConfig& config,
            std::unique_ptr<storage::LogStore> storage,
            std::unique_ptr<StorageExecutor> executor,
            PeerSink& peers,
            ClientSink& clients,
            Post post,
            const Clock& clock,
            Metrics& metrics,
            uint64_t seed);
    ~Replica() override;
    Replica(const Replica&) = delete;
    Replica& operator=(const Replica&) = delete;

    // Called every config.tick_ms.
    void tick();
    void on_peer_frame(uint64_t from, proto::PeerFrame&& frame);

    // net::ClientHandler
    void on_client_open(net::ConnectionId id, const std::string& remote) override;
    // With --tls-client-cert-user on: the connection is logged in as the user the certificate
    // names (replica_auth.cc).
    void on_client_certificate(net::ConnectionId id, const std::string& common_name) override;
    void on_client_request(net::ConnectionId id, proto::Request&& request) override;
    void on_client_close(net::ConnectionId id) override;

    // RedisBackend: Redis commands from the RESP port (replica_redis.cc). Replies go to the
    // front end given here (none: the Redis port is off).
    void set_redis_frontend(RedisFrontend* frontend) { redis_frontend_ = frontend; }
    void redis_command(net::ConnectionId id,
                       uint64_t ticket,
                       redis::Argv&& argv,
                       const std::string& user) override;
    void redis_watch(net::ConnectionId id, uint64_t ticket, const std::string& user) override;
    void redis_wait(net::ConnectionId id,
                    uint64_t ticket,
                    int64_t numreplicas,
                    int64_t timeout_ms) override;
    int64_t redis_replicas_holding() const override;
    void redis_transaction(net::ConnectionId id,
                           uint64_t ticket,
                           redis::Transaction&& transaction,
                           const std::string& user) override;
    bool redis_users_enabled() const override;
    bool redis_login(const std::string& user, const std::string& password) override;
    void redis_closed(net::ConnectionId id) override;
    std::optional<std::string> redis_read_refusal(const std::string& user) const override;
    // Sends an entry's publications to this node's subscribers; how many received each.
    // Not those committed before this process first knew a leader (publications_from_).
    std::vector<size_t> deliver_publications(const std::vector<redis::Publication>& published,
                                             raft::Index index);
    std::string redis_replication_info() const override;
    size_t redis_key_count() const override;

    // SqlBackend: the PostgreSQL port's sessions and statements (replica_sql.cc). Answers go to
    // the front end given here (none: the PostgreSQL port is off).
    void set_pg_frontend(PgFrontend* frontend) { pg_frontend_ = frontend; }
    void sql_open(uint64_t id, const std::string& user) override;
    bool sql_users_enabled() const override;
    std::optional<base::scram::Verifier> sql_verifier(const std::string& user) const override;
    void sql_login_done(bool succeeded) override;
    void sql_statement(uint64_t id,
                       uint64_t session,
                       uint64_t seq,
                       sql::StatementRequest&& request,
                       bool read_only) override;
    Result<sql::Description, sql::SqlError> sql_describe(std::string_view statement) const override;
    void sql_cancel(uint64_t session) override;
    void sql_closed(uint64_t id, uint64_t session) override;

    // Answers every pending request with SHUTTING_DOWN and stops taking new ones; the storage
    // thread finishes its queue when the replica is destroyed.
    void shut_down();

    // Admin views.
    std::string status_json() const;
    bool healthy() const;  // a leader is known, the log replayed, and not shutting down
    // Still applying the entries that were committed when this process started (the replay of
    // its log since the last snapshot): it answers its admin port but serves no reads yet.
    bool catching_up() const { return applied_index_ < replayed_through_; }
    // "ok", "no leader", "catching up: applied A of C" or "shutting down": why healthy() is false.
    std::string health() const;
    void fill_status(proto::NodeStatusResult& out) const;
    bool is_leader() const { return soft_.role == raft::Role::kLeader; }
    // A Ready's synced write is on the storage thread: no Ready (and no message) until it is done.
    bool writing() const { return loop_->persisting(); }
    // Raft batches written, and syncs: several batches queued while one synced share the next.
    uint64_t storage_writes() const { return storage_writes_.load(std::memory_order_relaxed); }
    uint64_t storage_syncs() const { return storage_syncs_.load(std::memory_order_relaxed); }
    // Turns of the storage thread that found jobs queued: each one a wake-up of that thread.
    uint64_t storage_turns() const { return storage_turns_.load(std::memory_order_relaxed); }
    // Of those, the ones a follower ran on its loop thread (write_on_loop).
    uint64_t storage_writes_on_loop() const {
        return storage_writes_on_loop_.load(std::memory_order_relaxed);
    }
    uint64_t leader() const { return soft_.leader; }
    // Whether a read that asks for it (Request.local_read) is served from this node's state at
    // once: a leader is known and this node applied everything it knows is committed. A node cut
    // off from its leader, restarting or behind stops serving them (ZooKeeper's followers stop
    // serving without a leader too); those reads take the ReadIndex path instead.
    bool serves_local_reads() const;
    raft::Index applied_index() const { return applied_index_; }
    // A committed configuration removed this node: it has shut down and the process should exit.
    bool removed() const { return removed_; }
    // A peer refused this node because it applied this node's removal (net::PeerTransport).
    void on_removed_by_peer(uint64_t peer);
    // The link to `peer` failed with frames possibly lost on it (net::PeerTransport::on_link_lost):
    // writes relayed to it as the leader are relayed again.
    void on_peer_link_lost(uint64_t peer);
    const statemachine::StateMachine& state() const { return sm_; }
    statemachine::WatchRegistry::Totals watch_totals() const { return watches_.totals(); }
    size_t connection_count() const { return connections_.size(); }
    // The web console (replica_console.cc, server/admin_console.h): its live feed, the members
    // as this node sees them, the sessions soonest to expire first (at most limit_max).
    ConsoleFeed& console_feed() { return console_feed_; }
    const ConsoleHistory& console_history() const { return console_history_; }
    std::string console_cluster_json() const;
    std::string console_sessions_json(size_t limit_max) const;
    // Cluster time now, as this node can tell: the last applied entry's time plus what its own
    // clock says passed since it applied it (cluster time only moves with entries, so an idle
    // cluster's holds would otherwise look as old as its last write).
    int64_t console_cluster_now_ms() const;
    // The console's actions (--console-actions; the caller checked who asks). `done` gets an
    // HTTP status and a sentence: when the entry applies here (or at the request timeout) for a
    // force-release (ForceRelease as `user`, what `raftlock release --force` proposes) and an
    // expiry (ExpireSession, what the leader proposes at a session's deadline: leader only); at
    // once for a leadership transfer, which the feed then shows. At most kConsoleActsMax wait.
    using ConsoleDone = std::function<void(unsigned status, std::string message)>;
    static constexpr size_t kConsoleActsMax = 16;
    void console_force_release(const std::string& user,
                               const std::string& name,
                               uint64_t session,
                               uint64_t token,
                               ConsoleDone done);
    void console_expire_session(uint64_t session, ConsoleDone done);
    void console_transfer_leadership(uint64_t to, ConsoleDone done);

private:
    using WriteKey = std::pair<uint64_t, uint64_t>;                  // (client_id, seq)
    using WaitKey = std::tuple<uint64_t, std::string, std::string>;  // (session, lock, owner tag)

    struct Connection {
        std::string remote;
        size_t pending = 0;  // requests not answered yet
        std::set<uint64_t> sessions;
        std::string user;  // logged in as (replica_auth.cc); empty: not logged in
        // A login between its two steps, and the user it names.
        std::unique_ptr<base::scram::ServerExchange> login;
        std::string login_user;
        int login_failures = 0;
        int64_t opened_ms = 0;  // for the login deadline
        RequestRate rate;
    };
    struct PendingWrite {
        net::ConnectionId conn = 0;
        uint64_t request_id = 0;
        statemachine::Command command;  // time_ms = 0; the leader stamps it
        int64_t submitted_us = 0;
        int64_t deadline_ms = 0;
        uint64_t forward_tag = 0;  // its ForwardWrite still unanswered, else 0
        int attempt = 1;           // an AttachSession refused for a low first seq is retried
        // A copy of it reached a log or may have (proposed here, or forwarded and not refused):
        // it may commit yet, so a later copy's refusal does not mean "not applied".
        bool maybe_proposed = false;
    };
    // How many times an attach is proposed before its client hears RESULT_DISCARDED: each retry
    // is chosen after applying the write that beat the last, so only a session written to
    // elsewhere all the while needs more than two.
    static constexpr int kAttachAttemptsMax = 5;
    struct Waiting {
        net::ConnectionId conn = 0;
        uint64_t request_id = 0;
    };
    struct ClientRef {
        net::ConnectionId conn = 0;
        uint64_t request_id = 0;
    };
    // A follower's relayed keepalives, waiting for the leader's ReadIndex round.
    struct ForwardedKeepAlive {
        uint64_t from = 0;
        uint64_t tag = 0;
        std::vector<uint64_t> sessions;  // renewed or unknown: decided when the round confirms
        std::vector<uint64_t> expiring;  // past their deadline: answered as expired
    };
    // Everything one ReadIndex round confirms.
    struct ReadBatch {
        std::vector<std::pair<ClientRef, proto::Request>> reads;
        std::vector<std::pair<ClientRef, uint64_t>> keepalives;  // local clients (leader)
        std::vector<ForwardedKeepAlive> forwarded;
        std::vector<std::pair<ClientRef, redis::Argv>> redis_reads;
        // (client, (session, statement)): request_id is the statement's seq.
        std::vector<std::pair<ClientRef, std::pair<uint64_t, sql::StatementRequest>>> sql_reads;
        int64_t deadline_ms = 0;
        int64_t asked_ms = 0;  // when its round was last asked of the core
        raft::Term term = 0;   // the term it was first asked in
        bool empty() const {
            return reads.empty() && keepalives.empty() && forwarded.empty() &&
                   redis_reads.empty() && sql_reads.empty();
        }
    };
    // Who asked for a membership change: a client of this node, or (peer != 0) a follower's
    // client, answered through that follower (ForwardMemberReply with `tag`).
    struct MemberOrigin {
        ClientRef client;
        uint64_t peer = 0;
        uint64_t tag = 0;
    };
    // A membership change proposed by this leader, answered when its entry applies.
    struct PendingMemberChange {
        MemberOrigin origin;
        raft::Index index = 0;
        raft::Term term = 0;
        int64_t deadline_ms = 0;
    };
    struct KeepAliveForward {
        std::vector<std::pair<ClientRef, uint64_t>> clients;  // (client, session)
        int64_t deadline_ms = 0;
    };

    // replica.cc: construction, ticks, the asynchronous Ready loop.
    void bootstrap_if_new();
    void schedule_flush();
    void flush();
    void drive();
    void maybe_snapshot();
    // raft::ReadyHost: the Ready loop's effects (raft/ready_loop.h), the write on the storage
    // thread.
    void send(std::vector<raft::Message>& messages) override;
    void persist(std::shared_ptr<const raft::Ready> ready, bool sync, Callback done) override;
    void persist_commit(const raft::HardState& hard_state) override;
    // Jobs for the storage thread (run_storage_jobs), in order, shared with it under
    // storage_jobs_mutex_: a Ready's write, or another job (`other`: a snapshot save).
    struct StorageJob {
        std::shared_ptr<const raft::Ready> ready;
        bool sync = false;
        std::function<void()> other;
    };
    void queue_write(std::shared_ptr<const raft::Ready> ready, bool sync, Callback done);
    void queue_storage_job(StorageJob job, Callback done);
    bool write_on_loop(const StorageJob& job) const;
    // Hands run_storage_jobs to the executor (on the loop thread itself when `on_loop`), counting
    // the task in storage_tasks_pending_ until `done` has run.
    void submit_storage_task(Callback done, bool on_loop);
    void queue_commit_write();
    // Under storage_jobs_mutex_: queues commit_to_write_, if any.
    void move_commit_to_jobs();
    // On the storage thread: runs every queued job in order; consecutive writes share a sync.
    void run_storage_jobs();
    void serve_reads(std::vector<raft::ReadState>& read_states) override;
    void defer(Callback fn) override;
    void on_soft_state(const raft::SoftState& soft) override;
    void before_ready() override { refresh_peers(); }
    void after_ready() override;
    void expire_sessions();
    void maybe_propose_noop();
    void expire_requests();
    int64_t cluster_now_ms();

    // replica_apply.cc: committed entries -> replies and pushes.
    void apply_entries(const std::vector<raft::Entry>& entries) override;
    void apply_snapshot(const raft::Snapshot& snapshot) override;
    void on_applied(const statemachine::Command& command, const statemachine::ApplyResult& result);
    // `receivers`: how many of this node's subscribers got each of the entry's publications (what
    // a PUBLISH answers).
    void answer_write(const statemachine::Command& command,
                      const statemachine::ApplyResult& result,
                      const std::vector<size_t>& receivers);
    void register_wait(const WaitKey& key, const ClientRef& client);
    void resolve_waits_after_restore();
    void push_watch_events(const std::vector<statemachine::WatchTrigger>& triggers);
    void send_watch_event(const statemachine::WatchEvent& event);
    statemachine::WatchedView watched_view() const;
    void end_session(uint64_t session, bool expired);
    void push_hold_revoked(const statemachine::HoldRevoked& revoked);
    // replica_console.cc: the console's feed, from an applied entry and from a role change.
    void note_console_events(const statemachine::Command& command,
                             const statemachine::ApplyResult& result);
    void note_console_role(const raft::SoftState& before);
    // Every tick: the feed's long-polls past their deadline, and a chart sample each second.
    void note_console_tick();

    // replica_clients.cc: client requests.
    void submit_write(net::ConnectionId conn, proto::Request& request);
    // An attach_session request: proposes AttachSession with a first seq above what the session
    // used as far as this node has applied; retried (attempt) when another write raced it.
    void submit_attach(net::ConnectionId conn, uint64_t request_id, uint64_t session, int attempt);
    void drop_pending_writes(net::ConnectionId conn);
    void route_write(const WriteKey& key, PendingWrite& pending);
    static bool may_commit(const PendingWrite& pending);
    // Queues a write for the leader (proposed here or forwarded) to be answered to
    // (conn, request_id) when it applies or times out. False, changing nothing, when a write with
    // the same (client_id, seq) is already pending.
    bool add_pending_write(net::ConnectionId conn,
                           uint64_t request_id,
                           statemachine::Command command);
    bool propose_command(statemachine::Command command);
    void add_read(net::ConnectionId conn, proto::Request&& request);
    void add_keepalive(net::ConnectionId conn, const proto::Request& request);
    void answer_local(net::ConnectionId conn, const proto::Request& request);
    void serve_batch(ReadBatch& batch);
    // Serves the confirmed batches whose index is applied, oldest round first, up to the first
    // that must wait: for its index, or for an older round still in flight.
    void serve_confirmed_reads();
    // Asks the core again for the rounds unanswered for an election timeout: a round can be lost
    // without a leader change (a follower's request or its answer dropped, the leader shedding
    // reads under load), and later rounds wait for it (serve_confirmed_reads).
    void ask_lost_reads_again(int64_t now_ms);
    // A ReadIndex round's context, and back (nullopt: not a context this node makes).
    static std::string read_context(uint64_t round);
    static std::optional<uint64_t> read_round(std::string_view context);
    // Serves confirmed Redis reads from redis_reads_ready_, a bounded number of reply bytes per
    // turn of the loop, and posts itself again while any are left.
    void serve_redis_reads();
    void serve_read(const ClientRef& client, const proto::Request& request);
    // Sets a watch for a connection within the node's per-connection bound: OK, LIMIT_EXCEEDED,
    // BAD_ARGUMENTS (an invalid path).
    proto::Code add_watch(net::ConnectionId conn,
                          const std::string& path,
                          statemachine::WatchKind kind);
    void remove_watch(const ClientRef& client, const proto::RemoveWatch& request);
    void restore_watches(const ClientRef& client,
                         const proto::RestoreWatches& request,
                         proto::Response& response);
    void respond(const ClientRef& client, proto::Response& response);
    void respond_error(const ClientRef& client, proto::Code code, std::string message = {});

    // replica_auth.cc: users on the native port.
    void authenticate(const ClientRef& client, const proto::Request& request);
    const std::string& user_of(net::ConnectionId conn) const;
    // Why the connection's user may not make this request (a read, a watch, a keepalive, or any
    // request before a login), in words; nullopt when it may or authentication is disabled.
    std::optional<std::string> request_refusal(net::ConnectionId conn,
                                               const proto::Request& request) const;
    // The refusal the state machine would give this write if it applied now.
    std::optional<statemachine::Response> write_refusal(const statemachine::Command& command) const;
    void serve_auth_read(net::ConnectionId conn,
                         const proto::Request& request,
                         proto::Response& response) const;
    void fill_auth_status(net::ConnectionId conn, proto::AuthStatusResult& out) const;
    void maybe_bootstrap_root();
    // Closes the native connections that have not logged in within config.login_deadline_ms.
    void enforce_login_deadline();
    std::map<net::ConnectionId, RequestRate> redis_rates_;
    void note_session(net::ConnectionId conn, uint64_t session);

    // replica_redis.cc: the Redis port's side of the request paths.
    static bool is_redis(net::ConnectionId id) { return (id & net::kRespConnectionBit) != 0; }
    void redis_reply(const ClientRef& client, const redis::Value& value);
    bool redis_admit(const ClientRef& client, bool read, const std::string& user);
    // The argv of a WATCH among the batched Redis reads: served with the applied index.
    static constexpr std::string_view kRedisWatchRead = "watch";
    void redis_error(const ClientRef& client, proto::Code code, const std::string& message);

    // replica_sql.cc: the PostgreSQL port's side of the request paths. A connection's requests
    // use ClientRef{conn, seq} for statements, {conn, nonce} while its session opens, and
    // {conn, 0} for the keepalives this node sends for it.
    struct PgConn {
        uint64_t session = 0;  // 0 until the OpenSession applies
        uint64_t last_seq = 0;
        std::string user;  // the cluster user it logged in as (empty: none)
        RequestRate rate;
    };
    static bool is_pg(net::ConnectionId id) { return (id & net::kPgConnectionBit) != 0; }
    void sql_answer(const statemachine::Command& command,
                    const statemachine::ApplyResult& result,
                    const ClientRef& client);
    void sql_push_done(const statemachine::ApplyResult& result);
    void sql_error(const ClientRef& client, proto::Code code, const std::string& message);
    sql::StatementResult sql_failure(uint64_t session,
                                     std::string sqlstate,
                                     std::string message) const;
    void sql_session_lost(uint64_t session);
    void sql_keepalives();
    void sql_resolve_after_restore();
    void propose_unanswered(statemachine::Command command);
    // replica_members.cc: membership changes and the peer list.
    // ChangeMember from a client: proposed here on the leader, forwarded by a follower.
    void change_member(net::ConnectionId conn, const proto::Request& request);
    void propose_member_change(const MemberOrigin& origin, const proto::ChangeMember& request);
    void answer_member_change(const MemberOrigin& origin, proto::Response& response);
    void member_change_error(const MemberOrigin& origin, proto::Code code, std::string message);
    void handle_forward_member_change(uint64_t from, const proto::ForwardMemberChange& forward);
    void handle_forward_member_reply(const proto::ForwardMemberReply& reply);
    void on_conf_applied(const raft::Entry& entry, const raft::ConfState& conf);
    void settle_member_change(const raft::Entry& entry, const raft::ConfState* conf);
    void expire_member_change(int64_t now_ms);
    // TransferLeadership: asked of the core here (a follower's core passes it to the leader), and
    // answered by settle_transfers.
    void transfer_leadership(net::ConnectionId conn, const proto::Request& request);
    // Answers the waiting transfers whose node leads now, and those past their deadline.
    void settle_transfers(int64_t now_ms);
    void refresh_peers();
    void fill_members(const raft::ConfState& conf, proto::MembersResult& out) const;

    // replica_peers.cc: Raft messages from peers (range-checked: raft/peer_input.h), and
    // forwarding between nodes.
    void step_peer_message(uint64_t from, const proto::RaftMessage& raw);
    void drop_peer_message(uint64_t from, raft::MessageFault fault, const std::string& reason);
    void handle_forward_write(uint64_t from, const proto::ForwardWrite& forward);
    void handle_forward_keepalive(uint64_t from, const proto::ForwardKeepAlive& forward);
    void handle_forward_reply(const proto::ForwardReply& reply);
    void send_forward_reply(uint64_t to, uint64_t tag, proto::ForwardStatus status);
    void flush_keepalive_forwards();
    void resubmit_after_leader_change();
    // Answers a batch's keepalives (local: UNAVAILABLE; relayed: FORWARD_NOT_LEADER) and takes
    // them out: only a round this node confirms as the leader that recorded them may ack them.
    void refuse_keepalives(ReadBatch& batch);
    size_t route_pending_writes(bool forwarded_only);

    const ServerConfig& config_;
    const Clock& clock_;
    Metrics& metrics_;
    PeerSink& peers_;
    ClientSink& clients_;
    Post post_;

    std::unique_ptr<storage::LogStore> storage_;
    std::unique_ptr<raft::RawNode> raw_;
    std::unique_ptr<raft::ReadyLoop> loop_;    // drives raw_
    raft::PeerInputLimits peer_input_limits_;  // the core's too (raft::Config::peer_input)
    // Dropped peer messages: at most one line per peer and reason every few seconds.
    net::LogLimiter peer_input_log_{std::chrono::seconds(5)};
    statemachine::StateMachine sm_;
    statemachine::WatchRegistry watches_;
    SessionTracker tracker_;
    raft::ConfState applied_conf_;   // the configuration as of the applied index (for snapshots)
    raft::Index applied_index_ = 0;  // Raft's applied index (configuration entries included)
    raft::Index snapshot_index_ = 0;
    raft::Index replayed_through_ = 0;  // the commit index at start: entries up to it are replayed
    // The first index whose publications this process delivers: past the commit index it knew
    // when it first knew a leader (none before that: deliver_publications).
    std::optional<raft::Index> publications_from_;

    raft::SoftState soft_;
    bool flush_scheduled_ = false;
    bool shutting_down_ = false;
    uint64_t ticks_ = 0;
    int64_t time_offset_ms_ = 0;  // cluster time = steady clock + offset while leader
    int64_t last_stamp_ms_ = 0;   // the newest stamp of this term: stamps never go back in it
    int64_t last_noop_ms_ = 0;
    uint64_t next_nonce_ = 0;
    uint64_t redis_origin_ = 0;  // this process's id for the keyspace's at-most-once (never 0)
    // What decoy logins of unknown users derive their salts from (drawn at the first login).
    std::string decoy_secret_;
    uint64_t root_bootstrap_term_ = 0;  // the term this node last proposed AuthBootstrap in
    RedisFrontend* redis_frontend_ = nullptr;
    // WAITs not yet answered: each answers when `numreplicas` other nodes hold `index`, or at its
    // deadline (0: none). Checked every tick (replica_redis.cc).
    struct RedisWait {
        ClientRef client;
        raft::Index index = 0;
        int64_t numreplicas = 0;
        int64_t deadline_ms = 0;
    };
    std::vector<RedisWait> redis_waits_;
    // How many other nodes are known to hold `index`, by the core status `st`: on the leader those
    // whose log matches through it; on a follower, of a committed index, the rest of a quorum.
    int64_t replicas_holding(const raft::NodeStatus& st, raft::Index index) const;
    void check_redis_waits();
    PgFrontend* pg_frontend_ = nullptr;
    std::map<net::ConnectionId, PgConn> pg_conns_;
    std::map<uint64_t, net::ConnectionId> pg_sessions_;  // session -> connection
    std::map<WriteKey, ClientRef> sql_waits_;            // (session, seq): waiting
    int64_t pg_keepalive_due_ms_ = 0;
    uint64_t next_tag_ = 0;
    bool removed_ = false;
    std::optional<PendingMemberChange> member_change_;
    struct MemberForward {
        ClientRef client;
        int64_t deadline_ms = 0;
    };
    std::map<uint64_t, MemberForward> member_forwards_;  // by tag; at most kMemberForwardsMax
    struct PendingTransfer {
        ClientRef client;
        raft::NodeId to = raft::kNoNode;
        int64_t deadline_ms = 0;
    };
    std::vector<PendingTransfer> transfers_;  // at most kTransfersWaitingMax
    // The (latest, applied) configurations the peer list was last built from; nullopt: not yet.
    std::optional<std::pair<raft::ConfState, raft::ConfState>> peers_source_;

    std::map<net::ConnectionId, Connection> connections_;
    std::map<uint64_t, std::set<net::ConnectionId>> session_connections_;
    std::map<WriteKey, PendingWrite> pending_writes_;
    std::map<uint64_t, WriteKey> forward_tags_;  // ForwardWrite tag -> its pending write
    std::map<WaitKey, Waiting> waiting_;
    ReadBatch next_batch_;
    // The batches of ReadIndex rounds, by round number (the round's context is read_context(n)):
    // asked and not yet confirmed, and confirmed with the index they wait to see applied. They are
    // served strictly in round order (serve_confirmed_reads), so the reads a connection pipelines
    // see states in the order it sent them, whichever round the leader confirms first.
    std::map<uint64_t, ReadBatch> reads_in_flight_;
    std::map<uint64_t, std::pair<raft::Index, ReadBatch>> reads_confirmed_;
    // Redis reads whose ReadIndex round is confirmed and applied, in order, across batches: one
    // queue drained by one posted handler, so a turn of the loop serves at most one turn's bytes
    // however many batches are ready.
    std::deque<std::pair<ClientRef, redis::Argv>> redis_reads_ready_;
    bool redis_reads_posted_ = false;
    std::vector<std::pair<ClientRef, uint64_t>> next_keepalive_forward_;
    std::map<uint64_t, KeepAliveForward> keepalive_forwards_;  // by tag
    ConsoleFeed console_feed_;
    // Console actions waiting for their entry: `matches` finds it among the applied ones.
    struct ConsoleAct {
        std::function<bool(const statemachine::Command&)> matches;
        ConsoleDone done;
        int64_t deadline_ms = 0;
    };
    std::vector<ConsoleAct> console_acts_;  // at most kConsoleActsMax
    ConsoleHistory console_history_;
    int64_t console_time_cluster_ms_ = 0;  // sm_.now_ms() when last seen to change ...
    int64_t console_time_steady_ms_ = 0;   // ... and this node's clock then
    int64_t console_sampled_ms_ = 0;

    // storage_jobs_ (see StorageJob), shared with the storage thread.
    std::mutex storage_jobs_mutex_;
    std::deque<StorageJob> storage_jobs_;
    // The newest commit-only hard state not yet queued (persist_commit): it goes out in front of
    // the next storage job, or on the next tick, instead of waking the storage thread per commit.
    std::optional<raft::HardState> commit_to_write_;
    std::atomic<uint64_t> storage_writes_{0};  // written by the storage thread, read by metrics
    std::atomic<uint64_t> storage_syncs_{0};
    std::atomic<uint64_t> storage_turns_{0};
    std::atomic<uint64_t> storage_writes_on_loop_{0};  // storage tasks run on the loop thread
    // Storage tasks handed to the executor whose completion has not run yet (loop thread only;
    // counted with --follower-writes-on-loop, the only thing that reads it).
    uint64_t storage_tasks_pending_ = 0;

    // Declared last: destroyed first, so its writes finish before the store closes.
    std::unique_ptr<StorageExecutor> worker_;
};

}  // namespace raftlock::server
