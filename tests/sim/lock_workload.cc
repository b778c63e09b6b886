#include "tests/sim/lock_workload.h"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::sim {

namespace sm = raftlock::statemachine;

namespace {

// --- the leader's session tracking ---
// An expiry proposal can be lost with a leader change: offer it again after this long (the
// server uses max(2 election timeouts, 1 s)).
constexpr int64_t kExpiryRetryMs = 1000;
constexpr size_t kExpiriesPerTickMax = 16;
// A Noop at most every two ticks, as the server does.
constexpr int64_t kNoopIntervalMs = 20;

// --- the clients ---
constexpr uint64_t kPollUs = 25'000;
constexpr uint32_t kMaxAttempts = 3;
constexpr uint64_t kAttemptTimeoutUs = 400'000;
constexpr uint64_t kRetryDelayUs = 30'000;
constexpr uint64_t kThinkTimeMaxUs = 100'000;
constexpr uint64_t kHoldTimeMaxUs = 400'000;
// A queued client sends a Cancel when its wait has not ended this long after its deadline.
constexpr uint64_t kWaitSlackUs = 2'000'000;
constexpr size_t kMaxHistory = 1 << 20;
const char* const kExclusiveLocks[] = {"x0", "x1"};
const char* const kMixedLock = "s0";

}  // namespace

std::vector<sm::Command> LeaderSessions::on_leader_tick(uint32_t incarnation,
                                                        raft::Term term,
                                                        const sm::StateMachine& sm,
                                                        int64_t now_ms) {
    const bool fresh = incarnation != incarnation_ || term != term_;
    if (fresh) {
        // A new leadership: every session gets a full timeout from now (no session dies
        // because of a failover).
        incarnation_ = incarnation;
        term_ = term;
        sessions_.clear();
        last_noop_ms_ = INT64_MIN / 2;
    }
    // Follow the applied sessions (when something was applied since): new ones get a full
    // timeout, ended ones go.
    if (fresh || sm.last_applied() != synced_applied_) {
        synced_applied_ = sm.last_applied();
        std::map<sm::SessionId, Tracked> tracked;
        for (const sm::SessionInfo& s : sm.sessions()) {
            auto it = sessions_.find(s.id);
            tracked[s.id] = it != sessions_.end() ? it->second
                                                  : Tracked{s.timeout_ms, now_ms + s.timeout_ms,
                                                            now_ms + s.timeout_ms};
        }
        sessions_ = std::move(tracked);
    }
    std::vector<sm::Command> out;
    for (auto& [id, t] : sessions_) {
        if (out.size() < kExpiriesPerTickMax && now_ms >= t.deadline_ms && now_ms >= t.due_ms) {
            out.push_back(sm::Command{.op = sm::ExpireSession{id}});
            t.due_ms = now_ms + kExpiryRetryMs;
        }
    }
    const std::optional<sm::TimeMs> timer = sm.next_timer_ms();
    if (timer && now_ms >= *timer && now_ms - last_noop_ms_ >= kNoopIntervalMs) {
        out.push_back(sm::Command{.op = sm::Noop{}});
        last_noop_ms_ = now_ms;
    }
    return out;
}

void LeaderSessions::keepalive(uint32_t incarnation,
                               raft::Term term,
                               sm::SessionId session,
                               int64_t now_ms) {
    if (incarnation != incarnation_ || term != term_) {
        return;  // not tracking for this leadership yet: its first tick starts every session
    }
    auto it = sessions_.find(session);
    // Past its deadline an expiry may be in the log already, so the session is not renewed.
    if (it != sessions_.end() && now_ms < it->second.deadline_ms) {
        it->second.deadline_ms = now_ms + it->second.timeout_ms;
        it->second.due_ms = it->second.deadline_ms;
    }
}

LockWorkload::LockWorkload(uint64_t seed, uint32_t clients, LockAccess& cluster, Trace& trace)
    : rng_(seed), cluster_(cluster), trace_(trace), next_process_(clients) {
    for (uint32_t i = 0; i < clients; ++i) {
        clients_.push_back(Client{.id = i + 1, .process = i});
    }
}

void LockWorkload::start() {
    for (Client& c : clients_) {
        cluster_.wake_lock_client(c.id, cluster_.now_us() + rng_.uniform(kPollUs));
    }
}

void LockWorkload::on_wake(uint32_t client) {
    RL_ASSERT(client >= 1 && client <= clients_.size());
    Client& c = clients_[client - 1];
    poll(c);
    cluster_.wake_lock_client(c.id, cluster_.now_us() + kPollUs);
}

bool LockWorkload::awaits_reply(Stage stage) {
    return stage == Stage::kOpening || stage == Stage::kAcquiring || stage == Stage::kReleasing ||
           stage == Stage::kFencing || stage == Stage::kCancelling || stage == Stage::kClosing;
}

void LockWorkload::poll(Client& c) {
    const uint64_t now = cluster_.now_us();
    if (c.session != sm::kNoSession && c.stage != Stage::kLapsed && now >= c.next_keepalive_us) {
        const raft::NodeId node = cluster_.pick_node(rng_);
        if (node != raft::kNoNode) {
            cluster_.keepalive(node, c.session);
        }
        c.next_keepalive_us = now + static_cast<uint64_t>(c.timeout_ms) * 1000 / 4;
    }
    if (awaits_reply(c.stage)) {
        if (now >= c.attempt_deadline_us) {
            c.attempts >= kMaxAttempts ? give_up(c) : attempt(c);
        }
        return;
    }
    if (c.stage == Stage::kWaiting && now >= c.give_up_wait_us) {
        c.stage = Stage::kCancelling;
        send(c, sm::Cancel{c.lock, ""});
    } else if ((c.stage == Stage::kNoSession || c.stage == Stage::kReady ||
                c.stage == Stage::kHolding) &&
               now >= c.next_action_us) {
        next_action(c);
    }
    // Requests go out from here only: a reply arrives while a node applies entries, and
    // proposing from inside that would re-enter the node's Ready loop.
    if (awaits_reply(c.stage) && c.attempts == 0) {
        attempt(c);
    }
}

void LockWorkload::next_action(Client& c) {
    if (c.stage == Stage::kNoSession) {
        const int64_t timeouts_ms[] = {1000, 1500, 2500};
        c.timeout_ms = timeouts_ms[rng_.uniform(3)];
        c.nonce = (uint64_t{c.id} << 32) | ((c.nonce + 1) & 0xffffffff);  // unique per client
        c.stage = Stage::kOpening;
        c.request = sm::Command{.seq = c.nonce, .op = sm::OpenSession{c.timeout_ms}};
        c.attempts = 0;
    } else if (c.stage == Stage::kReady) {
        if (rng_.chance(1, 25)) {
            c.stage = Stage::kClosing;
            send(c, sm::CloseSession{});
        } else {
            start_acquire(c);
        }
    } else {
        RL_ASSERT(c.stage == Stage::kHolding);
        after_hold(c);
    }
}

void LockWorkload::start_acquire(Client& c) {
    const bool exclusive_lock = rng_.chance(7, 10);
    c.lock = exclusive_lock ? kExclusiveLocks[rng_.uniform(2)] : kMixedLock;
    c.mode = exclusive_lock || rng_.chance(2, 5) ? sm::LockMode::kExclusive : sm::LockMode::kShared;
    const sm::TimeMs wait_ms = rng_.chance(3, 10) ? 0 : 100 + rng_.uniform(1400);
    const sm::TimeMs delay_ms = rng_.chance(1, 4) ? 100 + rng_.uniform(400) : 0;
    c.stage = Stage::kAcquiring;
    c.give_up_wait_us = cluster_.now_us() + static_cast<uint64_t>(wait_ms) * 1000 + kWaitSlackUs;
    if (in_history(c)) {
        begin_op(c, "acquire", "null");
    }
    send(c, sm::Acquire{
                .name = c.lock, .mode = c.mode, .wait_ms = wait_ms, .lock_delay_ms = delay_ms});
}

void LockWorkload::after_hold(Client& c) {
    const uint64_t dice = rng_.uniform(100);
    if (dice < 6) {
        // Stop keeping the session alive: the leader expires it, which releases the lock.
        trace_.log("lock client {}: lets session {} lapse while holding {}", c.id, c.session,
                   c.lock);
        c.stage = Stage::kLapsed;
    } else if (dice < 25) {
        c.stage = Stage::kFencing;
        c.stale_fence = false;
        if (in_history(c)) {
            begin_op(c, "fenced-write", fmt::format("[{},\"w\"]", c.token));
        }
        send(c, sm::SetData{"/", fmt::format("{}", c.token), -1}, sm::Fence{c.lock, c.token});
    } else {
        c.stage = Stage::kReleasing;
        if (in_history(c)) {
            begin_op(c, "release", fmt::format("{}", c.token));
        }
        send(c, sm::Release{c.lock, "", c.token});
    }
}

void LockWorkload::send(Client& c, sm::Op op, std::optional<sm::Fence> fence) {
    RL_ASSERT(c.session != sm::kNoSession);
    c.request = sm::Command{.client_id = c.session,
                            .seq = ++c.seq,
                            .ack_seq = c.acked,
                            .fence = std::move(fence),
                            .op = std::move(op)};
    c.attempts = 0;  // poll() sends it
    c.attempt_deadline_us = 0;
}

void LockWorkload::attempt(Client& c) {
    const raft::NodeId node = cluster_.pick_node(rng_);
    const bool proposed = node != raft::kNoNode && cluster_.propose_lock(node, c.request).ok();
    // Only an attempt that reached a log counts: a refused one (no leader known) cannot take
    // effect, so the client simply tries again soon.
    c.attempts += proposed ? 1 : 0;
    c.attempt_deadline_us = cluster_.now_us() + (proposed ? kAttemptTimeoutUs : kRetryDelayUs);
}

void LockWorkload::give_up(Client& c) {
    // The request may still be in some log and take effect later: unknown. Any hold it may
    // have left ends with the session, which the client therefore abandons.
    trace_.log("lock client {}: gives up on {} of session {}", c.id, sm::to_string(c.request),
               c.session);
    if (c.stage == Stage::kReleasing) {
        for (KnownHold& h : known_holds_[c.session]) {
            h.release_unknown = h.release_unknown || h.token == c.token;
        }
    }
    if (!c.history_f.empty()) {
        finish_op(c, "info", c.history_value);
    }
    ++stats_.info;
    abandon_session(c);
}

void LockWorkload::abandon_session(Client& c) {
    c.session = sm::kNoSession;
    c.stage = Stage::kNoSession;
    c.token = 0;
    c.wait_open = false;
    c.next_action_us = cluster_.now_us() + rng_.uniform(kThinkTimeMaxUs);
}

LockWorkload::Client* LockWorkload::client_of(sm::SessionId session) {
    for (Client& c : clients_) {
        if (session != sm::kNoSession && c.session == session) {
            return &c;
        }
    }
    return nullptr;
}

void LockWorkload::on_result(const sm::ApplyResult& result) {
    if (result.client_id == sm::kNoSession) {
        for (Client& c : clients_) {
            if (c.stage == Stage::kOpening && result.seq == c.nonce &&
                std::holds_alternative<sm::OpenSession>(c.request.op)) {
                if (result.response.code == sm::ErrorCode::kOk) {
                    c.session = result.response.session;
                    c.seq = 0;
                    c.acked = 0;
                    c.stage = Stage::kReady;
                    c.next_keepalive_us = cluster_.now_us();
                    ++stats_.sessions_opened;
                } else {
                    c.stage = Stage::kNoSession;
                }
            }
        }
    } else if (Client* c = client_of(result.client_id);
               c != nullptr && c->request.seq == result.seq && c->stage != Stage::kWaiting &&
               c->stage != Stage::kHolding && c->stage != Stage::kReady &&
               c->stage != Stage::kLapsed) {
        c->acked = std::max(c->acked, result.seq);
        on_reply(*c, result);
    }
    on_pushes(result);
}

void LockWorkload::on_reply(Client& c, const sm::ApplyResult& result) {
    const sm::Response& r = result.response;
    c.next_action_us = cluster_.now_us() + rng_.uniform(kThinkTimeMaxUs);
    if (c.stage == Stage::kAcquiring) {
        on_acquire_reply(c, r);
    } else {
        on_other_reply(c, r);
    }
}

void LockWorkload::on_acquire_reply(Client& c, const sm::Response& r) {
    if (r.lock == sm::LockOutcome::kGranted) {
        granted(c, r.token);
    } else if (r.lock == sm::LockOutcome::kQueued) {
        c.stage = Stage::kWaiting;
        c.wait_open = true;
    } else {
        if (!c.history_f.empty()) {
            finish_op(c, "fail", "null");
        }
        ++stats_.fail;
        c.stage = Stage::kReady;
    }
}

void LockWorkload::on_other_reply(Client& c, const sm::Response& r) {
    const bool ok = r.code == sm::ErrorCode::kOk;
    switch (c.stage) {
        case Stage::kReleasing: {
            std::vector<KnownHold>& holds = known_holds_[c.session];
            std::erase_if(holds, [&](const KnownHold& h) { return h.token == c.token; });
            if (!c.history_f.empty()) {
                finish_op(c, ok ? "ok" : "fail", "null");
            }
            ++(ok ? stats_.ok : stats_.fail);
            c.stage = Stage::kReady;
            if (ok && rng_.chance(1, 5)) {
                // The old token must now be refused by a fenced request.
                c.stage = Stage::kFencing;
                c.stale_fence = true;
                if (in_history(c)) {
                    begin_op(c, "fenced-write", fmt::format("[{},\"late\"]", c.token));
                }
                send(c, sm::SetData{"/", "late", -1}, sm::Fence{c.lock, c.token});
            }
            return;
        }
        case Stage::kFencing:
            if (!c.history_f.empty()) {
                finish_op(c, ok ? "ok" : "fail", "null");
            }
            ++(ok ? stats_.ok : stats_.fail);
            c.stage = c.stale_fence ? Stage::kReady : Stage::kHolding;
            return;
        case Stage::kCancelling:
            if (c.wait_open) {
                // The wait was still open when the cancel applied: granted or cancelled.
                c.wait_open = false;
                if (r.lock == sm::LockOutcome::kGranted) {
                    granted(c, r.token);
                    return;
                }
                if (!c.history_f.empty()) {
                    finish_op(c, "fail", "null");
                }
                ++stats_.fail;
                c.token = 0;
            }
            // Otherwise a grant or a timeout already ended the wait (on_pushes).
            c.stage = c.token != 0 ? Stage::kHolding : Stage::kReady;
            return;
        case Stage::kClosing:
            c.stage = Stage::kReady;  // the session end (same entry) resets the client
            return;
        default:
            RL_PANIC("lock client got a reply in an unexpected stage");
    }
}

void LockWorkload::granted(Client& c, sm::Index token) {
    c.token = token;
    c.stage = Stage::kHolding;
    c.next_action_us = cluster_.now_us() + rng_.uniform(kHoldTimeMaxUs);
    known_holds_[c.session].push_back(KnownHold{c.lock, token});
    if (!c.history_f.empty()) {
        finish_op(c, "ok", fmt::format("{}", token));
    }
    ++stats_.ok;
}

void LockWorkload::on_pushes(const sm::ApplyResult& result) {
    // Session ends first: the holds they released were free before this entry's hand-offs
    // granted them again, and the history must say so in that order.
    for (const sm::SessionEnded& e : result.sessions_ended) {
        on_session_ended(e.session);
    }
    for (const sm::LockGrant& g : result.grants) {
        Client* c = client_of(g.session);
        if (c == nullptr || c->lock != g.name) {
            continue;  // an abandoned session's wait: it ends with the session
        }
        if (c->wait_open && (c->stage == Stage::kWaiting || c->stage == Stage::kCancelling)) {
            // Granted before any cancel applied: a cancel's reply will report it again.
            const Stage stage = c->stage;
            c->wait_open = false;
            granted(*c, g.token);
            c->stage = stage == Stage::kCancelling ? stage : Stage::kHolding;
        }
    }
    for (const sm::WaitTimeout& w : result.wait_timeouts) {
        Client* c = client_of(w.session);
        if (c == nullptr || c->lock != w.name || !c->wait_open) {
            continue;
        }
        if (!c->history_f.empty()) {
            finish_op(*c, "fail", "null");
        }
        ++stats_.fail;
        c->token = 0;
        c->wait_open = false;
        if (c->stage == Stage::kWaiting) {
            c->stage = Stage::kReady;
        }
    }
}

void LockWorkload::on_session_ended(sm::SessionId session) {
    ++stats_.sessions_ended;
    // The holds the clients knew of were released by this entry.
    auto holds = known_holds_.find(session);
    if (holds != known_holds_.end()) {
        for (const KnownHold& h : holds->second) {
            if (h.lock == kMixedLock) {
                continue;
            }
            const uint64_t process = next_process_++;
            const std::string token = fmt::format("{}", h.token);
            record(process, "invoke", "release", h.lock, token);
            record(process, h.release_unknown ? "info" : "ok", "release", h.lock, "null");
        }
        known_holds_.erase(holds);
    }
    Client* c = client_of(session);
    if (c == nullptr) {
        return;
    }
    // Whatever it had outstanding did not happen (requests of an ended session are refused,
    // and an earlier application would have been seen first).
    if (!c->history_f.empty()) {
        finish_op(*c, "fail", "null");
    }
    trace_.log("lock client {}: session {} ended", c->id, session);
    abandon_session(*c);
}

bool LockWorkload::in_history(const Client& c) const {
    return c.lock != kMixedLock;
}

void LockWorkload::begin_op(Client& c, const std::string& f, const std::string& value) {
    RL_ASSERT(c.history_f.empty());
    c.history_f = f;
    c.history_value = value;
    record(c.process, "invoke", f, c.lock, value);
}

void LockWorkload::finish_op(Client& c, const char* type, const std::string& value) {
    RL_ASSERT(!c.history_f.empty());
    record(c.process, type, c.history_f, c.lock, value);
    c.history_f.clear();
    if (std::string_view(type) == "info") {
        c.process = next_process_++;  // Jepsen: after an unknown outcome, a new process
    }
}

void LockWorkload::record(uint64_t process,
                          const char* type,
                          const std::string& f,
                          const std::string& key,
                          const std::string& value) {
    RL_ASSERT(history_.size() < kMaxHistory);
    history_.push_back(HistoryEvent{cluster_.now_us(), process, type, f, key, value});
    if (trace_.enabled()) {
        trace_.log("lock history p{} {} {} {} {}", process, type, f, key, value);
    }
}

std::string LockWorkload::history_jsonl() const {
    std::string out;
    for (size_t i = 0; i < history_.size(); ++i) {
        const HistoryEvent& e = history_[i];
        out += fmt::format(R"({{"index":{},"time_ns":{},"process":{},"type":"{}",)", i,
                           e.time_us * 1000, e.process, e.type);
        out += fmt::format(R"("f":"{}","key":"{}","value":{}}})", e.f, e.key, e.value);
        out += '\n';
    }
    return out;
}

}  // namespace raftlock::sim
