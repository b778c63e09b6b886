#pragma once

// The pure step of the client port between a frame's payload and a proto::Request, kept apart from
// the sockets so the fuzzer (tests/fuzz/frame_request_fuzz.cc) calls exactly what the server runs.

#include <string>
#include <string_view>

#include "base/result.h"
#include "proto/client.pb.h"

namespace raftlock::net {

// Parses one frame payload. Errors are sentences for the client ("the frame is not a Request",
// "the request has no body"): the listener sends them back in a BAD_REQUEST response.
Result<proto::Request, std::string> decode_request(std::string_view payload);

}  // namespace raftlock::net
