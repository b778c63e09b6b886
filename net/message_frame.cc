#include "net/message_frame.h"

#include <google/protobuf/message_lite.h>

#include "base/assert.h"
#include "net/frame.h"

namespace raftlock::net {

void encode_message_frame(const google::protobuf::MessageLite& message, std::string& out) {
    const size_t n = message.ByteSizeLong();
    RL_ASSERT(n <= UINT32_MAX);
    out.resize(kFrameHeaderBytes + n);
    auto* p = reinterpret_cast<uint8_t*>(out.data());
    p[0] = static_cast<uint8_t>(n >> 24);
    p[1] = static_cast<uint8_t>(n >> 16);
    p[2] = static_cast<uint8_t>(n >> 8);
    p[3] = static_cast<uint8_t>(n);
    // ByteSizeLong cached the sizes, so the serialisation below fills exactly n bytes.
    uint8_t* end = message.SerializeWithCachedSizesToArray(p + kFrameHeaderBytes);
    RL_ASSERT(end == p + out.size());
}

}  // namespace raftlock::net
