#pragma once

// The handlers of the Redis commands and what they share, for the files that define them:
// commands.cc (strings, keys, hashes, scripts, and the dispatch), lists.cc, sets.cc, zsets.cc.
// Internal to statemachine/redis: everything else goes through Keyspace.

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/assert.h"
#include "statemachine/redis/commands.h"
#include "statemachine/redis/keyspace.h"
#include "statemachine/redis/value.h"

namespace raftlock::statemachine::redis {

bool iequals(std::string_view a, std::string_view b);
std::optional<uint64_t> parse_cursor(std::string_view s);
Value err(std::string_view text);

// Options given as words (EXPIRE's NX XX GT LT, ZADD's flags): the run of a[from..] that are among
// `names`, in any case and order; bit i set for names[i], and where the run ends.
struct Flags {
    uint32_t bits = 0;
    size_t next = 0;
    bool has(size_t i) const { return (bits >> i & 1u) != 0; }
};
Flags parse_flags(const Argv& a, size_t from, std::initializer_list<std::string_view> names);
Value bulks(std::vector<std::string> items);

// The handlers. Reads take a const keyspace; writes a mutable one.
class Commands {
public:
    using Entry = Keyspace::Entry;
    using Hash = Keyspace::Hash;
    using List = Keyspace::List;
    using Set = Keyspace::Set;
    using ZSet = Keyspace::ZSet;

    static Value read(const Keyspace& ks, const Argv& a, TimeMs now);
    static Value write(Keyspace& ks, const Argv& a, TimeMs now, int depth);

private:
    static const Entry* find(const Keyspace& ks, std::string_view name, TimeMs now) {
        auto it = ks.keys_.find(Keyspace::KeyName{key_hash(name), std::string(name)});
        if (it == ks.keys_.end() ||
            (it->second.expire_at_ms != 0 && it->second.expire_at_ms <= now)) {
            return nullptr;
        }
        return &it->second;
    }
    static Entry* find(Keyspace& ks, std::string_view name, TimeMs now) {
        return const_cast<Entry*>(find(std::as_const(ks), name, now));
    }
    static Keyspace::KeyName key_of(std::string_view name) {
        return Keyspace::KeyName{key_hash(name), std::string(name)};
    }
    // Deletes a key, recording the deletion for WATCH (Keyspace::changed_since).
    static bool erase(Keyspace& ks, std::string_view name) {
        auto it = ks.keys_.find(key_of(name));
        if (it == ks.keys_.end()) {
            return false;
        }
        ks.erase_at(it);
        return true;
    }
    // Records that the entry being applied changed the key at `name`, if it exists (a deleted one
    // was recorded by erase). Where Redis calls signalModifiedKey: only when something changed.
    static void touch(Keyspace& ks, std::string_view name) {
        auto it = ks.keys_.find(key_of(name));
        if (it != ks.keys_.end()) {
            RL_ASSERT(it->second.changed_at <= ks.index_);
            it->second.changed_at = ks.change_index();
        }
    }
    // Sets the deadline (0: none) of an existing key; a deadline <= now deletes it.
    static void set_expiry(Keyspace& ks, std::string_view name, TimeMs at, TimeMs now) {
        auto it = ks.keys_.find(key_of(name));
        RL_ASSERT(it != ks.keys_.end());
        if (at != 0 && at <= now) {
            erase(ks, name);
            return;
        }
        if (it->second.expire_at_ms != 0) {
            ks.expiry_.erase({it->second.expire_at_ms, it->first});
        }
        it->second.expire_at_ms = at;
        it->second.changed_at = ks.change_index();
        if (at != 0) {
            ks.expiry_.emplace(at, it->first);
        }
    }
    // Stores a string, keeping the old deadline when keep_ttl, else setting `at` (0: none).
    static void put_string(Keyspace& ks,
                           std::string_view name,
                           std::string value,
                           TimeMs at,
                           bool keep_ttl,
                           TimeMs now) {
        auto [it, inserted] = ks.keys_.try_emplace(key_of(name));
        it->second.value = std::move(value);
        it->second.changed_at = ks.change_index();
        if (!keep_ttl || inserted) {
            set_expiry(ks, name, at, now);
        }
    }
    // The hash, list, set or sorted set at `name`, created empty when missing; nullptr when the
    // key holds another type. A new one must get an item before the command ends, or be dropped
    // (drop_if_empty): Redis keeps no empty collection.
    template <class T>
    static T* for_write(Keyspace& ks, std::string_view name, TimeMs now) {
        Entry* e = find(ks, name, now);
        if (e == nullptr) {
            e = &ks.keys_.try_emplace(key_of(name)).first->second;
            e->value = T{};
            e->changed_at = ks.change_index();  // created: a change whatever the caller adds
        }
        return std::get_if<T>(&e->value);
    }
    // Deletes `name` when the collection it holds has no item left.
    template <class T>
    static void drop_if_empty(Keyspace& ks, std::string_view name, const T& collection) {
        if (collection.empty()) {
            const bool erased = erase(ks, name);
            RL_ASSERT(erased);
        }
    }
    // For a command that changes only an existing collection: the T at `name`, or the reply Redis
    // gives instead (`if_missing` when there is no such key, WRONGTYPE when it holds another type).
    template <class T>
    static std::variant<T*, Value> existing(Keyspace& ks,
                                            std::string_view name,
                                            TimeMs now,
                                            Value if_missing) {
        Entry* e = find(ks, name, now);
        if (e == nullptr) {
            return if_missing;
        }
        T* collection = std::get_if<T>(&e->value);
        if (collection == nullptr) {
            return Value::error(std::string(kWrongType));
        }
        return collection;
    }
    // The value at `name` when it is a T; nullptr when missing (check wrong_type first).
    template <class T>
    static const T* as(const Entry* e) {
        return e == nullptr ? nullptr : std::get_if<T>(&e->value);
    }
    template <class T>
    static bool wrong_type(const Entry* e) {
        return e != nullptr && !std::holds_alternative<T>(e->value);
    }
    // The T at a key for a read, empty when the key is missing (check wrong_type first).
    template <class T>
    static const T& or_empty(const Entry* e) {
        static const T kEmpty;
        return e == nullptr ? kEmpty : std::get<T>(e->value);
    }
    // TYPE's name for a value: "string", "hash", "list", "set", "zset".
    static std::string_view type_name(const Entry& e);

    // Reads.
    static Value get(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view);
    static Value mget(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view);
    static Value strlen(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view);
    static Value exists(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view);
    static Value ttl(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name);
    static Value type(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view);
    static Value keys(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view);
    static Value scan(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view);
    static Value hash_read(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name);
    static Value script_exists(const Keyspace& ks, const Argv& a, TimeMs, std::string_view);
    static Value dbsize(const Keyspace& ks, const Argv&, TimeMs, std::string_view);

    // Writes.
    static Value set(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value setnx(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value getset(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value getdel(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value mset(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value incr_by(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int);
    static Value append(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value del(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value delex(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value expire(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int);
    static Value persist(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value flush(Keyspace& ks, const Argv& a, TimeMs, std::string_view, int);
    static Value hset(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int);
    static Value hsetnx(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value hdel(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value hincrby(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value script(Keyspace& ks, const Argv& a, TimeMs, std::string_view, int);
    static Value publish(Keyspace& ks, const Argv& a, TimeMs, std::string_view, int);

    // Lists (lists.cc).
    static Value list_read(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name);
    static Value push(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int);
    static Value pop(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int);
    static Value lrem(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value lset(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value ltrim(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);

    // Sets (sets.cc).
    static Value set_read(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name);
    static Value sadd(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value srem(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);

    // Sorted sets (zsets.cc).
    static Value zset_read(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name);
    static Value zrange(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name);
    static Value zadd(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int);
    static Value zrem(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value zremrangebyscore(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int);
    static Value eval(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int depth);
};

}  // namespace raftlock::statemachine::redis
