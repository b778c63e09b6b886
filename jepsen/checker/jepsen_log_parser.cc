#include <charconv>
#include <optional>

#include "jepsen/checker/parsers.h"

namespace raftlock::jepsen {

namespace {

constexpr std::string_view kMarker = "jepsen.util - ";

bool is_space(char c) {
    return c == ' ' || c == '\t';
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

// Takes the next whitespace-separated token off the front of `s`.
std::string_view next_token(std::string_view& s) {
    s = trim(s);
    size_t end = 0;
    while (end < s.size() && !is_space(s[end])) {
        ++end;
    }
    std::string_view token = s.substr(0, end);
    s.remove_prefix(end);
    return token;
}

std::optional<int64_t> parse_int(std::string_view s) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) {
        return std::nullopt;
    }
    return v;
}

// A tiny EDN reader for what Jepsen prints in these logs: nil, true, false, integers, :keywords,
// bare words, and [vectors] of those.
class EdnReader {
public:
    explicit EdnReader(std::string_view text) : text_(text) {}

    std::optional<Value> read_all() {
        std::optional<Value> v = read(0);
        skip_space();
        if (!v || pos_ != text_.size()) {
            return std::nullopt;
        }
        return v;
    }

private:
    void skip_space() {
        while (pos_ < text_.size() && (is_space(text_[pos_]) || text_[pos_] == ',')) {
            ++pos_;
        }
    }

    std::optional<Value> read(int depth) {
        skip_space();
        if (pos_ >= text_.size() || depth > kValueDepthMax) {
            return std::nullopt;
        }
        if (text_[pos_] == '[') {
            ++pos_;
            std::vector<Value> items;
            // Bounded: every iteration consumes at least one character or returns.
            while (true) {
                skip_space();
                if (pos_ >= text_.size()) {
                    return std::nullopt;
                }
                if (text_[pos_] == ']') {
                    ++pos_;
                    return Value::list(std::move(items));
                }
                std::optional<Value> item = read(depth + 1);
                if (!item) {
                    return std::nullopt;
                }
                items.push_back(std::move(*item));
            }
        }
        size_t start = pos_;
        while (pos_ < text_.size() && !is_space(text_[pos_]) && text_[pos_] != '[' &&
               text_[pos_] != ']' && text_[pos_] != ',') {
            ++pos_;
        }
        return atom(text_.substr(start, pos_ - start));
    }

    static std::optional<Value> atom(std::string_view word) {
        if (word.empty()) {
            return std::nullopt;
        }
        if (word == "nil") {
            return Value::null();
        }
        if (word == "true" || word == "false") {
            return Value::boolean(word == "true");
        }
        if (std::optional<int64_t> i = parse_int(word)) {
            return Value::integer(*i);
        }
        if (word.front() == ':') {
            word.remove_prefix(1);
        }
        return Value::string(std::string(word));
    }

    std::string_view text_;
    size_t pos_ = 0;
};

std::optional<EventType> event_type(std::string_view keyword) {
    if (keyword == ":invoke") {
        return EventType::kInvoke;
    }
    if (keyword == ":ok") {
        return EventType::kOk;
    }
    if (keyword == ":fail") {
        return EventType::kFail;
    }
    if (keyword == ":info") {
        return EventType::kInfo;
    }
    return std::nullopt;
}

// Decodes one line; returns an error message, empty when good. Sets *skip for nemesis lines.
std::string decode(std::string_view line, Event& event, bool* skip) {
    size_t marker = line.find(kMarker);
    if (line.substr(0, 4) != "INFO" || marker == std::string_view::npos) {
        return "expected 'INFO  jepsen.util - <process> :<type> :<f> <value>'";
    }
    std::string_view rest = line.substr(marker + kMarker.size());
    std::string_view process = next_token(rest);
    if (process == ":nemesis" || process == "nemesis") {
        *skip = true;
        return {};
    }
    std::optional<int64_t> p = parse_int(process);
    if (!p) {
        return "process must be an integer, got '" + std::string(process) + "'";
    }
    event.process = *p;
    std::optional<EventType> type = event_type(next_token(rest));
    if (!type) {
        return "type must be :invoke, :ok, :fail or :info";
    }
    event.type = *type;
    std::string_view f = next_token(rest);
    if (f.size() < 2 || f.front() != ':') {
        return "f must be a keyword such as :read";
    }
    event.f = std::string(f.substr(1));
    std::optional<Value> value = EdnReader(trim(rest)).read_all();
    if (!value) {
        return "cannot read the value '" + std::string(trim(rest)) + "'";
    }
    event.value = std::move(*value);
    if (event.type == EventType::kFail && event.f == "cas") {
        event.error = "mismatch";
    }
    return {};
}

}  // namespace

Result<History, InputError> parse_jepsen_log(std::string_view text, std::string source) {
    return parse_records(text, std::move(source),
                         [](std::string_view line, Event& event, bool* skip) -> std::string {
                             return decode(line, event, skip);
                         });
}

}  // namespace raftlock::jepsen
