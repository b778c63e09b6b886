// The Redis commands of the keyspace, with Redis 7's semantics and error texts (docs/redis-mode.md
// lists them and where we differ). Time is cluster time: `now` comes with every call.

#include "statemachine/redis/commands.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "base/assert.h"
#include "base/digest.h"
#include "statemachine/redis/glob.h"
#include "statemachine/redis/handlers.h"
#include "statemachine/redis/keyspace.h"
#include "statemachine/redis/lua_script.h"

namespace raftlock::statemachine::redis {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return out;
}

std::string wrong_arity(std::string_view lower_name) {
    return fmt::format("ERR wrong number of arguments for '{}' command", lower_name);
}

namespace {

constexpr Route R = Route::kRead;
constexpr Route W = Route::kWrite;
constexpr Route C = Route::kConnection;

// Sorted by name (find_command searches it).
constexpr std::array kCommands = {
    CommandSpec{"append", 3, W},
    CommandSpec{"auth", -2, C, false},
    CommandSpec{"client", -2, C, false},
    CommandSpec{"command", -1, C, false},
    CommandSpec{"dbsize", 1, R},
    CommandSpec{"decr", 2, W},
    CommandSpec{"decrby", 3, W},
    CommandSpec{"del", -2, W},
    CommandSpec{"delex", -2, W},
    CommandSpec{"delifeq", 3, W},
    CommandSpec{"discard", 1, C, false, kRedisFormatTransactions},
    CommandSpec{"echo", 2, C, false},
    CommandSpec{"eval", -3, W, false},
    CommandSpec{"evalsha", -3, W, false},
    CommandSpec{"exec", 1, C, false, kRedisFormatTransactions},
    CommandSpec{"exists", -2, R},
    CommandSpec{"expire", -3, W},
    CommandSpec{"expireat", -3, W},
    CommandSpec{"flushall", -1, W},
    CommandSpec{"flushdb", -1, W},
    CommandSpec{"get", 2, R},
    CommandSpec{"getdel", 2, W},
    CommandSpec{"getset", 3, W},
    CommandSpec{"hdel", -3, W},
    CommandSpec{"hello", -1, C, false},
    CommandSpec{"hexists", 3, R},
    CommandSpec{"hget", 3, R},
    CommandSpec{"hgetall", 2, R},
    CommandSpec{"hincrby", 4, W},
    CommandSpec{"hkeys", 2, R},
    CommandSpec{"hlen", 2, R},
    CommandSpec{"hmget", -3, R},
    CommandSpec{"hmset", -4, W},
    CommandSpec{"hset", -4, W},
    CommandSpec{"hsetnx", 4, W},
    CommandSpec{"hvals", 2, R},
    CommandSpec{"incr", 2, W},
    CommandSpec{"incrby", 3, W},
    CommandSpec{"info", -1, C, false},
    CommandSpec{"keys", 2, R},
    CommandSpec{"lindex", 3, R, true, kRedisFormatCollections},
    CommandSpec{"llen", 2, R, true, kRedisFormatCollections},
    CommandSpec{"lpop", -2, W, true, kRedisFormatCollections},
    CommandSpec{"lpush", -3, W, true, kRedisFormatCollections},
    CommandSpec{"lpushx", -3, W, true, kRedisFormatCollections},
    CommandSpec{"lrange", 4, R, true, kRedisFormatCollections},
    CommandSpec{"lrem", 4, W, true, kRedisFormatCollections},
    CommandSpec{"lset", 4, W, true, kRedisFormatCollections},
    CommandSpec{"ltrim", 4, W, true, kRedisFormatCollections},
    CommandSpec{"mget", -2, R},
    CommandSpec{"mset", -3, W},
    CommandSpec{"multi", 1, C, false, kRedisFormatTransactions},
    CommandSpec{"persist", 2, W},
    CommandSpec{"pexpire", -3, W},
    CommandSpec{"pexpireat", -3, W},
    CommandSpec{"ping", -1, C, false},
    CommandSpec{"psubscribe", -2, C, false, kRedisFormatPubSub},
    CommandSpec{"pttl", 2, R},
    CommandSpec{"publish", 3, W, true, kRedisFormatPubSub},
    CommandSpec{"pubsub", -2, C, false, kRedisFormatPubSub},
    CommandSpec{"punsubscribe", -1, C, false, kRedisFormatPubSub},
    CommandSpec{"quit", -1, C, false},
    CommandSpec{"reset", 1, C, false, kRedisFormatPubSub},
    CommandSpec{"rpop", -2, W, true, kRedisFormatCollections},
    CommandSpec{"rpush", -3, W, true, kRedisFormatCollections},
    CommandSpec{"rpushx", -3, W, true, kRedisFormatCollections},
    CommandSpec{"sadd", -3, W, true, kRedisFormatCollections},
    CommandSpec{"scan", -2, R},
    CommandSpec{"scard", 2, R, true, kRedisFormatCollections},
    CommandSpec{"script", -2, W, false},
    CommandSpec{"select", 2, C, false},
    CommandSpec{"set", -3, W},
    CommandSpec{"setnx", 3, W},
    CommandSpec{"sismember", 3, R, true, kRedisFormatCollections},
    CommandSpec{"smembers", 2, R, true, kRedisFormatCollections},
    CommandSpec{"smismember", -3, R, true, kRedisFormatCollections},
    CommandSpec{"srem", -3, W, true, kRedisFormatCollections},
    CommandSpec{"strlen", 2, R},
    CommandSpec{"subscribe", -2, C, false, kRedisFormatPubSub},
    CommandSpec{"ttl", 2, R},
    CommandSpec{"type", 2, R},
    CommandSpec{"unlink", -2, W},
    CommandSpec{"unsubscribe", -1, C, false, kRedisFormatPubSub},
    CommandSpec{"unwatch", 1, C, false, kRedisFormatTransactions},
    CommandSpec{"wait", 3, C, false, kRedisFormatTransactions},
    CommandSpec{"watch", -2, C, false, kRedisFormatTransactions},
    CommandSpec{"zadd", -4, W, true, kRedisFormatCollections},
    CommandSpec{"zcard", 2, R, true, kRedisFormatCollections},
    CommandSpec{"zcount", 4, R, true, kRedisFormatCollections},
    CommandSpec{"zincrby", 4, W, true, kRedisFormatCollections},
    CommandSpec{"zrange", -4, R, true, kRedisFormatCollections},
    CommandSpec{"zrangebyscore", -4, R, true, kRedisFormatCollections},
    CommandSpec{"zrank", 3, R, true, kRedisFormatCollections},
    CommandSpec{"zrem", -3, W, true, kRedisFormatCollections},
    CommandSpec{"zremrangebyscore", 4, W, true, kRedisFormatCollections},
    CommandSpec{"zrevrange", -4, R, true, kRedisFormatCollections},
    CommandSpec{"zrevrangebyscore", -4, R, true, kRedisFormatCollections},
    CommandSpec{"zrevrank", 3, R, true, kRedisFormatCollections},
    CommandSpec{"zscore", 3, R, true, kRedisFormatCollections},
};

bool arity_ok(int arity, size_t argc) {
    return arity >= 0 ? argc == static_cast<size_t>(arity) : argc >= static_cast<size_t>(-arity);
}

// Relative or absolute expire arguments to an absolute deadline in ms, or nullopt on overflow or a
// non-positive relative time (Redis: "invalid expire time").
std::optional<TimeMs> deadline(int64_t amount, bool seconds, bool absolute, TimeMs now) {
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    if (seconds) {
        if (amount > kMax / 1000 || amount < -kMax / 1000) {
            return std::nullopt;
        }
        amount *= 1000;
    }
    if (absolute) {
        return amount;
    }
    if ((amount > 0 && now > kMax - amount) || (amount < 0 && now < -kMax - amount)) {
        return std::nullopt;
    }
    return now + amount;
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && lower(a) == lower(b);
}

// Redis's string2ll: an optional '-', digits, no leading zeros, no spaces, within int64.
std::optional<int64_t> parse_int(std::string_view s) {
    if (s.empty() || s.size() > 20 || s[0] == '+' || (s.size() > 1 && s[0] == '0') ||
        (s.size() > 1 && s[0] == '-' && s[1] == '0')) {
        return std::nullopt;
    }
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) {
        return std::nullopt;
    }
    return v;
}

std::optional<uint64_t> parse_cursor(std::string_view s) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
        return std::nullopt;
    }
    return v;
}

Flags parse_flags(const Argv& a, size_t from, std::initializer_list<std::string_view> names) {
    RL_ASSERT(names.size() <= 32);
    Flags flags;
    flags.next = from;
    for (; flags.next < a.size(); ++flags.next) {
        const std::string word = lower(a[flags.next]);
        const auto it = std::find(names.begin(), names.end(), word);
        if (it == names.end()) {
            break;
        }
        flags.bits |= 1u << (it - names.begin());
    }
    return flags;
}

Value err(std::string_view text) {
    return Value::error(std::string(text));
}

Value bulks(std::vector<std::string> items) {
    std::vector<Value> out;
    out.reserve(items.size());
    for (std::string& s : items) {
        out.push_back(Value::bulk(std::move(s)));
    }
    return Value::array(std::move(out));
}

std::span<const CommandSpec> all_commands() {
    return kCommands;
}

const CommandSpec* find_command(std::string_view name, uint8_t format) {
    const std::string key = lower(name);
    auto it =
        std::lower_bound(kCommands.begin(), kCommands.end(), key,
                         [](const CommandSpec& c, const std::string& k) { return c.name < k; });
    if (it == kCommands.end() || it->name != key || it->since_format > format) {
        return nullptr;
    }
    return &*it;
}

std::optional<Value> precheck(const Argv& argv, uint8_t format) {
    RL_ASSERT(!argv.empty());
    const CommandSpec* spec = find_command(argv[0], format);
    if (spec == nullptr) {
        std::string args;
        for (size_t i = 1; i < argv.size() && args.size() < 128; ++i) {
            args += fmt::format("'{}' ", std::string_view(argv[i]).substr(0, 128 - args.size()));
        }
        return Value::error(fmt::format("ERR unknown command '{}', with args beginning with: {}",
                                        std::string_view(argv[0]).substr(0, 128), args));
    }
    if (!arity_ok(spec->arity, argv.size())) {
        return Value::error(wrong_arity(spec->name));
    }
    if (spec->name == "script") {
        const std::string sub = lower(argv[1]);
        if (sub == "load" && argv.size() != 3) {
            return Value::error(wrong_arity("script|load"));
        }
        if (sub == "exists" && argv.size() < 3) {
            return Value::error(wrong_arity("script|exists"));
        }
        if (sub != "load" && sub != "exists" && sub != "flush") {
            return Value::error(
                fmt::format("ERR unknown subcommand '{}'. Try SCRIPT HELP.", argv[1]));
        }
    }
    return std::nullopt;
}

Route route_of(const Argv& argv) {
    const CommandSpec* spec = find_command(argv[0]);
    RL_ASSERT(spec != nullptr);
    if (spec->name == "script" && iequals(argv[1], "exists")) {
        return Route::kRead;
    }
    return spec->route;
}

bool may_write(const Argv& argv) {
    const CommandSpec* spec = argv.empty() ? nullptr : find_command(argv[0]);
    return spec == nullptr || precheck(argv).has_value() || route_of(argv) != Route::kRead;
}

// --- reads --------------------------------------------------------------------------------------

Value Commands::get(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view) {
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<std::string>(e)) {
        return err(kWrongType);
    }
    const std::string* s = as<std::string>(e);
    return s == nullptr ? Value::null() : Value::bulk(*s);
}

Value Commands::mget(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view) {
    std::vector<Value> out;
    for (size_t i = 1; i < a.size(); ++i) {
        const std::string* s = as<std::string>(find(ks, a[i], now));
        out.push_back(s == nullptr ? Value::null() : Value::bulk(*s));
    }
    return Value::array(std::move(out));
}

Value Commands::strlen(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view) {
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<std::string>(e)) {
        return err(kWrongType);
    }
    const std::string* s = as<std::string>(e);
    return Value::integer_of(s == nullptr ? 0 : static_cast<int64_t>(s->size()));
}

Value Commands::exists(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view) {
    int64_t n = 0;
    for (size_t i = 1; i < a.size(); ++i) {
        n += find(ks, a[i], now) != nullptr ? 1 : 0;
    }
    return Value::integer_of(n);
}

Value Commands::ttl(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name) {
    const Entry* e = find(ks, a[1], now);
    if (e == nullptr) {
        return Value::integer_of(-2);
    }
    if (e->expire_at_ms == 0) {
        return Value::integer_of(-1);
    }
    const int64_t left = e->expire_at_ms - now;
    return Value::integer_of(name == "pttl" ? left : (left + 500) / 1000);
}

Value Commands::type(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view) {
    const Entry* e = find(ks, a[1], now);
    if (e == nullptr) {
        return Value::simple("none");
    }
    return Value::simple(std::string(type_name(*e)));
}

std::string_view Commands::type_name(const Entry& e) {
    return std::visit(
        [](const auto& value) -> std::string_view {
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<T, std::string>) {
                return "string";
            } else if constexpr (std::is_same_v<T, Hash>) {
                return "hash";
            } else if constexpr (std::is_same_v<T, List>) {
                return "list";
            } else if constexpr (std::is_same_v<T, Set>) {
                return "set";
            } else {
                static_assert(std::is_same_v<T, ZSet>);
                return "zset";
            }
        },
        e.value);
}

Value Commands::keys(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view) {
    std::vector<std::string> out;
    for (const auto& [key, entry] : ks.keys_) {
        if ((entry.expire_at_ms == 0 || entry.expire_at_ms > now) && glob_match(a[1], key.name)) {
            out.push_back(key.name);
        }
    }
    return bulks(std::move(out));
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The cursor is the hash to go on from.
Value Commands::scan(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view) {
    const std::optional<uint64_t> cursor = parse_cursor(a[1]);
    if (!cursor) {
        return err("ERR invalid cursor");
    }
    std::optional<std::string_view> pattern;
    std::optional<std::string> type_filter;  // lower case
    int64_t count = 10;
    for (size_t i = 2; i < a.size(); i += 2) {
        if (i + 1 >= a.size()) {
            return err(kSyntaxError);
        }
        const std::string opt = lower(a[i]);
        if (opt == "match") {
            pattern = a[i + 1];
        } else if (opt == "count") {
            const std::optional<int64_t> n = parse_int(a[i + 1]);
            if (!n) {
                return err(kNotInteger);
            }
            if (*n < 1) {
                return err(kSyntaxError);
            }
            count = *n;
        } else if (opt == "type") {
            type_filter = lower(a[i + 1]);
        } else {
            return err(kSyntaxError);
        }
    }
    std::vector<std::string> out;
    auto it = ks.keys_.lower_bound(Keyspace::KeyName{*cursor, {}});
    for (int64_t visited = 0; it != ks.keys_.end(); ++it, ++visited) {
        // Stop only between hashes, so a cursor never lands among keys sharing one.
        if (visited >= count && it->first.hash != std::prev(it)->first.hash) {
            break;
        }
        const Entry& e = it->second;
        if (e.expire_at_ms != 0 && e.expire_at_ms <= now) {
            continue;
        }
        if (pattern && !glob_match(*pattern, it->first.name)) {
            continue;
        }
        if (type_filter && *type_filter != Commands::type_name(e)) {
            continue;
        }
        out.push_back(it->first.name);
    }
    const uint64_t next = it == ks.keys_.end() ? 0 : it->first.hash;
    return Value::array({Value::bulk(std::to_string(next)), bulks(std::move(out))});
}

Value Commands::hash_read(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name) {
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<Hash>(e)) {
        return err(kWrongType);
    }
    const Hash& h = or_empty<Hash>(e);
    if (name == "hget") {
        auto f = h.find(a[2]);
        return f == h.end() ? Value::null() : Value::bulk(f->second);
    }
    if (name == "hmget") {
        std::vector<Value> out;
        for (size_t i = 2; i < a.size(); ++i) {
            auto f = h.find(a[i]);
            out.push_back(f == h.end() ? Value::null() : Value::bulk(f->second));
        }
        return Value::array(std::move(out));
    }
    if (name == "hexists") {
        return Value::integer_of(h.contains(a[2]) ? 1 : 0);
    }
    if (name == "hlen") {
        return Value::integer_of(static_cast<int64_t>(h.size()));
    }
    std::vector<Value> out;
    for (const auto& [field, value] : h) {
        if (name != "hvals") {
            out.push_back(Value::bulk(field));
        }
        if (name != "hkeys") {
            out.push_back(Value::bulk(value));
        }
    }
    return name == "hgetall" ? Value::map(std::move(out)) : Value::array(std::move(out));
}

Value Commands::script_exists(const Keyspace& ks, const Argv& a, TimeMs, std::string_view) {
    std::vector<Value> out;
    for (size_t i = 2; i < a.size(); ++i) {
        out.push_back(Value::integer_of(ks.scripts_.contains(lower(a[i])) ? 1 : 0));
    }
    return Value::array(std::move(out));
}

Value Commands::dbsize(const Keyspace& ks, const Argv&, TimeMs, std::string_view) {
    return Value::integer_of(static_cast<int64_t>(ks.keys_.size()));
}

Value Commands::read(const Keyspace& ks, const Argv& a, TimeMs now) {
    using Handler = Value (*)(const Keyspace&, const Argv&, TimeMs, std::string_view);
    static const std::map<std::string_view, Handler> kHandlers = {
        {"dbsize", dbsize},
        {"exists", exists},
        {"get", get},
        {"hexists", hash_read},
        {"hget", hash_read},
        {"hgetall", hash_read},
        {"hkeys", hash_read},
        {"hlen", hash_read},
        {"hmget", hash_read},
        {"hvals", hash_read},
        {"keys", keys},
        {"mget", mget},
        {"pttl", ttl},
        {"scan", scan},
        {"script", script_exists},
        {"strlen", strlen},
        {"ttl", ttl},
        {"type", type},
        // Lists, sets and sorted sets (lists.cc, sets.cc, zsets.cc).
        {"lindex", list_read},
        {"llen", list_read},
        {"lrange", list_read},
        {"scard", set_read},
        {"sismember", set_read},
        {"smembers", set_read},
        {"smismember", set_read},
        {"zcard", zset_read},
        {"zcount", zset_read},
        {"zrange", zrange},
        {"zrangebyscore", zrange},
        {"zrank", zset_read},
        {"zrevrange", zrange},
        {"zrevrangebyscore", zrange},
        {"zrevrank", zset_read},
        {"zscore", zset_read},
    };
    const std::string name = lower(a[0]);
    auto it = kHandlers.find(name);
    RL_ASSERT_MSG(it != kHandlers.end(), "a read command without a handler");
    return it->second(ks, a, now, name);
}

// --- writes -------------------------------------------------------------------------------------

// SET key value [NX | XX | IFEQ cmp] [GET] [EX s | PX ms | EXAT s | PXAT ms | KEEPTTL]
Value Commands::set(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    bool nx = false;
    bool xx = false;
    bool get_old = false;
    bool keep_ttl = false;
    std::optional<std::string_view> ifeq;
    std::optional<std::string> expire_opt;  // "ex", "px", "exat", "pxat"
    std::string_view expire_arg;
    for (size_t i = 3; i < a.size(); ++i) {
        const std::string opt = lower(a[i]);
        const bool has_next = i + 1 < a.size();
        if (opt == "nx" && !xx && !ifeq) {
            nx = true;
        } else if (opt == "xx" && !nx && !ifeq) {
            xx = true;
        } else if (opt == "get") {
            get_old = true;
        } else if (opt == "keepttl" && !expire_opt) {
            keep_ttl = true;
        } else if ((opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") && !keep_ttl &&
                   !expire_opt && has_next) {
            expire_opt = opt;
            expire_arg = a[++i];
        } else if (opt == "ifeq" && !nx && !xx && !ifeq && has_next) {
            ifeq = a[++i];
        } else {
            return err(kSyntaxError);
        }
    }
    TimeMs at = 0;
    if (expire_opt) {
        const std::optional<int64_t> amount = parse_int(expire_arg);
        if (!amount) {
            return err(kNotInteger);
        }
        const bool seconds = *expire_opt == "ex" || *expire_opt == "exat";
        const bool absolute = *expire_opt == "exat" || *expire_opt == "pxat";
        const std::optional<TimeMs> d =
            *amount <= 0 ? std::nullopt : deadline(*amount, seconds, absolute, now);
        if (!d) {
            return err("ERR invalid expire time in 'set' command");
        }
        at = *d;
    }
    const Entry* e = find(ks, a[1], now);
    if ((get_old || ifeq) && wrong_type<std::string>(e)) {
        return err(kWrongType);
    }
    const std::string* old = as<std::string>(e);
    Value old_reply = old == nullptr ? Value::null() : Value::bulk(*old);
    const bool go = (nx && e == nullptr) || (xx && e != nullptr) ||
                    (ifeq && old && *old == *ifeq) || (!nx && !xx && !ifeq);
    if (!go) {
        return get_old ? old_reply : Value::null();
    }
    put_string(ks, a[1], a[2], at, keep_ttl, now);
    return get_old ? old_reply : Value::ok();
}

Value Commands::setnx(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    if (find(ks, a[1], now) != nullptr) {
        return Value::integer_of(0);
    }
    put_string(ks, a[1], a[2], 0, false, now);
    return Value::integer_of(1);
}

Value Commands::getset(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<std::string>(e)) {
        return err(kWrongType);
    }
    const std::string* old = as<std::string>(e);
    Value reply = old == nullptr ? Value::null() : Value::bulk(*old);
    put_string(ks, a[1], a[2], 0, false, now);
    return reply;
}

Value Commands::getdel(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<std::string>(e)) {
        return err(kWrongType);
    }
    if (e == nullptr) {
        return Value::null();
    }
    Value reply = Value::bulk(std::get<std::string>(e->value));
    erase(ks, a[1]);
    return reply;
}

Value Commands::mset(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    if (a.size() % 2 != 1) {
        return Value::error(wrong_arity("mset"));
    }
    for (size_t i = 1; i + 1 < a.size(); i += 2) {
        put_string(ks, a[i], a[i + 1], 0, false, now);
    }
    return Value::ok();
}

Value Commands::incr_by(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int) {
    int64_t by = name == "incr" ? 1 : name == "decr" ? -1 : 0;
    if (name == "incrby" || name == "decrby") {
        const std::optional<int64_t> n = parse_int(a[2]);
        if (!n) {
            return err(kNotInteger);
        }
        if (name == "decrby") {
            if (*n == std::numeric_limits<int64_t>::min()) {
                return err("ERR decrement would overflow");
            }
            by = -*n;
        } else {
            by = *n;
        }
    }
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<std::string>(e)) {
        return err(kWrongType);
    }
    int64_t value = 0;
    if (const std::string* s = as<std::string>(e)) {
        const std::optional<int64_t> v = parse_int(*s);
        if (!v) {
            return err(kNotInteger);
        }
        value = *v;
    }
    int64_t result = 0;
    if (__builtin_add_overflow(value, by, &result)) {
        return err("ERR increment or decrement would overflow");
    }
    put_string(ks, a[1], std::to_string(result), 0, true, now);
    return Value::integer_of(result);
}

Value Commands::append(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<std::string>(e)) {
        return err(kWrongType);
    }
    const std::string* old = as<std::string>(e);
    const size_t size = (old == nullptr ? 0 : old->size()) + a[2].size();
    if (size > kValueBytesMax) {
        return err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    }
    std::string value = old == nullptr ? std::string() : *old;
    value += a[2];
    put_string(ks, a[1], std::move(value), 0, true, now);
    return Value::integer_of(static_cast<int64_t>(size));
}

Value Commands::del(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    int64_t n = 0;
    for (size_t i = 1; i < a.size(); ++i) {
        if (find(ks, a[i], now) != nullptr) {
            n += erase(ks, a[i]) ? 1 : 0;
        }
    }
    return Value::integer_of(n);
}

// DELEX key [IFEQ value | IFNE value] (Redis 8.4) and DELIFEQ key value (Valkey 9).
Value Commands::delex(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    const bool delifeq = lower(a[0]) == "delifeq";
    std::optional<std::pair<bool, std::string_view>> cond;  // (equal?, value)
    if (delifeq) {
        cond = {true, a[2]};
    } else if (a.size() == 4) {
        const std::string opt = lower(a[2]);
        if (opt != "ifeq" && opt != "ifne") {
            return err(kSyntaxError);
        }
        cond = {opt == "ifeq", a[3]};
    } else if (a.size() != 2) {
        return err(kSyntaxError);
    }
    const Entry* e = find(ks, a[1], now);
    if (e == nullptr) {
        return Value::integer_of(0);
    }
    if (cond) {
        if (wrong_type<std::string>(e)) {
            return err(kWrongType);
        }
        if ((std::get<std::string>(e->value) == cond->second) != cond->first) {
            return Value::integer_of(0);
        }
    }
    erase(ks, a[1]);
    return Value::integer_of(1);
}

// EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT key time [NX | XX | GT | LT]
Value Commands::expire(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int) {
    const std::optional<int64_t> amount = parse_int(a[2]);
    if (!amount) {
        return err(kNotInteger);
    }
    const Flags flags = parse_flags(a, 3, {"nx", "xx", "gt", "lt"});
    if (flags.next < a.size()) {
        return Value::error(fmt::format("ERR Unsupported option {}", a[flags.next]));
    }
    const bool nx = flags.has(0);
    const bool xx = flags.has(1);
    const bool gt = flags.has(2);
    const bool lt = flags.has(3);
    if (nx && (xx || gt || lt)) {
        return err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if (gt && lt) {
        return err("ERR GT and LT options at the same time are not compatible");
    }
    const bool seconds = name == "expire" || name == "expireat";
    const bool absolute = name == "expireat" || name == "pexpireat";
    const std::optional<TimeMs> at = deadline(*amount, seconds, absolute, now);
    if (!at) {
        return Value::error(fmt::format("ERR invalid expire time in '{}' command", name));
    }
    const Entry* e = find(ks, a[1], now);
    if (e == nullptr) {
        return Value::integer_of(0);
    }
    const TimeMs current = e->expire_at_ms;  // 0: no TTL, which counts as infinite
    if ((nx && current != 0) || (xx && current == 0) || (gt && (current == 0 || *at <= current)) ||
        (lt && current != 0 && *at >= current)) {
        return Value::integer_of(0);
    }
    if (*at <= now) {
        erase(ks, a[1]);
    } else {
        set_expiry(ks, a[1], *at, now);
    }
    return Value::integer_of(1);
}

Value Commands::persist(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    const Entry* e = find(ks, a[1], now);
    if (e == nullptr || e->expire_at_ms == 0) {
        return Value::integer_of(0);
    }
    set_expiry(ks, a[1], 0, now);
    return Value::integer_of(1);
}

Value Commands::flush(Keyspace& ks, const Argv& a, TimeMs, std::string_view, int) {
    if (a.size() > 2 || (a.size() == 2 && !iequals(a[1], "async") && !iequals(a[1], "sync"))) {
        return err(kSyntaxError);
    }
    while (!ks.keys_.empty()) {
        ks.erase_at(ks.keys_.begin());  // each deletion recorded for WATCH
    }
    RL_ASSERT(ks.expiry_.empty());
    return Value::ok();
}

// HSET / HMSET key field value [field value ...]
Value Commands::hset(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int) {
    if (a.size() % 2 != 0) {
        return Value::error(wrong_arity(name));
    }
    Hash* h = for_write<Hash>(ks, a[1], now);
    if (h == nullptr) {
        return err(kWrongType);
    }
    int64_t added = 0;
    for (size_t i = 2; i + 1 < a.size(); i += 2) {
        added += h->insert_or_assign(a[i], a[i + 1]).second ? 1 : 0;
    }
    touch(ks, a[1]);  // even when every value was already there, as Redis does
    return name == "hmset" ? Value::ok() : Value::integer_of(added);
}

Value Commands::hsetnx(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    Hash* h = for_write<Hash>(ks, a[1], now);
    if (h == nullptr) {
        return err(kWrongType);
    }
    if (!h->try_emplace(a[2], a[3]).second) {
        return Value::integer_of(0);
    }
    touch(ks, a[1]);
    return Value::integer_of(1);
}

Value Commands::hdel(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    Entry* e = find(ks, a[1], now);
    if (wrong_type<Hash>(e)) {
        return err(kWrongType);
    }
    if (e == nullptr) {
        return Value::integer_of(0);
    }
    Hash& h = std::get<Hash>(e->value);
    int64_t n = 0;
    for (size_t i = 2; i < a.size(); ++i) {
        n += static_cast<int64_t>(h.erase(a[i]));
    }
    if (n > 0) {
        touch(ks, a[1]);
    }
    if (h.empty()) {
        erase(ks, a[1]);
    }
    return Value::integer_of(n);
}

Value Commands::hincrby(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    const std::optional<int64_t> by = parse_int(a[3]);
    if (!by) {
        return err(kNotInteger);
    }
    Entry* e = find(ks, a[1], now);
    if (wrong_type<Hash>(e)) {
        return err(kWrongType);
    }
    int64_t value = 0;
    if (e != nullptr) {
        const Hash& h = std::get<Hash>(e->value);
        if (auto f = h.find(a[2]); f != h.end()) {
            const std::optional<int64_t> v = parse_int(f->second);
            if (!v) {
                return err("ERR hash value is not an integer");
            }
            value = *v;
        }
    }
    int64_t result = 0;
    if (__builtin_add_overflow(value, *by, &result)) {
        return err("ERR increment or decrement would overflow");
    }
    (*for_write<Hash>(ks, a[1], now))[a[2]] = std::to_string(result);
    touch(ks, a[1]);
    return Value::integer_of(result);
}

// SCRIPT LOAD body | SCRIPT FLUSH [ASYNC | SYNC] (SCRIPT EXISTS is a read).
Value Commands::script(Keyspace& ks, const Argv& a, TimeMs, std::string_view, int) {
    const std::string sub = lower(a[1]);
    if (sub == "flush") {
        if (a.size() > 3 || (a.size() == 3 && !iequals(a[2], "async") && !iequals(a[2], "sync"))) {
            return err("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        }
        ks.scripts_.clear();
        return Value::ok();
    }
    RL_ASSERT(sub == "load");
    std::string problem = check_script(a[2]);
    if (!problem.empty()) {
        return Value::error(std::move(problem));
    }
    std::string sha = base::hex(base::sha1(a[2]));
    if (!ks.scripts_.contains(sha)) {
        if (ks.scripts_.size() >= kScriptsMax) {
            return Value::error(fmt::format(
                "ERR raftlock: the script cache is full ({} scripts); SCRIPT FLUSH", kScriptsMax));
        }
        ks.scripts_.emplace(sha, a[2]);
    }
    return Value::bulk(std::move(sha));
}

// EVAL script numkeys key... arg... | EVALSHA sha1 numkeys key... arg...
Value Commands::eval(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int depth) {
    const std::optional<int64_t> numkeys = parse_int(a[2]);
    if (!numkeys) {
        return err(kNotInteger);
    }
    if (*numkeys < 0) {
        return err("ERR Number of keys can't be negative");
    }
    if (static_cast<uint64_t>(*numkeys) > a.size() - 3) {
        return err("ERR Number of keys can't be greater than number of args");
    }
    std::string body;
    if (name == "evalsha") {
        auto it = ks.scripts_.find(lower(a[1]));
        if (it == ks.scripts_.end()) {
            return err("NOSCRIPT No matching script. Please use EVAL.");
        }
        body = it->second;
    } else {
        body = a[1];
        std::string sha = base::hex(base::sha1(body));
        if (!ks.scripts_.contains(sha) && ks.scripts_.size() < kScriptsMax) {
            std::string problem = check_script(body);
            if (!problem.empty()) {
                return Value::error(std::move(problem));
            }
            ks.scripts_.emplace(std::move(sha), body);
        }
    }
    const auto first_arg = a.begin() + 3 + *numkeys;
    const std::vector<std::string> keys(a.begin() + 3, first_arg);
    const std::vector<std::string> args(first_arg, a.end());
    // What one script may do to the keyspace, on top of the interpreter's own limits: without
    // these a loop of redis.call('SET', i, ...) within the instruction budget could add millions
    // of keys to every replica (found by keyspace_fuzz).
    size_t calls = 0;
    size_t bytes = 0;
    const ScriptCall call = [&ks, now, depth, &calls, &bytes](const Argv& argv) -> Value {
        for (const std::string& arg : argv) {
            bytes += arg.size();
        }
        if (++calls > kScriptCallsMax || bytes > kScriptCallBytesMax) {
            return Value::error(fmt::format(
                "ERR raftlock: a script may run at most {} commands with {} bytes of arguments",
                kScriptCallsMax, kScriptCallBytesMax));
        }
        if (argv.empty()) {
            return err("ERR Please specify at least one argument for this redis lib call");
        }
        const CommandSpec* spec = find_command(argv[0], ks.format_);
        if (spec == nullptr) {
            return err("ERR Unknown Redis command called from script");
        }
        if (!spec->scriptable) {
            return err("ERR This Redis command is not allowed from script");
        }
        if (!arity_ok(spec->arity, argv.size())) {
            return Value::error(wrong_arity(spec->name));
        }
        return write(ks, argv, now, depth + 1);
    };
    if (ks.script_instructions_left_ == 0) {
        return err(kScriptInstructionLimitError);  // spent by the transaction's earlier scripts
    }
    ScriptLimits limits;
    limits.instructions_max = ks.script_instructions_left_;
    uint64_t used = 0;
    Value reply = run_script(body, keys, args, call, limits, &used);
    RL_ASSERT(used <= ks.script_instructions_left_);
    ks.script_instructions_left_ -= used;
    return reply;
}

// PUBLISH channel message: recorded for delivery by every node (Keyspace::take_published). How
// many subscribers received it is a node's own figure, not the state machine's: the node that
// answers the client replaces this 0 with its count (server/replica_apply.cc), and a script sees
// 0 on every replica, where Redis would give its own count.
Value Commands::publish(Keyspace& ks, const Argv& a, TimeMs, std::string_view, int) {
    RL_ASSERT(a.size() == 3);
    ks.published_.push_back(Publication{a[1], a[2]});
    return Value::integer_of(0);
}

Value Commands::write(Keyspace& ks, const Argv& a, TimeMs now, int depth) {
    using Handler = Value (*)(Keyspace&, const Argv&, TimeMs, std::string_view, int);
    static const std::map<std::string_view, Handler> kHandlers = {
        {"append", append},
        {"decr", incr_by},
        {"decrby", incr_by},
        {"del", del},
        {"delex", delex},
        {"delifeq", delex},
        {"eval", eval},
        {"evalsha", eval},
        {"expire", expire},
        {"expireat", expire},
        {"flushall", flush},
        {"flushdb", flush},
        {"getdel", getdel},
        {"getset", getset},
        {"hdel", hdel},
        {"hincrby", hincrby},
        {"hmset", hset},
        {"hset", hset},
        {"hsetnx", hsetnx},
        {"incr", incr_by},
        {"incrby", incr_by},
        {"mset", mset},
        {"persist", persist},
        {"pexpire", expire},
        {"pexpireat", expire},
        {"publish", publish},
        {"script", script},
        {"set", set},
        {"setnx", setnx},
        {"unlink", del},
        // Lists, sets and sorted sets (lists.cc, sets.cc, zsets.cc).
        {"lpop", pop},
        {"lpush", push},
        {"lpushx", push},
        {"lrem", lrem},
        {"lset", lset},
        {"ltrim", ltrim},
        {"rpop", pop},
        {"rpush", push},
        {"rpushx", push},
        {"sadd", sadd},
        {"srem", srem},
        {"zadd", zadd},
        {"zincrby", zadd},
        {"zrem", zrem},
        {"zremrangebyscore", zremrangebyscore},
    };
    RL_ASSERT(depth <= 1);
    if (route_of(a) == Route::kRead) {
        return read(ks, a, now);
    }
    const std::string name = lower(a[0]);
    auto it = kHandlers.find(name);
    RL_ASSERT_MSG(it != kHandlers.end(), "a write command without a handler");
    return it->second(ks, a, now, name, depth);
}

Value Keyspace::apply(const Argv& argv,
                      TimeMs now_ms,
                      uint64_t script_instructions_max,
                      uint8_t format) {
    RL_ASSERT(script_instructions_max > 0);
    RL_ASSERT(format >= 1 && format <= kRedisFormatNewest);
    script_instructions_left_ = script_instructions_max;
    format_ = format;
    published_.clear();  // what an earlier entry published and nobody took
    return run(argv, now_ms);
}

Value Keyspace::run(const Argv& argv, TimeMs now_ms) {
    if (argv.empty()) {
        return Value::error("ERR empty command");
    }
    if (std::optional<Value> rejected = precheck(argv, format_)) {
        return std::move(*rejected);
    }
    if (route_of(argv) == Route::kConnection) {
        return Value::error("ERR raftlock: a connection command cannot be replicated");
    }
    return Commands::write(*this, argv, now_ms, 0);
}

Value Keyspace::exec(const Transaction& transaction,
                     TimeMs now_ms,
                     uint64_t script_instructions_max,
                     uint8_t format) {
    RL_ASSERT(script_instructions_max > 0);
    RL_ASSERT(format >= kRedisFormatTransactions && format <= kRedisFormatNewest);
    script_instructions_left_ = script_instructions_max;
    format_ = format;
    published_.clear();
    for (const WatchedKey& watched : transaction.watched) {
        if (changed_since(watched.key, watched.index)) {
            return Value::null_array();  // Redis: EXEC answers nil, and nothing runs
        }
    }
    std::vector<Value> replies;
    replies.reserve(transaction.commands.size());
    for (const Argv& argv : transaction.commands) {
        const size_t published_before = published_.size();
        replies.push_back(run(argv, now_ms));
        if (!argv.empty() && iequals(argv[0], "publish") && !replies.back().is_error()) {
            RL_ASSERT(published_.size() == published_before + 1);
            published_.back().exec_item = replies.size() - 1;
        }
    }
    RL_ASSERT(replies.size() == transaction.commands.size());
    return Value::array(std::move(replies));
}

Value Keyspace::query(const Argv& argv, TimeMs now_ms) const {
    if (argv.empty()) {
        return Value::error("ERR empty command");
    }
    if (std::optional<Value> rejected = precheck(argv)) {
        return std::move(*rejected);
    }
    if (route_of(argv) != Route::kRead) {
        return Value::error("ERR raftlock: not a read-only command");
    }
    return Commands::read(*this, argv, now_ms);
}

}  // namespace raftlock::statemachine::redis
