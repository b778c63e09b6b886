#include "jepsen/checker/failure_window.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace raftlock::jepsen {

namespace {

constexpr size_t kContextOps = 8;

// The partition as it looked at position `cut`: later calls are gone, and operations still
// running at the cut have an unknown outcome.
std::vector<SearchOp> prefix(const Partition& p,
                             const Model& model,
                             Interner& interner,
                             int64_t cut) {
    std::vector<SearchOp> out;
    for (const Operation* op : p.ops) {
        if (op->call_pos > cut) {
            break;  // ops are in call order
        }
        Operation seen = *op;
        if (seen.return_pos > cut) {
            seen.outcome = Outcome::kInfo;
            seen.output = Value::null();
            seen.return_pos = kNeverReturned;
        }
        Compiled c = model.compile(seen, interner);
        RL_ASSERT(c.action != Compiled::Action::kBad);  // the full history compiled cleanly
        if (c.action == Compiled::Action::kKeep) {
            out.push_back(SearchOp{c.op, seen.call_pos, seen.return_pos, seen.id});
        }
    }
    return out;
}

struct Shrunk {
    int64_t end_pos = 0;
    SearchResult failing;
    bool minimal = true;
};

Shrunk shortest_failing_prefix(const Partition& partition,
                               const Model& model,
                               Interner& interner,
                               const Budget& budget) {
    std::vector<int64_t> cuts;
    for (const SearchOp& op : partition.search) {
        if (op.return_pos != kNeverReturned) {
            cuts.push_back(op.return_pos);
        }
    }
    // Only a returned operation can be impossible to place, so a failure has at least one.
    RL_ASSERT(!cuts.empty());
    std::sort(cuts.begin(), cuts.end());
    Shrunk shrunk{0, partition.result, true};
    size_t lo = 0;
    size_t hi = cuts.size() - 1;  // the prefix through the last return fails: it is the whole
    // Binary search: O(log n) searches, each on a shorter history than the one that failed.
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        SearchResult r = wgl_search(model, prefix(partition, model, interner, cuts[mid]), budget);
        if (r.verdict == Verdict::kUnknown) {
            shrunk.minimal = false;
            break;
        }
        if (r.verdict == Verdict::kNotLinearizable) {
            hi = mid;
            shrunk.failing = std::move(r);
        } else {
            lo = mid + 1;
        }
    }
    shrunk.end_pos = cuts[hi];
    return shrunk;
}

// Moves the window's start back to the calls of the operations worth showing.
void widen_start(const Partition& partition, const SearchResult& failing, FailureWindow& window) {
    std::unordered_set<int32_t> placed(failing.best_linearization.begin(),
                                       failing.best_linearization.end());
    std::unordered_map<int32_t, int64_t> call_of;
    window.start_pos = window.end_pos;
    for (const Operation* op : partition.ops) {
        call_of.emplace(op->id, op->call_pos);
        if (op->return_pos == window.end_pos) {
            window.stuck_id = op->id;
            window.start_pos = std::min(window.start_pos, op->call_pos);
        }
    }
    for (const SearchOp& op : partition.search) {
        if (op.return_pos < window.end_pos && placed.count(op.id) == 0) {
            window.involved_ids.push_back(op.id);
            window.start_pos = std::min(window.start_pos, op.call_pos);
        }
    }
    // The last operations placed set the state the stuck one conflicts with: show them too.
    size_t placed_count = failing.best_linearization.size();
    for (size_t i = placed_count - std::min(placed_count, kContextOps); i < placed_count; ++i) {
        window.start_pos = std::min(window.start_pos, call_of.at(failing.best_linearization[i]));
    }
}

}  // namespace

FailureWindow find_failure_window(const Partition& partition,
                                  const Model& model,
                                  Interner& interner,
                                  const Budget& budget) {
    RL_ASSERT(partition.result.verdict == Verdict::kNotLinearizable);
    Shrunk shrunk = shortest_failing_prefix(partition, model, interner, budget);
    FailureWindow window;
    window.key = partition.key;
    window.minimal = shrunk.minimal;
    window.end_pos = shrunk.end_pos;
    widen_start(partition, shrunk.failing, window);
    window.linearized_ids = shrunk.failing.best_linearization;
    window.state = model.describe(shrunk.failing.best_state, interner);
    return window;
}

}  // namespace raftlock::jepsen
