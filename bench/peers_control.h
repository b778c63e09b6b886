#pragma once

// What lock.failover and session.keepalive need from bench/peers.sh, which started the system:
// which node leads, killing and restarting one node, and the servers' process ids.

#include <string>
#include <vector>

#include "bench/driver.h"

namespace raftlock::bench {

class PeersControl {
public:
    // `script`: the path of bench/peers.sh; `system`: its SYSTEM argument (e.g. redis-nofsync).
    PeersControl(std::string script, std::string system)
        : script_(std::move(script)), system_(std::move(system)) {}

    bool configured() const { return !script_.empty() && !system_.empty(); }
    // The node number (1..3) of the current leader; an error when none is known.
    Result<int, std::string> leader() const;
    // The same, asked once (no waiting through an election): an error when no node leads now.
    Result<int, std::string> leader_now() const;
    Status kill_node(int node) const;
    // Starts a killed node again and waits until it answers.
    Status start_node(int node) const;
    // Every server process of the system.
    Result<std::vector<int>, std::string> pids() const;

private:
    Result<int, std::string> leader_by(const std::string& command) const;
    // Runs `script ARG system [node]`, returns its standard output; an error on a non-zero exit.
    Result<Text, std::string> run(const std::string& command, int node) const;

    std::string script_;
    std::string system_;
};

}  // namespace raftlock::bench
