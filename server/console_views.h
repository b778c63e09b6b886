#pragma once

// The web console's views of the replicated state (GET /api/locks, /api/lock, /api/nodes): JSON
// read from this node's state machine as of its applied index, every list capped (the cap, and
// how many more there are, in the answer) so that no request makes a big reply.

#include <cstddef>
#include <string>
#include <string_view>

#include "statemachine/state_machine.h"

namespace raftlock::server {

inline constexpr size_t kConsoleListMax = 500;        // locks, sessions or children per answer
inline constexpr size_t kConsoleQueueMax = 100;       // holders or waiters shown per lock
inline constexpr size_t kConsoleDataBytesMax = 1024;  // of a node's data

// {"total":N,"more":M,"cluster_ms":..,"locks":[lock...]} for the locks whose names start with
// `prefix`, at most `limit_max` (<= kConsoleListMax); each lock as console_lock_json gives it.
// `now_ms`: cluster time now (Replica::console_cluster_now_ms), for how long holds were held.
std::string console_locks_json(const statemachine::StateMachine& sm,
                               std::string_view prefix,
                               size_t limit_max,
                               int64_t now_ms);
// One lock: {"name","kind","permits","holders":[{"session","owner","token","since_cluster_ms",
// "held_for_ms","count"}],"waiters":[{"position","session","owner","mode","waited_ms",
// "deadline_in_ms"}],"lock_delay_ms","delay_left_ms"}; {"error":...} and found = false when
// there is no such lock.
std::string console_lock_json(const statemachine::StateMachine& sm,
                              std::string_view name,
                              int64_t now_ms,
                              bool& found);
// A node of the tree and its children's names: {"path","stat":{...},"kind","data" (text, or
// "data_hidden" saying why), "children":[...],"more":M}; found = false: {"error":...}.
std::string console_node_json(const statemachine::StateMachine& sm,
                              std::string_view path,
                              size_t limit_max,
                              bool& found);

}  // namespace raftlock::server
