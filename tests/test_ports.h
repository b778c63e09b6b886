#pragma once

// Ports for the servers a test starts (raftlockd nodes, stand-in peers).
//
// Binding port 0 and releasing it is not enough: the kernel picks such a port at random, so the
// fifteen ports of a three-node cluster held a duplicate about once in 110 clusters, and a node
// that cannot bind its port exits (CI saw "no leader within 15 s" for exactly that). These ports
// instead come from a range below Linux's default ephemeral range (32768-60999, so no client
// connection is handed one between choosing and binding), in blocks that one test process claims
// with flock(2) for its lifetime, so concurrent test processes never share one; and a process never
// gets the same port twice.

#include <cstdint>

namespace raftlock::test_ports {

// First port and one past the last. Below them: scripts/cluster.sh's default ports (7000+) and the
// fixed bases of the shell-driven tests (tests/integration/CMakeLists.txt and tests/packaging,
// 10400-23903).
inline constexpr uint16_t kFirst = 24000;
inline constexpr uint16_t kEnd = 32768;
inline constexpr uint16_t kBlockSize = 64;

// A port in [kFirst, kEnd) that nothing was bound to when chosen and that no other call, in this
// process or in any other using this function, has returned. Throws std::runtime_error when every
// block is taken.
uint16_t unused_port();

}  // namespace raftlock::test_ports
