#pragma once

// What every hostile test asks of a cluster under attack: does a normal client's write still
// answer in time, and which process is a node.

#include <cstdint>
#include <string>

#include <sys/types.h>

#include "tests/integration/process_cluster.h"
#include "tests/integration/raw_client.h"

namespace raftlock::hostile {

// A second in the plain build; the sanitizer build is slower (see CMakeLists.txt).
inline constexpr int kAnswerDeadlineMs = 1000 * RAFTLOCK_HOSTILE_SLOWDOWN;

// Opens a session (a committed entry) on `conn`: true when it answers OK within the deadline.
bool session_opens(integration::RawConnection& conn, uint64_t request_id);
// The same through a new connection to `node`'s client port.
bool write_answers(integration::ProcessCluster& c, uint64_t node, uint64_t request_id);
// The Raft term `node` reports on its admin port; 0 when it does not answer.
uint64_t term_of(integration::ProcessCluster& c, uint64_t node);
// The term once the cluster has settled after its start: a write through `leader` commits, and
// every node reports the leader's term (an election still running at the start would otherwise be
// blamed on the attack). 0 when it does not settle within a few seconds.
uint64_t settled_term(integration::ProcessCluster& c, uint64_t leader);
// The value of one series (name and labels) on `node`'s /metrics; -1 when it is missing.
int64_t metric(integration::ProcessCluster& c, uint64_t node, const std::string& series);
// The pid of `node`'s raftlockd (found by its client port on its command line), or -1.
pid_t node_pid(const integration::ProcessCluster& c, uint64_t node);

}  // namespace raftlock::hostile
