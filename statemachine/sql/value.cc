#include "statemachine/sql/value.h"

#include <array>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/chars.h"

namespace raftlock::statemachine::sql {

namespace {

constexpr int64_t kUsPerSecond = 1'000'000;
constexpr int64_t kUsPerMinute = 60 * kUsPerSecond;
constexpr int64_t kUsPerHour = 60 * kUsPerMinute;
constexpr int64_t kUsPerDay = 24 * kUsPerHour;
// PostgreSQL keeps infinite timestamps as the extremes of int64 (DT_NOBEGIN, DT_NOEND).
constexpr TimestampUs kInfinity = std::numeric_limits<int64_t>::max();
constexpr TimestampUs kMinusInfinity = std::numeric_limits<int64_t>::min();
// The input range accepted by parse_text, in UTC: 0001-01-01 00:00:00 up to 9999-12-31
// 23:59:59.999999. Days from the epoch of 0001-01-01 and 10000-01-01.
constexpr int64_t kFirstDay = -719162;
constexpr int64_t kEndDay = 2932897;

char to_lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        if (to_lower(a[i]) != to_lower(b[i])) {
            return false;
        }
    }
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && is_space(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

int64_t floor_div(int64_t a, int64_t b) {
    RL_ASSERT(b > 0);
    const int64_t q = a / b;
    return (a % b < 0) ? q - 1 : q;
}

// ---------------------------------------------------------------------------------------------
// The proleptic Gregorian calendar. Years are counted in 400-year eras of 146097 days that start
// on March 1st, so that the leap day is the last day of a year and the month lengths from March
// on follow a fixed pattern (153 days every five months).

bool is_leap_year(int64_t year) {
    return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

int days_in_month(int64_t year, int month) {
    static constexpr std::array<int, 12> kDays{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    RL_ASSERT(month >= 1 && month <= 12);
    return month == 2 && is_leap_year(year) ? 29 : kDays[static_cast<size_t>(month - 1)];
}

// Days from 1970-01-01 to the given date. Precondition: a valid date, |year| < 2^40.
int64_t days_from_civil(int64_t year, int month, int day) {
    const int64_t y = month <= 2 ? year - 1 : year;  // the year that starts on March 1st
    const int64_t era = floor_div(y, 400);
    const int64_t year_of_era = y - era * 400;          // [0, 399]
    const int64_t month_from_march = (month + 9) % 12;  // March 0 .. February 11
    const int64_t day_of_year = (153 * month_from_march + 2) / 5 + day - 1;  // [0, 365]
    const int64_t day_of_era =
        year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + day_of_era - 719468;  // 719468: days from 0000-03-01 to 1970-01-01
}

struct CivilDate {
    int64_t year = 0;
    int month = 0;
    int day = 0;
};

// The inverse of days_from_civil, for any day an int64 count of microseconds can reach.
CivilDate civil_from_days(int64_t days) {
    const int64_t z = days + 719468;
    const int64_t era = floor_div(z, 146097);
    const int64_t day_of_era = z - era * 146097;  // [0, 146096]
    const int64_t year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
    const int64_t day_of_year =
        day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    const int64_t month_from_march = (5 * day_of_year + 2) / 153;  // [0, 11]
    CivilDate date;
    date.day = static_cast<int>(day_of_year - (153 * month_from_march + 2) / 5 + 1);
    date.month =
        static_cast<int>(month_from_march < 10 ? month_from_march + 3 : month_from_march - 9);
    date.year = era * 400 + year_of_era + (date.month <= 2 ? 1 : 0);
    RL_ASSERT(date.day >= 1 && date.day <= 31);
    return date;
}

// PostgreSQL's timestamptz_out with TimeZone UTC and DateStyle ISO: the fraction loses its
// trailing zeros, and years before 1 AD are written as positive years with " BC".
std::string timestamp_to_text(TimestampUs us) {
    if (us == kInfinity) {
        return "infinity";
    }
    if (us == kMinusInfinity) {
        return "-infinity";
    }
    // Floor division without forming days * kUsPerDay, which can overflow near INT64_MIN.
    int64_t days = us / kUsPerDay;
    int64_t rest = us % kUsPerDay;
    if (rest < 0) {
        rest += kUsPerDay;
        --days;
    }
    const CivilDate date = civil_from_days(days);
    const int64_t hour = rest / kUsPerHour;
    rest %= kUsPerHour;
    const int64_t minute = rest / kUsPerMinute;
    rest %= kUsPerMinute;
    const int64_t second = rest / kUsPerSecond;
    int64_t fraction = rest % kUsPerSecond;
    const bool bc = date.year <= 0;
    std::string out =
        fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", bc ? 1 - date.year : date.year,
                    date.month, date.day, hour, minute, second);
    if (fraction != 0) {
        int digits = 6;
        while (fraction % 10 == 0) {
            fraction /= 10;
            --digits;
        }
        out += fmt::format(".{:0{}}", fraction, digits);
    }
    out += "+00";
    if (bc) {
        out += " BC";
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Input functions

// PostgreSQL's boolin: surrounding whitespace is ignored, then any prefix of true/false/yes/no,
// "on", "off" (at least "of": "o" alone is ambiguous), "1" or "0", in any case.
std::optional<Value> parse_bool(std::string_view text) {
    const std::string_view s = trim(text);
    if (s.empty()) {
        return std::nullopt;
    }
    const auto prefix_of = [&](std::string_view word, size_t min_len) {
        return s.size() >= min_len && s.size() <= word.size() &&
               equals_ignore_case(s, word.substr(0, s.size()));
    };
    if (prefix_of("true", 1) || prefix_of("yes", 1) || prefix_of("on", 2) || s == "1") {
        return Value::of_bool(true);
    }
    if (prefix_of("false", 1) || prefix_of("no", 1) || prefix_of("off", 2) || s == "0") {
        return Value::of_bool(false);
    }
    return std::nullopt;
}

// PostgreSQL's int4in/int8in (decimal only): surrounding whitespace, an optional sign, digits
// with single underscores between them (PostgreSQL 16). As in PostgreSQL, overflow is reported as
// soon as the digits exceed the range, whatever follows. Magnitudes are accumulated negatively so
// that the most negative value parses without overflow.
std::optional<Value> parse_integer(Type type, std::string_view text, bool* out_of_range) {
    std::string_view s = trim(text);
    bool negative = false;
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    if (s.empty() || !is_digit(s.front())) {
        return std::nullopt;
    }
    const int64_t min = type == Type::kInt4 ? std::numeric_limits<int32_t>::min()
                                            : std::numeric_limits<int64_t>::min();
    const int64_t max = type == Type::kInt4 ? std::numeric_limits<int32_t>::max()
                                            : std::numeric_limits<int64_t>::max();
    const auto overflow = [&]() -> std::optional<Value> {
        if (out_of_range != nullptr) {
            *out_of_range = true;
        }
        return std::nullopt;
    };
    int64_t value = 0;  // minus the magnitude read so far
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_' && i + 1 < s.size() && is_digit(s[i + 1])) {
            continue;  // the previous character is a digit: only '_' between digits gets here
        }
        if (!is_digit(s[i])) {
            return std::nullopt;
        }
        const int digit = s[i] - '0';
        if (value < (min + digit) / 10) {
            return overflow();
        }
        value = value * 10 - digit;
    }
    if (!negative && value < -max) {
        return overflow();
    }
    const int64_t result = negative ? value : -value;
    return type == Type::kInt4 ? Value::of_int4(static_cast<int32_t>(result))
                               : Value::of_int8(result);
}

// A cursor over timestamp text: every read either consumes what it matched or nothing.
class Scanner {
public:
    explicit Scanner(std::string_view s) : s_(s) {}

    bool at_end() const { return at_ == s_.size(); }
    char peek() const { return at_end() ? '\0' : s_[at_]; }
    std::string_view rest() const { return s_.substr(at_); }
    void skip(size_t n) { at_ += n; }
    bool accept(char c) {
        if (at_end() || s_[at_] != c) {
            return false;
        }
        ++at_;
        return true;
    }
    // Reads between `min` and `max` digits; returns how many were read (0 and nothing consumed
    // when fewer than `min` are there).
    int digits(int min, int max, int64_t& value) {
        int n = 0;
        int64_t v = 0;
        while (n < max && at_ + n < s_.size() && is_digit(s_[at_ + n])) {
            v = v * 10 + (s_[at_ + n] - '0');
            ++n;
        }
        if (n < min) {
            return 0;
        }
        at_ += static_cast<size_t>(n);
        value = v;
        return n;
    }
    void skip_spaces() {
        while (!at_end() && is_space(s_[at_])) {
            ++at_;
        }
    }

private:
    std::string_view s_;
    size_t at_ = 0;
};

enum class Parsed : uint8_t { kOk, kSyntax, kRange };

// HH:MM[:SS[.fraction]] as microseconds since midnight. Hour 24 is allowed only as 24:00:00 and
// second 60 only without a fraction (a leap second), as PostgreSQL allows them. A fraction longer
// than microseconds is rounded half up.
Parsed parse_time_of_day(Scanner& in, int64_t& us) {
    int64_t hour = 0;
    int64_t minute = 0;
    int64_t second = 0;
    int64_t fraction_us = 0;
    if (in.digits(1, 2, hour) == 0 || !in.accept(':') || in.digits(2, 2, minute) == 0) {
        return Parsed::kSyntax;
    }
    if (in.accept(':')) {
        if (in.digits(2, 2, second) == 0) {
            return Parsed::kSyntax;
        }
        if (in.accept('.')) {
            int64_t digit = 0;
            int n = 0;
            while (in.digits(1, 1, digit) == 1) {
                if (n < 6) {
                    fraction_us = fraction_us * 10 + digit;
                } else if (n == 6 && digit >= 5) {
                    ++fraction_us;  // may reach a whole second: the sum below carries it
                }
                ++n;
            }
            if (n == 0) {
                return Parsed::kSyntax;
            }
            for (; n < 6; ++n) {
                fraction_us *= 10;
            }
        }
    }
    if (hour > 24 || minute > 59 || second > 60 || (second == 60 && fraction_us != 0) ||
        (hour == 24 && (minute != 0 || second != 0 || fraction_us != 0))) {
        return Parsed::kRange;
    }
    us = hour * kUsPerHour + minute * kUsPerMinute + second * kUsPerSecond + fraction_us;
    return Parsed::kOk;
}

// A zone after the time: Z, UTC or GMT, or a numeric offset +HH, +HHMM, +HHMMSS, +HH:MM,
// +HH:MM:SS (or with -). Sets `offset_us` to the zone's distance east of UTC.
Parsed parse_zone(Scanner& in, int64_t& offset_us) {
    const std::string_view rest = in.rest();
    for (std::string_view name : {"utc", "gmt", "z"}) {
        if (rest.size() >= name.size() && equals_ignore_case(rest.substr(0, name.size()), name)) {
            in.skip(name.size());
            offset_us = 0;
            return Parsed::kOk;
        }
    }
    const bool negative = in.peek() == '-';
    if (!in.accept('+') && !in.accept('-')) {
        return Parsed::kSyntax;
    }
    int64_t hour = 0;
    int64_t minute = 0;
    int64_t second = 0;
    int64_t packed = 0;
    const int n = in.digits(1, 6, packed);
    if (n == 1 || n == 2) {
        hour = packed;
        if (in.accept(':')) {
            if (in.digits(2, 2, minute) == 0) {
                return Parsed::kSyntax;
            }
            if (in.accept(':') && in.digits(2, 2, second) == 0) {
                return Parsed::kSyntax;
            }
        }
    } else if (n == 4 || n == 6) {
        const int64_t hhmm = n == 6 ? packed / 100 : packed;
        second = n == 6 ? packed % 100 : 0;
        hour = hhmm / 100;
        minute = hhmm % 100;
    } else {
        return Parsed::kSyntax;
    }
    if (hour > 15 || minute > 59 || second > 59) {
        return Parsed::kRange;
    }
    offset_us = hour * kUsPerHour + minute * kUsPerMinute + second * kUsPerSecond;
    if (negative) {
        offset_us = -offset_us;
    }
    return Parsed::kOk;
}

// YYYY-MM-DD: a four-digit year from 1 to 9999, month and day of one or two digits.
Parsed parse_date(Scanner& in, int64_t& days) {
    int64_t year = 0;
    int64_t month = 0;
    int64_t day = 0;
    if (in.digits(4, 4, year) == 0 || !in.accept('-') || in.digits(1, 2, month) == 0 ||
        !in.accept('-') || in.digits(1, 2, day) == 0) {
        return Parsed::kSyntax;
    }
    if (year < 1 || month < 1 || month > 12 || day < 1 ||
        day > days_in_month(year, static_cast<int>(month))) {
        return Parsed::kRange;
    }
    days = days_from_civil(year, static_cast<int>(month), static_cast<int>(day));
    return Parsed::kOk;
}

Parsed parse_timestamp_fields(std::string_view text, TimestampUs& us) {
    Scanner in(text);
    int64_t days = 0;
    int64_t time_us = 0;
    int64_t offset_us = 0;
    if (const Parsed date = parse_date(in, days); date != Parsed::kOk) {
        return date;
    }
    if (!in.at_end()) {
        if (!in.accept('T') && !in.accept('t')) {
            if (!is_space(in.peek())) {
                return Parsed::kSyntax;
            }
            in.skip_spaces();
        }
        if (const Parsed time = parse_time_of_day(in, time_us); time != Parsed::kOk) {
            return time;
        }
        in.skip_spaces();
        if (!in.at_end()) {
            if (const Parsed zone = parse_zone(in, offset_us); zone != Parsed::kOk) {
                return zone;
            }
        }
        if (!in.at_end()) {
            return Parsed::kSyntax;
        }
    }
    us = days * kUsPerDay + time_us - offset_us;
    if (us < kFirstDay * kUsPerDay || us >= kEndDay * kUsPerDay) {
        return Parsed::kRange;
    }
    return Parsed::kOk;
}

std::optional<Value> parse_timestamptz(std::string_view text, bool* out_of_range) {
    const std::string_view s = trim(text);
    if (equals_ignore_case(s, "infinity")) {
        return Value::of_timestamptz(kInfinity);
    }
    if (equals_ignore_case(s, "-infinity")) {
        return Value::of_timestamptz(kMinusInfinity);
    }
    if (equals_ignore_case(s, "epoch")) {
        return Value::of_timestamptz(0);
    }
    TimestampUs us = 0;
    switch (parse_timestamp_fields(s, us)) {
        case Parsed::kOk:
            return Value::of_timestamptz(us);
        case Parsed::kRange:
            if (out_of_range != nullptr) {
                *out_of_range = true;
            }
            return std::nullopt;
        case Parsed::kSyntax:
            return std::nullopt;
    }
    RL_PANIC("unknown Parsed");
}

int type_category(Type type) {
    switch (type) {
        case Type::kInt4:
        case Type::kInt8:
            return 1;
        case Type::kText:
        case Type::kUnknown:
            return 2;
        case Type::kBool:
            return 3;
        case Type::kTimestamptz:
            return 4;
    }
    RL_PANIC("unknown Type");
}

}  // namespace

uint32_t type_oid(Type type) {
    switch (type) {
        case Type::kUnknown:
            return 705;
        case Type::kBool:
            return 16;
        case Type::kInt4:
            return 23;
        case Type::kInt8:
            return 20;
        case Type::kText:
            return 25;
        case Type::kTimestamptz:
            return 1184;
    }
    RL_PANIC("unknown Type");
}

std::string_view type_name(Type type) {
    switch (type) {
        case Type::kUnknown:
            return "unknown";
        case Type::kBool:
            return "boolean";
        case Type::kInt4:
            return "integer";
        case Type::kInt8:
            return "bigint";
        case Type::kText:
            return "text";
        case Type::kTimestamptz:
            return "timestamp with time zone";
    }
    RL_PANIC("unknown Type");
}

std::optional<std::string> to_text(const Value& value) {
    if (value.is_null) {
        return std::nullopt;
    }
    switch (value.type) {
        case Type::kBool:
            return std::string(value.boolean ? "t" : "f");
        case Type::kInt4:
            RL_ASSERT(value.integer >= std::numeric_limits<int32_t>::min());
            RL_ASSERT(value.integer <= std::numeric_limits<int32_t>::max());
            return fmt::format("{}", value.integer);
        case Type::kInt8:
            return fmt::format("{}", value.integer);
        case Type::kText:
        case Type::kUnknown:
            return value.text;
        case Type::kTimestamptz:
            return timestamp_to_text(value.integer);
    }
    RL_PANIC("unknown Type");
}

std::optional<Value> parse_text(Type type, std::string_view text, bool* out_of_range) {
    if (out_of_range != nullptr) {
        *out_of_range = false;
    }
    switch (type) {
        case Type::kBool:
            return parse_bool(text);
        case Type::kInt4:
        case Type::kInt8:
            return parse_integer(type, text, out_of_range);
        case Type::kText:
            return Value::of_text(std::string(text));
        case Type::kUnknown:
            return Value::of_unknown(std::string(text));
        case Type::kTimestamptz:
            return parse_timestamptz(text, out_of_range);
    }
    RL_PANIC("unknown Type");
}

std::optional<std::strong_ordering> compare(const Value& a, const Value& b) {
    RL_ASSERT(!a.is_null);
    RL_ASSERT(!b.is_null);
    if (type_category(a.type) != type_category(b.type)) {
        return std::nullopt;
    }
    switch (a.type) {
        case Type::kInt4:
        case Type::kInt8:
        case Type::kTimestamptz:
            return a.integer <=> b.integer;
        case Type::kBool:
            return a.boolean <=> b.boolean;
        case Type::kText:
        case Type::kUnknown: {
            // C collation: bytes compared as unsigned, which std::string_view's traits do.
            const int c = std::string_view(a.text).compare(b.text);
            return c < 0 ? std::strong_ordering::less
                         : (c > 0 ? std::strong_ordering::greater : std::strong_ordering::equal);
        }
    }
    RL_PANIC("unknown Type");
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& ch : out) {
        if (ch >= 'A' && ch <= 'Z') {
            ch = static_cast<char>(ch - 'A' + 'a');
        }
    }
    return out;
}

}  // namespace raftlock::statemachine::sql
