#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "jepsen/checker/history.h"
#include "jepsen/checker/linear_checks.h"
#include "jepsen/checker/model.h"
#include "jepsen/checker/wgl.h"

namespace raftlock::jepsen {

struct CheckOptions {
    std::chrono::milliseconds budget{
        10'000};  // per history, for the search and again for the window
    size_t memory_bytes_max = size_t{1} << 30;  // per history, split among parallel searches
    unsigned threads = 0;                       // 0: one per core, at most 8
};

// The smallest failing part of a non-linearizable history, for people to look at.
struct FailureWindow {
    std::string key;        // the partition
    bool keyed = false;     // false: the model ignores keys and the partition is everything
    int64_t start_pos = 0;  // positions (History::events ordinals), inclusive
    int64_t end_pos = 0;    // the shortest failing prefix of the partition ends here
    int32_t stuck_id = -1;  // the operation no linearization could fit
    std::vector<int32_t> involved_ids;    // others that returned in the window but were not placed
    std::vector<int32_t> linearized_ids;  // deepest partial linearization, in order
    std::string state;                    // the model state after that partial linearization
    bool minimal = true;                  // false when the budget ran out while shrinking
};

struct CheckResult {
    Verdict verdict = Verdict::kUnknown;  // of the search and the linear checks together
    Verdict search_verdict = Verdict::kUnknown;
    size_t partitions = 0;
    size_t ops_searched = 0;
    std::optional<FailureWindow> window;
    std::vector<Finding> findings;  // from the linear checks
    std::string unknown_reason;
    double elapsed_ms = 0;
};

// Checks one history: the WGL search per partition (in parallel), a failure window when one
// fails, and the linear checks. Returns an InputError when an operation's shape does not fit the
// model (the line of the first such record).
Result<CheckResult, InputError> check_history(const History& history,
                                              const std::vector<Operation>& ops,
                                              const Model& model,
                                              const CheckOptions& options);

}  // namespace raftlock::jepsen
