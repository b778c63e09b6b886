#include "tests/sim/replica/redis_clients.h"

#include <cstdlib>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::sim::replica {

namespace {

constexpr const char* kKey = "the-redis-lock";
constexpr const char* kRelease =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";

}  // namespace

namespace {

// One reply at buffer[at..] into r: the bytes it takes, or 0 while it is incomplete.
size_t parse_reply(const std::string& buffer, size_t at, RespReply& r) {
    const size_t eol = buffer.find("\r\n", at);
    if (eol == std::string::npos) {
        return 0;
    }
    r.kind = buffer[at];
    const std::string line = buffer.substr(at + 1, eol - at - 1);
    size_t used = eol + 2 - at;
    switch (r.kind) {
        case '+':
        case '-':
            r.text = line;
            break;
        case ':':
            r.integer = std::strtoll(line.c_str(), nullptr, 10);
            break;
        case '_':
            r.nil = true;
            break;
        case '$': {
            const int64_t length = std::strtoll(line.c_str(), nullptr, 10);
            if (length < 0) {
                r.nil = true;
                break;
            }
            if (buffer.size() < at + used + static_cast<size_t>(length) + 2) {
                return 0;
            }
            r.text = buffer.substr(at + used, static_cast<size_t>(length));
            used += static_cast<size_t>(length) + 2;
            break;
        }
        case '*': {
            const int64_t count = std::strtoll(line.c_str(), nullptr, 10);
            r.nil = count < 0;
            for (int64_t i = 0; i < count; ++i) {
                RespReply item;
                const size_t taken = parse_reply(buffer, at + used, item);
                if (taken == 0) {
                    return 0;
                }
                used += taken;
                r.items.push_back(std::move(item));
            }
            break;
        }
        default:
            r.kind = '?';
            r.text = buffer.substr(at, eol - at);
            used = buffer.size() - at;
    }
    return used;
}

}  // namespace

std::optional<RespReply> take_resp_reply(std::string& buffer) {
    RespReply r;
    const size_t used = parse_reply(buffer, 0, r);
    if (used == 0) {
        return std::nullopt;
    }
    buffer.erase(0, used);
    return r;
}

struct RedisClient {
    size_t index = 0;
    std::optional<ConnId> conn;
    std::string buffer;  // RESP bytes not parsed yet
    uint64_t round = 0;

    RedisLockClients::Op op = RedisLockClients::Op::kNone;
    statemachine::redis::Argv argv;
    uint64_t op_sent_us = 0;
    uint64_t op_answer_by_us = 0;
    bool blame = false;

    std::string token;          // this round's value for the key
    uint64_t first_set_us = 0;  // send time of this round's first SET
    bool hold_open = false;
    uint64_t acquired_us = 0;  // when the SET (or the GET that found it ours) answered
    uint64_t valid_until_us = 0;
    uint64_t hold_until_us = 0;
};

RedisLockClients::RedisLockClients(World& world, const RedisClientParams& params)
    : ClientGroup(world, params.clients), params_(params) {}

RedisLockClients::~RedisLockClients() = default;

void RedisLockClients::trace_line(const Client& c, std::string_view what) {
    fmt::print("t={:.6f}s r{} (conn {}{}): {}\n", world_.now_us() / 1e6, c.index,
               c.conn.value_or(0) & ~net::kRespConnectionBit,
               c.conn ? fmt::format(" to n{}", world_.node_of(*c.conn)) : "", what);
}

void RedisLockClients::send(Client& c, Op op, statemachine::redis::Argv argv) {
    c.op = op;
    c.argv = std::move(argv);
    resend(c);
}

void RedisLockClients::resend(Client& c) {
    RL_ASSERT(c.op != Op::kNone);
    if (!c.conn) {
        if (!connect_to_any(c, &World::open_resp)) {
            c.blame = false;
            c.op_answer_by_us = world_.now_us() + kBackoffUs;
            wake(c, kBackoffUs);
            return;
        }
        c.buffer.clear();
    }
    c.op_sent_us = world_.now_us();
    const uint64_t answer_us =
        uint64_t{world_.params().config.request_timeout_ms} * 1000 + kAnswerSlackUs;
    c.op_answer_by_us = c.op_sent_us + answer_us;
    c.blame = true;
    trace(c, "sends {}", fmt::join(c.argv, " "));
    world_.send_resp(*c.conn, c.argv);
    wake(c, answer_us);
}

void RedisLockClients::step(Client& c) {
    check_lapse(c);
    const uint64_t now = world_.now_us();
    if (c.op != Op::kNone) {
        if (!overdue(c, c.op_sent_us, c.op_answer_by_us, c.blame, [&] {
                return fmt::format("redis client r{}: {}", c.index, fmt::join(c.argv, " "));
            })) {
            return;
        }
        ++stats_.retries;
        if (c.conn) {
            by_conn_.erase(*c.conn);
            world_.close(*c.conn);
            c.conn.reset();
        }
        resend(c);
        return;
    }
    if (c.hold_open || !c.token.empty()) {
        if (c.hold_open && now < c.hold_until_us && !stopping_) {
            send(c, Op::kGet, {"GET", kKey});
            return;
        }
        if (c.hold_open) {
            end_hold(c, now, false);  // stops counting the lock as its own now
        }
        send(c, Op::kRelease, {"EVAL", kRelease, "1", kKey, c.token});
        return;
    }
    if (stopping_) {
        return;
    }
    c.token = fmt::format("r{}-{}", c.index, ++c.round);
    c.first_set_us = now;
    send(c, Op::kSet, {"SET", kKey, c.token, "NX", "PX", fmt::format("{}", params_.ttl_ms)});
}

void RedisLockClients::on_resp(ConnId conn, const std::string& bytes) {
    auto it = by_conn_.find(conn);
    if (it == by_conn_.end()) {
        return;
    }
    Client& c = *it->second;
    c.buffer += bytes;
    while (std::optional<RespReply> r = take_resp_reply(c.buffer)) {
        check_lapse(c);
        trace(c, "hears {}{}{}", r->kind, r->nil ? "nil" : r->text,
              r->kind == ':' ? fmt::format("{}", r->integer) : "");
        on_reply(c, *r);
    }
}

void RedisLockClients::on_closed(ConnId conn) {
    Client* c = take_closed(conn);
    if (c != nullptr && c->op != Op::kNone) {
        c->blame = false;
        c->op_answer_by_us = world_.now_us() + kBackoffUs;
        wake(*c, kBackoffUs);
    }
}

void RedisLockClients::on_reply(Client& c, const RespReply& r) {
    if (c.op == Op::kNone) {
        verdicts_.fail_liveness(fmt::format("redis client r{}: a reply to nothing", c.index));
        return;
    }
    const Op op = c.op;
    const uint64_t now = world_.now_us();
    if (r.kind == '-' && r.text.rfind("TRYAGAIN", 0) == 0) {
        // The same command again; a SET keeps its token and its first send time.
        ++stats_.retries;
        c.blame = false;
        c.op_answer_by_us = now + kBackoffUs;
        wake(c, kBackoffUs);
        return;
    }
    c.op = Op::kNone;
    if (r.kind == '-' || r.kind == '?' || r.kind == '*') {
        verdicts_.fail_liveness(fmt::format("redis client r{}: {} answered {}", c.index,
                                            fmt::join(c.argv, " "), r.text));
        c.token.clear();
        wake(c, kBackoffUs);
        return;
    }
    switch (op) {
        case Op::kSet:
            if (r.kind == '+' && r.text == "OK") {
                begin_hold(c);
            } else if (r.nil) {
                // Taken; perhaps by an earlier attempt of this round: ask.
                send(c, Op::kGet, {"GET", kKey});
                return;
            }
            break;
        case Op::kGet:
            // Linearizable: a GET sent after a holder learned it holds the lock, and answered
            // before the holder's validity ends, sees the holder's token, whoever reads.
            for (auto& h : clients_) {
                check_lapse(*h);
                if (!h->hold_open || h->acquired_us >= c.op_sent_us) {
                    continue;
                }
                ++stats_.reads_checked;
                if (r.nil || r.text != h->token) {
                    verdicts_.fail(fmt::format(
                        "r{} holds {} since t={:.3f}s until t={:.3f}s, but r{}'s GET "
                        "sent at t={:.3f}s answered {}",
                        h->index, h->token, h->acquired_us / 1e6, h->valid_until_us / 1e6, c.index,
                        c.op_sent_us / 1e6, r.nil ? "nil" : r.text));
                }
            }
            if (c.hold_open) {
                break;  // a holder's read: checked above
            }
            if (!r.nil && r.text == c.token && now < c.first_set_us + params_.ttl_ms * 1000) {
                begin_hold(c);  // an earlier attempt of this round took it
            } else if (!c.token.empty()) {
                c.token.clear();  // somebody else's: a new round later
                wake(c, kBackoffUs + world_.rng().uniform(kBackoffUs));
                return;
            }
            break;
        case Op::kRelease:
            c.token.clear();
            break;
        case Op::kNone:
            RL_ASSERT(false);
    }
    wake(c, 0);
}

void RedisLockClients::begin_hold(Client& c) {
    const uint64_t now = world_.now_us();
    c.valid_until_us = c.first_set_us + static_cast<uint64_t>(params_.ttl_ms) * 1000;
    if (now >= c.valid_until_us) {
        return;  // valid no more: released at the next step
    }
    for (auto& other : clients_) {
        check_lapse(*other);
        if (other.get() != &c && other->hold_open) {
            verdicts_.fail(
                fmt::format("two Redis holders: r{} took the lock while r{} holds {} until "
                            "t={:.3f}s",
                            c.index, other->index, other->token, other->valid_until_us / 1e6));
        }
    }
    ++stats_.acquired;
    c.hold_open = true;
    c.acquired_us = now;
    c.hold_until_us = std::min(
        c.valid_until_us,
        now + 1000 * (params_.hold_min_ms +
                      world_.rng().uniform(params_.hold_max_ms - params_.hold_min_ms + 1)));
}

void RedisLockClients::end_hold(Client& c, uint64_t at_us, bool lapsed) {
    RL_ASSERT(c.hold_open);
    (void)at_us;
    c.hold_open = false;
    if (lapsed) {
        ++stats_.lapses;
    }
}

void RedisLockClients::check_lapse(Client& c) {
    if (c.hold_open && world_.now_us() >= c.valid_until_us) {
        end_hold(c, c.valid_until_us, true);
    }
}

}  // namespace raftlock::sim::replica
