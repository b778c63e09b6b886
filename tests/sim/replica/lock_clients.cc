#include "tests/sim/replica/lock_clients.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::sim::replica {

namespace {

constexpr const char* kLock = "the-lock";
// The other lock of a multi-lock: held with kLock, never alone, so the one-holder check on kLock
// covers it too.
constexpr const char* kSecondLock = "second-lock";

}  // namespace

struct LockClient {
    size_t index = 0;
    std::string owner;
    std::string path;
    std::optional<ConnId> conn;

    uint64_t session = 0;
    uint64_t seq = 0;
    uint64_t next_request_id = 1;
    uint64_t safe_base_us = 0;  // send time of the latest acknowledged keepalive or open
    bool created = false;

    // The one operation in flight (keepalives aside), kept for retries with the same seq.
    LockClients::Op op = LockClients::Op::kNone;
    proto::Request request;
    uint64_t op_sent_us = 0;       // this attempt
    uint64_t op_answer_by_us = 0;  // a calm cluster answers this attempt by then
    bool blame = false;            // false: the attempt is over (connection gone, retry due)

    std::map<uint64_t, uint64_t> keepalives;  // request id -> send time

    // An acquire that gives up at cancel_at_us (0: waits its full wait), and the request ids of
    // its attempts. Once abandoned, what the client heard about it, for the Cancel's checks.
    uint64_t cancel_at_us = 0;
    std::vector<uint64_t> acquire_attempts;
    bool acquiring_both = false;  // the acquire in flight (or cancelling) is a multi-lock
    struct Abandoned {
        std::optional<uint64_t> granted_token;  // a grant pushed for it
        bool cancel_said_not_held = false;      // its Cancel answered CANCELLED or NONE
    };
    std::map<uint64_t, std::shared_ptr<Abandoned>> abandoned;  // by attempt request id
    std::shared_ptr<Abandoned> cancelling;  // the one the Cancel in flight is for

    std::optional<uint64_t> token;  // holding, until release or lapse
    bool holds_second = false;      // kSecondLock too, with the same token
    size_t hold = 0;                // index in holds_
    uint64_t hold_until_us = 0;
    bool hold_open = false;  // acting as the holder: from the grant to the release or lapse

    uint64_t acked_writes = 0;
    uint64_t unknown_writes = 0;
};

LockClients::LockClients(World& world, const ClientParams& params)
    : ClientGroup(world, params.clients), params_(params) {
    for (auto& c : clients_) {
        c->owner = fmt::format("c{}", c->index);
        c->path = fmt::format("/c{}", c->index);
    }
}

LockClients::~LockClients() = default;

void LockClients::trace_line(const Client& c, std::string_view what) {
    fmt::print("t={:.6f}s {} (session {}, conn {}{}): {}\n", world_.now_us() / 1e6, c.owner,
               c.session, c.conn.value_or(0),
               c.conn ? fmt::format(" to n{}", world_.node_of(*c.conn)) : "", what);
}

uint64_t LockClients::safe_until_us(const Client& c) const {
    return c.safe_base_us + static_cast<uint64_t>(params_.session_timeout_ms) * 1000;
}

bool LockClients::ensure_conn(Client& c) {
    return c.conn || connect_to_any(c, &World::open);
}

void LockClients::reconnect(Client& c) {
    if (c.conn) {
        by_conn_.erase(*c.conn);
        world_.close(*c.conn);
        c.conn.reset();
    }
    c.keepalives.clear();
}

proto::Request LockClients::base_request(Client& c, bool write) {
    proto::Request r;
    r.set_request_id(c.next_request_id++);
    r.set_session_id(c.session);
    if (write) {
        r.set_seq(++c.seq);
        r.set_ack_seq(c.seq - 1);
    }
    return r;
}

void LockClients::send_op(Client& c, Op op, proto::Request request) {
    c.op = op;
    c.request = std::move(request);
    resend_op(c);
}

void LockClients::resend_op(Client& c) {
    RL_ASSERT(c.op != Op::kNone);
    if (!ensure_conn(c)) {
        wake(c, kBackoffUs);
        return;
    }
    c.request.set_request_id(c.next_request_id++);
    if (c.op == Op::kAcquire) {
        c.acquire_attempts.push_back(c.request.request_id());
    }
    c.op_sent_us = world_.now_us();
    const server::ServerConfig& config = world_.params().config;
    uint64_t answer_us = uint64_t{config.request_timeout_ms} * 1000 + kAnswerSlackUs;
    if (c.op == Op::kAcquire) {
        answer_us += static_cast<uint64_t>(params_.wait_ms) * 1000;
    }
    c.op_answer_by_us = c.op_sent_us + answer_us;
    c.blame = true;
    trace(c, "sends {}", Brief{c.request});
    world_.send(*c.conn, c.request);
    if (c.op == Op::kAcquire && c.cancel_at_us > c.op_sent_us) {
        answer_us = std::min(answer_us, c.cancel_at_us - c.op_sent_us);
    }
    wake(c, answer_us);
}

void LockClients::step(Client& c) {
    check_lapse(c);
    const uint64_t now = world_.now_us();
    if (c.op == Op::kAcquire && c.cancel_at_us != 0 && now >= c.cancel_at_us) {
        // Out of patience: abandon the acquire (its answers are checked, not acted on) and cancel
        // the wait, so the session either certainly does not hold the lock or learns the grant.
        auto abandoned = std::make_shared<Client::Abandoned>();
        for (uint64_t id : c.acquire_attempts) {
            c.abandoned[id] = abandoned;
        }
        c.acquire_attempts.clear();
        c.cancel_at_us = 0;
        c.cancelling = abandoned;
        proto::Request r = base_request(c, true);  // ack_seq covers the abandoned acquire
        r.mutable_cancel()->set_name(kLock);
        r.mutable_cancel()->set_owner_tag(c.owner);
        send_op(c, Op::kCancel, std::move(r));
        return;
    }
    if (c.op != Op::kNone) {
        // Woken with an operation in flight: is its answer overdue?
        if (!overdue(c, c.op_sent_us, c.op_answer_by_us, c.blame, [&] {
                return fmt::format("client {}: request {} (seq {})", c.owner,
                                   c.request.request_id(), c.request.seq());
            })) {
            return;
        }
        ++stats_.retries;
        reconnect(c);
        resend_op(c);
        return;
    }
    if (c.session == 0) {
        if (stopping_) {
            return;
        }
        proto::Request r = base_request(c, false);
        r.mutable_open_session()->set_timeout_ms(params_.session_timeout_ms);
        send_op(c, Op::kOpen, std::move(r));
        return;
    }
    if (!c.created) {
        proto::Request r = base_request(c, true);
        r.mutable_create()->set_path(c.path);
        send_op(c, Op::kCreate, std::move(r));
        return;
    }
    if (c.token) {
        if (!c.hold_open || now >= c.hold_until_us || stopping_) {
            proto::Request r = base_request(c, true);
            r.mutable_release()->set_name(c.holds_second ? kSecondLock : kLock);
            r.mutable_release()->set_owner_tag(c.owner);
            r.mutable_release()->set_token(*c.token);
            if (c.hold_open) {
                end_hold(c, now, false);  // the client stops acting as the holder now
            }
            send_op(c, c.holds_second ? Op::kReleaseSecond : Op::kRelease, std::move(r));
            return;
        }
        proto::Request r = base_request(c, true);
        r.mutable_fence()->set_lock(kLock);
        r.mutable_fence()->set_token(*c.token);
        r.mutable_set_data()->set_path(c.path);
        r.mutable_set_data()->set_data(fmt::format("{}", c.seq));
        r.mutable_set_data()->set_version(-1);
        send_op(c, Op::kWrite, std::move(r));
        return;
    }
    if (stopping_) {
        return;  // its keepalives go on
    }
    proto::Request r = base_request(c, true);
    c.acquiring_both = world_.rng().uniform(1000) < params_.multi_per_mille;
    if (c.acquiring_both) {
        proto::AcquireMany* many = r.mutable_acquire_many();
        const bool second_first = world_.rng().uniform(2) == 0;
        for (const char* name :
             {second_first ? kSecondLock : kLock, second_first ? kLock : kSecondLock}) {
            proto::AcquireMany::Lock* lock = many->add_locks();
            lock->set_name(name);
            lock->set_mode(proto::EXCLUSIVE);
        }
        many->set_owner_tag(c.owner);
        many->set_wait_ms(params_.wait_ms);
    } else {
        r.mutable_acquire()->set_name(kLock);
        r.mutable_acquire()->set_owner_tag(c.owner);
        r.mutable_acquire()->set_mode(proto::EXCLUSIVE);
        r.mutable_acquire()->set_wait_ms(params_.wait_ms);
    }
    c.acquire_attempts.clear();
    c.cancel_at_us = 0;
    if (world_.rng().uniform(1000) < params_.cancel_per_mille) {
        c.cancel_at_us =
            now + 1000 * (1 + world_.rng().uniform(static_cast<uint64_t>(params_.wait_ms)));
    }
    send_op(c, Op::kAcquire, std::move(r));
}

// Every third of the timeout while the session lasts, whatever else the client waits for.
void LockClients::keepalive(Client& c) {
    const uint64_t session = c.session;
    world_.agenda().at(world_.now_us() + static_cast<uint64_t>(params_.session_timeout_ms) * 333,
                       [this, &c, session] {
                           if (c.session != session) {
                               return;
                           }
                           check_lapse(c);
                           if (c.conn) {
                               proto::Request r = base_request(c, false);
                               r.mutable_keep_alive();
                               c.keepalives[r.request_id()] = world_.now_us();
                               trace(c, "keepalive {}", r.request_id());
                               world_.send(*c.conn, std::move(r));
                           }
                           keepalive(c);
                       });
}

void LockClients::on_message(ConnId conn, const proto::ServerMessage& message) {
    auto it = by_conn_.find(conn);
    if (it == by_conn_.end()) {
        return;  // a connection the client has left
    }
    Client& c = *it->second;
    check_lapse(c);
    trace(c, "hears {}", Brief{message});
    if (message.has_session_ended()) {
        if (message.session_ended().session_id() == c.session) {
            lose_session(c, "its SessionEnded push");
        }
        return;
    }
    if (message.has_lock_revoked()) {
        const proto::LockRevoked& revoked = message.lock_revoked();
        if (!revoking_.contains(revoked.token())) {
            verdicts_.fail(fmt::format("{}: a hold with token {} was revoked, but nobody asked",
                                       c.owner, revoked.token()));
        }
        if (revoked.session_id() == c.session && c.token == revoked.token() && c.hold_open) {
            end_hold(c, world_.now_us(), false);
            ++stats_.revoked;
        }
        return;
    }
    if (message.has_response()) {
        on_response(c, message.response());
    }
}

void LockClients::on_closed(ConnId conn) {
    Client* closed = take_closed(conn);
    if (closed == nullptr) {
        return;
    }
    Client& c = *closed;
    c.keepalives.clear();
    if (c.op != Op::kNone) {
        // The attempt is over: step() sends it again, on another connection.
        c.blame = false;
        c.op_answer_by_us = world_.now_us() + kBackoffUs;
        wake(c, kBackoffUs);
    }
}

void LockClients::on_response(Client& c, const proto::Response& r) {
    if (auto k = c.keepalives.find(r.request_id()); k != c.keepalives.end()) {
        const uint64_t sent = k->second;
        c.keepalives.erase(k);
        on_keepalive_answer(c, sent, r);
        return;
    }
    if (c.abandoned.contains(r.request_id())) {
        on_abandoned_answer(c, r);
        return;
    }
    if (c.op == Op::kNone || r.request_id() != c.request.request_id()) {
        return;  // an answer to an attempt the client gave up on
    }
    on_op_answer(c, r);
}

void LockClients::on_keepalive_answer(Client& c, uint64_t sent_us, const proto::Response& r) {
    if (r.code() == proto::OK) {
        c.safe_base_us = std::max(c.safe_base_us, sent_us);
    } else if (r.code() == proto::SESSION_EXPIRED) {
        lose_session(c, "a keepalive answered SESSION_EXPIRED");
    }
}

void LockClients::on_op_answer(Client& c, const proto::Response& r) {
    const Op op = c.op;
    const uint64_t sent = c.op_sent_us;
    const proto::Code code = r.code();
    // The server does not know the outcome, or did nothing: the same request again, elsewhere
    // when this node has no leader.
    if (code == proto::TIMEOUT || code == proto::UNAVAILABLE || code == proto::SHUTTING_DOWN ||
        code == proto::TOO_MANY_REQUESTS) {
        if (code != proto::TIMEOUT) {
            reconnect(c);
        }
        c.blame = false;
        c.op_answer_by_us = world_.now_us() + kBackoffUs;
        wake(c, kBackoffUs);
        return;
    }
    c.op = Op::kNone;
    if (code == proto::SESSION_EXPIRED && op != Op::kOpen) {
        if (op == Op::kWrite) {
            ++c.unknown_writes;  // it may have applied before the session ended
        }
        lose_session(c, "an answer SESSION_EXPIRED");
        wake(c, 0);
        return;
    }
    switch (op) {
        case Op::kOpen:
            if (code == proto::OK) {
                c.session = r.open_session().session_id();
                c.seq = 0;
                c.safe_base_us = sent;
                ++stats_.sessions;
                keepalive(c);
            }
            break;
        case Op::kCreate:
            if (code == proto::OK || code == proto::NODE_EXISTS) {
                c.created = true;
            } else {
                verdicts_.fail_liveness(
                    fmt::format("client {}: create answered {}", c.owner, proto::Code_Name(code)));
            }
            break;
        case Op::kAcquire:
            c.acquire_attempts.clear();
            c.cancel_at_us = 0;
            if (code == proto::OK && r.lock().outcome() == proto::LOCK_GRANTED) {
                on_grant(c, r.lock().token());
            } else if (code != proto::WAIT_TIMEOUT && code != proto::ALREADY_WAITING) {
                verdicts_.fail_liveness(fmt::format("client {}: acquire answered {} ({})", c.owner,
                                                    proto::Code_Name(code), r.message()));
            }
            break;
        case Op::kWrite:
            if (code == proto::OK) {
                ++c.acked_writes;
                ++stats_.fenced_writes;
            } else if (code == proto::FENCE_REJECTED) {
                if (c.hold_open && world_.now_us() < safe_until_us(c) &&
                    !revoking_.contains(c.token.value_or(0))) {
                    verdicts_.fail(
                        fmt::format("{}'s fenced write with token {} was rejected while its "
                                    "safe-until ({:.3f}s) had not passed",
                                    c.owner, c.token.value_or(0), safe_until_us(c) / 1e6));
                }
                if (c.hold_open) {
                    end_hold(c, world_.now_us(), true);
                }
            } else {
                verdicts_.fail_liveness(fmt::format("client {}: fenced write answered {} ({})",
                                                    c.owner, proto::Code_Name(code), r.message()));
            }
            break;
        case Op::kRelease:
            c.token.reset();
            if (code == proto::OK) {
                ++stats_.releases;
            }
            break;
        case Op::kReleaseSecond:
            // Released or not (a lapsed session's), the first lock goes next.
            c.holds_second = false;
            if (code != proto::OK && code != proto::NOT_LOCK_HOLDER) {
                verdicts_.fail_liveness(fmt::format("client {}: release of {} answered {} ({})",
                                                    c.owner, kSecondLock, proto::Code_Name(code),
                                                    r.message()));
            }
            break;
        case Op::kCancel:
            on_cancel_answer(c, r);
            break;
        case Op::kNone:
            RL_ASSERT(false);
    }
    wake(c, 0);
}

void LockClients::on_grant(Client& c, uint64_t token) {
    const uint64_t now = world_.now_us();
    ++stats_.grants;
    for (auto& other : clients_) {
        check_lapse(*other);
    }
    if (now >= safe_until_us(c)) {
        // Granted, but the session may be gone already: not a hold (release it).
        c.token = token;
        c.holds_second = c.acquiring_both;
        c.hold_open = false;
        return;
    }
    // A hold being revoked ends when the next grant shows the revocation applied.
    for (auto& other : clients_) {
        if (other->hold_open && other->index != c.index && revoking_.contains(*other->token)) {
            end_hold(*other, now, false);
            ++stats_.revoked;
        }
    }
    for (const Hold& h : holds_) {
        if (h.token == token) {
            verdicts_.fail(fmt::format("token {} granted to {} was granted before to c{}", token,
                                       c.owner, h.client));
        }
        if (!h.end_us && h.client != c.index) {
            verdicts_.fail(
                fmt::format("two holders: {} granted token {} while c{} holds token {} since "
                            "t={:.3f}s",
                            c.owner, token, h.client, h.token, h.start_us / 1e6));
        }
    }
    if (token <= max_ended_token_) {
        verdicts_.fail(fmt::format("{} granted token {}, not above token {} of an ended hold",
                                   c.owner, token, max_ended_token_));
    }
    c.token = token;
    c.holds_second = c.acquiring_both;
    stats_.multi_grants += c.acquiring_both ? 1 : 0;
    c.hold_open = true;
    c.hold = holds_.size();
    holds_.push_back(Hold{c.index, token, now, std::nullopt});
    c.hold_until_us =
        now + 1000 * (params_.hold_min_ms +
                      world_.rng().uniform(params_.hold_max_ms - params_.hold_min_ms + 1));
}

void LockClients::on_abandoned_answer(Client& c, const proto::Response& r) {
    Client::Abandoned& a = *c.abandoned.at(r.request_id());
    if (r.code() != proto::OK || r.lock().outcome() != proto::LOCK_GRANTED) {
        return;  // its wait ended, or it was discarded: nothing held
    }
    if (a.cancel_said_not_held) {
        verdicts_.fail(fmt::format(
            "{}: an abandoned acquire was granted token {} after its Cancel answered that the "
            "session neither waits nor holds",
            c.owner, r.lock().token()));
    }
    a.granted_token = r.lock().token();
}

void LockClients::on_cancel_answer(Client& c, const proto::Response& r) {
    RL_ASSERT(c.cancelling != nullptr);
    Client::Abandoned& a = *c.cancelling;
    c.cancelling.reset();
    if (r.code() != proto::OK) {
        verdicts_.fail_liveness(fmt::format("client {}: cancel answered {} ({})", c.owner,
                                            proto::Code_Name(r.code()), r.message()));
        return;
    }
    ++stats_.cancels;
    if (r.lock().outcome() == proto::LOCK_GRANTED) {
        ++stats_.cancels_granted;
        if (a.granted_token && *a.granted_token != r.lock().token()) {
            verdicts_.fail(fmt::format("{}: the Cancel answered token {}, the grant push token {}",
                                       c.owner, r.lock().token(), *a.granted_token));
        }
        on_grant(c, r.lock().token());
        return;
    }
    if (a.granted_token) {
        verdicts_.fail(fmt::format(
            "{}: the Cancel answered {} though the abandoned acquire was granted token {}", c.owner,
            proto::LockOutcome_Name(r.lock().outcome()), *a.granted_token));
    }
    a.cancel_said_not_held = true;
}

void LockClients::lose_session(Client& c, std::string_view how) {
    if (c.session == 0) {
        return;
    }
    const uint64_t now = world_.now_us();
    if (now < safe_until_us(c)) {
        verdicts_.fail(
            fmt::format("session {} of {} ended ({}) at t={:.3f}s, before its safe-until "
                        "t={:.3f}s",
                        c.session, c.owner, how, now / 1e6, safe_until_us(c) / 1e6));
    }
    if (c.hold_open) {
        end_hold(c, now, true);
    }
    if (c.op == Op::kWrite) {
        ++c.unknown_writes;
    }
    ++stats_.sessions_lost;
    c.session = 0;
    c.op = Op::kNone;
    c.token.reset();
    c.holds_second = false;
    c.keepalives.clear();
    c.acquire_attempts.clear();
    c.cancel_at_us = 0;
    c.abandoned.clear();
    c.cancelling.reset();
    wake(c, 0);
}

void LockClients::end_hold(Client& c, uint64_t at_us, bool lapsed) {
    RL_ASSERT(c.token.has_value());
    RL_ASSERT(c.hold_open);
    c.hold_open = false;
    Hold& h = holds_.at(c.hold);
    RL_ASSERT(!h.end_us.has_value());
    h.end_us = at_us;
    max_ended_token_ = std::max(max_ended_token_, h.token);
    if (lapsed) {
        ++stats_.lapses;
    }
}

void LockClients::check_lapse(Client& c) {
    if (c.hold_open && world_.now_us() >= safe_until_us(c)) {
        end_hold(c, safe_until_us(c), true);
    }
}

const char* LockClients::lock_name() {
    return kLock;
}

std::optional<std::pair<uint64_t, uint64_t>> LockClients::force_release_target() {
    for (auto& c : clients_) {
        check_lapse(*c);
        if (c->hold_open) {
            return std::pair{c->session, *c->token};
        }
    }
    return std::nullopt;
}

void LockClients::final_check() {
    const std::vector<NodeId> ids = world_.ids();
    for (NodeId id : ids) {
        RL_ASSERT(world_.up(id));
    }
    const statemachine::StateMachine& sm = world_.replica(ids.front()).state();
    for (const auto& c : clients_) {
        if (c->op == Op::kWrite) {
            ++c->unknown_writes;
        }
        const std::optional<statemachine::Stat> stat = sm.exists(c->path);
        const uint64_t version = stat ? static_cast<uint64_t>(stat->version) : 0;
        if (version < c->acked_writes || version > c->acked_writes + c->unknown_writes) {
            verdicts_.fail(
                fmt::format("exactly once: {} has version {}, with {} writes acknowledged and "
                            "{} of unknown outcome",
                            c->path, version, c->acked_writes, c->unknown_writes));
        }
    }
}

}  // namespace raftlock::sim::replica
