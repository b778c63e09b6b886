#pragma once

// The client connections one node admits, over all its client ports together (native, Redis,
// PostgreSQL): at most `total_max` (raftlockd sets it below the open-file limit, keeping a reserve
// for the store, the peers and the admin port: the store must never fail for lack of a file
// descriptor), and at most `per_address_max` from one remote IP address, so that one host cannot
// take every slot. Threads: the io_context's (every port of a node shares one).

#include <cstddef>
#include <map>
#include <string>

namespace raftlock::net {

class ConnectionBudget {
public:
    ConnectionBudget(size_t total_max, size_t per_address_max);

    // Takes a slot for a connection from `address` (an IP address, no port); empty when admitted,
    // else why not ("this node's 1338 client connections", "1024 connections from 10.0.0.7").
    std::string admit(const std::string& address);
    // Gives back a slot admit() took.
    void release(const std::string& address);

    size_t total() const { return total_; }
    size_t total_max() const { return total_max_; }
    size_t per_address_max() const { return per_address_max_; }
    uint64_t refused() const { return refused_; }

private:
    size_t total_max_;
    size_t per_address_max_;
    size_t total_ = 0;
    uint64_t refused_ = 0;
    std::map<std::string, size_t> per_address_;  // only addresses with a connection
};

}  // namespace raftlock::net
