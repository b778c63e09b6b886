#pragma once

// What every hostile test asks of a cluster under attack: does a normal client's write still
// answer in time, and which process is a node.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

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
// Writes through `nodes` in turn, at most one per period, each timed: what every hostile test
// asserts, that a normal client's write answers in time throughout the attack.
class WriteProbe {
public:
    WriteProbe(integration::ProcessCluster& c, std::vector<uint64_t> nodes, int period_ms);
    // Writes now (blocking, up to the deadline) when the period since the last write has passed.
    void poll();
    uint64_t writes() const { return next_id_ - 1; }
    size_t late() const { return late_; }
    int64_t slowest_ms() const { return slowest_ms_; }
    uint64_t next_request_id() { return next_id_++; }

private:
    integration::ProcessCluster& c_;
    std::vector<uint64_t> nodes_;
    std::chrono::milliseconds period_;
    std::chrono::steady_clock::time_point next_;
    uint64_t next_id_ = 1;
    size_t late_ = 0;
    int64_t slowest_ms_ = 0;
};

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
