#include "client/session_keeper.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::client {

namespace {

std::chrono::milliseconds ceil_ms(SteadyClock::duration d) {
    return std::max(std::chrono::ceil<std::chrono::milliseconds>(d), std::chrono::milliseconds(0));
}

ErrorCode answer_code(const ClientResult<proto::Response>& answer) {
    return answer.ok() ? error_code_from_wire(answer->code()) : answer.error().code;
}

}  // namespace

std::optional<Error> SessionKeeper::begin_open() {
    if (opening_ || (state_ && !state_->ended)) {
        return Error{ErrorCode::kInvalidArgument,
                     "this client already has a session: close it first (one session per client)"};
    }
    opening_ = true;
    return std::nullopt;
}

void SessionKeeper::end_open(const ClientResult<proto::Response>& answer,
                             std::chrono::milliseconds requested_timeout,
                             std::chrono::milliseconds margin,
                             SteadyTime submitted) {
    RL_ASSERT(opening_);
    opening_ = false;
    if (answer_code(answer) != ErrorCode::kOk) {
        return;
    }
    const proto::OpenSessionResult& opened = answer->open_session();
    // The server's word on the timeout wins; a margin that no longer fits falls back to the
    // default for that timeout.
    const std::chrono::milliseconds timeout = opened.timeout_ms() > 0
                                                  ? std::chrono::milliseconds(opened.timeout_ms())
                                                  : requested_timeout;
    if (margin >= timeout) {
        margin = default_safety_margin(timeout);
    }
    state_.emplace(State{opened.session_id(), SafeUntil(timeout, margin), SeqTracker(1)});
    state_->auto_keepalive = true;
    // The leader started the session after we submitted the open: the open is the first keepalive.
    state_->safe->on_acknowledged(submitted);
    publish();
    schedule_keepalive();
    arm_safe_timer();
    core_.ensure_connection();
}

std::optional<Error> SessionKeeper::attach(SessionId id, uint64_t first_seq) {
    if (opening_ || (state_ && !state_->ended)) {
        return Error{ErrorCode::kInvalidArgument, "this client already has a session"};
    }
    if (id == 0 || first_seq == 0) {
        return Error{ErrorCode::kInvalidArgument, "session id and first seq must be > 0"};
    }
    state_.emplace(State{id, std::nullopt, SeqTracker(first_seq)});
    publish();
    return std::nullopt;
}

std::optional<Error> SessionKeeper::prepare_session_read(proto::Request& request) {
    if (!state_) {
        return Error{ErrorCode::kNoSession, "no session: open one first (open_session)"};
    }
    if (state_->ended) {
        return Error{ErrorCode::kSessionLost,
                     fmt::format("session {} has ended (its locks and ephemeral nodes are gone): "
                                 "open a new session",
                                 state_->id)};
    }
    request.set_session_id(state_->id);
    return std::nullopt;
}

std::optional<Error> SessionKeeper::prepare_write(proto::Request& request) {
    if (auto error = prepare_session_read(request)) {
        return error;
    }
    if (!state_->seqs.can_allocate()) {
        return Error{ErrorCode::kTooManyPending,
                     fmt::format("{} writes of session {} are unanswered; wait for some",
                                 kSeqWindowMax, state_->id)};
    }
    request.set_seq(state_->seqs.allocate());
    if (request.has_close_session()) {
        state_->closing = true;
    }
    return std::nullopt;
}

void SessionKeeper::before_send(proto::Request& request) const {
    if (!state_ || request.seq() == 0 || request.session_id() != state_->id) {
        return;
    }
    request.set_ack_seq(state_->seqs.ack_seq());
    RL_ASSERT(request.ack_seq() < request.seq());
}

void SessionKeeper::on_answer(const proto::Request& request,
                              const ClientResult<proto::Response>& answer) {
    if (!state_ || request.session_id() != state_->id) {
        return;
    }
    if (request.seq() != 0) {
        // Answered, or abandoned at the caller's deadline: either way never sent again.
        state_->seqs.settle(request.seq());
    }
    const ErrorCode code = answer_code(answer);
    if (request.has_close_session()) {
        // A retried close is answered SESSION_EXPIRED once the first one was applied.
        if (code == ErrorCode::kOk || code == ErrorCode::kSessionExpired) {
            if (!state_->ended) {  // a SessionEnded push may have come first
                end(SessionLoss::kClosed, false);
            }
        } else {
            state_->closing = false;
        }
        return;
    }
    if (code == ErrorCode::kSessionExpired && !state_->ended) {
        end(SessionLoss::kExpired, true);
    }
}

void SessionKeeper::on_session_ended(const proto::SessionEnded& ended) {
    if (!state_ || state_->ended || ended.session_id() != state_->id) {
        return;
    }
    end(ended.expired() ? SessionLoss::kExpired : SessionLoss::kClosed, !state_->closing);
}

void SessionKeeper::on_connected() {
    // A new connection may be to a node that never heard of us: a keepalive tells it at once and
    // moves safe-until forward after a failover.
    if (state_ && !state_->ended && state_->auto_keepalive && state_->keepalives_in_flight == 0) {
        send_keepalive(nullptr);
    }
}

bool SessionKeeper::wants_connection() const {
    return state_ && !state_->ended && state_->auto_keepalive;
}

void SessionKeeper::keep_alive_now(Completion done) {
    proto::Request probe;
    if (auto error = prepare_session_read(probe)) {
        done(*error);
        return;
    }
    send_keepalive(std::move(done));
}

void SessionKeeper::schedule_keepalive() {
    RL_ASSERT(state_ && state_->safe);
    state_->keepalive_timer = core_.after(keepalive_interval(state_->safe->timeout()), [this] {
        state_->keepalive_timer = 0;
        if (state_->ended) {
            return;
        }
        // One automatic keepalive at a time: a slow one still counts when it is answered.
        if (state_->keepalives_in_flight == 0) {
            send_keepalive(nullptr);
        }
        schedule_keepalive();
    });
}

void SessionKeeper::send_keepalive(Completion user_done) {
    RL_ASSERT(state_ && !state_->ended);
    const bool automatic = !user_done;
    const SessionId id = state_->id;
    const SteadyTime submitted = core_.now();
    PendingRequest pending;
    pending.request.set_session_id(id);
    pending.request.mutable_keep_alive();
    pending.request_class = RequestClass::kKeepAlive;
    // An automatic keepalive gives way to the next one; the user's waits as long as any call.
    pending.deadline = submitted + (automatic ? keepalive_interval(state_->safe->timeout())
                                              : core_.options().request_timeout);
    pending.done = [this, id, submitted, automatic,
                    user_done = std::move(user_done)](ClientResult<proto::Response> answer) {
        on_keepalive_answer(id, submitted, automatic, answer);
        if (user_done) {
            user_done(std::move(answer));
        }
    };
    if (automatic) {
        state_->keepalives_in_flight++;
    }
    core_.submit(std::move(pending));
}

void SessionKeeper::on_keepalive_answer(SessionId id,
                                        SteadyTime submitted,
                                        bool automatic,
                                        const ClientResult<proto::Response>& answer) {
    if (!state_ || state_->id != id) {
        return;
    }
    if (automatic) {
        RL_ASSERT(state_->keepalives_in_flight > 0);
        state_->keepalives_in_flight--;
    }
    if (state_->ended) {
        return;
    }
    const ErrorCode code = answer_code(answer);
    if (code == ErrorCode::kSessionExpired) {
        end(SessionLoss::kExpired, true);
        return;
    }
    // An automatic keepalive unanswered for a keepalive interval, on a connection that said
    // nothing since it was sent: the node is stopped or cut off. Waiting for the request timeout
    // there would outlast a short session; the next node gets the next keepalive at once (on
    // connecting), well before safe-until (an interval before it, with the default margin).
    if (automatic && code == ErrorCode::kTimeout) {
        core_.fail_over_if_silent_since(submitted, "a keepalive went unanswered");
        return;
    }
    if (code != ErrorCode::kOk || !state_->safe) {
        return;
    }
    state_->safe->on_acknowledged(submitted);
    // A late acknowledgement whose deadline has passed too leaves the jeopardy to the timer, which
    // then reports it (if it has not yet).
    if (!state_->safe->passed(core_.now())) {
        state_->in_jeopardy = false;
    }
    publish();
    arm_safe_timer();
}

void SessionKeeper::arm_safe_timer() {
    RL_ASSERT(state_ && state_->safe);
    if (state_->safe_timer != 0) {
        core_.cancel_timer(state_->safe_timer);
        state_->safe_timer = 0;
    }
    if (state_->in_jeopardy) {
        return;  // already reported; the next acknowledgement re-arms
    }
    const auto deadline = state_->safe->deadline();
    RL_ASSERT(deadline.has_value());
    state_->safe_timer = core_.after(ceil_ms(*deadline - core_.now()), [this] {
        state_->safe_timer = 0;
        on_safe_timer();
    });
}

void SessionKeeper::on_safe_timer() {
    if (state_->ended || state_->in_jeopardy) {
        return;
    }
    if (!state_->safe->passed(core_.now())) {
        arm_safe_timer();
        return;
    }
    state_->in_jeopardy = true;
    notify(SessionLoss::kSafeUntilPassed);
}

void SessionKeeper::end(SessionLoss loss, bool notify_user) {
    RL_ASSERT(state_ && !state_->ended);
    state_->ended = true;
    core_.cancel_timer(state_->keepalive_timer);
    core_.cancel_timer(state_->safe_timer);
    state_->keepalive_timer = 0;
    state_->safe_timer = 0;
    publish();
    if (notify_user) {
        notify(loss);
    }
}

void SessionKeeper::notify(SessionLoss loss) {
    if (callback_) {
        callback_(loss);
    }
}

void SessionKeeper::publish() {
    std::lock_guard lock(published_mu_);
    if (!state_ || state_->ended) {
        published_id_.reset();
        published_safe_until_.reset();
        return;
    }
    published_id_ = state_->id;
    published_safe_until_.reset();
    if (state_->safe) {
        published_safe_until_ = state_->safe->deadline();
    }
}

std::optional<SessionId> SessionKeeper::id() const {
    std::lock_guard lock(published_mu_);
    return published_id_;
}

std::optional<SteadyTime> SessionKeeper::safe_until() const {
    std::lock_guard lock(published_mu_);
    return published_safe_until_;
}

}  // namespace raftlock::client
