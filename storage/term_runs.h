#pragma once

// The term of every index of the log, held in memory as runs of equal terms. The core asks for
// terms constantly (matching appends, votes, commit rules); terms change rarely, so a handful of
// runs answer every term() without touching the disk.
//
// Covers [start, last]: `start` is the entry just before the first readable one (LogStart).

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "raft/types.h"

namespace raftlock::storage {

class TermRuns {
public:
    // The log holds only its start (no readable entries).
    void reset(raft::Index start_index, raft::Term start_term);
    // Precondition: index == last() + 1 and term >= the term of last().
    void append(raft::Index index, raft::Term term);
    // Forgets indexes above `index`. Precondition: start() <= index <= last().
    void truncate_after(raft::Index index);
    // Makes `index` the new start. Precondition: start() <= index <= last().
    void compact_to(raft::Index index);

    // nullopt outside [start(), last()].
    std::optional<raft::Term> term(raft::Index index) const;
    // Each run's first index and term, oldest first (the first run starts at start()).
    std::vector<std::pair<raft::Index, raft::Term>> runs() const;
    raft::Index start() const { return runs_.front().first_index; }
    raft::Index last() const { return last_; }
    size_t run_count() const { return runs_.size(); }

private:
    struct Run {
        raft::Index first_index;
        raft::Term term;
    };
    // Sorted by first_index, terms strictly increasing; never empty.
    std::vector<Run> runs_{Run{0, 0}};
    raft::Index last_ = 0;
};

}  // namespace raftlock::storage
