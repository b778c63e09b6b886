#include "jepsen/checker/cli.h"

#include <charconv>

namespace raftlock::jepsen {

namespace {

bool parse_positive(const std::string& text, int64_t max, int64_t* out) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || v <= 0 || v > max) {
        return false;
    }
    *out = v;
    return true;
}

// Applies one option that takes a value; returns an error message, empty on success.
std::string apply(CliOptions& cli, const std::string& flag, const std::string& value) {
    int64_t n = 0;
    if (flag == "--model") {
        cli.model = make_model(value);
        return cli.model ? "" : "unknown model '" + value + "'";
    }
    if (flag == "--format") {
        cli.format = value;
        return value == "jsonl" || value == "jepsen-log" ? "" : "unknown format '" + value + "'";
    }
    if (flag == "--html") {
        cli.html_path = value;
        return "";
    }
    if (flag == "--budget-ms") {
        if (!parse_positive(value, int64_t{1} << 40, &n)) {
            return "--budget-ms needs a positive integer";
        }
        cli.check.budget = std::chrono::milliseconds(n);
        return "";
    }
    if (flag == "--memory-mb") {
        if (!parse_positive(value, int64_t{1} << 30, &n)) {
            return "--memory-mb needs a positive integer";
        }
        cli.check.memory_bytes_max = static_cast<size_t>(n) << 20;
        return "";
    }
    if (flag == "--threads") {
        if (!parse_positive(value, 256, &n)) {
            return "--threads needs an integer from 1 to 256";
        }
        cli.check.threads = static_cast<unsigned>(n);
        return "";
    }
    return "unknown option '" + flag + "'";
}

}  // namespace

Result<CliOptions, std::string> parse_cli(const std::vector<std::string>& args) {
    CliOptions cli;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg.size() > 2 && arg.rfind("--", 0) == 0) {
            if (i + 1 >= args.size()) {
                return std::string(arg + " needs a value");
            }
            std::string error = apply(cli, arg, args[++i]);
            if (!error.empty()) {
                return error;
            }
            continue;
        }
        cli.files.push_back(arg);
    }
    if (!cli.model) {
        return std::string("--model is required");
    }
    if (cli.format.empty()) {
        return std::string("--format is required");
    }
    if (cli.files.empty()) {
        return std::string("no history files given");
    }
    return cli;
}

int exit_status(Verdict verdict) {
    switch (verdict) {
        case Verdict::kLinearizable:
            return kExitLinearizable;
        case Verdict::kNotLinearizable:
            return kExitNotLinearizable;
        case Verdict::kUnknown:
            return kExitUnknown;
    }
    return kExitUnknown;
}

int worse_status(int a, int b) {
    auto rank = [](int s) {
        return s == kExitBadInput ? 3 : s == kExitNotLinearizable ? 2 : s == kExitUnknown ? 1 : 0;
    };
    return rank(a) >= rank(b) ? a : b;
}

}  // namespace raftlock::jepsen
