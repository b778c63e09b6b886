#include "storage/term_runs.h"

#include <algorithm>

#include "base/assert.h"

namespace raftlock::storage {

void TermRuns::reset(raft::Index start_index, raft::Term start_term) {
    runs_.assign(1, Run{start_index, start_term});
    last_ = start_index;
}

void TermRuns::append(raft::Index index, raft::Term term) {
    RL_ASSERT(index == last_ + 1);
    RL_ASSERT(term >= runs_.back().term);
    if (term > runs_.back().term) {
        runs_.push_back(Run{index, term});
    }
    last_ = index;
}

void TermRuns::truncate_after(raft::Index index) {
    RL_ASSERT(index >= start());
    RL_ASSERT(index <= last_);
    while (runs_.back().first_index > index) {
        runs_.pop_back();
    }
    last_ = index;
}

void TermRuns::compact_to(raft::Index index) {
    RL_ASSERT(index >= start());
    RL_ASSERT(index <= last_);
    const raft::Term start_term = *term(index);
    // The run holding `index` survives, re-based at `index`; runs before it go.
    auto holder =
        std::upper_bound(runs_.begin(), runs_.end(), index,
                         [](raft::Index i, const Run& run) { return i < run.first_index; }) -
        1;
    runs_.erase(runs_.begin(), holder);
    runs_.front() = Run{index, start_term};
}

std::vector<std::pair<raft::Index, raft::Term>> TermRuns::runs() const {
    std::vector<std::pair<raft::Index, raft::Term>> out;
    out.reserve(runs_.size());
    for (const Run& run : runs_) {
        out.emplace_back(run.first_index, run.term);
    }
    return out;
}

std::optional<raft::Term> TermRuns::term(raft::Index index) const {
    if (index < start() || index > last_) {
        return std::nullopt;
    }
    auto after =
        std::upper_bound(runs_.begin(), runs_.end(), index,
                         [](raft::Index i, const Run& run) { return i < run.first_index; });
    return (after - 1)->term;
}

}  // namespace raftlock::storage
