#pragma once

// The client's session: its sequence numbers (client/seq_tracker.h), its keepalives at a third of
// the timeout, its safe-until deadline (client/safe_until.h) and the callback that tells the user
// the session is in jeopardy or gone. Internal to the library.
//
// Threads: inside the client's core (client/core.h: the network thread or a caller holding its
// lock), except id() and safe_until(), which read a published copy.

#include <chrono>
#include <mutex>
#include <optional>

#include "client/core.h"
#include "client/safe_until.h"
#include "client/seq_tracker.h"
#include "client/types.h"

namespace raftlock::client {

class SessionKeeper {
public:
    explicit SessionKeeper(Core& core) : core_(core) {}

    // --- inside the core ---
    // Fails unless no session is open and no open is in flight; marks an open in flight.
    std::optional<Error> begin_open();
    // The open answered (ok or not); `submitted` is when it was submitted, a lower bound of the
    // time the leader started the session.
    void end_open(const ClientResult<proto::Response>& answer,
                  std::chrono::milliseconds requested_timeout,
                  std::chrono::milliseconds margin,
                  SteadyTime submitted);
    std::optional<Error> attach(SessionId id, uint64_t first_seq);

    // Fills session_id and seq of a write, or says why there is no session to write with.
    std::optional<Error> prepare_write(proto::Request& request);
    // Fills session_id of a request that only names the session (KeepAlive).
    std::optional<Error> prepare_session_read(proto::Request& request);
    void before_send(proto::Request& request) const;
    // A session request was answered or abandoned: settles its seq and notices an expired session.
    void on_answer(const proto::Request& request, const ClientResult<proto::Response>& answer);
    void on_session_ended(const proto::SessionEnded& ended);
    void on_connected();
    bool wants_connection() const;
    void set_callback(SessionCallback callback) { callback_ = std::move(callback); }
    // A keepalive the user asked for; `done` gets its answer.
    void keep_alive_now(Completion done);

    // --- any thread ---
    std::optional<SessionId> id() const;
    std::optional<SteadyTime> safe_until() const;

private:
    struct State {
        SessionId id = 0;
        std::optional<SafeUntil> safe;  // empty for an attached session (timeout unknown)
        SeqTracker seqs;
        bool auto_keepalive = false;
        bool in_jeopardy = false;  // safe-until passed, no newer acknowledgement yet
        bool ended = false;
        bool closing = false;
        uint32_t keepalives_in_flight = 0;
        TimerId keepalive_timer = 0;
        TimerId safe_timer = 0;
    };

    void schedule_keepalive();
    void send_keepalive(Completion user_done);
    void on_keepalive_answer(SessionId id,
                             SteadyTime submitted,
                             bool automatic,
                             const ClientResult<proto::Response>& answer);
    void arm_safe_timer();
    void on_safe_timer();
    void end(SessionLoss loss, bool notify);
    void publish();
    void notify(SessionLoss loss);

    Core& core_;
    std::optional<State> state_;
    bool opening_ = false;
    SessionCallback callback_;

    mutable std::mutex published_mu_;
    std::optional<SessionId> published_id_;
    std::optional<SteadyTime> published_safe_until_;
};

}  // namespace raftlock::client
