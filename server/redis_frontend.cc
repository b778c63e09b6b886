#include "server/redis_frontend.h"

#include <array>
#include <map>
#include <set>
#include <string_view>
#include <variant>

#include <fmt/format.h>

#include "base/assert.h"
#include "net/resp_codec.h"

namespace raftlock::server {

namespace {

using redis::Value;

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && redis::lower(a) == redis::lower(b);
}

// Commands a connection may run before AUTH (Redis: AUTH, HELLO with AUTH, QUIT, RESET).
bool allowed_before_auth(std::string_view name) {
    return iequals(name, "auth") || iequals(name, "hello") || iequals(name, "quit") ||
           iequals(name, "reset");
}

// What a subscribed RESP2 connection may still run (Redis's list, less the sharded commands).
bool allowed_when_subscribed(std::string_view lower_name) {
    return lower_name == "subscribe" || lower_name == "psubscribe" || lower_name == "unsubscribe" ||
           lower_name == "punsubscribe" || lower_name == "ping" || lower_name == "quit" ||
           lower_name == "reset";
}

bool is_subscription_command(std::string_view name) {
    return iequals(name, "subscribe") || iequals(name, "psubscribe") ||
           iequals(name, "unsubscribe") || iequals(name, "punsubscribe");
}

// The transaction commands answered by transaction_local (UNWATCH is an ordinary connection
// command: it may be queued).
bool is_transaction_command(std::string_view name) {
    return iequals(name, "multi") || iequals(name, "exec") || iequals(name, "discard") ||
           iequals(name, "watch");
}

using Kind = RedisSubscriptions::Kind;

constexpr int kRedisLoginFailuresMax = 3;

// WAIT numreplicas timeout's arguments, checked in Redis's order, or the error Redis gives.
struct WaitArgs {
    int64_t numreplicas = 0;
    int64_t timeout_ms = 0;
};
std::variant<WaitArgs, Value> parse_wait(const redis::Argv& argv) {
    RL_ASSERT(argv.size() == 3);
    const std::optional<int64_t> numreplicas = redis::parse_int(argv[1]);
    if (!numreplicas) {
        return Value::error(std::string(redis::kNotInteger));
    }
    const std::optional<int64_t> timeout = redis::parse_int(argv[2]);
    if (!timeout) {
        return Value::error("ERR timeout is not an integer or out of range");
    }
    if (*timeout < 0) {
        return Value::error("ERR timeout is negative");
    }
    return WaitArgs{*numreplicas, *timeout};
}

}  // namespace

RedisFrontend::RedisFrontend(RedisFrontendOptions options,
                             RespOutput& output,
                             RedisBackend& backend)
    : options_(std::move(options)), output_(output), backend_(backend) {
    RL_ASSERT(options_.pipeline_max > 0);
}

void RedisFrontend::on_resp_open(net::ConnectionId id, const std::string& remote) {
    Conn& c = conns_[id];
    c.remote = remote;
    c.client_id = next_client_id_++;
    c.authenticated = options_.password.empty();
}

void RedisFrontend::on_resp_certificate(net::ConnectionId id, const std::string& common_name) {
    if (!options_.certificate_user) {
        return;
    }
    Conn& c = conns_.at(id);
    RL_ASSERT(c.user.empty());
    // Whether that user exists and what it may do is checked at each command, as after AUTH.
    c.user = common_name;
    c.certificate_user = common_name;
    c.authenticated = true;
}

void RedisFrontend::on_resp_close(net::ConnectionId id) {
    subscriptions_.remove_all(id);
    if (conns_.erase(id) > 0) {
        backend_.redis_closed(id);
    }
}

void RedisFrontend::on_resp_command(net::ConnectionId id, redis::Argv&& argv) {
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.quitting) {
        return;
    }
    Conn& c = it->second;
    c.pending.push_back(Pending{std::move(argv), std::nullopt, false});
    if (!c.paused && c.pending.size() >= options_.pipeline_max) {
        c.paused = true;
        output_.pause_reading(id, true);
    }
    dispatch(id, c);
}

// Starts every command that may start now (see the header on order), answering the ones that
// need no keyspace at once.
void RedisFrontend::dispatch(net::ConnectionId id, Conn& c) {
    if (c.dispatching) {
        return;
    }
    c.dispatching = true;
    while (c.next_dispatch < c.pending.size() && !c.quitting) {
        const size_t index = c.next_dispatch;
        // A deque's elements stay where they are while it grows; only flush() pops, after this.
        Pending& pending = c.pending[index];
        const redis::Argv& argv = pending.argv;
        std::optional<Value> immediate;
        if (!logged_in(c) && !allowed_before_auth(argv[0])) {
            immediate = Value::error("NOAUTH Authentication required.");
        } else {
            immediate = redis::precheck(argv);
            if (!immediate) {
                immediate = subscribed_refusal(id, c, argv);
            }
        }
        if (c.multi && !runs_inside_multi(argv)) {
            // After MULTI (redis_transactions.cc): a refused command fails the transaction, the
            // others wait for EXEC. Either way the reply needs nothing in flight.
            ++c.next_dispatch;
            if (immediate) {
                c.multi->failed = true;
                complete(c, index, *immediate);
            } else {
                complete(c, index, queue(c, std::move(pending.argv)));
            }
            continue;
        }
        if (immediate) {
            ++c.next_dispatch;
            complete(c, index, *immediate);
            continue;
        }
        const auto [step, route] = dispatch_of(c, argv);
        // WATCH and WAIT run alone (route kConnection): after every earlier command, and before
        // any later one starts. For WATCH that is what makes it sound: reads in flight together
        // may be served at different applied indexes, in any order, and a GET pipelined after a
        // WATCH must see a state at or after the WATCH's index, or a change between the two would
        // escape both (found by the server simulator).
        if (c.in_flight > 0 && (route == redis::Route::kConnection || route != c.in_flight_route)) {
            break;  // waits for the commands in flight: see the header on order
        }
        ++c.next_dispatch;
        if (step == Step::kLocal) {
            if (is_subscription_command(argv[0])) {
                pending.reply = run_subscription(id, c, argv);
            } else if (is_transaction_command(argv[0])) {
                pending.reply = transaction_local(id, c, argv);
            } else {
                complete(c, index, run_local(id, c, argv));
            }
            continue;
        }
        pending.dispatched = true;
        pending.step = step;
        ++c.in_flight;
        // A WATCH or WAIT in flight (route kConnection) holds back every later command (a WAIT
        // blocks the client in Redis too).
        c.in_flight_route = route;
        const uint64_t ticket = c.first_ticket + index;
        // The backend may answer at once (an error): on_reply completes it, and this loop goes on.
        if (step == Step::kWait) {
            const auto args = std::get<WaitArgs>(parse_wait(argv));
            backend_.redis_wait(id, ticket, args.numreplicas, args.timeout_ms);
        } else if (step == Step::kWatch) {
            backend_.redis_watch(id, ticket, c.user);  // the keys stay here, for the reply
        } else if (step == Step::kExec) {
            backend_.redis_transaction(id, ticket, take_transaction(c, pending), c.user);
        } else {
            // The arguments are not needed here once dispatched: hand them over, not a copy.
            backend_.redis_command(id, ticket, std::move(pending.argv), c.user);
        }
    }
    c.dispatching = false;
    flush(id, c);
}

void RedisFrontend::on_reply(net::ConnectionId id, uint64_t ticket, const Value& value) {
    auto it = conns_.find(id);
    if (it == conns_.end()) {
        return;
    }
    Conn& c = it->second;
    RL_ASSERT(ticket >= c.first_ticket && ticket - c.first_ticket < c.pending.size());
    const size_t index = ticket - c.first_ticket;
    Pending& pending = c.pending[index];
    RL_ASSERT(pending.dispatched && !pending.reply);
    RL_ASSERT(c.in_flight > 0);
    --c.in_flight;
    if (pending.step == Step::kWatch && value.kind == Value::Kind::kInteger) {
        watch(c, pending.argv, static_cast<uint64_t>(value.integer));
        complete(c, index, Value::ok());
    } else if (pending.step == Step::kExec) {
        pending.reply = exec_reply(id, c, pending.queued, value);
        pending.queued.clear();
    } else {
        complete(c, index, value);
    }
    if (!c.dispatching) {
        dispatch(id, c);  // starts what waited for this reply, and flushes
    }
}

void RedisFrontend::complete(Conn& c, size_t index, const Value& value) {
    std::string bytes;
    net::encode_resp(value, c.protocol, bytes);
    c.pending[index].reply = std::move(bytes);
}

// Sends the replies that are next in command order.
void RedisFrontend::flush(net::ConnectionId id, Conn& c) {
    std::string out;
    while (!c.pending.empty() && c.pending.front().reply) {
        out += *c.pending.front().reply;
        c.pending.pop_front();
        ++c.first_ticket;
        RL_ASSERT(c.next_dispatch > 0);
        --c.next_dispatch;
    }
    if (!out.empty()) {
        output_.send(id, std::move(out));
    }
    if (c.quitting && c.in_flight == 0) {
        output_.close(id);
        return;
    }
    if (c.paused && c.pending.size() <= options_.pipeline_max / 2) {
        c.paused = false;
        output_.pause_reading(id, false);
    }
}

Value RedisFrontend::run_local(net::ConnectionId id, Conn& c, const redis::Argv& argv) {
    const std::string name = redis::lower(argv[0]);
    if (name == "ping") {
        if (argv.size() > 2) {
            return Value::error(redis::wrong_arity("ping"));
        }
        if (c.protocol == 2 && subscriptions_.count(id) > 0) {
            // A subscribed RESP2 client reads arrays only: Redis answers in a message's shape.
            return Value::array(
                {Value::bulk("pong"), Value::bulk(argv.size() == 2 ? argv[1] : std::string())});
        }
        return argv.size() == 2 ? Value::bulk(argv[1]) : Value::simple("PONG");
    }
    if (name == "echo") {
        return Value::bulk(argv[1]);
    }
    if (name == "quit") {
        c.quitting = true;
        return Value::ok();
    }
    if (name == "select") {
        if (argv[1] == "0") {
            return Value::ok();
        }
        const bool numeric =
            !argv[1].empty() && argv[1].find_first_not_of("-0123456789") == std::string::npos;
        return Value::error(numeric ? "ERR DB index is out of range"
                                    : std::string(redis::kNotInteger));
    }
    if (name == "auth") {
        if (argv.size() > 3) {
            return Value::error(std::string(redis::kSyntaxError));
        }
        if (backend_.redis_users_enabled()) {
            // AUTH password names Redis's default user, which a cluster with users has not.
            return *log_in(c, argv.size() == 3 ? argv[1] : "default", argv.back());
        }
        if (options_.password.empty()) {
            // As Redis's default user without a password: AUTH default <anything> is accepted.
            if (argv.size() == 3 && argv[1] == "default") {
                return Value::ok();
            }
            return Value::error(
                "ERR AUTH <password> called without any password configured for the default "
                "user. Are you sure your configuration is correct?");
        }
        const bool user_ok = argv.size() == 2 || argv[1] == "default";
        if (!user_ok || argv.back() != options_.password) {
            return Value::error("WRONGPASS invalid username-password pair or user is disabled.");
        }
        c.authenticated = true;
        return Value::ok();
    }
    if (name == "hello") {
        return hello(c, argv);
    }
    if (name == "client") {
        return client(c, argv);
    }
    if (name == "command") {
        return command_info(argv);
    }
    if (name == "info") {
        return info(argv);
    }
    if (name == "pubsub") {
        return pubsub(c, argv);
    }
    if (name == "reset") {
        return reset(id, c);
    }
    if (name == "unwatch") {
        c.watched.clear();
        c.watched_bytes = 0;
        return Value::ok();
    }
    if (name == "wait") {
        // Here only with bad arguments, or queued in MULTI, where Redis does not block either.
        std::variant<WaitArgs, Value> args = parse_wait(argv);
        if (Value* error = std::get_if<Value>(&args)) {
            return std::move(*error);
        }
        return Value::integer_of(backend_.redis_replicas_holding());
    }
    RL_PANIC("a connection command without a handler");
}

std::optional<Value> RedisFrontend::subscribed_refusal(net::ConnectionId id,
                                                       const Conn& c,
                                                       const redis::Argv& argv) const {
    if (c.protocol != 2 || subscriptions_.count(id) == 0) {
        return std::nullopt;
    }
    const std::string name = redis::lower(argv[0]);
    if (allowed_when_subscribed(name)) {
        return std::nullopt;
    }
    return Value::error(
        fmt::format("ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT "
                    "/ RESET are allowed in this context",
                    name));
}

std::string RedisFrontend::run_subscription(net::ConnectionId id,
                                            Conn& c,
                                            const redis::Argv& argv) {
    const std::string name = redis::lower(argv[0]);
    const Kind kind = name.starts_with("p") ? Kind::kPattern : Kind::kChannel;
    return name.ends_with("unsubscribe") ? unsubscribe(id, c, kind, argv)
                                         : subscribe(id, c, kind, argv);
}

// SUBSCRIBE channel... / PSUBSCRIBE pattern...: one reply per argument, each counting the
// connection's channels and patterns after it. All or nothing when over the connection's bound.
std::string RedisFrontend::subscribe(net::ConnectionId id,
                                     const Conn& c,
                                     Kind kind,
                                     const redis::Argv& argv) {
    std::string out;
    if (std::optional<std::string> refusal = backend_.redis_read_refusal(c.user)) {
        net::encode_resp(Value::error(std::move(*refusal)), c.protocol, out);
        return out;
    }
    std::set<std::string_view> added;
    size_t added_bytes = 0;
    for (size_t i = 1; i < argv.size(); ++i) {
        if (!subscriptions_.holds(id, kind, argv[i]) && added.insert(argv[i]).second) {
            added_bytes += argv[i].size();
        }
    }
    if (subscriptions_.count(id) + added.size() > options_.subscriptions_max ||
        subscriptions_.bytes(id) + added_bytes > options_.subscription_bytes_max) {
        net::encode_resp(
            Value::error(fmt::format("ERR raftlock: a connection may hold at most {} channels "
                                     "and patterns, of {} bytes together",
                                     options_.subscriptions_max, options_.subscription_bytes_max)),
            c.protocol, out);
        return out;
    }
    const char* word = kind == Kind::kChannel ? "subscribe" : "psubscribe";
    for (size_t i = 1; i < argv.size(); ++i) {
        subscriptions_.add(id, kind, argv[i]);
        net::encode_resp(
            Value::push({Value::bulk(word), Value::bulk(argv[i]),
                         Value::integer_of(static_cast<int64_t>(subscriptions_.count(id)))}),
            c.protocol, out);
    }
    RL_ASSERT(subscriptions_.count(id) <= options_.subscriptions_max);
    return out;
}

// UNSUBSCRIBE [channel...] / PUNSUBSCRIBE [pattern...]: without arguments, from every one the
// connection holds (in name order), or one reply with a nil name when it holds none.
std::string RedisFrontend::unsubscribe(net::ConnectionId id,
                                       const Conn& c,
                                       Kind kind,
                                       const redis::Argv& argv) {
    const char* word = kind == Kind::kChannel ? "unsubscribe" : "punsubscribe";
    const std::vector<std::string> names =
        argv.size() > 1 ? std::vector<std::string>(argv.begin() + 1, argv.end())
                        : subscriptions_.of(id, kind);
    const auto count = [&] {
        return Value::integer_of(static_cast<int64_t>(subscriptions_.count(id)));
    };
    std::string out;
    if (names.empty()) {
        net::encode_resp(Value::push({Value::bulk(word), Value::null(), count()}), c.protocol, out);
        return out;
    }
    for (const std::string& name : names) {
        subscriptions_.remove(id, kind, name);
        net::encode_resp(Value::push({Value::bulk(word), Value::bulk(name), count()}), c.protocol,
                         out);
    }
    return out;
}

// PUBSUB CHANNELS [pattern] | NUMSUB [channel...] | NUMPAT: this node's subscribers only (each
// node delivers every message to its own).
Value RedisFrontend::pubsub(const Conn& c, const redis::Argv& argv) const {
    if (std::optional<std::string> refusal = backend_.redis_read_refusal(c.user)) {
        return Value::error(std::move(*refusal));
    }
    const std::string sub = redis::lower(argv[1]);
    const auto wrong_arity = [&] {
        return Value::error(fmt::format(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            argv[1]));
    };
    if (sub == "channels") {
        if (argv.size() > 3) {
            return wrong_arity();
        }
        std::vector<Value> out;
        for (std::string& channel : subscriptions_.channels(
                 argv.size() == 3 ? std::optional<std::string>(argv[2]) : std::nullopt)) {
            out.push_back(Value::bulk(std::move(channel)));
        }
        return Value::array(std::move(out));
    }
    if (sub == "numsub") {
        std::vector<Value> out;
        for (size_t i = 2; i < argv.size(); ++i) {
            out.push_back(Value::bulk(argv[i]));
            out.push_back(
                Value::integer_of(static_cast<int64_t>(subscriptions_.subscribers(argv[i]))));
        }
        return Value::array(std::move(out));
    }
    if (sub == "numpat") {
        if (argv.size() != 2) {
            return wrong_arity();
        }
        return Value::integer_of(static_cast<int64_t>(subscriptions_.pattern_count()));
    }
    return Value::error(fmt::format("ERR unknown subcommand '{}'. Try PUBSUB HELP.", argv[1]));
}

// RESET: the connection as a new one (Redis 6.2): no subscriptions, no transaction or watched key,
// RESP2, no name, logged out unless no password is needed (a client certificate's user stays: the
// certificate still holds).
Value RedisFrontend::reset(net::ConnectionId id, Conn& c) {
    subscriptions_.remove_all(id);
    c.multi.reset();
    c.watched.clear();
    c.watched_bytes = 0;
    c.protocol = 2;
    c.name.clear();
    c.user = c.certificate_user;
    c.authenticated = options_.password.empty() || !c.certificate_user.empty();
    return Value::simple("RESET");
}

size_t RedisFrontend::publish(const std::string& channel, const std::string& message) {
    size_t receivers = 0;
    // A channel's subscribers get the same bytes for the same protocol: encoded once each.
    std::array<std::string, 2> channel_message;
    // A subscriber whose user lost the permission to subscribe (a role revoked, the user deleted,
    // applied before this PUBLISH in log order) gets no more messages: its connection is closed,
    // as Redis disconnects the subscribers an ACL change shuts out. Closed after the loop, which
    // closing would change under it; one permission check per user and publication.
    std::vector<net::ConnectionId> shut_out;
    std::map<std::string, bool, std::less<>> permitted;
    subscriptions_.for_each_receiver(
        channel, [&](net::ConnectionId id, const std::string* pattern) {
            auto it = conns_.find(id);
            RL_ASSERT(it != conns_.end());  // a closed connection's subscriptions went with it
            const Conn& c = it->second;
            if (c.quitting || !output_.is_open(id)) {
                return;
            }
            auto [known, fresh] = permitted.try_emplace(c.user, false);
            if (fresh) {
                known->second = !backend_.redis_read_refusal(c.user).has_value();
            }
            if (!known->second) {
                shut_out.push_back(id);
                return;
            }
            std::string bytes;
            if (pattern != nullptr) {
                net::encode_resp(Value::push({Value::bulk("pmessage"), Value::bulk(*pattern),
                                              Value::bulk(channel), Value::bulk(message)}),
                                 c.protocol, bytes);
            } else {
                std::string& cached = channel_message[c.protocol == 3 ? 1 : 0];
                if (cached.empty()) {
                    net::encode_resp(Value::push({Value::bulk("message"), Value::bulk(channel),
                                                  Value::bulk(message)}),
                                     c.protocol, cached);
                }
                bytes = cached;
            }
            output_.send(id, std::move(bytes));
            ++receivers;
        });
    for (net::ConnectionId id : shut_out) {
        if (auto it = conns_.find(id); it != conns_.end() && !it->second.quitting) {
            it->second.quitting = true;  // (a channel and a pattern may both have named it)
            output_.close(id);
        }
    }
    return receivers;
}

bool RedisFrontend::logged_in(const Conn& c) const {
    return backend_.redis_users_enabled() ? !c.user.empty() : c.authenticated;
}

std::optional<Value> RedisFrontend::log_in(Conn& c,
                                           const std::string& user,
                                           const std::string& password) {
    if (backend_.redis_login(user, password)) {
        c.user = user;
        c.authenticated = true;
        return Value::ok();
    }
    // Each attempt costs the node a key derivation: a connection gets three.
    if (++c.failed_logins >= kRedisLoginFailuresMax) {
        c.quitting = true;
    }
    return Value::error("WRONGPASS invalid username-password pair or user is disabled.");
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
Value RedisFrontend::hello(Conn& c, const redis::Argv& argv) {
    int protocol = c.protocol;
    size_t i = 1;
    if (argv.size() > 1) {
        if (argv[1] != "2" && argv[1] != "3") {
            const bool numeric = argv[1].find_first_not_of("0123456789") == std::string::npos;
            return Value::error(numeric ? "NOPROTO unsupported protocol version"
                                        : "ERR Protocol version is not an integer or out of range");
        }
        protocol = argv[1] == "3" ? 3 : 2;
        i = 2;
    }
    std::optional<std::string> new_name;
    for (; i < argv.size(); ++i) {
        const bool more = i + 1 < argv.size();
        if (iequals(argv[i], "auth") && i + 2 < argv.size() && backend_.redis_users_enabled()) {
            if (Value logged = *log_in(c, argv[i + 1], argv[i + 2]); logged.is_error()) {
                return logged;
            }
            i += 2;
        } else if (iequals(argv[i], "auth") && i + 2 < argv.size()) {
            if (argv[i + 1] != "default" ||
                (!options_.password.empty() && argv[i + 2] != options_.password)) {
                return Value::error(
                    "WRONGPASS invalid username-password pair or user is disabled.");
            }
            c.authenticated = true;
            i += 2;
        } else if (iequals(argv[i], "setname") && more) {
            new_name = argv[++i];
        } else {
            return Value::error(fmt::format("ERR Syntax error in HELLO option '{}'", argv[i]));
        }
    }
    if (!logged_in(c)) {
        return Value::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
            "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
            "select the RESP protocol version at the same time");
    }
    c.protocol = protocol;
    if (new_name) {
        c.name = *new_name;
    }
    const bool leader = backend_.redis_replication_info().starts_with("role:master");
    return Value::map({
        Value::bulk("server"),
        Value::bulk("redis"),
        Value::bulk("version"),
        Value::bulk(options_.version),
        Value::bulk("proto"),
        Value::integer_of(protocol),
        Value::bulk("id"),
        Value::integer_of(static_cast<int64_t>(c.client_id)),
        Value::bulk("mode"),
        Value::bulk("standalone"),
        Value::bulk("role"),
        Value::bulk(leader ? "master" : "replica"),
        Value::bulk("modules"),
        Value::array({}),
    });
}

Value RedisFrontend::client(Conn& c, const redis::Argv& argv) {
    const std::string sub = redis::lower(argv[1]);
    if (sub == "setname" && argv.size() == 3) {
        for (char ch : argv[2]) {
            if (ch < '!' || ch > '~') {
                return Value::error(
                    "ERR Client names cannot contain spaces, newlines or special characters.");
            }
        }
        c.name = argv[2];
        return Value::ok();
    }
    if (sub == "getname" && argv.size() == 2) {
        return c.name.empty() ? Value::null() : Value::bulk(c.name);
    }
    if (sub == "id" && argv.size() == 2) {
        return Value::integer_of(static_cast<int64_t>(c.client_id));
    }
    if (sub == "setname" || sub == "getname" || sub == "id") {
        return Value::error(redis::wrong_arity("client|" + sub));
    }
    return Value::error(fmt::format("ERR unknown subcommand '{}'. Try CLIENT HELP.", argv[1]));
}

Value RedisFrontend::command_info(const redis::Argv& argv) const {
    const auto describe = [](const redis::CommandSpec& spec) {
        const bool keyed = spec.route != redis::Route::kConnection && spec.name != "keys" &&
                           spec.name != "publish" && spec.name != "scan" && spec.name != "dbsize" &&
                           !spec.name.starts_with("flush") && spec.name != "script" &&
                           !spec.name.starts_with("eval");
        const bool many = spec.name == "del" || spec.name == "unlink" || spec.name == "exists" ||
                          spec.name == "mget" || spec.name == "mset";
        const char* flag = spec.route == redis::Route::kWrite  ? "write"
                           : spec.route == redis::Route::kRead ? "readonly"
                                                               : "fast";
        return Value::array({Value::bulk(std::string(spec.name)), Value::integer_of(spec.arity),
                             Value::array({Value::simple(flag)}), Value::integer_of(keyed ? 1 : 0),
                             Value::integer_of(keyed ? (many ? -1 : 1) : 0),
                             Value::integer_of(keyed ? (spec.name == "mset" ? 2 : 1) : 0),
                             Value::array({}), Value::array({}), Value::array({}),
                             Value::array({})});
    };
    if (argv.size() == 1) {
        std::vector<Value> all;
        for (const redis::CommandSpec& spec : redis::all_commands()) {
            all.push_back(describe(spec));
        }
        return Value::array(std::move(all));
    }
    const std::string sub = redis::lower(argv[1]);
    if (sub == "count" && argv.size() == 2) {
        return Value::integer_of(static_cast<int64_t>(redis::all_commands().size()));
    }
    if (sub == "info") {
        std::vector<Value> out;
        for (size_t i = 2; i < argv.size(); ++i) {
            const redis::CommandSpec* spec = redis::find_command(argv[i]);
            out.push_back(spec == nullptr ? Value::null_array() : describe(*spec));
        }
        return Value::array(std::move(out));
    }
    if (sub == "docs") {
        return Value::map({});  // no documentation is served: clients fall back to their own
    }
    return Value::error(fmt::format("ERR unknown subcommand '{}'. Try COMMAND HELP.", argv[1]));
}

Value RedisFrontend::info(const redis::Argv& argv) const {
    const auto wanted = [&](std::string_view section) {
        if (argv.size() == 1) {
            return true;
        }
        for (size_t i = 1; i < argv.size(); ++i) {
            const std::string s = redis::lower(argv[i]);
            if (s == section || s == "all" || s == "everything" || s == "default") {
                return true;
            }
        }
        return false;
    };
    std::string out;
    if (wanted("server")) {
        out += fmt::format(
            "# Server\r\nredis_version:{}\r\nredis_mode:standalone\r\nraftlock_node_id:{}\r\n\r\n",
            options_.version, options_.node_id);
    }
    if (wanted("clients")) {
        out += fmt::format("# Clients\r\nconnected_clients:{}\r\n\r\n", conns_.size());
    }
    if (wanted("stats")) {
        out += fmt::format("# Stats\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\n\r\n",
                           subscriptions_.channel_count(), subscriptions_.pattern_count());
    }
    if (wanted("persistence")) {
        out += "# Persistence\r\nloading:0\r\n\r\n";
    }
    if (wanted("replication")) {
        out += "# Replication\r\n" + backend_.redis_replication_info() + "\r\n";
    }
    if (wanted("keyspace")) {
        out += "# Keyspace\r\n";
        if (const size_t keys = backend_.redis_key_count(); keys > 0) {
            out += fmt::format("db0:keys={}\r\n", keys);
        }
    }
    return Value::bulk(std::move(out));
}

}  // namespace raftlock::server
