#include "statemachine/state_machine.h"

#include <string_view>
#include <type_traits>

#include "base/assert.h"
#include "statemachine/codec.h"

namespace raftlock::statemachine {

namespace {

// A Redis write (or transaction) whose (origin, seq) the keyspace applied already.
constexpr std::string_view kRedisOvertaken =
    "TRYAGAIN raftlock: this write was overtaken by a later one from the same server and was not "
    "applied; retry it";

}  // namespace

StateMachine::StateMachine(Config config) : config_(config) {
    RL_ASSERT(config_.session_timeout_ms_min > 0);
    RL_ASSERT(config_.session_timeout_ms_min <= config_.session_timeout_ms_max);
    RL_ASSERT(config_.sessions_max > 0);
    // The root exists from the start, as in ZooKeeper; it is never deleted (delete "/" is invalid).
    nodes_.emplace("/", Node{});
}

ApplyResult StateMachine::apply(Index index, std::string_view command_bytes) {
    RL_ASSERT(index > last_applied_);
    if (command_bytes.empty()) {
        last_applied_ = index;
        ApplyResult out;
        out.index = index;
        return out;
    }
    Result<Command, ErrorCode> decoded = decode_command(command_bytes);
    if (!decoded.ok()) {
        // A malformed entry is applied as "nothing" on every replica alike: the bytes are the same
        // everywhere, so the outcome is too.
        last_applied_ = index;
        ApplyResult out;
        out.index = index;
        out.response.code = decoded.error();
        return out;
    }
    // The first byte is the format version: decode_command accepted it.
    return apply_command(index, decoded.value(), static_cast<uint8_t>(command_bytes[0]));
}

ApplyResult StateMachine::apply_command(Index index, const Command& command, uint8_t format) {
    RL_ASSERT(format >= kCommandFormatVersionV1 && format <= kCommandFormatVersion);
    RL_ASSERT(index > last_applied_);
    last_applied_ = index;
    format_ = format;
    ApplyResult out;
    out.index = index;
    out.client_id = command.client_id;
    out.seq = command.seq;
    // Commands that did not come through decode_command get the same checks here.
    if (validate_command(command) != ErrorCode::kOk) {
        out.response.code = ErrorCode::kBadArguments;
        return out;
    }
    advance_time(command.time_ms, index, out);
    if (std::optional<Response> refused = identity_refusal(command)) {
        in_protocol_terms(command.op, *refused);
        out.response = std::move(*refused);
        return out;
    }
    if (command.client_id == kNoSession) {
        std::optional<Response> refused = op_refusal(command);
        if (refused) {
            in_protocol_terms(command.op, *refused);
        }
        out.response = refused ? std::move(*refused) : dispatch(kNoSession, command, index, out);
    } else {
        apply_session_request(command, format, index, out);
    }
    return out;
}

void StateMachine::advance_time(TimeMs time_ms, Index zxid, ApplyResult& out) {
    // Leaders' clocks may disagree after a failover; cluster time never goes back.
    if (time_ms > now_ms_) {
        now_ms_ = time_ms;
    }
    keyspace_.advance(zxid, now_ms_, format_);
    sql::EngineEvents sql_events;
    sql_.advance_time(now_ms_, sql_events);
    finish_sql(sql_events, out);
    for (size_t fired = 0; fired < kTimersPerApplyMax; fired++) {
        if (timers_.empty() || timers_.begin()->at_ms > now_ms_) {
            return;
        }
        Timer timer = *timers_.begin();
        timers_.erase(timers_.begin());
        fire_timer(timer, zxid, out);
    }
}

void StateMachine::fire_timer(const Timer& timer, Index zxid, ApplyResult& out) {
    switch (timer.kind) {
        case TimerKind::kWaitDeadline:
            fire_wait_deadline(timer, zxid, out);
            return;
        case TimerKind::kLockDelayEnd:
            fire_lock_delay_end(timer, zxid, out);
            return;
        case TimerKind::kTtl:
            fire_ttl(timer, zxid, out);
            return;
    }
    RL_PANIC("unknown timer kind");
}

void StateMachine::apply_session_request(const Command& command,
                                         uint8_t format,
                                         Index zxid,
                                         ApplyResult& out) {
    auto it = sessions_.find(command.client_id);
    if (it == sessions_.end()) {
        out.response.code = ErrorCode::kSessionExpired;
        return;
    }
    Session& session = it->second;
    if (format >= kCommandFormatVersionV5) {
        if (std::optional<std::string> why = seq_refusal(session, command)) {
            // Not saved, and nothing discarded: the session's numbering stays where it was.
            out.response.code = ErrorCode::kBadArguments;
            out.response.message = std::move(*why);
            return;
        }
    }
    discard_acknowledged(session, command.ack_seq);
    // Exactly-once (Raft thesis §6.3): a retry gets the reply of the first application.
    if (auto saved = session.saved.find(command.seq); saved != session.saved.end()) {
        out.replayed = true;
        out.response = saved->second;
        return;
    }
    if (command.seq <= session.discarded_through_seq) {
        out.response.code = ErrorCode::kResultDiscarded;
        return;
    }
    // A refusal is saved like any reply: a retry of the request gets the same answer.
    std::optional<Response> refused = op_refusal(command);
    if (refused) {
        in_protocol_terms(command.op, *refused);
    }
    out.response = refused ? std::move(*refused) : dispatch(command.client_id, command, zxid, out);
    // CloseSession ended the session: there is nowhere to save its reply, and a retry gets
    // kSessionExpired, as in ZooKeeper.
    if (auto again = sessions_.find(command.client_id); again != sessions_.end()) {
        save_result(again->second, command.seq, out.response);
    }
}

ErrorCode StateMachine::check_fence(const Fence& fence) const {
    auto it = locks_.find(fence.lock);
    if (it == locks_.end()) {
        return ErrorCode::kFenceRejected;
    }
    for (const Holder& holder : it->second.holders) {
        if (holder.token == fence.token) {
            return ErrorCode::kOk;
        }
    }
    return ErrorCode::kFenceRejected;
}

Response StateMachine::dispatch(SessionId session,
                                const Command& command,
                                Index zxid,
                                ApplyResult& out) {
    if (command.fence) {
        if (ErrorCode code = check_fence(*command.fence); code != ErrorCode::kOk) {
            Response response;
            response.code = code;
            return response;
        }
    }
    const Caller* caller = command.caller ? &*command.caller : nullptr;
    return std::visit(
        [&](const auto& op) -> Response {
            using T = std::decay_t<decltype(op)>;
            Response response;
            if constexpr (std::is_same_v<T, OpenSession>) {
                return open_session(op, command.user, zxid);
            } else if constexpr (std::is_same_v<T, KeepAlive>) {
                sessions_.at(session).last_keepalive_ms = now_ms_;
            } else if constexpr (std::is_same_v<T, CloseSession>) {
                end_session(session, SessionEnd::kClosed, zxid, out);
            } else if constexpr (std::is_same_v<T, ExpireSession>) {
                if (!sessions_.contains(op.session)) {
                    response.code = ErrorCode::kSessionExpired;
                } else {
                    end_session(op.session, SessionEnd::kExpired, zxid, out);
                }
            } else if constexpr (std::is_same_v<T, Noop>) {
                // Time moved (advance_time); nothing else to do.
            } else if constexpr (std::is_same_v<T, Create>) {
                return create_node(session, op, caller, zxid, out);
            } else if constexpr (std::is_same_v<T, Delete> || std::is_same_v<T, SetData>) {
                return apply_single_write(command.op, caller, zxid, out);
            } else if constexpr (std::is_same_v<T, Multi>) {
                return apply_multi(session, op, caller, zxid, out);
            } else if constexpr (std::is_same_v<T, SetAcl>) {
                return set_acl(op, caller);
            } else if constexpr (std::is_same_v<T, Acquire>) {
                return acquire(session, op, zxid);
            } else if constexpr (std::is_same_v<T, Release>) {
                return release(session, op, zxid, out);
            } else if constexpr (std::is_same_v<T, Cancel>) {
                return cancel(session, op, zxid, out);
            } else if constexpr (std::is_same_v<T, ForceRelease>) {
                return force_release(op, zxid, out);
            } else if constexpr (std::is_same_v<T, AcquireMany>) {
                return acquire_many(session, op, zxid);
            } else if constexpr (std::is_same_v<T, SqlStatement>) {
                return sql_statement(session, command.seq, op, out);
            } else if constexpr (std::is_same_v<T, SqlCancel>) {
                sql::EngineEvents events;
                sql_.cancel(op.session, now_ms_, events);
                finish_sql(events, out);
            } else if constexpr (std::is_same_v<T, AttachSession>) {
                return attach_session(op);
            } else if constexpr (std::is_same_v<T, UserChange> || std::is_same_v<T, RoleChange> ||
                                 std::is_same_v<T, AuthEnable> ||
                                 std::is_same_v<T, AuthBootstrap>) {
                return apply_auth_change(command);
            } else if constexpr (std::is_same_v<T, RedisTransaction>) {
                if (!keyspace_.admit(op.origin, command.seq, zxid)) {
                    response.redis = redis::Value::error(std::string(kRedisOvertaken));
                } else {
                    response.redis = keyspace_.exec(op.transaction, now_ms_,
                                                    op.script_instructions_max, format_);
                    out.published = keyspace_.take_published();
                }
            } else {
                static_assert(std::is_same_v<T, RedisCommand>);
                if (!keyspace_.admit(op.origin, command.seq, zxid)) {
                    // A resubmitted copy of a write that applied already, or one a later write
                    // from the same server overtook: either way it must not apply now.
                    response.redis = redis::Value::error(std::string(kRedisOvertaken));
                } else {
                    response.redis = keyspace_.apply(op.argv, now_ms_,
                                                     op.script_instructions_max != 0
                                                         ? op.script_instructions_max
                                                         : kScriptInstructionsUnstamped,
                                                     format_);
                    out.published = keyspace_.take_published();
                }
            }
            return response;
        },
        command.op);
}

Response StateMachine::sql_statement(SessionId session,
                                     uint64_t seq,
                                     const SqlStatement& op,
                                     ApplyResult& out) {
    Response response;
    sql::EngineEvents events;
    std::optional<sql::StatementResult> result =
        sql_.execute(session, seq, op.request, now_ms_, events);
    if (result) {
        response.sql = std::move(*result);
    } else {
        response.sql_waiting = true;
    }
    finish_sql(events, out);
    return response;
}

// Statements that waited and finished now: reported for the servers to answer, and saved in place
// of their "waiting" replies, so that a retry of one gets its result.
void StateMachine::finish_sql(sql::EngineEvents& events, ApplyResult& out) {
    for (sql::StatementDone& done : events.done) {
        if (auto s = sessions_.find(done.session); s != sessions_.end()) {
            if (auto saved = s->second.saved.find(done.ticket); saved != s->second.saved.end()) {
                saved->second.sql_waiting = false;
                saved->second.sql = done.result;
            }
        }
        out.sql_done.push_back(std::move(done));
    }
}

}  // namespace raftlock::statemachine
