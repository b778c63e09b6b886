// The PostgreSQL front end: connection settings. SET, RESET and SHOW are answered here without
// the backend, and ParameterStatus tells the client of changes to the settings PostgreSQL
// reports (GUC_REPORT).

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/assert.h"
#include "server/pg_frontend.h"

namespace raftlock::server {

namespace {

// Settings a connection may hold besides the known ones, and the longest value. PostgreSQL has
// neither limit; a connection's settings live in memory for as long as it does.
constexpr size_t kSettingsMax = 100;
constexpr size_t kSettingValueBytesMax = 4096;

enum class Check : uint8_t {
    kAny,        // stored as given
    kReadOnly,   // SET refused (55P02)
    kDuration,   // a time in milliseconds, shown in PostgreSQL's units ("5s")
    kEncoding,   // UTF8 only
    kTimeZone,   // UTC only
    kDateStyle,  // ISO output only
    kIsolation,  // read committed only
    kOn,         // "on" only
};

struct Known {
    std::string_view key;    // lower case, as the parser gives names
    std::string_view name;   // as PostgreSQL spells it: SHOW's column, ParameterStatus
    std::string_view value;  // the default; see setting() for the per-connection ones
    Check check;
    std::string_view description;  // SHOW ALL
};

// Sorted by key: SHOW ALL lists them in this order.
constexpr std::array<Known, 17> kKnown{{
    {"application_name", "application_name", "", Check::kAny,
     "Sets the application name to be reported in statistics and logs."},
    {"client_encoding", "client_encoding", "UTF8", Check::kEncoding,
     "Sets the client's character set encoding."},
    {"datestyle", "DateStyle", "ISO, MDY", Check::kDateStyle,
     "Sets the display format for date and time values."},
    {"default_transaction_isolation", "default_transaction_isolation", "read committed",
     Check::kIsolation, "Sets the transaction isolation level of each new transaction."},
    {"extra_float_digits", "extra_float_digits", "1", Check::kAny,
     "Sets the number of digits displayed for floating-point values."},
    {"integer_datetimes", "integer_datetimes", "on", Check::kReadOnly,
     "Shows whether datetimes are integer based."},
    {"is_superuser", "is_superuser", "off", Check::kReadOnly,
     "Shows whether the current user is a superuser."},
    {"lock_timeout", "lock_timeout", "0", Check::kDuration,
     "Sets the maximum allowed duration of any wait for a lock."},
    {"max_identifier_length", "max_identifier_length", "63", Check::kReadOnly,
     "Shows the maximum identifier length."},
    {"search_path", "search_path", "\"$user\", public", Check::kAny,
     "Sets the schema search order for names that are not schema-qualified."},
    {"server_encoding", "server_encoding", "UTF8", Check::kReadOnly,
     "Shows the server (database) character set encoding."},
    {"server_version", "server_version", "", Check::kReadOnly, "Shows the server version."},
    {"session_authorization", "session_authorization", "", Check::kReadOnly,
     "Shows the session user name."},
    {"standard_conforming_strings", "standard_conforming_strings", "on", Check::kOn,
     "Causes '...' strings to treat backslashes literally."},
    {"statement_timeout", "statement_timeout", "0", Check::kDuration,
     "Sets the maximum allowed duration of any statement (stored, not enforced)."},
    {"timezone", "TimeZone", "UTC", Check::kTimeZone,
     "Sets the time zone for displaying and interpreting time stamps."},
    {"transaction_isolation", "transaction_isolation", "read committed", Check::kIsolation,
     "Sets the current transaction's isolation level."},
}};

// The settings PostgreSQL reports in ParameterStatus, in the order it sends them at startup.
constexpr std::array<std::string_view, 10> kReported{
    "server_version",
    "server_encoding",
    "client_encoding",
    "datestyle",
    "timezone",
    "integer_datetimes",
    "standard_conforming_strings",
    "application_name",
    "is_superuser",
    "session_authorization",
};

const Known* find_known(std::string_view key) {
    for (const Known& k : kKnown) {
        if (k.key == key) {
            return &k;
        }
    }
    return nullptr;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

sql::SqlError invalid(std::string_view name, std::string_view value, std::string detail = {}) {
    return sql::SqlError{"22023",
                         fmt::format("invalid value for parameter \"{}\": \"{}\"", name, value),
                         std::move(detail)};
}

// PostgreSQL's syntax for a time setting in milliseconds: a number, optionally with a fraction
// and optionally followed by a unit (us, ms, s, min, h, d: case-sensitive, as in PostgreSQL); a
// bare number is milliseconds. Rounded to the nearest millisecond; nullopt when not a duration.
std::optional<double> parse_duration_ms(std::string_view text) {
    text = trim(text);
    size_t digits_end = 0;
    bool seen_point = false;
    bool seen_digit = false;
    for (; digits_end < text.size(); ++digits_end) {
        const char ch = text[digits_end];
        if (ch >= '0' && ch <= '9') {
            seen_digit = true;
        } else if (ch == '.' && !seen_point) {
            seen_point = true;
        } else {
            break;
        }
    }
    if (!seen_digit || digits_end > 32) {
        return std::nullopt;
    }
    double number = 0;
    const auto [ptr, ec] =
        std::from_chars(text.data(), text.data() + digits_end, number, std::chars_format::fixed);
    if (ec != std::errc() || ptr != text.data() + digits_end) {
        return std::nullopt;
    }
    const std::string_view unit = trim(text.substr(digits_end));
    constexpr std::array<std::pair<std::string_view, double>, 7> kUnits{{
        {"", 1.0},
        {"us", 0.001},
        {"ms", 1.0},
        {"s", 1000.0},
        {"min", 60'000.0},
        {"h", 3'600'000.0},
        {"d", 86'400'000.0},
    }};
    for (const auto& [name, factor] : kUnits) {
        if (unit == name) {
            return std::round(number * factor);
        }
    }
    return std::nullopt;
}

// A duration as PostgreSQL shows it: in the largest unit that divides it ("5s", "1min").
std::string format_duration_ms(int64_t ms) {
    if (ms == 0) {
        return "0";
    }
    constexpr std::array<std::pair<int64_t, std::string_view>, 4> kUnits{{
        {86'400'000, "d"},
        {3'600'000, "h"},
        {60'000, "min"},
        {1000, "s"},
    }};
    for (const auto& [factor, unit] : kUnits) {
        if (ms % factor == 0) {
            return fmt::format("{}{}", ms / factor, unit);
        }
    }
    return fmt::format("{}ms", ms);
}

Result<std::string, sql::SqlError> check_duration(const Known& k, std::string_view value) {
    const std::optional<double> ms = parse_duration_ms(value);
    if (!ms) {
        return invalid(k.name, value);
    }
    constexpr double kMax = std::numeric_limits<int32_t>::max();  // PostgreSQL's range
    if (*ms > kMax) {
        return sql::SqlError{"22023",
                             fmt::format("{} is outside the valid range for parameter \"{}\" "
                                         "(0 .. 2147483647)",
                                         value, k.name)};
    }
    return format_duration_ms(static_cast<int64_t>(*ms));
}

Result<std::string, sql::SqlError> check_date_style(std::string_view current,
                                                    std::string_view value) {
    // The order part is kept from the current value when the new one does not give it.
    std::string order = current.size() > 5 ? std::string(current.substr(5)) : "MDY";
    size_t i = 0;
    while (i < value.size()) {
        const size_t end = value.find_first_of(", \t", i);
        const std::string token = sql::ascii_lower(
            value.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
        i = end == std::string_view::npos ? value.size() : end + 1;
        if (token.empty() || token == "iso") {
            continue;
        }
        if (token == "mdy" || token == "us" || token == "noneuropean" || token == "non-european") {
            order = "MDY";
        } else if (token == "dmy" || token == "euro" || token == "european") {
            order = "DMY";
        } else if (token == "ymd") {
            order = "YMD";
        } else if (token == "sql" || token == "postgres" || token == "german") {
            return invalid("DateStyle", value, "The SQL mode writes dates in ISO style only.");
        } else {
            return invalid("DateStyle", value);
        }
    }
    return "ISO, " + order;
}

// The value SET stores for a known setting, in PostgreSQL's canonical spelling.
Result<std::string, sql::SqlError> check_value(const Known& k,
                                               std::string_view current,
                                               std::string_view value) {
    const std::string v = sql::ascii_lower(trim(value));
    switch (k.check) {
        case Check::kAny:
            return std::string(value);
        case Check::kReadOnly:
            return sql::SqlError{"55P02",
                                 fmt::format("parameter \"{}\" cannot be changed", k.name)};
        case Check::kDuration:
            return check_duration(k, value);
        case Check::kEncoding:
            if (v == "utf8" || v == "utf-8" || v == "unicode") {
                return std::string("UTF8");
            }
            return invalid(k.name, value, "The SQL mode speaks UTF8 only.");
        case Check::kTimeZone:
            if (v == "utc") {
                return std::string("UTC");
            }
            if (v == "etc/utc") {
                return std::string("Etc/UTC");
            }
            return invalid(k.name, value, "The SQL mode keeps time in UTC only.");
        case Check::kDateStyle:
            return check_date_style(current, value);
        case Check::kIsolation:
            if (v == "read committed" || v == "read uncommitted") {
                return v;  // PostgreSQL runs read uncommitted as read committed too
            }
            if (v == "repeatable read" || v == "serializable") {
                return sql::SqlError{"0A000",
                                     fmt::format("transaction isolation level \"{}\" is not "
                                                 "supported in the SQL mode",
                                                 v)};
            }
            return invalid(k.name, value);
        case Check::kOn:
            if (v == "on" || v == "true" || v == "yes" || v == "1") {
                return std::string("on");
            }
            if (v == "off" || v == "false" || v == "no" || v == "0") {
                return sql::SqlError{
                    "0A000", fmt::format("{} = off is not supported in the SQL mode", k.name)};
            }
            return invalid(k.name, value);
    }
    RL_PANIC("unknown setting check");
}

}  // namespace

sql::StatementResult PgFrontend::run_local(Conn& c, const sql::Statement& statement) {
    sql::StatementResult result;
    result.tx_status = c.tx_status;
    if (c.tx_status == sql::TxStatus::kFailed) {
        // As PostgreSQL: in a failed block only ROLLBACK (or COMMIT) runs, SET and SHOW neither.
        result.error = sql::SqlError{
            "25P02",
            "current transaction is aborted, commands ignored until end of transaction "
            "block"};
        return result;
    }
    if (const auto* set_op = std::get_if<sql::SetVar>(&statement)) {
        auto ok = set(c, set_op->name, set_op->value);
        if (!ok.ok()) {
            result.error = ok.error();
        } else {
            result.tag = set_op->value ? "SET" : "RESET";
        }
        return result;
    }
    const auto* show_op = std::get_if<sql::Show>(&statement);
    RL_ASSERT(show_op != nullptr);
    return show(c, show_op->name);
}

// SET name = value, or with no value RESET name (back to what the startup packet gave, else the
// default). RESET ALL resets every setting.
Result<bool, sql::SqlError> PgFrontend::set(Conn& c,
                                            const std::string& name,
                                            const std::optional<std::string>& value) {
    const Known* known = find_known(name);
    if (name == "all") {
        if (value) {
            return sql::SqlError{"42601", "SET requires a parameter name, not ALL"};
        }
        c.settings = c.startup_settings;
    } else if (known != nullptr && known->check == Check::kReadOnly) {
        return sql::SqlError{"55P02",
                             fmt::format("parameter \"{}\" cannot be changed", known->name)};
    } else if (!value) {
        if (auto it = c.startup_settings.find(name); it != c.startup_settings.end()) {
            c.settings[name] = it->second;
        } else {
            c.settings.erase(name);
        }
    } else {
        if (value->size() > kSettingValueBytesMax) {
            return sql::SqlError{"54000", fmt::format("value for parameter \"{}\" is too long (at "
                                                      "most {} bytes)",
                                                      name, kSettingValueBytesMax)};
        }
        if (!c.settings.contains(name) && c.settings.size() >= kSettingsMax) {
            return sql::SqlError{"54000", fmt::format("too many settings (at most {} per "
                                                      "connection)",
                                                      kSettingsMax)};
        }
        std::string stored = *value;
        if (known != nullptr) {
            auto checked = check_value(*known, setting(c, name).value_or(""), *value);
            if (!checked.ok()) {
                return checked.error();
            }
            stored = std::move(checked.value());
        }
        c.settings[name] = std::move(stored);
    }
    const std::optional<double> lock_timeout_ms =
        parse_duration_ms(setting(c, "lock_timeout").value_or("0"));
    RL_ASSERT(lock_timeout_ms.has_value());  // only valid values are stored
    c.lock_timeout_ms = static_cast<int64_t>(*lock_timeout_ms);
    return true;
}

// The setting's current value; nullopt when the connection does not know the name.
std::optional<std::string> PgFrontend::setting(const Conn& c, std::string_view name) const {
    if (auto it = c.settings.find(std::string(name)); it != c.settings.end()) {
        return it->second;
    }
    if (name == "server_version") {
        return options_.server_version;
    }
    if (name == "session_authorization") {
        return c.user;
    }
    if (const Known* known = find_known(name)) {
        return std::string(known->value);
    }
    return std::nullopt;
}

sql::StatementResult PgFrontend::show(const Conn& c, const std::string& name) const {
    sql::StatementResult result;
    result.tx_status = c.tx_status;
    if (name == "all") {
        // Every known setting and every other one this connection set, by name.
        std::map<std::string, std::pair<std::string, std::string_view>> all;
        for (const Known& k : kKnown) {
            all.emplace(std::string(k.key), std::pair{std::string(k.name), k.description});
        }
        for (const auto& [key, value] : c.settings) {
            all.emplace(key, std::pair{key, std::string_view()});
        }
        result.returns_rows = true;
        result.columns = {{"name", sql::Type::kText},
                          {"setting", sql::Type::kText},
                          {"description", sql::Type::kText}};
        for (const auto& [key, shown] : all) {
            result.rows.push_back({sql::Value::of_text(shown.first),
                                   sql::Value::of_text(setting(c, key).value_or("")),
                                   sql::Value::of_text(std::string(shown.second))});
        }
        result.tag = "SHOW";
        return result;
    }
    const std::optional<std::string> value = setting(c, name);
    if (!value) {
        result.error = sql::SqlError{
            "42704", fmt::format("unrecognized configuration parameter \"{}\"", name)};
        return result;
    }
    const Known* known = find_known(name);
    result.returns_rows = true;
    result.columns = {{known != nullptr ? std::string(known->name) : name, sql::Type::kText}};
    result.rows.push_back({sql::Value::of_text(*value)});
    result.tag = "SHOW";
    return result;
}

// ParameterStatus for every reported setting whose value the client does not have yet.
void PgFrontend::report_changes(Conn& c) {
    for (std::string_view key : kReported) {
        const std::string value = setting(c, key).value();
        auto it = c.reported.find(std::string(key));
        if (it != c.reported.end() && it->second == value) {
            continue;
        }
        const Known* known = find_known(key);
        RL_ASSERT(known != nullptr);
        net::encode_parameter_status(known->name, value, c.out);
        c.reported.insert_or_assign(std::string(key), value);
    }
}

}  // namespace raftlock::server
