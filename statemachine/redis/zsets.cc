// Sorted sets: ZADD (NX, XX, GT, LT, CH, INCR), ZINCRBY, ZREM, ZREMRANGEBYSCORE, ZSCORE, ZCARD,
// ZCOUNT, ZRANK, ZREVRANK, ZRANGE (BYSCORE, REV, LIMIT, WITHSCORES), ZRANGEBYSCORE,
// ZREVRANGEBYSCORE, ZREVRANGE, with Redis 7.0's replies, errors and argument checks in its order.
// Scores print as Redis 7.0 prints them ("%.17g"); a -0 score is stored as 0.

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include "statemachine/redis/commands.h"
#include "statemachine/redis/handlers.h"

namespace raftlock::statemachine::redis {

namespace {

constexpr std::string_view kNotFloat = "ERR value is not a valid float";
constexpr std::string_view kRangeNotFloat = "ERR min or max is not a float";

// Redis's string2d: all of `s` is a number strtod reads, no leading space, no overflow or
// underflow to zero, not NaN. "inf" and "-inf" are numbers.
std::optional<double> parse_score(const std::string& s) {
    if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) != 0) {
        return std::nullopt;
    }
    errno = 0;
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || std::isnan(d) ||
        (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL || d == 0))) {
        return std::nullopt;
    }
    return d + 0.0;  // -0 becomes 0, as Redis's small sorted sets store it
}

// A score interval as ZRANGEBYSCORE takes it: "(" before a bound excludes it.
struct ScoreRange {
    double min = 0;
    double max = 0;
    bool min_exclusive = false;
    bool max_exclusive = false;

    bool above_min(double v) const { return min_exclusive ? v > min : v >= min; }
    bool below_max(double v) const { return max_exclusive ? v < max : v <= max; }
    bool empty() const { return min > max || (min == max && (min_exclusive || max_exclusive)); }
};

// Redis's zslParseRange (strtod without the overflow checks string2d makes).
std::optional<double> parse_bound(std::string_view text, bool& exclusive) {
    exclusive = !text.empty() && text[0] == '(';
    const std::string s(exclusive ? text.substr(1) : text);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || std::isnan(d)) {
        return std::nullopt;
    }
    return d;
}

std::optional<ScoreRange> parse_range(std::string_view min, std::string_view max) {
    ScoreRange r;
    const std::optional<double> lo = parse_bound(min, r.min_exclusive);
    const std::optional<double> hi = parse_bound(max, r.max_exclusive);
    if (!lo || !hi) {
        return std::nullopt;
    }
    r.min = *lo;
    r.max = *hi;
    return r;
}

using ZSet = Keyspace::ZSet;
using Member = std::pair<double, std::string>;

// Sets a member's score, replacing its old one.
void put(ZSet& z, const std::string& member, double score) {
    RL_ASSERT(!std::isnan(score));
    auto [it, inserted] = z.scores.try_emplace(member, score);
    if (!inserted) {
        const size_t erased = z.order.erase(Member{it->second, member});
        RL_ASSERT(erased == 1);
        it->second = score;
    }
    z.order.emplace(score, member);
    RL_ASSERT(z.order.size() == z.scores.size());
}

bool remove(ZSet& z, const std::string& member) {
    auto it = z.scores.find(member);
    if (it == z.scores.end()) {
        return false;
    }
    const size_t erased = z.order.erase(Member{it->second, member});
    RL_ASSERT(erased == 1);
    z.scores.erase(it);
    return true;
}

// The members in a score interval, lowest first.
std::pair<ZSet::Order::const_iterator, ZSet::Order::const_iterator> in_range(const ZSet& z,
                                                                             const ScoreRange& r) {
    if (r.empty()) {
        return {z.order.end(), z.order.end()};
    }
    auto first = z.order.lower_bound(Member{r.min, std::string()});
    while (first != z.order.end() && !r.above_min(first->first)) {
        ++first;
    }
    auto last = first;
    while (last != z.order.end() && r.below_max(last->first)) {
        ++last;
    }
    return {first, last};
}

void add_item(std::vector<Value>& out, const Member& m, bool with_scores) {
    out.push_back(Value::bulk(m.second));
    if (with_scores) {
        out.push_back(Value::real(m.first));
    }
}

}  // namespace

// ZSCORE key member | ZRANK / ZREVRANK key member | ZCARD key | ZCOUNT key min max
Value Commands::zset_read(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name) {
    std::optional<ScoreRange> range;
    if (name == "zcount") {
        range = parse_range(a[2], a[3]);
        if (!range) {
            return err(kRangeNotFloat);
        }
    }
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<ZSet>(e)) {
        return err(kWrongType);
    }
    const ZSet& z = or_empty<ZSet>(e);
    if (name == "zcard") {
        return Value::integer_of(static_cast<int64_t>(z.size()));
    }
    if (name == "zcount") {
        const auto [first, last] = in_range(z, *range);
        return Value::integer_of(static_cast<int64_t>(std::distance(first, last)));
    }
    auto it = z.scores.find(a[2]);
    if (it == z.scores.end()) {
        return Value::null();
    }
    if (name == "zscore") {
        return Value::real(it->second);
    }
    RL_ASSERT(name == "zrank" || name == "zrevrank");
    const auto rank = std::distance(z.order.begin(), z.order.find(Member{it->second, a[2]}));
    const auto size = static_cast<int64_t>(z.size());
    return Value::integer_of(name == "zrank" ? rank : size - 1 - rank);
}

// ZRANGE key start stop [BYSCORE] [REV] [LIMIT offset count] [WITHSCORES], and the older
// ZREVRANGE key start stop [WITHSCORES], ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT o c],
// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT o c]. BYLEX is not served.
Value Commands::zrange(const Keyspace& ks, const Argv& a, TimeMs now, std::string_view name) {
    const bool flexible = name == "zrange";  // REV and BYSCORE are options only there
    bool by_score = name == "zrangebyscore" || name == "zrevrangebyscore";
    bool reverse = name == "zrevrange" || name == "zrevrangebyscore";
    bool with_scores = false;
    bool limited = false;
    int64_t offset = 0;
    int64_t count = -1;
    for (size_t i = 4; i < a.size(); ++i) {
        const std::string opt = lower(a[i]);
        if (opt == "withscores") {
            with_scores = true;
        } else if (opt == "limit" && i + 2 < a.size()) {
            const std::optional<int64_t> o = parse_int(a[i + 1]);
            const std::optional<int64_t> c = o ? parse_int(a[i + 2]) : std::nullopt;
            if (!o || !c) {
                return err(kNotInteger);
            }
            limited = true;
            offset = *o;
            count = *c;
            i += 2;
        } else if (flexible && !reverse && opt == "rev") {
            reverse = true;
        } else if (flexible && !by_score && opt == "byscore") {
            by_score = true;
        } else if (flexible && opt == "bylex") {
            return err("ERR raftlock: ZRANGE BYLEX is not served");
        } else {
            return err(kSyntaxError);
        }
    }
    // As Redis checks it: LIMIT with a count of -1 passes (and means nothing) in a rank range.
    if (limited && count != -1 && !by_score) {
        return err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or "
            "BYLEX");
    }
    // Reversed score ranges are written max first.
    const std::string& low = by_score && reverse ? a[3] : a[2];
    const std::string& high = by_score && reverse ? a[2] : a[3];
    std::optional<ScoreRange> range;
    std::optional<int64_t> start;
    std::optional<int64_t> stop;
    if (by_score) {
        range = parse_range(low, high);
        if (!range) {
            return err(kRangeNotFloat);
        }
    } else {
        start = parse_int(low);
        stop = start ? parse_int(high) : std::nullopt;
        if (!start || !stop) {
            return err(kNotInteger);
        }
    }
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<ZSet>(e)) {
        return err(kWrongType);
    }
    std::vector<Value> out;
    const ZSet* z = as<ZSet>(e);
    if (z != nullptr && by_score) {
        auto [first, last] = in_range(*z, *range);
        std::vector<const Member*> members;
        for (auto it = first; it != last; ++it) {
            members.push_back(&*it);
        }
        if (reverse) {
            std::reverse(members.begin(), members.end());
        }
        // Redis: a negative offset gives nothing, a negative count everything after the offset.
        if (offset >= 0) {
            for (size_t i = static_cast<size_t>(offset); i < members.size(); ++i) {
                if (count >= 0 && i - static_cast<size_t>(offset) >= static_cast<size_t>(count)) {
                    break;
                }
                add_item(out, *members[i], with_scores);
            }
        }
    } else if (z != nullptr) {
        const auto size = static_cast<int64_t>(z->size());
        int64_t first = *start < 0 ? std::max<int64_t>(size + *start, 0) : *start;
        int64_t last = *stop < 0 ? size + *stop : std::min(*stop, size - 1);
        // Ranks [first, last] counted from the lowest score, or from the highest with REV.
        const auto add_ranks = [&](auto it) {
            std::advance(it, first);
            for (int64_t i = first; i <= last; ++i, ++it) {
                add_item(out, *it, with_scores);
            }
        };
        if (first <= last && first < size) {
            if (reverse) {
                add_ranks(z->order.rbegin());
            } else {
                add_ranks(z->order.begin());
            }
        }
    }
    return with_scores ? Value::pairs(std::move(out)) : Value::array(std::move(out));
}

// ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...], and ZINCRBY key
// increment member (ZADD INCR under another name).
Value Commands::zadd(Keyspace& ks, const Argv& a, TimeMs now, std::string_view name, int) {
    const bool zincrby = name == "zincrby";
    const Flags flags =
        zincrby ? Flags{0, 2} : parse_flags(a, 2, {"nx", "xx", "gt", "lt", "ch", "incr"});
    const bool nx = flags.has(0);
    const bool xx = flags.has(1);
    const bool gt = flags.has(2);
    const bool lt = flags.has(3);
    const bool ch = flags.has(4);
    const bool incr = zincrby || flags.has(5);
    const size_t first = flags.next;
    const size_t items = a.size() - first;
    if (items == 0 || items % 2 != 0) {
        return err(kSyntaxError);
    }
    if (nx && xx) {
        return err("ERR XX and NX options at the same time are not compatible");
    }
    if ((gt && nx) || (lt && nx) || (gt && lt)) {
        return err("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if (incr && items > 2) {
        return err("ERR INCR option supports a single increment-element pair");
    }
    std::vector<double> scores;
    for (size_t i = first; i < a.size(); i += 2) {
        const std::optional<double> score = parse_score(a[i]);
        if (!score) {
            return err(kNotFloat);
        }
        scores.push_back(*score);
    }
    const Entry* e = find(ks, a[1], now);
    if (wrong_type<ZSet>(e)) {
        return err(kWrongType);
    }
    int64_t added = 0;
    int64_t updated = 0;
    std::optional<double> incremented;  // INCR's result, when the member was written
    if (e != nullptr || !xx) {
        ZSet& z = *for_write<ZSet>(ks, a[1], now);
        for (size_t i = 0; i < scores.size(); ++i) {
            const std::string& member = a[first + 2 * i + 1];
            double score = scores[i];
            auto it = z.scores.find(member);
            if (it == z.scores.end()) {
                if (xx) {
                    continue;
                }
                put(z, member, score);
                ++added;
                incremented = score;
                continue;
            }
            if (nx) {
                continue;
            }
            const double current = it->second;
            if (incr) {
                score = current + score;
                if (std::isnan(score)) {
                    drop_if_empty(ks, a[1], z);
                    return err("ERR resulting score is not a number (NaN)");
                }
                score += 0.0;
            }
            if ((lt && score >= current) || (gt && score <= current)) {
                continue;
            }
            incremented = score;
            if (score != current) {
                put(z, member, score);
                ++updated;
            }
        }
        if (added + updated > 0) {
            touch(ks, a[1]);
        }
        drop_if_empty(ks, a[1], z);
    }
    if (incr) {
        return incremented ? Value::real(*incremented) : Value::null();
    }
    return Value::integer_of(ch ? added + updated : added);
}

// ZREM key member [member ...]: how many were there; a sorted set left empty is deleted.
Value Commands::zrem(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    auto found = existing<ZSet>(ks, a[1], now, Value::integer_of(0));
    if (Value* reply = std::get_if<Value>(&found)) {
        return std::move(*reply);
    }
    ZSet* z = std::get<ZSet*>(found);
    int64_t removed = 0;
    for (size_t i = 2; i < a.size(); ++i) {
        removed += remove(*z, a[i]) ? 1 : 0;
    }
    if (removed > 0) {
        touch(ks, a[1]);
    }
    drop_if_empty(ks, a[1], *z);
    return Value::integer_of(removed);
}

// ZREMRANGEBYSCORE key min max: how many members were in the interval.
Value Commands::zremrangebyscore(Keyspace& ks, const Argv& a, TimeMs now, std::string_view, int) {
    const std::optional<ScoreRange> range = parse_range(a[2], a[3]);
    if (!range) {
        return err(kRangeNotFloat);
    }
    auto found = existing<ZSet>(ks, a[1], now, Value::integer_of(0));
    if (Value* reply = std::get_if<Value>(&found)) {
        return std::move(*reply);
    }
    ZSet* z = std::get<ZSet*>(found);
    auto [first, last] = in_range(*z, *range);
    int64_t removed = 0;
    while (first != last) {
        z->scores.erase(first->second);
        first = z->order.erase(first);
        ++removed;
    }
    RL_ASSERT(z->order.size() == z->scores.size());
    if (removed > 0) {
        touch(ks, a[1]);
    }
    drop_if_empty(ks, a[1], *z);
    return Value::integer_of(removed);
}

}  // namespace raftlock::statemachine::redis
