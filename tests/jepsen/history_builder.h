#pragma once

// Small hand-made histories for the checker tests, written as history.jsonl text so every test
// also runs the parser and the pairing.

#include <string>

#include <catch2/catch.hpp>

#include "jepsen/checker/checker.h"
#include "jepsen/checker/parsers.h"

namespace raftlock::jepsen::test {

class HistoryBuilder {
public:
    // `value` is raw JSON: "4", "null", "[4,7]".
    HistoryBuilder& invoke(int process,
                           const std::string& f,
                           const std::string& key,
                           const std::string& value = "null") {
        return add(process, "invoke", f, key, value, "");
    }
    HistoryBuilder& ok(int process,
                       const std::string& f,
                       const std::string& key,
                       const std::string& value = "null") {
        return add(process, "ok", f, key, value, "");
    }
    HistoryBuilder& fail(int process,
                         const std::string& f,
                         const std::string& key,
                         const std::string& value = "null",
                         const std::string& error = "") {
        return add(process, "fail", f, key, value, error);
    }
    HistoryBuilder& info(int process,
                         const std::string& f,
                         const std::string& key,
                         const std::string& value = "null") {
        return add(process, "info", f, key, value, "");
    }
    HistoryBuilder& watch(int process, const std::string& path, int zxid, int prev_zxid) {
        return add(process, "event", "watch", path,
                   "[" + std::to_string(zxid) + "," + std::to_string(prev_zxid) + "]", "");
    }
    // A whole operation that completes before the next one starts.
    HistoryBuilder& op(int process,
                       const std::string& f,
                       const std::string& key,
                       const std::string& in,
                       const std::string& out) {
        return invoke(process, f, key, in).ok(process, f, key, out);
    }

    const std::string& text() const { return text_; }

private:
    HistoryBuilder& add(int process,
                        const std::string& type,
                        const std::string& f,
                        const std::string& key,
                        const std::string& value,
                        const std::string& error) {
        text_ += "{\"index\":" + std::to_string(index_) +
                 ",\"time_ns\":" + std::to_string(1000 * (index_ + 1)) +
                 ",\"process\":" + std::to_string(process) + ",\"type\":\"" + type + "\",\"f\":\"" +
                 f + "\",\"key\":\"" + key + "\",\"value\":" + value +
                 (error.empty() ? "" : ",\"error\":\"" + error + "\"") + "}\n";
        ++index_;
        return *this;
    }

    std::string text_;
    int index_ = 0;
};

// Parses, pairs and checks; a history the test expects to be well formed must be.
inline CheckResult check_text(const std::string& model_name,
                              const std::string& text,
                              CheckOptions options = CheckOptions{}) {
    auto model = make_model(model_name);
    REQUIRE(model);
    auto history = parse_jsonl(text, "test.jsonl");
    REQUIRE(history.ok());
    auto ops = pair_operations(*history);
    REQUIRE(ops.ok());
    auto result = check_history(*history, *ops, *model, options);
    REQUIRE(result.ok());
    return std::move(result.value());
}

inline Verdict verdict_of(const std::string& model_name, const HistoryBuilder& h) {
    return check_text(model_name, h.text()).verdict;
}

// The line of the first bad record, or 0 when the history is accepted.
inline int64_t bad_line(const std::string& model_name, const std::string& text) {
    auto model = make_model(model_name);
    REQUIRE(model);
    auto history = parse_jsonl(text, "test.jsonl");
    if (!history.ok()) {
        return history.error().line;
    }
    auto ops = pair_operations(*history);
    if (!ops.ok()) {
        return ops.error().line;
    }
    auto result = check_history(*history, *ops, *model, CheckOptions{});
    return result.ok() ? 0 : result.error().line;
}

}  // namespace raftlock::jepsen::test
