#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/result.h"
#include "jepsen/checker/value.h"

namespace raftlock::jepsen {

// Why a file was refused (exit status 3). `line` is 1-based; 0 means "the file as a whole".
struct InputError {
    int64_t line = 0;
    std::string message;
};

// `kWatch` is a one-line watch event record (f = "watch"), not half of an operation.
enum class EventType : uint8_t { kInvoke, kOk, kFail, kInfo, kWatch };

const char* to_string(EventType type);

// One record of a history file, as written (DESIGN.md §6).
struct Event {
    int64_t line = 0;     // 1-based line in the source file
    int64_t time_ns = 0;  // 0 when the format has no clock (Jepsen logs)
    int64_t process = 0;
    EventType type = EventType::kInvoke;
    std::string f;
    std::string key;  // "" when the format has no keys
    Value value;
    std::string error;  // optional detail of a `fail`, e.g. "mismatch" for a cas compare failure
};

// A parsed file: events in real-time order (file order). Records of the nemesis are not kept.
struct History {
    std::string source;
    std::vector<Event> events;
};

enum class Outcome : uint8_t { kOk, kFail, kInfo };

// Positions order events in real time: the position of an event is its ordinal in
// History::events. An operation whose outcome is unknown returns at +infinity (Lowe 2017 §5:
// a pending operation may take effect at any point after its call, or never).
inline constexpr int64_t kNeverReturned = std::numeric_limits<int64_t>::max();

// An invocation paired with its completion.
struct Operation {
    int32_t id = 0;  // dense, in call order
    int64_t process = 0;
    std::string f;
    std::string key;
    Value input;   // the invoke record's value
    Value output;  // the ok record's value; null for fail / info
    std::string error;
    Outcome outcome = Outcome::kInfo;
    int64_t call_pos = 0;
    int64_t return_pos = kNeverReturned;
    int64_t call_line = 0;
    int64_t return_line = 0;  // 0 when the history ended before a completion
    int64_t call_ns = 0;
    int64_t return_ns = 0;
};

// Pairs every invoke with the next completion of the same process. Invocations still open at the
// end of the history become `info`. Watch records are skipped (see linear_checks.h).
Result<std::vector<Operation>, InputError> pair_operations(const History& history);

}  // namespace raftlock::jepsen
