#pragma once

// raftlock-lab-check's command line, kept out of lab_main.cc so that tests can drive it.

#include <string>
#include <vector>

#include "base/result.h"

namespace raftlock::jepsen {

inline constexpr int kLabExitValid = 0;
inline constexpr int kLabExitInvalid = 1;   // the metrics are printed, with the reasons
inline constexpr int kLabExitBadInput = 3;  // bad usage, an unreadable file or a malformed one

inline constexpr const char* kLabUsage =
    "usage: raftlock-lab-check --cell cell.json --log resource.jsonl\n"
    "                          [--sections sections.tsv] [--history history.jsonl]\n"
    "exit status: 0 valid cell, 1 invalid cell (metrics still printed), 3 bad input or usage\n";

struct LabOptions {
    std::string cell_path;
    std::string log_path;
    std::string sections_path;  // "" = not asked
    std::string history_path;   // "" = not asked
};

// Parses the arguments after the program name; the error says what is wrong.
Result<LabOptions, std::string> parse_lab_cli(const std::vector<std::string>& args);

// Reads the inputs, prints the metrics to `out` and writes the files asked for; says what went
// wrong on `err` (`FILE:LINE: why`, LINE 0 for the file as a whole). Returns the exit status.
// Nothing goes to `out` on bad input.
int run_lab_check(const LabOptions& options, std::string* out, std::string* err);

}  // namespace raftlock::jepsen
