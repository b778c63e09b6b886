// The web console's side of the replica (server/admin_console.h): the live feed, fed as entries
// apply and as the Raft role changes, and the views that need the replica's own state (the
// members as this node sees them, the sessions with the leader's deadlines), and the actions
// (--console-actions: force-release, expiry, leadership transfer), answered as their entries apply.

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "raft/conf_change.h"
#include "raft/text.h"
#include "server/replica.h"
#include "server/request_codec.h"

namespace raftlock::server {

namespace sm = statemachine;

namespace {

// A name in JSON: names are arbitrary bytes, and dump() must not throw on them.
std::string dump(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void Replica::note_console_events(const sm::Command& command, const sm::ApplyResult& result) {
    // The replay at start was seen (and recorded) by the previous run; a retry changed nothing.
    if (result.index <= replayed_through_ || result.replayed) {
        return;
    }
    // A console action waiting for this entry hears how it went.
    for (auto it = console_acts_.begin(); it != console_acts_.end(); ++it) {
        if (it->matches(command)) {
            const ConsoleDone done = std::move(it->done);
            console_acts_.erase(it);
            const sm::Response& r = result.response;
            if (r.code == sm::ErrorCode::kOk) {
                done(200, fmt::format("done at index {}", result.index));
            } else {
                done(409, r.message.empty() ? describe(to_proto(r.code)) : r.message);
            }
            break;
        }
    }
    const int64_t wall_ms = clock_.wall_ms();
    const auto event = [&](ConsoleEventKind kind, std::string lock, uint64_t session,
                           std::string owner, uint64_t token) {
        console_feed_.record(ConsoleEvent{.kind = kind,
                                          .wall_ms = wall_ms,
                                          .cluster_ms = command.time_ms,
                                          .index = result.index,
                                          .lock = std::move(lock),
                                          .session = session,
                                          .owner = std::move(owner),
                                          .token = token});
    };
    const bool ok = result.response.code == sm::ErrorCode::kOk;
    if (std::holds_alternative<sm::OpenSession>(command.op) && ok) {
        event(ConsoleEventKind::kSessionOpen, {}, result.response.session, command.user, 0);
    } else if (const auto* acquire = std::get_if<sm::Acquire>(&command.op); acquire && ok) {
        if (result.response.lock == sm::LockOutcome::kGranted) {
            event(ConsoleEventKind::kGrant, acquire->name, command.client_id, acquire->owner_tag,
                  result.response.token);
        } else if (result.response.lock == sm::LockOutcome::kQueued) {
            event(ConsoleEventKind::kQueued, acquire->name, command.client_id, acquire->owner_tag,
                  0);
        }
    } else if (const auto* many = std::get_if<sm::AcquireMany>(&command.op); many && ok) {
        // A multi-lock: granted or queued on every lock of the set at once.
        const bool granted = result.response.lock == sm::LockOutcome::kGranted;
        for (const sm::LockSpec& spec : many->locks) {
            if (granted || result.response.lock == sm::LockOutcome::kQueued) {
                event(granted ? ConsoleEventKind::kGrant : ConsoleEventKind::kQueued, spec.name,
                      command.client_id, many->owner_tag, granted ? result.response.token : 0);
            }
        }
    } else if (const auto* release = std::get_if<sm::Release>(&command.op);
               release && ok && result.response.lock == sm::LockOutcome::kReleased &&
               result.response.hold_count == 0) {
        event(ConsoleEventKind::kRelease, release->name, command.client_id, release->owner_tag,
              release->token);
    }
    for (const sm::HoldRevoked& revoked : result.holds_revoked) {
        event(ConsoleEventKind::kRevoke, revoked.name, revoked.session, {}, revoked.token);
    }
    for (const sm::LockGrant& grant : result.grants) {
        event(ConsoleEventKind::kGrant, grant.name, grant.session, grant.owner_tag, grant.token);
    }
    for (const sm::WaitTimeout& timeout : result.wait_timeouts) {
        event(ConsoleEventKind::kWaitTimeout, timeout.name, timeout.session, timeout.owner_tag, 0);
    }
    for (const sm::SessionEnded& ended : result.sessions_ended) {
        event(ended.reason == sm::SessionEnd::kExpired ? ConsoleEventKind::kSessionExpiry
                                                       : ConsoleEventKind::kSessionClose,
              {}, ended.session, {}, 0);
    }
}

void Replica::note_console_role(const raft::SoftState& before) {
    const uint64_t term = raw_->status().hard_state.term;
    if (soft_.role == raft::Role::kCandidate && before.role != raft::Role::kCandidate) {
        console_feed_.record(ConsoleEvent{.kind = ConsoleEventKind::kElection,
                                          .wall_ms = clock_.wall_ms(),
                                          .term = term,
                                          .node = config_.node_id});
    }
    if (soft_.leader != before.leader) {
        console_feed_.record(ConsoleEvent{.kind = ConsoleEventKind::kLeaderChange,
                                          .wall_ms = clock_.wall_ms(),
                                          .term = term,
                                          .node = soft_.leader});
    }
}

int64_t Replica::console_cluster_now_ms() const {
    if (sm_.now_ms() != console_time_cluster_ms_) {
        return sm_.now_ms();  // applied since the last tick
    }
    return console_time_cluster_ms_ + (clock_.steady_ms() - console_time_steady_ms_);
}

void Replica::note_console_tick() {
    const int64_t now_ms = clock_.steady_ms();
    if (sm_.now_ms() != console_time_cluster_ms_) {
        console_time_cluster_ms_ = sm_.now_ms();
        console_time_steady_ms_ = now_ms;
    }
    console_feed_.expire(now_ms);
    std::vector<ConsoleAct> late;
    std::erase_if(console_acts_, [&](ConsoleAct& act) {
        if (act.deadline_ms > now_ms) {
            return false;
        }
        late.push_back(std::move(act));
        return true;
    });
    for (ConsoleAct& act : late) {
        act.done(504,
                 "not applied within the request timeout (no leader?); it may still apply: "
                 "see the live feed");
    }
    if (now_ms - console_sampled_ms_ < 1000) {
        return;
    }
    console_sampled_ms_ = now_ms;
    console_history_.sample(
        ConsoleHistory::Counters{.steady_ms = now_ms,
                                 .wall_ms = clock_.wall_ms(),
                                 .commit_count = metrics_.commit_latency.count(),
                                 .commit_sum_us = metrics_.commit_latency.sum_us(),
                                 .fsync_count = metrics_.fsync_latency.count(),
                                 .fsync_sum_us = metrics_.fsync_latency.sum_us(),
                                 .applied_entries = metrics_.applied_entries_total,
                                 .storage_syncs = storage_syncs()});
}

std::string Replica::console_cluster_json() const {
    const raft::NodeStatus st = raw_->status();
    nlohmann::json j;
    j["self"] = nlohmann::json::parse(status_json());
    j["health"] = health();
    j["healthy"] = healthy();
    j["wall_ms"] = clock_.wall_ms();
    // Each member as this node sees it: its own numbers for itself; the leader's progress of
    // the others when this node leads (what "lag" means: log entries not yet acknowledged).
    nlohmann::json members = nlohmann::json::array();
    const auto add = [&](uint64_t id, bool learner) {
        nlohmann::json m{{"id", id}, {"learner", learner}, {"self", id == config_.node_id}};
        if (const auto a = st.conf_state.addresses.find(id); a != st.conf_state.addresses.end()) {
            m["raft_address"] = a->second;
        }
        if (id == config_.node_id) {
            m["role"] = j["self"]["role"];
            m["term"] = st.hard_state.term;
            m["commit"] = st.hard_state.commit;
            m["applied"] = applied_index_;
            m["lag"] = st.hard_state.commit - std::min(applied_index_, st.hard_state.commit);
            m["health"] = health();
        } else {
            m["role"] = id == st.soft_state.leader ? "leader" : (learner ? "learner" : "follower");
        }
        for (const raft::PeerStatus& p : st.peers) {
            if (p.id == id && id != config_.node_id) {
                m["match"] = p.match;
                m["lag"] = st.last_index > p.match ? st.last_index - p.match : 0;
                m["health"] = p.state == raft::ProgressState::kReplicate ? "replicating"
                              : p.state == raft::ProgressState::kSnapshot
                                  ? "receiving a snapshot"
                                  : "probing (unreachable or far behind)";
            }
        }
        members.push_back(std::move(m));
    };
    for (uint64_t id : st.conf_state.voters) {
        add(id, false);
    }
    for (uint64_t id : st.conf_state.learners) {
        add(id, true);
    }
    j["members"] = std::move(members);
    j["view"] = soft_.role == raft::Role::kLeader ? "leader" : "follower";
    return dump(j);
}

std::string Replica::console_sessions_json(size_t limit_max) const {
    struct Row {
        sm::SessionInfo info;
        int64_t left_ms = 0;
        bool tracked = false;  // left_ms from the leader's deadline, not estimated from the log
    };
    std::vector<Row> rows;
    const int64_t now_ms = clock_.steady_ms();
    for (sm::SessionInfo& s : sm_.sessions()) {
        Row row{.info = std::move(s)};
        if (const SessionTracker::Entry* e = is_leader() ? tracker_.find(row.info.id) : nullptr) {
            row.left_ms = e->deadline_ms - now_ms;
            row.tracked = true;
        } else {
            // Keepalives renew a session in the leader's memory, not in the log: only the leader
            // knows how long one has left. Sorted by the last logged one, shown as unknown.
            row.left_ms = row.info.timeout_ms - (sm_.now_ms() - row.info.last_keepalive_ms);
        }
        rows.push_back(std::move(row));
    }
    // The question at 3 a.m. is which session goes next: soonest first.
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row& a, const Row& b) { return a.left_ms < b.left_ms; });
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < rows.size() && i < limit_max; ++i) {
        const Row& r = rows[i];
        list.push_back({{"id", r.info.id},
                        {"owner", r.info.owner},
                        {"timeout_ms", r.info.timeout_ms},
                        {"last_keepalive_cluster_ms", r.info.last_keepalive_ms},
                        {"time_left_ms", r.tracked ? nlohmann::json(r.left_ms) : nlohmann::json()},
                        {"time_left_from", r.tracked ? "leader" : "unknown: ask the leader"},
                        {"locks", r.info.locks},
                        {"ephemerals", r.info.ephemerals}});
    }
    nlohmann::json j{{"total", rows.size()},
                     {"more", rows.size() > limit_max ? rows.size() - limit_max : 0},
                     {"cluster_ms", console_cluster_now_ms()},
                     {"leader", soft_.leader},
                     {"sessions", std::move(list)}};
    return dump(j);
}

void Replica::console_force_release(const std::string& user,
                                    const std::string& name,
                                    uint64_t session,
                                    uint64_t token,
                                    ConsoleDone done) {
    if (console_acts_.size() >= kConsoleActsMax) {
        done(503, fmt::format("{} console actions already wait here; retry", kConsoleActsMax));
        return;
    }
    sm::Command command;
    command.op = sm::ForceRelease{name, session, token};
    command.seq = next_nonce_++;  // session-less: the entry is found by this nonce
    command.user = user;
    RL_ASSERT(sm::carries_nonce(command.op));
    if (std::optional<sm::Response> refused = write_refusal(command)) {
        ++metrics_.permission_denied_total;
        done(403, refused->message.empty() ? describe(to_proto(refused->code)) : refused->message);
        return;
    }
    const uint64_t nonce = command.seq;
    if (!add_pending_write(0, 0, command)) {
        done(503, "a write with the same nonce is pending; retry");  // nonces never repeat
        return;
    }
    spdlog::info("console: force-release of {} from session {} (token {}) asked{}", name, session,
                 token, user.empty() ? "" : " by " + user);
    console_acts_.push_back(
        ConsoleAct{.matches =
                       [nonce](const sm::Command& c) {
                           return c.client_id == sm::kNoSession && c.seq == nonce &&
                                  std::holds_alternative<sm::ForceRelease>(c.op);
                       },
                   .done = std::move(done),
                   .deadline_ms = clock_.steady_ms() + config_.request_timeout_ms});
}

void Replica::console_expire_session(uint64_t session, ConsoleDone done) {
    if (!is_leader()) {
        done(409, soft_.leader == raft::kNoNode
                      ? std::string("no leader is known; only the leader expires sessions")
                      : fmt::format("only the leader expires sessions: use node {}'s console",
                                    soft_.leader));
        return;
    }
    if (!sm_.session(session)) {
        done(404, fmt::format("no session {}", session));
        return;
    }
    if (console_acts_.size() >= kConsoleActsMax) {
        done(503, fmt::format("{} console actions already wait here; retry", kConsoleActsMax));
        return;
    }
    sm::Command command;
    command.op = sm::ExpireSession{session};
    if (!propose_command(std::move(command))) {
        done(503, "the leader cannot take proposals now (leadership transfer or overload)");
        return;
    }
    spdlog::info("console: expiry of session {} proposed", session);
    console_acts_.push_back(
        ConsoleAct{.matches =
                       [session](const sm::Command& c) {
                           const auto* expire = std::get_if<sm::ExpireSession>(&c.op);
                           return expire != nullptr && expire->session == session;
                       },
                   .done = std::move(done),
                   .deadline_ms = clock_.steady_ms() + config_.request_timeout_ms});
}

void Replica::console_transfer_leadership(uint64_t to, ConsoleDone done) {
    const raft::ConfState& conf = raw_->conf_state();
    if (!raft::is_voter(conf, to)) {
        done(400, fmt::format("node {} is not a voter, so it cannot lead (members: {})", to,
                              raft::to_string(conf)));
        return;
    }
    if (soft_.leader == to) {
        done(200, fmt::format("node {} leads already", to));
        return;
    }
    if (soft_.leader == raft::kNoNode) {
        done(503, "no leader is known to hand leadership over");
        return;
    }
    spdlog::info("console: leadership transfer to node {} asked (node {} leads)", to, soft_.leader);
    // As TransferLeadership does: a follower's core passes the request on to the leader.
    raw_->transfer_leadership(to);
    schedule_flush();
    done(202, fmt::format("asked node {} to hand leadership to node {}; the live feed shows the "
                          "change",
                          soft_.leader, to));
}

}  // namespace raftlock::server
