#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "jepsen/checker/history.h"

namespace raftlock::jepsen {

// Limits on what a parser accepts; beyond them the input is refused, never truncated.
inline constexpr size_t kLineBytesMax = 1 << 20;
inline constexpr size_t kEventsMax = 50'000'000;
inline constexpr int kValueDepthMax = 8;

// `history.jsonl` (DESIGN.md §6; shapes per model in docs/jepsen.md). Blank lines are skipped;
// records whose process is "nemesis" are skipped (they feed the harness's charts, not the checker).
Result<History, InputError> parse_jsonl(std::string_view text, std::string source);

// Jepsen's `jepsen.util` operation log lines (`INFO  jepsen.util - 3\t:ok\t:cas\t[1 4]`), as in
// shared/testdata/jepsen-etcd. Every non-blank line must be such a record. Key is always "".
// A `:fail` of a `:cas` is etcd's "compare failed" answer and gets error "mismatch".
Result<History, InputError> parse_jepsen_log(std::string_view text, std::string source);

// Splits `text` into lines and hands each (1-based number, contents without '\n' / '\r') to
// `on_line` until it returns false. Returns false when a line is longer than kLineBytesMax.
template <typename F>
bool for_each_line(std::string_view text, int64_t* bad_line, F&& on_line) {
    int64_t number = 0;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        ++number;
        std::string_view line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        if (line.size() > kLineBytesMax) {
            *bad_line = number;
            return false;
        }
        if (!on_line(number, line)) {
            return true;
        }
        start = end + 1;
    }
    return true;
}

// The record loop both formats share: skips blank lines, hands every other line to
// `decode(line, event, &skip)`, which fills the event (or sets skip) and returns an error message
// or "", and enforces the record limit. The first bad line ends the parse with its number.
template <typename F>
Result<History, InputError> parse_records(std::string_view text, std::string source, F&& decode) {
    History history;
    history.source = std::move(source);
    std::optional<InputError> error;
    int64_t long_line = 0;
    const bool lines_ok =
        for_each_line(text, &long_line, [&](int64_t number, std::string_view line) {
            if (line.find_first_not_of(" \t") == std::string_view::npos) {
                return true;
            }
            Event event;
            event.line = number;
            bool skip = false;
            std::string message = decode(line, event, &skip);
            if (message.empty() && !skip && history.events.size() >= kEventsMax) {
                message = "too many records";
            }
            if (!message.empty()) {
                error = InputError{number, std::move(message)};
                return false;
            }
            if (!skip) {
                history.events.push_back(std::move(event));
            }
            return true;
        });
    if (!lines_ok) {
        return InputError{long_line, "line longer than 1 MiB"};
    }
    if (error) {
        return *error;
    }
    return history;
}

}  // namespace raftlock::jepsen
