#pragma once

#include <string>
#include <vector>

#include "jepsen/checker/history.h"

namespace raftlock::jepsen {

// Cheap checks that run alongside the search, in O(n log n). Each is a necessary condition of
// correctness, so a finding is a real violation; passing them proves nothing on its own.
struct Finding {
    std::string check;  // "fencing-tokens", "acknowledged-write", "watch-order"
    std::string message;
    std::vector<int64_t> lines;  // the records involved
};

// Only the first findings of each check are kept; one is enough to fail a run.
inline constexpr size_t kFindingsPerCheckMax = 10;

// Fencing tokens (ok `acquire`s, any key) never go backwards: if one acquire returned before
// another was invoked, its token is smaller; and no two grants share a token (tokens are zxids).
std::vector<Finding> check_fencing_tokens(const std::vector<Operation>& ops);

// No acknowledged write is lost: a read invoked after a write (or successful cas) was acknowledged
// returns that value or the value of a write or cas that may have come after it. `per_key`: keys
// are separate registers (kv); otherwise the whole history is one register.
std::vector<Finding> check_acknowledged_writes(const std::vector<Operation>& ops, bool per_key);

// Watch events (records with type "event", f "watch", value [zxid, prev_zxid]) reach each process
// in zxid order per path, without duplicates, and without gaps: prev_zxid equals the zxid of the
// process's previous event on that path.
std::vector<Finding> check_watch_order(const History& history);

}  // namespace raftlock::jepsen
