#pragma once

// raft::Message <-> proto::RaftMessage. Decoding checks what the peer could have got wrong in the
// encoding (an unknown message or entry type) and, before copying anything element by element, the
// counts that would multiply memory (entries, members); the core's check_message
// (raft/peer_input.h) checks the rest before the message changes any state.

#include <string>

#include "base/result.h"
#include "proto/peer.pb.h"
#include "raft/peer_input.h"
#include "raft/types.h"

namespace raftlock::net {

struct DecodeError {
    raft::MessageFault fault = raft::MessageFault::kMalformed;
    std::string reason;  // names the bad field, e.g. "unknown message type 77"
};

void to_proto(const raft::Message& message, proto::RaftMessage& out);
Result<raft::Message, DecodeError> decode_raft_message(const proto::RaftMessage& message,
                                                       const raft::PeerInputLimits& limits);
// decode_raft_message with the default limits, the error as text (tests, fuzzers).
Result<raft::Message, std::string> from_proto(const proto::RaftMessage& message);

}  // namespace raftlock::net
