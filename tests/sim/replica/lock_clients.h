#pragma once

// Simulated native clients of the server simulator, and the server-level checks on what they see.
//
// Each client does what the client library does (client/): it opens a session and keeps it alive
// with keepalives at a third of its timeout, acquires one exclusive lock with a wait, and while it
// holds the lock makes fenced writes (SetData with the lock's token) to a node of its own, then
// releases. Some acquires are multi-locks (AcquireMany) of the lock and a second one, in either
// order, waiting on both queues as one and granted on both with one token; their holder releases
// the second lock, then the first. Their Cancel names the checked lock, which is not always the
// name the server keeps the set's wait under. Some acquires run out of patience before their wait
// ends: the client abandons the request and sends Cancel (whose ack_seq covers the acquire, as
// client/client_locks.cc does); a Cancel answered LOCK_GRANTED is a hold like any other. A write
// whose answer is lost is retried with the same (session, seq) on another node, as exactly-once
// allows. The client computes its safe-until deadline as the library does (client/safe_until.h,
// with no margin: the simulated clocks do not drift): send time of the latest acknowledged
// keepalive (or the open) + the session timeout. It acts as the holder only until then.
//
// The checks, each on every event:
//   one holder      no two clients hold the lock at once, each until its release was sent or
//                   its safe-until passed, whichever came first
//   safe-until      no session ends (its SessionEnded push, a SESSION_EXPIRED answer, a fenced
//                   write rejected) while its client's safe-until has not passed
//   tokens          a grant's token is new, and above every token of a hold that ended before
//   answered        a node that was neither crashed nor paused since a request arrived answers it
//                   within the request timeout (plus the acquire's wait)
//   cancel          no grant of an abandoned acquire arrives after its Cancel answered that the
//                   session neither waits nor holds, and a Cancel that answers a grant names the
//                   token a grant push for that acquire carried
//   revoked         an administrator's ForceRelease (the nemesis's, force_release_target()) ends a
//                   hold without its holder: the next holder may be granted before the old one
//                   hears of it, so a hold whose token is being revoked ends when the next grant
//                   comes (or its LockRevoked push), and from then on its fenced writes are
//                   rejected, never applied; a hold whose token nobody revoked is not exempt
// and at the end:
//   exactly once    every client's node was changed by each acknowledged write exactly once:
//                   acknowledged <= version <= acknowledged + writes of unknown outcome

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/sim/replica/client_group.h"

namespace raftlock::sim::replica {

struct ClientParams {
    size_t clients = 4;
    int64_t session_timeout_ms = 1000;
    int64_t wait_ms = 1500;
    uint32_t cancel_per_mille = 250;  // acquires that give up (Cancel) before their wait ends
    uint32_t multi_per_mille = 300;   // acquires of the lock and a second one together
    uint64_t hold_min_ms = 10;
    uint64_t hold_max_ms = 200;
    bool trace = false;  // print every request and answer
};

struct ClientStats {
    uint64_t sessions = 0;
    uint64_t grants = 0;
    uint64_t releases = 0;
    uint64_t fenced_writes = 0;  // acknowledged
    uint64_t lapses = 0;         // holds that ended at the safe-until deadline
    uint64_t sessions_lost = 0;
    uint64_t retries = 0;
    uint64_t cancels = 0;          // Cancels answered
    uint64_t cancels_granted = 0;  // of them, answered with the grant that beat the Cancel
    uint64_t multi_grants = 0;     // grants of a multi-lock (within grants)
    uint64_t revoked = 0;          // holds ended by an administrator's ForceRelease
};

struct LockClient;  // lock_clients.cc

class LockClients final : public ClientGroup<LockClient> {
public:
    LockClients(World& world, const ClientParams& params);
    ~LockClients() override;

    // The end-of-run checks, once the cluster has settled (every node up and caught up).
    void final_check();

    // The lock, and the (session, token) of a hold the clients act on now, for an administrator's
    // ForceRelease; nullopt when none. Once the ForceRelease is sent, note_revoking(token): the
    // clients then treat the token as being revoked.
    static const char* lock_name();
    std::optional<std::pair<uint64_t, uint64_t>> force_release_target();
    void note_revoking(uint64_t token) { revoking_.insert(token); }

    const ClientStats& stats() const { return stats_; }

    // ClientObserver
    void on_message(ConnId conn, const proto::ServerMessage& message) override;
    void on_closed(ConnId conn) override;

private:
    using Client = LockClient;
    friend struct LockClient;
    enum class Op : uint8_t {
        kNone,
        kOpen,
        kCreate,
        kAcquire,
        kWrite,
        kRelease,
        kReleaseSecond,  // a multi-lock's second lock, released first
        kCancel,
    };

    void step(Client& c) override;
    bool ensure_conn(Client& c);
    void reconnect(Client& c);
    proto::Request base_request(Client& c, bool write);
    void send_op(Client& c, Op op, proto::Request request);
    void resend_op(Client& c);
    void on_response(Client& c, const proto::Response& r);
    void on_op_answer(Client& c, const proto::Response& r);
    void on_keepalive_answer(Client& c, uint64_t sent_us, const proto::Response& r);
    // A grant to `c` (an acquire's, or a Cancel's that lost the race): the checks, then the hold.
    void on_grant(Client& c, uint64_t token);
    // The answer to an attempt of an acquire the client abandoned for a Cancel.
    void on_abandoned_answer(Client& c, const proto::Response& r);
    void on_cancel_answer(Client& c, const proto::Response& r);
    void keepalive(Client& c);
    void lose_session(Client& c, std::string_view how);
    void end_hold(Client& c, uint64_t at_us, bool lapsed);
    // The hold is over once safe-until passed: closes it at the deadline.
    void check_lapse(Client& c);
    uint64_t safe_until_us(const Client& c) const;
    // A trace line, formatted only when tracing is on.
    template <typename... Args>
    void trace(const Client& c, fmt::format_string<Args...> format, Args&&... args) {
        if (params_.trace) {
            trace_line(c, fmt::format(format, std::forward<Args>(args)...));
        }
    }
    void trace_line(const Client& c, std::string_view what);

    ClientParams params_;
    ClientStats stats_;
    // The lock's holds, for the one-holder and token checks.
    struct Hold {
        size_t client = 0;
        uint64_t token = 0;
        uint64_t start_us = 0;
        std::optional<uint64_t> end_us;
    };
    std::vector<Hold> holds_;
    uint64_t max_ended_token_ = 0;
    std::set<uint64_t> revoking_;  // tokens an administrator's ForceRelease was sent for
};

}  // namespace raftlock::sim::replica
