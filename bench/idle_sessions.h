#pragma once

// The per-system idle session pools behind Driver::open_idle (session.keepalive). Each opens
// `count` sessions of `timeout` and keeps them alive from a few threads of its own, not from one
// client object per session, so the load generator stays small next to what it measures.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bench/driver.h"

namespace raftlock::bench {

// Over kConnections plain client-protocol connections (bench/idle_raftlock.cc).
Result<std::unique_ptr<IdleSessions>, std::string> open_raftlock_idle(
    const std::vector<HostPort>& nodes, size_t count, std::chrono::milliseconds timeout);

// Leases granted and refreshed through the JSON gateway (bench/idle_etcd.cc).
Result<std::unique_ptr<IdleSessions>, std::string> open_etcd_idle(
    const std::vector<HostPort>& members, size_t count, std::chrono::milliseconds timeout);

// `count` sessions spread over child processes of this program (raftlock-bench --idle-hold),
// `per_child` each at most, for a client that needs more descriptors per session than one
// process may have (ZooKeeper's C client: three per handle, against a limit of 20,000 here).
// `system` and `endpoints` are the child's --system and --endpoints.
Result<std::unique_ptr<IdleSessions>, std::string> open_idle_in_children(
    const std::string& system,
    const std::string& endpoints,
    size_t count,
    size_t per_child,
    std::chrono::milliseconds timeout);

// raftlock-bench --idle-hold N: the child side. Opens N idle sessions with the driver, writes
// "opened", then "errors COUNT FIRST" every second, and closes them when its stdin ends.
int run_idle_hold(Driver& driver, size_t count, std::chrono::milliseconds timeout);

}  // namespace raftlock::bench
