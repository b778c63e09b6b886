#include "jepsen/checker/lab_cli.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "jepsen/checker/lab_report.h"

namespace raftlock::jepsen {

namespace {

std::optional<std::string> read_whole_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

bool write_whole_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    return static_cast<bool>(out);
}

std::string where(const std::string& path, const InputError& error) {
    return path + ":" + std::to_string(error.line) + ": " + error.message + "\n";
}

}  // namespace

Result<LabOptions, std::string> parse_lab_cli(const std::vector<std::string>& args) {
    LabOptions options;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& flag = args[i];
        std::string* target = flag == "--cell"       ? &options.cell_path
                              : flag == "--log"      ? &options.log_path
                              : flag == "--sections" ? &options.sections_path
                              : flag == "--history"  ? &options.history_path
                                                     : nullptr;
        if (target == nullptr) {
            return "unknown argument '" + flag + "'";
        }
        if (i + 1 >= args.size() || args[i + 1].empty()) {
            return flag + " needs a file name";
        }
        *target = args[++i];
    }
    if (options.cell_path.empty()) {
        return std::string("--cell is required");
    }
    if (options.log_path.empty()) {
        return std::string("--log is required");
    }
    return options;
}

int run_lab_check(const LabOptions& options, std::string* out, std::string* err) {
    std::optional<std::string> cell_text = read_whole_file(options.cell_path);
    std::optional<std::string> log_text = read_whole_file(options.log_path);
    if (!cell_text || !log_text) {
        *err += (cell_text ? options.log_path : options.cell_path) + ": cannot read the file\n";
        return kLabExitBadInput;
    }
    auto cell = parse_lab_cell(*cell_text);
    if (!cell.ok()) {
        *err += where(options.cell_path, cell.error());
        return kLabExitBadInput;
    }
    auto records = parse_lab_log(*log_text, *cell);
    if (!records.ok()) {
        *err += where(options.log_path, records.error());
        return kLabExitBadInput;
    }
    LabReport report = account_lab(*cell, *records);
    if (!options.sections_path.empty() &&
        !write_whole_file(options.sections_path, lab_sections_tsv(*cell, report.sections))) {
        *err += options.sections_path + ": cannot write the file\n";
        return kLabExitBadInput;
    }
    if (!options.history_path.empty() && cell->tokens) {
        LabHistory history = lab_history_jsonl(*cell, *records);
        if (!write_whole_file(options.history_path, history.text)) {
            *err += options.history_path + ": cannot write the file\n";
            return kLabExitBadInput;
        }
        report.metrics.history_ops = history.records;
    }
    *out += lab_metrics_json(report.metrics);
    return report.metrics.invalid.empty() ? kLabExitValid : kLabExitInvalid;
}

}  // namespace raftlock::jepsen
