#pragma once

// The server's negative controls (STYLE.md rule 7): switches that break the server on purpose, so
// the jepsen harness and the server simulator can show that they notice. They exist only in
// raftlockd-unsafe and the unsafe server simulator, whose server_unsafe library compiles the files
// with switch points again with RAFTLOCK_SERVER_NEGATIVE_CONTROLS; raftlockd has none of this
// code.

#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS

#include <cstdint>
#include <optional>
#include <string_view>

namespace raftlock::server::negative_controls {

enum class Control : uint8_t {
    // Serve every read (of the client, Redis and PostgreSQL ports) from this node's applied state,
    // without a ReadIndex round, so a lagging follower or a deposed leader answers with stale
    // data (what Raft thesis §6.4 exists to prevent).
    kLocalReads,
    // The core forwards a follower's proposals to the leader again (decision 0003 turned it
    // off): a deposed leader's session expiries reach the new leader, which commits them
    // (jepsen found two holders at once this way).
    kProposalForwarding,
    // The leader acknowledges a keepalive at once, without the ReadIndex round that proves it
    // is still the leader: a deposed leader extends a client's safe-until past the expiry the
    // real leader makes.
    kKeepAliveWithoutReadIndex,
    // The leader tells a follower that it proposed a forwarded write, and the follower answers
    // the client OK then, before the write is committed and applied: a leader lost before the
    // commit loses an acknowledged write.
    kForwardAnsweredEarly,
    // Confirmed ReadIndex rounds are served as soon as each one's index is applied, not in the
    // order they were asked: two reads a connection pipelines may then see states in reverse
    // order (a later GET an older value than an earlier one).
    kReadsOutOfOrder,
};

// Whether a switch is on: from the environment at first use (RAFTLOCK_UNSAFE_LOCAL_READS=1,
// RAFTLOCK_UNSAFE_PROPOSAL_FORWARDING=1, RAFTLOCK_UNSAFE_KEEPALIVE_WITHOUT_READ_INDEX=1,
// RAFTLOCK_UNSAFE_FORWARD_ANSWERED_EARLY=1, RAFTLOCK_UNSAFE_READS_OUT_OF_ORDER=1), or turned on
// in the process.
bool on(Control control);
void turn_on(Control control);
// "local-reads", "proposal-forwarding", "keepalive-without-read-index", "forward-answered-early",
// "reads-out-of-order".
std::optional<Control> parse(std::string_view name);

}  // namespace raftlock::server::negative_controls

#endif
