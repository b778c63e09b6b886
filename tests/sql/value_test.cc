#include "statemachine/sql/value.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace raftlock::statemachine::sql {
namespace {

constexpr int64_t kUsPerDay = 86'400'000'000;
// 2026-11-25 01:51:32 UTC.
constexpr TimestampUs kSample = 1'795'571'492'000'000;

// What parse_text makes of `text`: the value's text form again, "invalid", or "out of range".
std::string parsed(Type type, std::string_view text) {
    bool out_of_range = false;
    const std::optional<Value> v = parse_text(type, text, &out_of_range);
    if (!v) {
        return out_of_range ? "out of range" : "invalid";
    }
    CHECK_FALSE(out_of_range);
    return to_text(*v).value();
}

TimestampUs timestamp(std::string_view text) {
    const std::optional<Value> v = parse_text(Type::kTimestamptz, text);
    REQUIRE(v.has_value());
    REQUIRE(v->type == Type::kTimestamptz);
    return v->integer;
}

TEST_CASE("types have PostgreSQL's OIDs and names", "[sql][value]") {
    struct Case {
        Type type;
        uint32_t oid;
        std::string_view name;
    };
    const std::vector<Case> cases = {
        {Type::kBool, 16, "boolean"},
        {Type::kInt4, 23, "integer"},
        {Type::kInt8, 20, "bigint"},
        {Type::kText, 25, "text"},
        {Type::kTimestamptz, 1184, "timestamp with time zone"},
        {Type::kUnknown, 705, "unknown"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        CHECK(type_oid(c.type) == c.oid);
        CHECK(type_name(c.type) == c.name);
    }
}

TEST_CASE("values print in PostgreSQL's text output form", "[sql][value]") {
    struct Case {
        Value value;
        std::optional<std::string> text;
    };
    const std::vector<Case> cases = {
        {Value::null(), std::nullopt},
        {Value::null(Type::kInt4), std::nullopt},
        {Value::of_bool(true), "t"},
        {Value::of_bool(false), "f"},
        {Value::of_int4(std::numeric_limits<int32_t>::min()), "-2147483648"},
        {Value::of_int4(std::numeric_limits<int32_t>::max()), "2147483647"},
        {Value::of_int8(std::numeric_limits<int64_t>::min()), "-9223372036854775808"},
        {Value::of_int8(std::numeric_limits<int64_t>::max()), "9223372036854775807"},
        {Value::of_text(""), ""},
        {Value::of_text("it's \"x\""), "it's \"x\""},
        {Value::of_unknown("abc"), "abc"},
        {Value::of_timestamptz(0), "1970-01-01 00:00:00+00"},
        {Value::of_timestamptz(kSample), "2026-11-25 01:51:32+00"},
        {Value::of_timestamptz(kSample + 123456), "2026-11-25 01:51:32.123456+00"},
        {Value::of_timestamptz(kSample + 100000), "2026-11-25 01:51:32.1+00"},
        {Value::of_timestamptz(kSample + 120), "2026-11-25 01:51:32.00012+00"},
        {Value::of_timestamptz(kSample + 1), "2026-11-25 01:51:32.000001+00"},
        {Value::of_timestamptz(-1), "1969-12-31 23:59:59.999999+00"},
        {Value::of_timestamptz(951'782'400'000'000), "2000-02-29 00:00:00+00"},
        {Value::of_timestamptz(-62'135'596'800'000'000), "0001-01-01 00:00:00+00"},
        {Value::of_timestamptz(-62'135'596'800'000'000 - 1), "0001-12-31 23:59:59.999999+00 BC"},
        {Value::of_timestamptz(253'402'300'799'999'999), "9999-12-31 23:59:59.999999+00"},
        {Value::of_timestamptz(253'402'300'800'000'000), "10000-01-01 00:00:00+00"},
        {Value::of_timestamptz(std::numeric_limits<int64_t>::max()), "infinity"},
        {Value::of_timestamptz(std::numeric_limits<int64_t>::min()), "-infinity"},
        {Value::of_timestamptz(std::numeric_limits<int64_t>::max() - 1),
         "294247-01-10 04:00:54.775806+00"},
        {Value::of_timestamptz(std::numeric_limits<int64_t>::min() + 1),
         "290309-12-21 19:59:05.224193+00 BC"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.text);
        CHECK(to_text(c.value) == c.text);
    }
}

TEST_CASE("booleans parse as PostgreSQL's boolin parses them", "[sql][value]") {
    struct Case {
        std::string_view text;
        std::string_view result;
    };
    const std::vector<Case> cases = {
        {"t", "t"},        {"true", "t"},        {"TRUE", "t"},        {"tr", "t"},
        {" yes ", "t"},    {"y", "t"},           {"on", "t"},          {"ON", "t"},
        {"1", "t"},        {"f", "f"},           {"false", "f"},       {"FaLsE", "f"},
        {"no", "f"},       {"n", "f"},           {"off", "f"},         {"of", "f"},
        {"0", "f"},        {"\t0\n", "f"},       {"o", "invalid"},     {"", "invalid"},
        {" ", "invalid"},  {"2", "invalid"},     {"truex", "invalid"}, {"yess", "invalid"},
        {"10", "invalid"}, {"t rue", "invalid"}, {"onn", "invalid"},   {"offf", "invalid"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.text);
        CHECK(parsed(Type::kBool, c.text) == c.result);
    }
}

TEST_CASE("integers parse within their type's range and report overflow", "[sql][value]") {
    struct Case {
        Type type;
        std::string_view text;
        std::string_view result;
    };
    const std::vector<Case> cases = {
        {Type::kInt4, "0", "0"},
        {Type::kInt4, "2147483647", "2147483647"},
        {Type::kInt4, "-2147483648", "-2147483648"},
        {Type::kInt4, "2147483648", "out of range"},
        {Type::kInt4, "-2147483649", "out of range"},
        {Type::kInt4, "+7", "7"},
        {Type::kInt4, "  -42\n", "-42"},
        {Type::kInt4, "007", "7"},
        {Type::kInt4, "1_000_000", "1000000"},
        {Type::kInt4, "1__0", "invalid"},
        {Type::kInt4, "_1", "invalid"},
        {Type::kInt4, "1_", "invalid"},
        {Type::kInt4, "", "invalid"},
        {Type::kInt4, "-", "invalid"},
        {Type::kInt4, "+-1", "invalid"},
        {Type::kInt4, "12a", "invalid"},
        {Type::kInt4, "1 2", "invalid"},
        {Type::kInt4, "1.0", "invalid"},
        {Type::kInt4, "- 1", "invalid"},
        // As in PostgreSQL, overflow is found before the junk that follows it.
        {Type::kInt4, "99999999999x", "out of range"},
        {Type::kInt8, "9223372036854775807", "9223372036854775807"},
        {Type::kInt8, "-9223372036854775808", "-9223372036854775808"},
        {Type::kInt8, "9223372036854775808", "out of range"},
        {Type::kInt8, "-9223372036854775809", "out of range"},
        {Type::kInt8, "2147483648", "2147483648"},
        {Type::kInt8, "99999999999999999999999", "out of range"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.text);
        CHECK(parsed(c.type, c.text) == c.result);
    }
    const std::optional<Value> v = parse_text(Type::kInt4, "12");
    REQUIRE(v.has_value());
    CHECK(*v == Value::of_int4(12));
    CHECK(parse_text(Type::kInt8, "12") == Value::of_int8(12));
}

TEST_CASE("text parses as itself, with its type", "[sql][value]") {
    CHECK(parse_text(Type::kText, " a'b ") == Value::of_text(" a'b "));
    CHECK(parse_text(Type::kUnknown, "x") == Value::of_unknown("x"));
}

TEST_CASE("timestamps parse in ISO forms with zones, in UTC", "[sql][value]") {
    struct Case {
        std::string_view text;
        std::string_view result;
    };
    const std::vector<Case> cases = {
        {"2026-11-25 01:51:32+00", "2026-11-25 01:51:32+00"},
        {"2026-11-25T01:51:32Z", "2026-11-25 01:51:32+00"},
        {"2026-11-25t01:51:32z", "2026-11-25 01:51:32+00"},
        {"2026-11-25 01:51:32", "2026-11-25 01:51:32+00"},
        {"2026-11-25 01:51", "2026-11-25 01:51:00+00"},
        {"2026-11-25", "2026-11-25 00:00:00+00"},
        {"  2026-11-25 01:51:32 UTC  ", "2026-11-25 01:51:32+00"},
        {"2026-11-25 01:51:32 gmt", "2026-11-25 01:51:32+00"},
        {"2026-11-25 01:51:32.123456+00", "2026-11-25 01:51:32.123456+00"},
        {"2026-11-25 01:51:32.5", "2026-11-25 01:51:32.5+00"},
        {"2026-11-25 07:21:32+05:30", "2026-11-25 01:51:32+00"},
        {"2026-11-25 07:21:32+0530", "2026-11-25 01:51:32+00"},
        {"2026-11-25 07:21:32 +05:30", "2026-11-25 01:51:32+00"},
        {"2026-11-24 20:51:32-05", "2026-11-25 01:51:32+00"},
        {"2026-11-24 20:51:32-5", "2026-11-25 01:51:32+00"},
        {"2026-11-24 22:21:02-03:30:30", "2026-11-25 01:51:32+00"},
        {"2026-11-24 22:21:02-033030", "2026-11-25 01:51:32+00"},
        {"2026-1-5 1:02:03", "2026-01-05 01:02:03+00"},
        {"2024-02-29", "2024-02-29 00:00:00+00"},
        {"2000-02-29", "2000-02-29 00:00:00+00"},
        {"2026-01-01 24:00:00", "2026-01-02 00:00:00+00"},
        {"2026-12-31 23:59:60", "2027-01-01 00:00:00+00"},
        {"2026-01-01 12:00:00.1234567", "2026-01-01 12:00:00.123457+00"},
        {"2026-01-01 12:00:00.1234564", "2026-01-01 12:00:00.123456+00"},
        {"2026-01-01 23:59:59.9999995", "2026-01-02 00:00:00+00"},
        {"0001-01-01 00:00:00", "0001-01-01 00:00:00+00"},
        {"9999-12-31 23:59:59.999999+00", "9999-12-31 23:59:59.999999+00"},
        {"epoch", "1970-01-01 00:00:00+00"},
        {"Infinity", "infinity"},
        {" -infinity ", "-infinity"},
        // Fields out of range: PostgreSQL's 22008.
        {"2023-02-29", "out of range"},
        {"1900-02-29", "out of range"},
        {"2026-04-31", "out of range"},
        {"2026-13-01", "out of range"},
        {"2026-00-10", "out of range"},
        {"2026-01-00", "out of range"},
        {"0000-01-01", "out of range"},
        {"2026-01-01 25:00:00", "out of range"},
        {"2026-01-01 24:00:01", "out of range"},
        {"2026-01-01 12:60:00", "out of range"},
        {"2026-01-01 12:00:61", "out of range"},
        {"2026-01-01 23:59:60.5", "out of range"},
        {"2026-01-01 12:00:00+16", "out of range"},
        {"2026-01-01 12:00:00+05:60", "out of range"},
        // Beyond the supported years once moved to UTC.
        {"9999-12-31 23:59:59-01", "out of range"},
        {"0001-01-01 00:00:00+01", "out of range"},
        // Not timestamps at all: PostgreSQL's 22007.
        {"", "invalid"},
        {"abc", "invalid"},
        {"26-01-01", "invalid"},
        {"20260101", "invalid"},
        {"2026-01-01 12", "invalid"},
        {"2026-01-01 12:0", "invalid"},
        {"2026-01-01 12:00:0", "invalid"},
        {"2026-01-01 12:00:00.", "invalid"},
        {"2026-01-01 12:00:00 +", "invalid"},
        {"2026-01-01 12:00:00+123", "invalid"},
        {"2026-01-01 12:00:00+05:3", "invalid"},
        {"2026-01-01 12:00:00 PST", "invalid"},
        {"2026-01-01 12:00:00+00 x", "invalid"},
        {"2026-01-01x", "invalid"},
        {"2026-01-01T", "invalid"},
        {"now", "invalid"},
        {"12026-01-01", "invalid"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.text);
        CHECK(parsed(Type::kTimestamptz, c.text) == c.result);
    }
    CHECK(timestamp("2026-11-25 01:51:32+00") == kSample);
    CHECK(timestamp("1970-01-01") == 0);
    CHECK(timestamp("0001-01-01") == -62'135'596'800'000'000);
}

TEST_CASE("timestamps survive a round trip through their text form", "[sql][value]") {
    const std::vector<TimestampUs> samples = {
        0,
        -1,
        1,
        kSample,
        kSample + 999'999,
        -62'135'596'800'000'000,
        253'402'300'799'999'999,
        951'782'400'000'000 - 1,  // the end of 2000-02-28
        -kUsPerDay * 36524 - 7,   // 1870
    };
    for (TimestampUs us : samples) {
        CAPTURE(us);
        const std::optional<std::string> text = to_text(Value::of_timestamptz(us));
        REQUIRE(text.has_value());
        CHECK(timestamp(*text) == us);
    }
    // Every day of a leap-year cycle and around century boundaries: the date arithmetic agrees
    // with itself both ways.
    for (int64_t day = -146097 * 5; day <= 146097 * 5; day += 97) {
        const TimestampUs us = day * kUsPerDay + 12'345'678;
        if (us < -62'135'596'800'000'000) {
            continue;
        }
        CAPTURE(day);
        CHECK(timestamp(to_text(Value::of_timestamptz(us)).value()) == us);
    }
}

TEST_CASE("values compare numerically, bytewise, false before true, by time", "[sql][value]") {
    using std::strong_ordering;
    struct Case {
        Value a;
        Value b;
        std::optional<strong_ordering> result;
    };
    const std::vector<Case> cases = {
        {Value::of_int4(1), Value::of_int4(2), strong_ordering::less},
        {Value::of_int4(-1), Value::of_int8(-1), strong_ordering::equal},
        {Value::of_int8(std::numeric_limits<int64_t>::max()), Value::of_int4(5),
         strong_ordering::greater},
        {Value::of_text("a"), Value::of_text("b"), strong_ordering::less},
        {Value::of_text("a"), Value::of_text("ab"), strong_ordering::less},
        {Value::of_text(""), Value::of_text(""), strong_ordering::equal},
        {Value::of_text("B"), Value::of_text("a"), strong_ordering::less},  // C collation
        {Value::of_text("\xc3\xa9"), Value::of_text("z"), strong_ordering::greater},
        {Value::of_unknown("b"), Value::of_text("a"), strong_ordering::greater},
        {Value::of_bool(false), Value::of_bool(true), strong_ordering::less},
        {Value::of_bool(true), Value::of_bool(true), strong_ordering::equal},
        {Value::of_timestamptz(kSample), Value::of_timestamptz(0), strong_ordering::greater},
        {Value::of_int4(1), Value::of_text("1"), std::nullopt},
        {Value::of_bool(true), Value::of_int4(1), std::nullopt},
        {Value::of_timestamptz(1), Value::of_int8(1), std::nullopt},
        {Value::of_unknown("1"), Value::of_int4(1), std::nullopt},
    };
    for (const Case& c : cases) {
        CAPTURE(to_text(c.a), to_text(c.b));
        CHECK(compare(c.a, c.b) == c.result);
    }
}

}  // namespace
}  // namespace raftlock::statemachine::sql
