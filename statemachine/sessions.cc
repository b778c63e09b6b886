// Sessions: open, close, expiry, and the saved replies of exactly-once requests.

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine {

Response StateMachine::open_session(const OpenSession& op, const std::string& owner, Index zxid) {
    Response response;
    if (op.timeout_ms < config_.session_timeout_ms_min ||
        op.timeout_ms > config_.session_timeout_ms_max) {
        response.code = ErrorCode::kBadArguments;
        return response;
    }
    if (sessions_.size() >= config_.sessions_max) {
        response.code = ErrorCode::kLimitExceeded;
        return response;
    }
    // The id is the entry's index: unique, never reused, and the same on every replica.
    RL_ASSERT(zxid > 0 && !sessions_.contains(zxid));
    Session session;
    session.timeout_ms = op.timeout_ms;
    session.last_keepalive_ms = now_ms_;
    session.owner = owner;
    sessions_.emplace(zxid, std::move(session));
    RL_ASSERT(sessions_.size() <= config_.sessions_max);
    response.session = zxid;
    return response;
}

Response StateMachine::attach_session(const AttachSession& op) {
    Response response;
    auto it = sessions_.find(op.session);
    if (it == sessions_.end()) {
        response.code = ErrorCode::kSessionExpired;
        return response;
    }
    Session& session = it->second;
    const uint64_t highest = highest_seq_used(session);
    // Also what makes a second copy of the same attach harmless: by the time it applies, the
    // first has raised the discarded prefix to first_seq - 1, so it is refused here.
    if (op.first_seq <= highest || op.first_seq - highest <= kAttachSeqGap) {
        response.code = ErrorCode::kResultDiscarded;
        return response;
    }
    // Every earlier write of the session is refused from now on, applied or not (its saved reply
    // goes too: the connection that could retry it is gone).
    discard_acknowledged(session, op.first_seq - 1);
    RL_ASSERT(session.saved.empty());
    RL_ASSERT(session.discarded_through_seq == op.first_seq - 1);
    return response;
}

std::optional<std::string> StateMachine::seq_refusal(const Session& session,
                                                     const Command& command) {
    // validate_command: a session's request is numbered, and acknowledges only earlier ones. So
    // bounding the seq bounds how far its ack_seq can move the discarded prefix too.
    RL_ASSERT(command.seq > 0);
    RL_ASSERT(command.ack_seq < command.seq);
    const uint64_t highest = highest_seq_used(session);
    if (command.seq > highest && command.seq - highest > kSeqAheadMax) {
        return fmt::format(
            "seq {} is more than {} beyond the highest this session used ({}): "
            "refused, not remembered",
            command.seq, kSeqAheadMax, highest);
    }
    return std::nullopt;
}

uint64_t StateMachine::highest_seq_used(const Session& session) {
    const uint64_t saved = session.saved.empty() ? 0 : session.saved.rbegin()->first;
    return std::max(saved, session.discarded_through_seq);
}

void StateMachine::end_session(SessionId id, SessionEnd reason, Index zxid, ApplyResult& out) {
    RL_ASSERT(sessions_.contains(id));
    // Locks first: the waiters they hand off to must not see this session's ephemeral nodes
    // disappear "before" the grant in any order the outputs could suggest; both happen in this
    // one entry anyway.
    release_session_locks(id, reason, zxid, out);
    sql::EngineEvents sql_events;
    sql_.end_session(id, now_ms_, sql_events);
    finish_sql(sql_events, out);
    std::vector<Timer> timers;
    TreeCtx ctx{zxid, &out.triggers, nullptr, &timers};
    // Copy: remove_node erases from the session's set while we walk it.
    const std::set<std::string> ephemerals = sessions_.at(id).ephemerals;
    for (const std::string& path : ephemerals) {
        remove_node(path, ctx);
    }
    RL_ASSERT(timers.empty());
    RL_ASSERT(sessions_.at(id).ephemerals.empty());
    RL_ASSERT(sessions_.at(id).locks.empty());
    sessions_.erase(id);
    out.sessions_ended.push_back(SessionEnded{id, reason});
}

void StateMachine::discard_acknowledged(Session& session, uint64_t ack_seq) {
    if (ack_seq <= session.discarded_through_seq) {
        return;
    }
    session.saved.erase(session.saved.begin(), session.saved.upper_bound(ack_seq));
    session.discarded_through_seq = ack_seq;
    // Every reply the client acknowledged is gone; the ones it may still retry are kept.
    RL_ASSERT(session.saved.empty() || session.saved.begin()->first > ack_seq);
}

void StateMachine::save_result(Session& session, uint64_t seq, const Response& response) {
    RL_ASSERT(seq > session.discarded_through_seq);
    session.saved.emplace(seq, response);
    // A client that never acknowledges cannot grow our memory: the oldest reply goes, and a retry
    // of it gets kResultDiscarded rather than a second application.
    if (session.saved.size() > kSavedResultsPerSessionMax) {
        auto oldest = session.saved.begin();
        if (oldest->first > session.discarded_through_seq) {
            session.discarded_through_seq = oldest->first;
        }
        session.saved.erase(oldest);
    }
    RL_ASSERT(session.saved.size() <= kSavedResultsPerSessionMax);
}

}  // namespace raftlock::statemachine
