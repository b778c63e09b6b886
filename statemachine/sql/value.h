#pragma once

// A SQL value of the SQL mode (docs/sql-mode.md): NULL or one of the five column types the mode
// supports. Values are plain data, ordered and compared deterministically, and have PostgreSQL's
// text form (what a text-format DataRow carries and what psql prints).

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace raftlock::statemachine::sql {

// Column types, with the PostgreSQL type OIDs a RowDescription announces (pg_type.dat).
enum class Type : uint8_t {
    kUnknown = 0,  // an untyped literal or NULL before context gives it a type ('...' -> text)
    kBool,         // boolean, OID 16
    kInt4,         // int / integer, OID 23
    kInt8,         // bigint, OID 20
    kText,         // text and varchar(n) (n kept in the column's schema), OID 25
    kTimestamptz,  // timestamp with time zone, OID 1184; microseconds since the Unix epoch, UTC
};
// The highest Type: what the decoders accept (codec.cc, engine_snapshot.cc).
inline constexpr uint8_t kTypeMax = static_cast<uint8_t>(Type::kTimestamptz);

uint32_t type_oid(Type type);
std::string_view type_name(Type type);  // "boolean", "integer", "bigint", "text", ...

// Microseconds since 1970-01-01 00:00:00 UTC (PostgreSQL keeps 2000-01-01 as its epoch on the
// wire in binary format; the codec converts).
using TimestampUs = int64_t;

struct Value {
    Type type = Type::kUnknown;  // kUnknown with is_null: an untyped NULL
    bool is_null = true;
    bool boolean = false;
    int64_t integer = 0;  // kInt4 (within int32), kInt8, kTimestamptz (TimestampUs)
    std::string text;     // kText, and kUnknown literals ('...' before coercion)

    static Value null(Type type = Type::kUnknown) { return Value{type, true, false, 0, {}}; }
    static Value of_bool(bool b) { return Value{Type::kBool, false, b, 0, {}}; }
    static Value of_int4(int32_t n) { return Value{Type::kInt4, false, false, n, {}}; }
    static Value of_int8(int64_t n) { return Value{Type::kInt8, false, false, n, {}}; }
    static Value of_text(std::string s) {
        return Value{Type::kText, false, false, 0, std::move(s)};
    }
    static Value of_timestamptz(TimestampUs us) {
        return Value{Type::kTimestamptz, false, false, us, {}};
    }
    // A quoted literal whose type comes from its context (PostgreSQL's "unknown").
    static Value of_unknown(std::string s) {
        return Value{Type::kUnknown, false, false, 0, std::move(s)};
    }

    friend bool operator==(const Value&, const Value&) = default;
};

// PostgreSQL's text output: "t"/"f", decimal integers, the text itself, and timestamps as
// "2026-11-25 01:51:32.123456+00" (UTC, trailing zeros of the fraction dropped). Null: nullopt.
std::optional<std::string> to_text(const Value& value);

// Parses `text` as a value of `type` (PostgreSQL's input functions for these types): booleans
// 't', 'true', 'yes', 'on', '1' and their negations in any case; integers in range; timestamps
// 'YYYY-MM-DD[ HH:MM:SS[.ffffff]][+HH[:MM]|Z]' (no zone: UTC). Nullopt when the text is not valid
// input for the type (SQLSTATE 22P02, or 22003 for an integer out of range: see `out_of_range`).
// For timestamptz, `out_of_range` marks well-formed text with a field out of range (2026-02-30,
// 25:00) or a result outside the years 1..9999 UTC, PostgreSQL's 22008 "date/time field value out
// of range: \"...\""; malformed timestamp text is its 22007 "invalid input syntax for type
// timestamp with time zone: \"...\"". Also accepted: 'epoch', 'infinity' and '-infinity' (the
// extremes of int64, as PostgreSQL stores them), a 'T' between date and time, zones Z, UTC, GMT
// and +HH[:MM[:SS]], +HHMM[SS]; more than six fraction digits round half up.
std::optional<Value> parse_text(Type type, std::string_view text, bool* out_of_range = nullptr);

// `s` with ASCII letters in lower case: how SQL folds unquoted names, and how the mode compares
// setting names and named locks.
std::string ascii_lower(std::string_view s);

// SQL comparison of two non-null values of comparable types (both numeric, both text, both bool,
// both timestamptz). Nullopt when the types cannot be compared (SQLSTATE 42883).
std::optional<std::strong_ordering> compare(const Value& a, const Value& b);

}  // namespace raftlock::statemachine::sql
