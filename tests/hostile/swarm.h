#pragma once

// Many connections to one port, as a hostile client holds them: opened without blocking (a full
// accept queue must not stall the test), kept open, and reopened as soon as the server closes
// one. Optionally each trickles bytes (a slowloris). From any loopback source address, so that a
// test can tell the attacker's address from a normal client's.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace raftlock::hostile {

class Swarm {
public:
    // The default source is not 127.0.0.1: reopening thousands of connections cycles through the
    // ephemeral ports, and one bound to 127.0.0.1 could take the port of a node that is down and
    // about to restart on it.
    Swarm(uint16_t port, size_t count, std::string source_ip = "127.0.0.2");
    ~Swarm();
    Swarm(const Swarm&) = delete;
    Swarm& operator=(const Swarm&) = delete;

    // Reopens every connection the server closed (or refused); returns how many it found closed.
    size_t tend();
    // Sends `bytes` on every established connection, without blocking.
    void drip(const std::string& bytes);
    // Reopens are counted here over the swarm's life.
    size_t reopened() const { return reopened_; }

private:
    int open_one();

    uint16_t port_;
    std::string source_ip_;
    std::vector<int> fds_;
    size_t reopened_ = 0;
};

// Raises this process's soft limit of open files to its hard limit (swarms need many).
void raise_fd_limit();

}  // namespace raftlock::hostile
