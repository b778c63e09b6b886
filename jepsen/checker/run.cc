// Runs the checker over files for the command line: prints one verdict per file and writes the
// HTML timeline. Kept out of main.cc so that tests can drive it.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "jepsen/checker/cli.h"
#include "jepsen/checker/html_timeline.h"
#include "jepsen/checker/parsers.h"

namespace raftlock::jepsen {

namespace {

std::optional<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

void print_window(const History& history,
                  const std::vector<Operation>& ops,
                  const FailureWindow& w) {
    std::printf("  failing window: key '%s', lines %lld-%lld%s\n", w.key.c_str(),
                static_cast<long long>(history.events[w.start_pos].line),
                static_cast<long long>(history.events[w.end_pos].line),
                w.minimal ? " (shortest failing prefix)" : " (budget ran out while shrinking)");
    if (w.stuck_id >= 0) {
        const Operation& op = ops[w.stuck_id];
        std::printf("  cannot linearize: process %lld %s %s -> %s (lines %lld-%lld)\n",
                    static_cast<long long>(op.process), op.f.c_str(), to_string(op.input).c_str(),
                    to_string(op.output).c_str(), static_cast<long long>(op.call_line),
                    static_cast<long long>(op.return_line));
    }
    std::printf("  state after the deepest partial linearization (%zu ops): %s\n",
                w.linearized_ids.size(), w.state.c_str());
}

int check_file(const CliOptions& cli, const std::string& path, std::vector<std::string>* html) {
    std::optional<std::string> text = read_file(path);
    if (!text) {
        std::fprintf(stderr, "%s: cannot read the file\n", path.c_str());
        return kExitBadInput;
    }
    auto history = cli.format == "jsonl" ? parse_jsonl(*text, path) : parse_jepsen_log(*text, path);
    Result<std::vector<Operation>, InputError> ops =
        history.ok() ? pair_operations(*history)
                     : Result<std::vector<Operation>, InputError>(history.error());
    Result<CheckResult, InputError> result =
        ops.ok() ? check_history(*history, *ops, *cli.model, cli.check)
                 : Result<CheckResult, InputError>(ops.error());
    if (!result.ok()) {
        std::fprintf(stderr, "%s:%lld: bad record: %s\n", path.c_str(),
                     static_cast<long long>(result.error().line), result.error().message.c_str());
        return kExitBadInput;
    }
    const CheckResult& r = *result;
    std::printf("%s: %s (model %s, %zu partitions, %zu operations searched, %.1f ms)\n",
                path.c_str(), to_string(r.verdict), std::string(cli.model->name()).c_str(),
                r.partitions, r.ops_searched, r.elapsed_ms);
    if (r.window) {
        print_window(*history, *ops, *r.window);
    }
    for (const Finding& f : r.findings) {
        std::printf("  %s: %s\n", f.check.c_str(), f.message.c_str());
    }
    if (r.verdict == Verdict::kUnknown) {
        std::printf("  unknown: %s\n", r.unknown_reason.c_str());
    }
    if (html != nullptr && r.verdict != Verdict::kLinearizable) {
        html->push_back(render_timeline(*history, *ops, r));
    }
    return exit_status(r.verdict);
}

}  // namespace

int run(const CliOptions& cli) {
    std::vector<std::string> html;
    int worst = kExitLinearizable;
    for (const std::string& path : cli.files) {
        worst = worse_status(worst, check_file(cli, path, cli.html_path.empty() ? nullptr : &html));
    }
    if (!cli.html_path.empty()) {
        std::ofstream out(cli.html_path, std::ios::binary | std::ios::trunc);
        out << html_page(html);
        if (!out) {
            std::fprintf(stderr, "cannot write %s\n", cli.html_path.c_str());
            return kExitBadInput;
        }
    }
    return worst;
}

}  // namespace raftlock::jepsen
