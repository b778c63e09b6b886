#pragma once

// Encodes one protobuf message as a length-prefixed frame (frame.h) in a single buffer, without
// serialising into a temporary string first: peer and client frames are on the hot path.

#include <string>

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace raftlock::net {

// Replaces `out` with header + serialized `message`. Precondition: the message is below 4 GiB.
void encode_message_frame(const google::protobuf::MessageLite& message, std::string& out);

}  // namespace raftlock::net
