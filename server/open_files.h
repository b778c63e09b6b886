#pragma once

// How many client connections a node can hold without running out of file descriptors: the
// open-file limit (raised to its hard limit at start, as Redis does) minus a reserve for what must
// never fail for lack of one: the store (RocksDB's table cache and its logs), the peers, the admin
// port and the process's own files. Client connections over the result are refused at accept,
// with the protocol's error, instead of the store failing (issue 16, row 3).

#include <cstddef>
#include <string>

#include "base/result.h"

namespace raftlock::server {

// Descriptors kept back from client connections: RocksDB's max_open_files (256) plus its WAL,
// manifest, lock and info log, the incoming and outgoing peer connections, the admin port's
// connections, and the rest (epoll, timers, stdout, snapshot files being sent or received).
inline constexpr size_t kReservedFileDescriptors = 256 + 64 + 64 + 16 + 256 + 64;
// Below this many client connections the node is not worth starting.
inline constexpr size_t kClientConnectionsMin = 16;

struct ConnectionLimit {
    size_t open_files = 0;  // the soft RLIMIT_NOFILE after raising it
    size_t client_connections_max = 0;
    bool lowered = false;  // --max-connections was above what the descriptors allow
};

// Raises the soft open-file limit to the hard one and returns the client connections the node
// may hold: min(connections_max, open files - reserve). An error when that leaves fewer than
// kClientConnectionsMin.
Result<ConnectionLimit, std::string> client_connection_limit(size_t connections_max);

}  // namespace raftlock::server
