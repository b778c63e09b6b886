// libFuzzer: bytes from a ZooKeeper client -> the jute decoders, as the ZooKeeper listener uses
// them. The first input byte picks the decoder: a ConnectRequest (the first message of a
// connection) or a request (every later one); the rest is the message's payload.
//
// Invariants: decoding never reads past the payload or reserves more than it holds (ASan sees
// both); a request that decodes re-encodes to bytes that decode again to the same encoding (the
// codec drops nothing it read); a refusal of a request names its reason, and a non-fatal one
// (an operation not served) only happens after a whole header.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/assert.h"
#include "net/zk_codec.h"

namespace zk = raftlock::net::zk;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::string_view payload(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] % 2 == 0) {
        auto connect = zk::decode_connect_request(payload);
        if (connect.ok()) {
            std::string again;
            zk::encode_connect_request(*connect, again);
            RL_ASSERT(again.size() <= payload.size() + 4);
            auto round = zk::decode_connect_request(std::string_view(again).substr(4));
            RL_ASSERT(round.ok());
            RL_ASSERT(round->session_id == connect->session_id);
            RL_ASSERT(round->password == connect->password);
        }
        return 0;
    }
    auto request = zk::decode_request(payload);
    if (!request.ok()) {
        RL_ASSERT(!request.error().message.empty());
        RL_ASSERT(request.error().fatal || payload.size() >= 8);
        return 0;
    }
    std::string encoded;
    zk::encode_request(*request, encoded);
    // Trailing bytes are ignored, and a null buffer or vector re-encodes no longer than it came.
    RL_ASSERT(encoded.size() <= payload.size() + 4);
    auto again = zk::decode_request(std::string_view(encoded).substr(4));
    RL_ASSERT(again.ok());
    std::string twice;
    zk::encode_request(*again, twice);
    RL_ASSERT(twice == encoded);
    return 0;
}
