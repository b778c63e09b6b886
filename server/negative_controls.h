#pragma once

// The server's negative controls (STYLE.md rule 7): switches that break the server on purpose, so
// the jepsen harness can show that it notices. They exist only in raftlockd-unsafe, whose
// server_unsafe library is compiled with RAFTLOCK_SERVER_NEGATIVE_CONTROLS; raftlockd has none of
// this code.

#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS

namespace raftlock::server::negative_controls {

// RAFTLOCK_UNSAFE_LOCAL_READS=1 in the environment: serve every read from this node's applied
// state at once, without a ReadIndex round, so a lagging follower or a deposed leader answers with
// stale data (what Raft thesis §6.4 exists to prevent).
bool local_reads();

}  // namespace raftlock::server::negative_controls

#endif
