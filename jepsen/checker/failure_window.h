#pragma once

#include <string>
#include <vector>

#include "jepsen/checker/checker.h"

namespace raftlock::jepsen {

// The operations of one key (or of the whole history when the model is not partitioned).
struct Partition {
    std::string key;
    std::vector<const Operation*> ops;  // all of them, in call order, for reports
    std::vector<SearchOp> search;       // those the model keeps
    SearchResult result;
};

// Shrinks a non-linearizable partition to its shortest failing prefix by binary search over the
// return events (a prefix only loses constraints, so failure is monotone in its length; pending
// operations at the cut become `info`). The window then starts at the earliest call among the
// operations the deepest partial linearization of that prefix could not place, and at the last
// few operations it did place (they made the state the failing operation contradicts). The end is
// minimal; the start is a heuristic for people, not a proof.
FailureWindow find_failure_window(const Partition& partition,
                                  const Model& model,
                                  Interner& interner,
                                  const Budget& budget);

}  // namespace raftlock::jepsen
