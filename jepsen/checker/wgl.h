#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "jepsen/checker/model.h"

namespace raftlock::jepsen {

enum class Verdict : uint8_t { kLinearizable, kNotLinearizable, kUnknown };

const char* to_string(Verdict verdict);

// What one search may spend. Exhausting it gives kUnknown, never kLinearizable.
struct Budget {
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    size_t memory_bytes_max = size_t{1} << 30;
    const std::atomic<bool>* cancel = nullptr;  // set by another thread: stop early
};

// One operation of a partition, as the search sees it. Positions order calls and returns in real
// time; return_pos is kNeverReturned for an operation whose outcome is unknown.
struct SearchOp {
    CompiledOp op;
    int64_t call_pos = 0;
    int64_t return_pos = 0;
    int32_t id = 0;  // Operation::id, for reports
};

struct SearchResult {
    Verdict verdict = Verdict::kUnknown;
    // The deepest partial linearization the search found (Operation ids, in order) and the
    // operation whose return it could not get past: the best explanation of a failure.
    std::vector<int32_t> best_linearization;
    int32_t stuck_id = -1;
    State best_state;
    uint64_t steps = 0;
    size_t cache_entries = 0;
};

// Decides whether `ops` are linearizable with respect to `model`, by the WGL search (Wing & Gong
// 1993, with Lowe's memoization, "Testing for linearizability", 2017) in the form Porcupine
// implements it (Athalye): a linked list of call and return entries, a stack for backtracking,
// and a hash set of (linearized set as a bitset, model state) pairs already explored. Exact
// reductions on top (each argued where it is implemented, and checked against brute force in
// tests/jepsen/wgl_oracle_test.cc): eager read-only operations, unknown outcomes that may never
// happen, and identical unknown operations placed in call order.
// Precondition: ops are in call order (ids increasing with call_pos), call_pos < return_pos.
SearchResult wgl_search(const Model& model, std::span<const SearchOp> ops, const Budget& budget);

}  // namespace raftlock::jepsen
