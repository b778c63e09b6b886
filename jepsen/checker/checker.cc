#include "jepsen/checker/checker.h"

#include <algorithm>
#include <map>
#include <thread>

#include "jepsen/checker/failure_window.h"

namespace raftlock::jepsen {

namespace {

using Clock = std::chrono::steady_clock;

// Compiles every operation; the first bad record (by line) wins, so the user fixes them in order.
Result<std::map<std::string, Partition>, InputError> build_partitions(
    const std::vector<Operation>& ops, const Model& model, Interner& interner) {
    std::map<std::string, Partition> partitions;  // ordered: reports are stable
    std::optional<InputError> first_bad;
    for (const Operation& op : ops) {
        Compiled c = model.compile(op, interner);
        if (c.action == Compiled::Action::kBad) {
            int64_t line = c.in_completion ? op.return_line : op.call_line;
            if (!first_bad || line < first_bad->line) {
                first_bad = InputError{line, op.f + ": " + c.error};
            }
            continue;
        }
        Partition& p = partitions[model.partition_by_key() ? op.key : std::string()];
        p.ops.push_back(&op);
        if (c.action == Compiled::Action::kKeep) {
            p.search.push_back(SearchOp{c.op, op.call_pos, op.return_pos, op.id});
        }
    }
    if (first_bad) {
        return *first_bad;
    }
    return partitions;
}

// P-compositionality: the history is linearizable iff every partition is, so partitions are
// searched independently, in parallel; the first failure cancels the others.
void search_all(std::vector<Partition*>& parts,
                const Model& model,
                const CheckOptions& options,
                Clock::time_point deadline) {
    unsigned threads = options.threads != 0
                           ? options.threads
                           : std::min(8u, std::max(1u, std::thread::hardware_concurrency()));
    threads = static_cast<unsigned>(std::min<size_t>(threads, parts.size()));
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    // The memory budget is per history: the searches running at once share it.
    Budget budget{deadline, options.memory_bytes_max / std::max(1u, threads), &failed};
    // Largest first, so that one long partition does not start last and run alone.
    std::vector<Partition*> order(parts);
    std::stable_sort(order.begin(), order.end(), [](const Partition* a, const Partition* b) {
        return a->search.size() > b->search.size();
    });
    auto worker = [&] {
        // Bounded: each iteration claims a distinct partition. After a failure the rest stay
        // unknown; the verdict is already decided.
        for (size_t i = next++; i < order.size() && !failed; i = next++) {
            order[i]->result = wgl_search(model, order[i]->search, budget);
            if (order[i]->result.verdict == Verdict::kNotLinearizable) {
                failed = true;
            }
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) {
        pool.emplace_back(worker);
    }
    worker();
    for (std::thread& t : pool) {
        t.join();
    }
}

Verdict combine(const std::vector<Partition*>& parts, std::string* unknown_reason) {
    Verdict verdict = Verdict::kLinearizable;
    for (const Partition* p : parts) {
        if (p->result.verdict == Verdict::kNotLinearizable) {
            return Verdict::kNotLinearizable;
        }
        if (p->result.verdict == Verdict::kUnknown) {
            verdict = Verdict::kUnknown;
        }
    }
    if (verdict == Verdict::kUnknown) {
        *unknown_reason = "the time or memory budget ran out before the search finished";
    }
    return verdict;
}

std::optional<InputError> first_bad_watch(const History& history) {
    for (const Event& e : history.events) {
        if (e.type == EventType::kWatch && (e.f != "watch" || !e.value.is_int_list(2))) {
            return InputError{e.line,
                              "a watch event needs f \"watch\" and value [zxid, prev_zxid]"};
        }
    }
    return std::nullopt;
}

std::vector<Finding> linear_checks(const History& history,
                                   const std::vector<Operation>& ops,
                                   const Model& model) {
    std::vector<Finding> findings = check_fencing_tokens(ops);
    std::vector<Finding> more = check_acknowledged_writes(ops, model.partition_by_key());
    findings.insert(findings.end(), more.begin(), more.end());
    more = check_watch_order(history);
    findings.insert(findings.end(), more.begin(), more.end());
    return findings;
}

}  // namespace

Result<CheckResult, InputError> check_history(const History& history,
                                              const std::vector<Operation>& ops,
                                              const Model& model,
                                              const CheckOptions& options) {
    Clock::time_point start = Clock::now();
    Interner interner;
    auto partitions = build_partitions(ops, model, interner);
    std::optional<InputError> bad_watch = first_bad_watch(history);
    if (!partitions.ok() && (!bad_watch || partitions.error().line < bad_watch->line)) {
        return partitions.error();
    }
    if (bad_watch) {
        return *bad_watch;
    }
    CheckResult result;
    result.findings = linear_checks(history, ops, model);
    std::vector<Partition*> parts;
    for (auto& [key, p] : partitions.value()) {
        p.key = key;
        parts.push_back(&p);
        result.ops_searched += p.search.size();
    }
    result.partitions = parts.size();
    search_all(parts, model, options, start + options.budget);
    result.search_verdict = combine(parts, &result.unknown_reason);
    if (result.search_verdict == Verdict::kNotLinearizable) {
        auto failed = std::find_if(parts.begin(), parts.end(), [](const Partition* p) {
            return p->result.verdict == Verdict::kNotLinearizable;
        });
        Budget window_budget{Clock::now() + options.budget, options.memory_bytes_max, nullptr};
        result.window = find_failure_window(**failed, model, interner, window_budget);
        result.window->keyed = model.partition_by_key();
    }
    result.verdict = result.findings.empty() ? result.search_verdict : Verdict::kNotLinearizable;
    result.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return result;
}

}  // namespace raftlock::jepsen
