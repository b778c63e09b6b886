#include "tests/sim/replica/redis_counter_clients.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::sim::replica {

namespace {

constexpr const char* kCounter = "the-redis-counter";
// GETs pipelined ahead of each round's WATCH, each its own send.
constexpr size_t kPipelinedGets = 3;

}  // namespace

struct RedisCounterClient {
    enum class Phase : uint8_t {
        kIdle,
        kRead,  // kPipelinedGets GETs, WATCH, GET sent: their replies
        kExec,  // MULTI, SET, EXEC sent: their three replies
    };
    size_t index = 0;
    std::optional<ConnId> conn;
    std::string buffer;  // RESP bytes not parsed yet
    Phase phase = Phase::kIdle;
    size_t replies = 0;  // of the phase's, so far
    uint64_t sent_us = 0;
    uint64_t answer_by_us = 0;
    bool blame = false;
    int64_t committed_max_at_watch = 0;  // what every later read must see
    int64_t pipelined_read = 0;          // the counter as the round's last pipelined GET read it
    int64_t read = 0;                    // the counter as the GET after WATCH answered it
};

RedisCounterClients::RedisCounterClients(World& world, const RedisCounterParams& params)
    : ClientGroup(world, params.clients), params_(params) {}

RedisCounterClients::~RedisCounterClients() = default;

void RedisCounterClients::trace_line(const Client& c, std::string_view what) {
    fmt::print("t={:.6f}s c{} (conn {}{}): {}\n", world_.now_us() / 1e6, c.index,
               c.conn.value_or(0) & ~net::kRespConnectionBit,
               c.conn ? fmt::format(" to n{}", world_.node_of(*c.conn)) : "", what);
}

void RedisCounterClients::step(Client& c) {
    if (c.phase != Client::Phase::kIdle) {
        if (overdue(c, c.sent_us, c.answer_by_us, c.blame, [&] {
                return fmt::format("redis counter client c{}: phase {}", c.index,
                                   static_cast<int>(c.phase));
            })) {
            give_up(c, "no answer");
        }
        return;
    }
    if (stopping_) {
        return;
    }
    c.phase = Client::Phase::kRead;
    c.committed_max_at_watch = committed_max_;
    send_phase(c);
}

void RedisCounterClients::send_phase(Client& c) {
    RL_ASSERT(c.phase != Client::Phase::kIdle);
    if (!c.conn) {
        if (!connect_to_any(c, &World::open_resp)) {
            c.phase = Client::Phase::kIdle;
            wake(c, kBackoffUs);
            return;
        }
        c.buffer.clear();
    }
    c.replies = 0;
    c.sent_us = world_.now_us();
    const uint64_t answer_us =
        uint64_t{world_.params().config.request_timeout_ms} * 1000 + kAnswerSlackUs;
    c.answer_by_us = c.sent_us + answer_us;
    c.blame = true;
    if (c.phase == Client::Phase::kRead) {
        trace(c, "sends {} GETs, WATCH, GET", kPipelinedGets);
        for (size_t i = 0; i < kPipelinedGets; ++i) {
            world_.send_resp(*c.conn, {"GET", kCounter});
        }
        world_.send_resp(*c.conn, {"WATCH", kCounter});
        world_.send_resp(*c.conn, {"GET", kCounter});
    } else {
        trace(c, "sends MULTI, SET {}, EXEC", c.read + 1);
        world_.send_resp(*c.conn, {"MULTI"});
        world_.send_resp(*c.conn, {"SET", kCounter, fmt::format("{}", c.read + 1)});
        world_.send_resp(*c.conn, {"EXEC"});
    }
    wake(c, answer_us);
}

void RedisCounterClients::on_resp(ConnId conn, const std::string& bytes) {
    auto it = by_conn_.find(conn);
    if (it == by_conn_.end()) {
        return;
    }
    Client& c = *it->second;
    c.buffer += bytes;
    while (std::optional<RespReply> r = take_resp_reply(c.buffer)) {
        trace(c, "hears {}{}{}", r->kind, r->nil ? "nil" : r->text,
              r->kind == ':' ? fmt::format("{}", r->integer) : "");
        on_reply(c, *r);
        if (!c.conn || by_conn_.find(conn) == by_conn_.end()) {
            return;  // given up: the rest of the bytes are the old round's
        }
    }
}

void RedisCounterClients::on_closed(ConnId conn) {
    Client* c = take_closed(conn);
    if (c != nullptr && c->phase != Client::Phase::kIdle) {
        // Watches live on the connection: the round starts over, its outcome unknown if it sent
        // its EXEC.
        if (c->phase == Client::Phase::kExec) {
            ++stats_.unknown;
        }
        c->phase = Client::Phase::kIdle;
        wake(*c, kBackoffUs);
    }
}

// Closes the round's connection and starts a new round later: an EXEC sent may or may not have
// committed (a later round reads whatever it did).
void RedisCounterClients::give_up(Client& c, std::string_view why) {
    trace(c, "gives up the round: {}", why);
    if (c.phase == Client::Phase::kExec) {
        ++stats_.unknown;
    }
    c.phase = Client::Phase::kIdle;
    if (c.conn) {
        by_conn_.erase(*c.conn);
        world_.close(*c.conn);
        c.conn.reset();
    }
    wake(c, kBackoffUs + world_.rng().uniform(kBackoffUs));
}

void RedisCounterClients::on_reply(Client& c, const RespReply& r) {
    if (c.phase == Client::Phase::kIdle) {
        verdicts_.fail_liveness(fmt::format("redis counter c{}: a reply to nothing", c.index));
        return;
    }
    const size_t n = c.replies++;
    if (r.kind == '-') {
        if (r.text.rfind("TRYAGAIN", 0) != 0) {
            verdicts_.fail_liveness(fmt::format("redis counter c{}: reply {} of phase {} is {}",
                                                c.index, n, static_cast<int>(c.phase), r.text));
        }
        give_up(c, r.text);
        return;
    }
    if (c.phase == Client::Phase::kRead) {
        if (n == kPipelinedGets) {
            RL_ASSERT(r.kind == '+');  // WATCH's OK
            return;
        }
        RL_ASSERT(r.kind == '$' || r.nil);
        const int64_t value = r.nil ? 0 : std::strtoll(r.text.c_str(), nullptr, 10);
        if (value < c.committed_max_at_watch) {
            verdicts_.fail(fmt::format(
                "redis counter c{}: reply {} of the round (a GET) read {}, but {} was committed "
                "before the round was sent",
                c.index, n, value, c.committed_max_at_watch));
        }
        if (n < kPipelinedGets) {
            if (n > 0 && value < c.pipelined_read) {
                verdicts_.fail(fmt::format(
                    "redis counter c{}: two GETs pipelined on one connection read {} then {}: "
                    "the second saw an older state",
                    c.index, c.pipelined_read, value));
            }
            c.pipelined_read = value;
            return;
        }
        c.read = value;
        c.phase = Client::Phase::kExec;
        send_phase(c);
        return;
    }
    if (n < 2) {
        RL_ASSERT(r.kind == '+');  // MULTI's OK, SET's QUEUED
        return;
    }
    c.phase = Client::Phase::kIdle;
    if (r.nil) {
        ++stats_.aborted;
    } else if (r.kind == '*' && r.items.size() == 1 && r.items[0].text == "OK") {
        committed(c, c.read + 1);
    } else {
        verdicts_.fail_liveness(fmt::format("redis counter c{}: EXEC answered kind {} ({} items)",
                                            c.index, r.kind, r.items.size()));
    }
    wake(c, 1000 * (params_.pause_min_ms +
                    world_.rng().uniform(params_.pause_max_ms - params_.pause_min_ms + 1)));
}

void RedisCounterClients::committed(Client& c, int64_t value) {
    ++stats_.committed;
    if (!committed_values_.insert(value).second) {
        verdicts_.fail(fmt::format(
            "redis counter c{}: EXEC committed {} again: two transactions read {} and both "
            "committed, though the counter changed after one's WATCH",
            c.index, value, value - 1));
    }
    committed_max_ = std::max(committed_max_, value);
}

}  // namespace raftlock::sim::replica
