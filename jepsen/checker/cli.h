#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jepsen/checker/checker.h"

namespace raftlock::jepsen {

inline constexpr int kExitLinearizable = 0;
inline constexpr int kExitNotLinearizable = 1;
inline constexpr int kExitUnknown = 2;
inline constexpr int kExitBadInput = 3;

inline constexpr const char* kUsage =
    "usage: raftlock-check --model register|kv|mutex|sessions|sequential\n"
    "                      --format jsonl|jepsen-log [--budget-ms N] [--memory-mb N]\n"
    "                      [--threads N] [--html FILE] FILE...\n"
    "exit status: 0 linearizable, 1 not linearizable, 2 unknown (budget exhausted), 3 bad input\n";

struct CliOptions {
    std::unique_ptr<Model> model;
    std::string format;
    std::string html_path;
    std::vector<std::string> files;
    CheckOptions check;
};

// Parses the arguments after the program name; the error says what is wrong.
Result<CliOptions, std::string> parse_cli(const std::vector<std::string>& args);

int exit_status(Verdict verdict);

// The status to report for several files: bad input beats a violation beats unknown beats a pass.
int worse_status(int a, int b);

// Checks every file and writes the HTML timeline when asked; returns the exit status.
int run(const CliOptions& cli);

}  // namespace raftlock::jepsen
