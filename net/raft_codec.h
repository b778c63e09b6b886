#pragma once

// raft::Message <-> proto::RaftMessage. Decoding checks what the peer could have got wrong (an
// unknown message or entry type); the core's own well_formed() check drops the rest.

#include <string>

#include "proto/peer.pb.h"
#include "raft/result.h"
#include "raft/types.h"

namespace raftlock::net {

void to_proto(const raft::Message& message, proto::RaftMessage& out);
// An error names the bad field, e.g. "unknown message type 77".
Result<raft::Message, std::string> from_proto(const proto::RaftMessage& message);

}  // namespace raftlock::net
