// The Redis port's transactions (docs/redis-mode.md): MULTI, EXEC, DISCARD, WATCH and UNWATCH on
// one connection (redis_frontend.h has the whole picture; statemachine/redis/keyspace.h how EXEC
// decides whether a watched key changed).

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"
#include "net/resp_codec.h"
#include "server/redis_frontend.h"
#include "statemachine/redis/handlers.h"
#include "statemachine/types.h"

namespace raftlock::server {

namespace {

using redis::Value;

bool is(const redis::Argv& argv, std::string_view name) {
    return redis::iequals(argv[0], name);
}

bool is_subscription(const redis::Argv& argv) {
    return is(argv, "subscribe") || is(argv, "psubscribe") || is(argv, "unsubscribe") ||
           is(argv, "punsubscribe");
}

}  // namespace

bool RedisFrontend::runs_inside_multi(const redis::Argv& argv) {
    return is(argv, "exec") || is(argv, "discard") || is(argv, "multi") || is(argv, "watch") ||
           is(argv, "quit") || is(argv, "reset");
}

Value RedisFrontend::queue(Conn& c, redis::Argv&& argv) {
    RL_ASSERT(c.multi && !argv.empty());
    size_t bytes = 0;
    for (const std::string& arg : argv) {
        bytes += arg.size();
    }
    Multi& m = *c.multi;
    // The entry EXEC proposes must stay within a command's bounds; so must this queue's memory.
    if (m.args + argv.size() > statemachine::kRedisArgsMax ||
        m.bytes + bytes > statemachine::kRedisCommandBytesMax) {
        m.failed = true;
        return Value::error(
            fmt::format("ERR raftlock: a transaction may carry at most {} arguments and {} bytes",
                        statemachine::kRedisArgsMax, statemachine::kRedisCommandBytesMax));
    }
    m.args += argv.size();
    m.bytes += bytes;
    m.queued.push_back(std::move(argv));
    return Value::simple("QUEUED");
}

RedisFrontend::Dispatch RedisFrontend::dispatch_of(const Conn& c, const redis::Argv& argv) const {
    const redis::Route route = redis::route_of(argv);
    if (route != redis::Route::kConnection) {
        return {Step::kKeyspace, route};
    }
    const auto alone = [](Step step) { return Dispatch{step, redis::Route::kConnection}; };
    if (is(argv, "wait")) {
        // Valid arguments wait in the backend; an error is answered here (run_local).
        const std::optional<int64_t> timeout = redis::parse_int(argv[2]);
        return alone(redis::parse_int(argv[1]) && timeout && *timeout >= 0 ? Step::kWait
                                                                           : Step::kLocal);
    }
    if (is(argv, "watch")) {
        size_t keys = c.watched.size();
        size_t bytes = c.watched_bytes;
        for (size_t i = 1; i < argv.size(); ++i) {
            if (!c.watched.contains(argv[i])) {
                ++keys;
                bytes += argv[i].size();
            }
        }
        const bool fits = keys <= options_.watched_keys_max && bytes <= options_.watched_bytes_max;
        return alone(c.multi || !fits ? Step::kLocal : Step::kWatch);
    }
    if (is(argv, "exec") && c.multi && !c.multi->failed) {
        // Something for the state machine to decide: a keyspace command, or a watch to check.
        const bool keyspace = std::any_of(
            c.multi->queued.begin(), c.multi->queued.end(), [](const redis::Argv& queued) {
                return redis::route_of(queued) != redis::Route::kConnection;
            });
        return keyspace || !c.watched.empty() ? Dispatch{Step::kExec, redis::Route::kWrite}
                                              : alone(Step::kLocal);
    }
    return alone(Step::kLocal);
}

std::string RedisFrontend::transaction_local(net::ConnectionId id,
                                             Conn& c,
                                             const redis::Argv& argv) {
    std::string out;
    const auto answer = [&](const Value& value) {
        net::encode_resp(value, c.protocol, out);
        return out;
    };
    if (is(argv, "multi")) {
        if (c.multi) {
            return answer(Value::error("ERR MULTI calls can not be nested"));  // still queuing
        }
        c.multi.emplace();
        return answer(Value::ok());
    }
    if (is(argv, "watch")) {
        if (c.multi) {
            return answer(Value::error("ERR WATCH inside MULTI is not allowed"));
        }
        return answer(Value::error(fmt::format(
            "ERR raftlock: a connection may watch at most {} keys, of {} bytes together",
            options_.watched_keys_max, options_.watched_bytes_max)));
    }
    const bool exec = is(argv, "exec");
    RL_ASSERT(exec || is(argv, "discard"));
    if (!c.multi) {
        return answer(Value::error(exec ? "ERR EXEC without MULTI" : "ERR DISCARD without MULTI"));
    }
    if (!exec || c.multi->failed) {
        c.multi.reset();
        c.watched.clear();
        c.watched_bytes = 0;
        return answer(exec ? Value::error("EXECABORT Transaction discarded because of previous "
                                          "errors.")
                           : Value::ok());
    }
    // Connection commands only, nothing watched: nothing for the state machine to decide.
    Pending local;
    const redis::Transaction nothing = take_transaction(c, local);
    RL_ASSERT(nothing.commands.empty() && nothing.watched.empty());
    return exec_reply(id, c, local.queued, Value::array({}));
}

redis::Transaction RedisFrontend::take_transaction(Conn& c, Pending& pending) {
    RL_ASSERT(c.multi && !c.multi->failed);
    redis::Transaction transaction;
    transaction.watched.reserve(c.watched.size());
    for (const auto& [key, index] : c.watched) {
        transaction.watched.push_back(redis::WatchedKey{key, index});
    }
    // The keyspace commands move into the transaction; each leaves an empty argv in the queue,
    // which exec_reply fills with its reply.
    for (redis::Argv& argv : c.multi->queued) {
        if (redis::route_of(argv) != redis::Route::kConnection) {
            transaction.commands.push_back(std::move(argv));
            argv.clear();
        }
    }
    pending.queued = std::move(c.multi->queued);
    // EXEC ends the transaction and every watch, whatever it answers (Redis: "unwatches all").
    c.multi.reset();
    c.watched.clear();
    c.watched_bytes = 0;
    return transaction;
}

std::string RedisFrontend::exec_reply(net::ConnectionId id,
                                      Conn& c,
                                      std::vector<redis::Argv>& queued,
                                      const Value& answer) {
    std::string out;
    if (answer.kind != Value::Kind::kArray) {
        // Aborted by a watched key (a null array), or refused whole (TRYAGAIN, NOPERM, limits).
        RL_ASSERT(answer.kind == Value::Kind::kNullArray || answer.is_error());
        net::encode_resp(answer, c.protocol, out);
        return out;
    }
    out = fmt::format("*{}\r\n", queued.size());
    size_t next = 0;
    for (redis::Argv& argv : queued) {
        if (argv.empty()) {
            RL_ASSERT(next < answer.items.size());
            net::encode_resp(answer.items[next++], c.protocol, out);
        } else if (is_subscription(argv)) {
            out += run_subscription(id, c, argv);  // one reply per channel, as Redis writes it
        } else {
            // In turn: HELLO switches the protocol of its own reply and those after it, as in
            // Redis (so the protocol is read after it ran).
            const Value reply = run_local(id, c, argv);
            net::encode_resp(reply, c.protocol, out);
        }
    }
    RL_ASSERT(next == answer.items.size());
    return out;
}

void RedisFrontend::watch(Conn& c, const redis::Argv& argv, uint64_t index) {
    RL_ASSERT(is(argv, "watch") && argv.size() >= 2);
    for (size_t i = 1; i < argv.size(); ++i) {
        // A key watched again keeps its first index: a change since then still counts.
        if (c.watched.try_emplace(argv[i], index).second) {
            c.watched_bytes += argv[i].size();
        }
    }
}

}  // namespace raftlock::server
