// Lists: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LRANGE, LINDEX, LLEN, LREM, LSET, LTRIM, with
// Redis 7.0's replies, errors and the order in which it checks arguments (docs/redis-mode.md).

#include <algorithm>

#include "statemachine/redis/commands.h"
#include "statemachine/redis/handlers.h"

namespace raftlock::statemachine::redis {

namespace {

constexpr std::string_view kNotPositive = "ERR value is out of range, must be positive";

// Redis's index rules: negative counts from the end. The range [start, stop] of a list of `size`
// items, clamped to it; empty (first > last) when nothing is in it.
struct Range {
    int64_t first = 0;
    int64_t last = -1;
};

Range clamp(int64_t start, int64_t stop, int64_t size) {
    if (start < 0) {
        start = std::max<int64_t>(size + start, 0);
    }
    if (stop < 0) {
        stop = size + stop;
    }
    if (start > stop || start >= size) {
        return Range{};
    }
    return Range{start, std::min(stop, size - 1)};
}

// The item at a Redis index, or nullopt when it is out of range.
std::optional<size_t> position(int64_t index, size_t size) {
    const auto n = static_cast<int64_t>(size);
    if (index < 0) {
        index += n;
    }
    if (index < 0 || index >= n) {
        return std::nullopt;
    }
    return static_cast<size_t>(index);
}

}  // namespace

// LRANGE key start stop | LINDEX key index | LLEN key
Value Commands::list_read(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name) {
    std::optional<int64_t> start;
    std::optional<int64_t> stop;
    if (name == "lrange") {
        start = parse_int(a[2]);
        stop = parse_int(a[3]);
        if (!start || !stop) {
            return err(kNotInteger);
        }
    }
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<List>(e)) {
        return err(kWrongType);
    }
    const List* list = as<List>(e);
    if (name == "llen") {
        return Value::integer_of(list == nullptr ? 0 : static_cast<int64_t>(list->size()));
    }
    if (name == "lindex") {
        if (list == nullptr) {
            return Value::null();
        }
        const std::optional<int64_t> index = parse_int(a[2]);
        if (!index) {
            return err(kNotInteger);
        }
        const std::optional<size_t> at = position(*index, list->size());
        return at ? Value::bulk((*list)[*at]) : Value::null();
    }
    RL_ASSERT(name == "lrange");
    std::vector<Value> out;
    if (list != nullptr) {
        const Range r = clamp(*start, *stop, static_cast<int64_t>(list->size()));
        for (int64_t i = r.first; i <= r.last; ++i) {
            out.push_back(Value::bulk((*list)[static_cast<size_t>(i)]));
        }
    }
    return Value::array(std::move(out));
}

// LPUSH / RPUSH key element [element ...]; LPUSHX / RPUSHX only onto an existing list.
Value Commands::push(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int) {
    const bool only_existing = name == "lpushx" || name == "rpushx";
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<List>(e)) {
        return err(kWrongType);
    }
    if (e == nullptr && only_existing) {
        return Value::integer_of(0);
    }
    List* list = for_write<List>(ks, a[1], now);
    RL_ASSERT(list != nullptr);
    const bool head = name[0] == 'l';
    for (size_t i = 2; i < a.size(); ++i) {
        if (head) {
            list->push_front(a[i]);
        } else {
            list->push_back(a[i]);
        }
    }
    RL_ASSERT(!list->empty());
    touch(ks, a[1]);
    return Value::integer_of(static_cast<int64_t>(list->size()));
}

// LPOP / RPOP key [count]: one item (a bulk), or up to count items (an array).
Value Commands::pop(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int) {
    if (a.size() > 3) {
        return Value::error(wrong_arity(name));
    }
    std::optional<int64_t> count;
    if (a.size() == 3) {
        count = parse_int(a[2]);
        if (!count || *count < 0) {
            return err(kNotPositive);
        }
    }
    auto found = existing<List>(ks, a[1], now, count ? Value::null_array() : Value::null());
    if (Value* reply = std::get_if<Value>(&found)) {
        return std::move(*reply);
    }
    List* list = std::get<List*>(found);
    const bool head = name[0] == 'l';
    const auto take = static_cast<size_t>(
        std::min<int64_t>(count.value_or(1), static_cast<int64_t>(list->size())));
    std::vector<Value> out;
    for (size_t i = 0; i < take; ++i) {
        out.push_back(Value::bulk(head ? std::move(list->front()) : std::move(list->back())));
        if (head) {
            list->pop_front();
        } else {
            list->pop_back();
        }
    }
    if (take > 0) {
        touch(ks, a[1]);
    }
    drop_if_empty(ks, a[1], *list);
    if (!count) {
        RL_ASSERT(out.size() == 1);
        return std::move(out[0]);
    }
    return Value::array(std::move(out));
}

// LREM key count element: count > 0 removes from the head, < 0 from the tail, 0 every match.
Value Commands::lrem(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    const std::optional<int64_t> count = parse_int(a[2]);
    if (!count) {
        return err(kNotInteger);
    }
    auto found = existing<List>(ks, a[1], now, Value::integer_of(0));
    if (Value* reply = std::get_if<Value>(&found)) {
        return std::move(*reply);
    }
    List* list = std::get<List*>(found);
    // |count| without overflow at INT64_MIN; 0 means every match.
    const uint64_t magnitude =
        *count < 0 ? 0 - static_cast<uint64_t>(*count) : static_cast<uint64_t>(*count);
    const uint64_t limit = *count == 0 ? list->size() : magnitude;
    uint64_t removed = 0;
    if (*count >= 0) {
        for (auto it = list->begin(); it != list->end() && removed < limit;) {
            if (*it == a[3]) {
                it = list->erase(it);
                ++removed;
            } else {
                ++it;
            }
        }
    } else {
        for (size_t i = list->size(); i > 0 && removed < limit; --i) {
            if ((*list)[i - 1] == a[3]) {
                list->erase(list->begin() + static_cast<std::ptrdiff_t>(i - 1));
                ++removed;
            }
        }
    }
    if (removed > 0) {
        touch(ks, a[1]);
    }
    drop_if_empty(ks, a[1], *list);
    return Value::integer_of(static_cast<int64_t>(removed));
}

// LSET key index element
Value Commands::lset(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    auto found = existing<List>(ks, a[1], now, err("ERR no such key"));
    if (Value* reply = std::get_if<Value>(&found)) {
        return std::move(*reply);
    }
    List* list = std::get<List*>(found);
    const std::optional<int64_t> index = parse_int(a[2]);
    if (!index) {
        return err(kNotInteger);
    }
    const std::optional<size_t> at = position(*index, list->size());
    if (!at) {
        return err("ERR index out of range");
    }
    (*list)[*at] = a[3];
    touch(ks, a[1]);
    return Value::ok();
}

// LTRIM key start stop: keeps [start, stop]; a list left empty is deleted.
Value Commands::ltrim(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    const std::optional<int64_t> start = parse_int(a[2]);
    const std::optional<int64_t> stop = parse_int(a[3]);
    if (!start || !stop) {
        return err(kNotInteger);
    }
    auto found = existing<List>(ks, a[1], now, Value::ok());
    if (Value* reply = std::get_if<Value>(&found)) {
        return std::move(*reply);
    }
    List* list = std::get<List*>(found);
    const Range r = clamp(*start, *stop, static_cast<int64_t>(list->size()));
    if (r.first > r.last) {
        list->clear();
    } else {
        list->erase(list->begin() + r.last + 1, list->end());
        list->erase(list->begin(), list->begin() + r.first);
    }
    touch(ks, a[1]);  // even when nothing was trimmed, as Redis does
    drop_if_empty(ks, a[1], *list);
    return Value::ok();
}

}  // namespace raftlock::statemachine::redis
