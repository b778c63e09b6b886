#pragma once

// Durations as people type them on a command line: "500ms", "30s", "5m", "1h", or "0".
// Whole numbers only; the unit is required (except for 0) so "30" is never guessed at.

#include <chrono>
#include <string>
#include <string_view>

#include "base/result.h"

namespace raftlock::client {

// Longer than anything raftlock accepts (waits end at 24 h, TTLs at a year): a typo, not a wish.
inline constexpr std::chrono::milliseconds kDurationMax = std::chrono::hours(24 * 366);

// Errors name the text and the accepted forms.
Result<std::chrono::milliseconds, std::string> parse_duration(std::string_view text);

// The shortest exact form: 1500ms, 30s, 5m, 2h, 0s.
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace raftlock::client
