// Sets: SADD, SREM, SISMEMBER, SMISMEMBER, SMEMBERS, SCARD, with Redis 7.0's replies and errors.
// SMEMBERS lists members in byte order; Redis promises no order (docs/redis-mode.md).

#include "statemachine/redis/commands.h"
#include "statemachine/redis/handlers.h"

namespace raftlock::statemachine::redis {

// SISMEMBER key member | SMISMEMBER key member [member ...] | SMEMBERS key | SCARD key
Value Commands::set_read(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name) {
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<Set>(e)) {
        return err(kWrongType);
    }
    const Set& set = or_empty<Set>(e);
    if (name == "scard") {
        return Value::integer_of(static_cast<int64_t>(set.size()));
    }
    if (name == "sismember") {
        return Value::integer_of(set.contains(a[2]) ? 1 : 0);
    }
    std::vector<Value> out;
    if (name == "smismember") {
        for (size_t i = 2; i < a.size(); ++i) {
            out.push_back(Value::integer_of(set.contains(a[i]) ? 1 : 0));
        }
        return Value::array(std::move(out));
    }
    RL_ASSERT(name == "smembers");
    out.reserve(set.size());
    for (const std::string& member : set) {
        out.push_back(Value::bulk(member));
    }
    return Value::set(std::move(out));
}

// SADD key member [member ...]: how many were new.
Value Commands::sadd(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    Set* set = for_write<Set>(ks, a[1], now);
    if (set == nullptr) {
        return err(kWrongType);
    }
    int64_t added = 0;
    for (size_t i = 2; i < a.size(); ++i) {
        added += set->insert(a[i]).second ? 1 : 0;
    }
    RL_ASSERT(!set->empty());
    if (added > 0) {
        touch(ks, a[1]);
    }
    return Value::integer_of(added);
}

// SREM key member [member ...]: how many were there; a set left empty is deleted.
Value Commands::srem(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    auto found = existing<Set>(ks, a[1], now, Value::integer_of(0));
    if (Value* reply = std::get_if<Value>(&found)) {
        return std::move(*reply);
    }
    Set* set = std::get<Set*>(found);
    int64_t removed = 0;
    for (size_t i = 2; i < a.size(); ++i) {
        removed += static_cast<int64_t>(set->erase(a[i]));
    }
    if (removed > 0) {
        touch(ks, a[1]);
    }
    drop_if_empty(ks, a[1], *set);
    return Value::integer_of(removed);
}

}  // namespace raftlock::statemachine::redis
