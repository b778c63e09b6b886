#pragma once

// The client protocol (proto/client.proto) <-> the state machine's commands and replies. Pure, so
// the fuzzer and the unit tests can feed it anything a client may send.

#include <optional>
#include <string>

#include "base/result.h"
#include "proto/client.pb.h"
#include "statemachine/command.h"
#include "statemachine/output.h"
#include "statemachine/state_machine.h"

namespace raftlock::server {

// How the server handles a request body.
enum class RequestKind : uint8_t {
    kWrite,         // a command for the log
    kRead,          // served after a ReadIndex round (get, exists, children, describe, list...)
    kKeepAlive,     // session liveness (leader in memory, confirmed by ReadIndex)
    kLocal,         // answered by this node at once (persistent watches, node status)
    kMembership,    // a configuration change (leader only), a leadership transfer
    kAuthenticate,  // a step of this connection's login (SCRAM), answered at once
    kInvalid,       // no body: BAD_REQUEST
};
RequestKind kind_of(const proto::Request& request);

// A write request as a Command with time_ms = 0 (the leader stamps it). Session writes carry the
// request's (session_id, seq, ack_seq, fence); the session-less ops (statemachine::carries_nonce:
// OpenSession, ForceRelease, the user, role and auth changes) get seq = `open_nonce`. Not for
// attach_session (its first seq is the server's choice: Replica::submit_attach). An error says
// which field is wrong, in words for the client ("acquire: wait_ms -5 is out of range").
Result<statemachine::Command, std::string> to_command(const proto::Request& request,
                                                      uint64_t open_nonce);

// What is wrong with an attach_session request's fields, in words for the client; nullopt when
// nothing is.
std::optional<std::string> attach_request_error(const proto::Request& request);

// The ids a request's Caller names (validity is validate_command's), and an ACL the other way.
statemachine::Caller to_caller(const proto::Caller& caller);
void to_proto(const statemachine::Acl& acl,
              google::protobuf::RepeatedPtrField<proto::AclEntry>& out);

proto::Code to_proto(statemachine::ErrorCode code);
void to_proto(const statemachine::Stat& stat, proto::Stat& out);
void to_proto(const statemachine::LockInfo& info, proto::LockInfo& out);
void to_proto(const statemachine::SessionInfo& info, proto::SessionInfo& out);
void to_proto(const statemachine::Permission& permission, proto::Permission& out);

// Fills `out` (code and result) with the reply to `command` that the state machine gave.
void fill_write_response(const statemachine::Command& command,
                         const statemachine::Response& response,
                         proto::Response& out);

// The human-readable message for a code, e.g. "session 17 has expired or was closed".
std::string describe(proto::Code code);

}  // namespace raftlock::server
