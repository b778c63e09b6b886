#pragma once

#include <string>
#include <vector>

#include "jepsen/checker/checker.h"

namespace raftlock::jepsen {

// At most this many operations are drawn; a window larger than that is cut at its end.
inline constexpr size_t kTimelineOpsMax = 2000;

// One history's failing window as an HTML fragment: one lane per process, each operation a bar
// from its call to its return (unknown outcomes fade out to the right edge). The operation that
// cannot be linearized is red, the others left unplaced are orange, placed ones carry their
// position in the deepest partial linearization. Hovering a bar shows the record.
std::string render_timeline(const History& history,
                            const std::vector<Operation>& ops,
                            const CheckResult& result);

// A complete, self-contained page (inline CSS, no scripts, no external files) around fragments.
std::string html_page(const std::vector<std::string>& fragments);

}  // namespace raftlock::jepsen
