#pragma once

// The simulator's broken peer (issue 16): messages out of range for the node that receives them,
// each breaking one of the core's peer-input checks (raft/peer_input.h). The nemesis delivers
// them straight to a running node; the core must drop every one with the expected verdict and no
// change of state, and the run's invariants must hold as if they were never sent.

#include <string>

#include "base/rng.h"
#include "raft/peer_input.h"
#include "raft/raft.h"

namespace raftlock::sim {

struct HostileMessage {
    raft::Message message;
    raft::MessageFault expected = raft::MessageFault::kNone;  // the check it must fail
};

// One out-of-range message for `target` (running), claiming to come from `from` (another node,
// as an authenticated but broken peer would). Which check it breaks is drawn from `rng`, among
// those that apply to the target's current state (a leader also gets acknowledgements and read
// confirmations beyond what it sent).
HostileMessage make_hostile_message(Rng& rng,
                                    const raft::Raft& target,
                                    raft::NodeId from,
                                    const raft::PeerInputLimits& limits);

// A one-line summary (the message's text form is huge for a too-many-entries message).
std::string describe(const HostileMessage& hostile);

}  // namespace raftlock::sim
