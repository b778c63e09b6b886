#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace raftlock::jepsen {

// The `value` of a history record: the small subset of JSON / EDN that workloads use. Kept free of
// any JSON library so that only the parser pays for one.
struct Value {
    enum class Kind : uint8_t { kNull, kBool, kInt, kString, kList };

    Kind kind = Kind::kNull;
    int64_t int_value = 0;     // kInt; kBool as 0 / 1
    std::string text;          // kString
    std::vector<Value> items;  // kList

    static Value null() { return Value{}; }
    static Value boolean(bool b) { return Value{Kind::kBool, b ? 1 : 0, {}, {}}; }
    static Value integer(int64_t i) { return Value{Kind::kInt, i, {}, {}}; }
    static Value string(std::string s) { return Value{Kind::kString, 0, std::move(s), {}}; }
    static Value list(std::vector<Value> v) { return Value{Kind::kList, 0, {}, std::move(v)}; }

    bool is_null() const { return kind == Kind::kNull; }
    bool is_int() const { return kind == Kind::kInt; }
    // True for a list of exactly `n` integers, the shape of `cas [from,to]` and friends.
    bool is_int_list(size_t n) const;

    bool operator==(const Value& other) const = default;
};

// A compact, stable text form: null, true, 4, "a", [4,7]. Used in reports and as an interning key.
std::string to_string(const Value& value);

}  // namespace raftlock::jepsen
