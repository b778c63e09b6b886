#include "client/duration.h"

#include <charconv>
#include <cstdint>

#include <fmt/format.h>

namespace raftlock::client {

namespace {

struct Unit {
    std::string_view suffix;
    int64_t ms;
};

// Longest suffix first so "ms" is not read as "m" followed by garbage.
constexpr Unit kUnits[] = {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}};

}  // namespace

Result<std::chrono::milliseconds, std::string> parse_duration(std::string_view text) {
    const auto bad = [&] {
        return fmt::format(
            "bad duration '{}': write a whole number with a unit, e.g. 500ms, 30s, "
            "5m, 1h",
            text);
    };
    if (text == "0") {
        return std::chrono::milliseconds(0);
    }
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
        digits++;
    }
    if (digits == 0 || digits > 12) {
        return bad();
    }
    int64_t number = 0;
    std::from_chars(text.data(), text.data() + digits, number);
    const std::string_view suffix = text.substr(digits);
    for (const Unit& unit : kUnits) {
        if (suffix != unit.suffix) {
            continue;
        }
        if (number > kDurationMax.count() / unit.ms) {
            return fmt::format("duration '{}' is longer than {}", text,
                               format_duration(kDurationMax));
        }
        return std::chrono::milliseconds(number * unit.ms);
    }
    return bad();
}

std::string format_duration(std::chrono::milliseconds duration) {
    const int64_t ms = duration.count();
    if (ms == 0) {
        return "0s";
    }
    for (size_t i = std::size(kUnits); i-- > 1;) {
        if (ms % kUnits[i].ms == 0) {
            return fmt::format("{}{}", ms / kUnits[i].ms, kUnits[i].suffix);
        }
    }
    return fmt::format("{}ms", ms);
}

}  // namespace raftlock::client
