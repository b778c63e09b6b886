#pragma once

// Translation between the wire messages (proto/client.proto) and the client's value types.
// Internal to the library.

#include "client/types.h"
#include "proto/client.pb.h"

namespace raftlock::client {

proto::NodeKind to_proto(NodeKind kind);
NodeKind from_proto(proto::NodeKind kind);
proto::LockMode to_proto(LockMode mode);
LockMode from_proto(proto::LockMode mode);
EventType from_proto(proto::EventType type);

Stat from_proto(const proto::Stat& stat);
LockInfo from_proto(const proto::LockInfo& info);
SessionInfo from_proto(const proto::SessionInfo& info);
NodeStatus from_proto(const proto::NodeStatusResult& status);
std::vector<Member> from_proto(const proto::MembersResult& members);
WatchEvent from_proto(const proto::WatchEvent& event);

void fill_fence(const std::optional<Fence>& fence, proto::Request& request);
void fill_multi_op(const MultiOp& op, proto::MultiOp& out);

}  // namespace raftlock::client
