#pragma once

// Clients of the lock state machine, and the leader's in-memory session liveness.
//
// LeaderSessions is the simulator's equivalent of server/session_tracker.h: a leader tracks a
// deadline per live session in memory (lost on a crash), gives every session a fresh full
// timeout when it becomes leader (a new term or a new incarnation), renews a session on a
// keepalive, proposes ExpireSession once a deadline passes (again after a retry interval, since
// a proposal can be lost), and proposes a Noop when a state machine timer is due so that waits
// and lock-delays end on an idle cluster.
//
// LockWorkload runs a few clients. Each opens a session (OpenSession with a nonce; a retried
// open may leave an orphan session, which the leader expires), keeps it alive through the node
// it talks to, and then loops: acquire one lock (exclusive locks x0 and x1, or the mixed
// shared/exclusive lock s0; a try or a wait), hold it for a while, maybe make a request fenced
// by its token (SetData on "/"), release it, maybe try the old token once more (it must be
// refused). Sometimes a holder lets its session lapse (the leader expires it, which releases its
// locks) or closes it. A request that gets no answer is retried under the same (session, seq);
// after the last attempt the outcome is unknown (info) and the client abandons the session, so
// any grant it never heard of ends with the session's expiry.
//
// Clients learn a result when the entry is first applied anywhere (a result is the same on
// every node, which the lock checker verifies), including pushed grants, wait timeouts and
// session ends. The x-locks' operations form a history in the `mutex` model of jepsen's
// raftlock-check (acquire, release, fenced-write): a hold that a session end released is
// recorded as a release by its own process at the entry that ended the session.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/rng.h"
#include "raft/types.h"
#include "statemachine/command.h"
#include "statemachine/output.h"
#include "statemachine/state_machine.h"
#include "tests/sim/trace.h"

namespace raftlock::sim {

class LeaderSessions {
public:
    // A tick of a node that leads term `term` in incarnation `incarnation`, with clock `now_ms`
    // and state machine `sm`. Returns the commands it should propose (ExpireSession, Noop).
    std::vector<statemachine::Command> on_leader_tick(uint32_t incarnation,
                                                      raft::Term term,
                                                      const statemachine::StateMachine& sm,
                                                      int64_t now_ms);
    // A client's keepalive reached this node while it leads `term` in `incarnation`.
    void keepalive(uint32_t incarnation,
                   raft::Term term,
                   statemachine::SessionId session,
                   int64_t now_ms);

private:
    struct Tracked {
        int64_t timeout_ms = 0;
        int64_t deadline_ms = 0;
        int64_t due_ms = 0;  // when an expiry may be proposed (again)
    };

    uint32_t incarnation_ = 0;
    raft::Term term_ = 0;
    std::map<statemachine::SessionId, Tracked> sessions_;
    statemachine::Index synced_applied_ = 0;  // sessions_ follows the state machine as of this
    int64_t last_noop_ms_ = INT64_MIN / 2;
};

// What lock clients may do to the cluster.
class LockAccess {
public:
    virtual ~LockAccess() = default;
    virtual uint64_t now_us() const = 0;
    virtual raft::NodeId pick_node(Rng& rng) = 0;
    // Proposes `command` at node `id`, stamped with that node's clock.
    virtual raft::Status propose_lock(raft::NodeId id, statemachine::Command command) = 0;
    virtual void keepalive(raft::NodeId id, statemachine::SessionId session) = 0;
    virtual void wake_lock_client(uint32_t client, uint64_t at_us) = 0;
};

struct LockStats {
    uint64_t ok = 0;
    uint64_t fail = 0;
    uint64_t info = 0;
    uint64_t sessions_opened = 0;
    uint64_t sessions_ended = 0;
};

class LockWorkload {
public:
    LockWorkload(uint64_t seed, uint32_t clients, LockAccess& cluster, Trace& trace);

    void start();
    // A client's poll timer fired.
    void on_wake(uint32_t client);
    // The first application anywhere of a lock command's entry.
    void on_result(const statemachine::ApplyResult& result);

    // The x-locks' history as JSON lines for raftlock-check's mutex model.
    std::string history_jsonl() const;
    const LockStats& stats() const { return stats_; }

private:
    enum class Stage : uint8_t {
        kNoSession,  // next: open one
        kOpening,
        kReady,      // has a session, holds nothing
        kAcquiring,  // acquire sent
        kWaiting,    // queued: a grant, a timeout or a session end follows
        kHolding,
        kReleasing,
        kFencing,  // a fenced request with the held token (or, after a release, the old one)
        kCancelling,
        kClosing,
        kLapsed,  // stopped keeping its session alive; waits for the session end
    };
    struct Client {
        uint32_t id = 0;
        uint64_t process = 0;
        Stage stage = Stage::kNoSession;
        statemachine::SessionId session = statemachine::kNoSession;
        int64_t timeout_ms = 0;
        uint64_t nonce = 0;             // OpenSession's seq
        uint64_t seq = 0;               // the session's last request number
        uint64_t acked = 0;             // replies received up to this seq
        statemachine::Command request;  // the outstanding request (retried as is)
        uint32_t attempts = 0;
        uint64_t attempt_deadline_us = 0;
        uint64_t next_action_us = 0;
        uint64_t next_keepalive_us = 0;
        uint64_t give_up_wait_us = 0;
        std::string lock;
        statemachine::LockMode mode = statemachine::LockMode::kExclusive;
        statemachine::Index token = 0;
        bool stale_fence = false;   // kFencing with a released token
        bool wait_open = false;     // queued, and neither granted nor ended yet
        std::string history_f;      // the open history operation, "" when none
        std::string history_value;  // its invoke value
    };
    struct HistoryEvent {
        uint64_t time_us = 0;
        uint64_t process = 0;
        std::string type;
        std::string f;
        std::string key;
        std::string value;
    };
    // A hold a client knows of, per session: recorded as released when the session ends.
    struct KnownHold {
        std::string lock;
        statemachine::Index token = 0;
        bool release_unknown = false;  // its release ended as info: it may be released already
    };

    static bool awaits_reply(Stage stage);
    void poll(Client& c);
    void next_action(Client& c);
    void start_acquire(Client& c);
    void after_hold(Client& c);
    void send(Client& c, statemachine::Op op, std::optional<statemachine::Fence> fence = {});
    void attempt(Client& c);
    void give_up(Client& c);
    void on_reply(Client& c, const statemachine::ApplyResult& result);
    void on_acquire_reply(Client& c, const statemachine::Response& response);
    void on_other_reply(Client& c, const statemachine::Response& response);
    void granted(Client& c, statemachine::Index token);
    void on_pushes(const statemachine::ApplyResult& result);
    void on_session_ended(statemachine::SessionId session);
    void finish_op(Client& c, const char* type, const std::string& value);
    void begin_op(Client& c, const std::string& f, const std::string& value);
    void record(uint64_t process,
                const char* type,
                const std::string& f,
                const std::string& key,
                const std::string& value);
    bool in_history(const Client& c) const;
    void abandon_session(Client& c);
    Client* client_of(statemachine::SessionId session);

    Rng rng_;
    LockAccess& cluster_;
    Trace& trace_;
    std::vector<Client> clients_;
    uint64_t next_process_;
    std::vector<HistoryEvent> history_;
    std::map<statemachine::SessionId, std::vector<KnownHold>> known_holds_;
    LockStats stats_;
};

}  // namespace raftlock::sim
