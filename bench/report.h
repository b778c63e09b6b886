#pragma once

// Prints a RunResult for people (one line) and as one line of JSON (JSON Lines: a file of them is
// what bench/compare.sh reads).

#include <string>

#include "bench/scenario.h"

namespace raftlock::bench {

// `label` replaces the system name when not empty (e.g. "redis-nofsync", "raftlock-zk").
std::string to_text(const RunResult& result, const std::string& label);
std::string to_json(const RunResult& result, const std::string& label);

}  // namespace raftlock::bench
