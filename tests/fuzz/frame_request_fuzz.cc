// libFuzzer: bytes from a client's socket -> FrameDecoder -> decode_request, exactly the path of
// the client port (net/client_listener.cc). The first input byte picks how the stream is split into
// reads, since a socket may deliver any split.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/assert.h"
#include "net/client_codec.h"
#include "net/frame.h"

namespace {

constexpr uint32_t kFrameBytesMax = 64 * 1024;  // small, so the bound is reachable

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using raftlock::net::FrameDecoder;
    if (size == 0) {
        return 0;
    }
    const size_t chunk_bytes = data[0] % 64 + 1;
    const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
    FrameDecoder decoder(kFrameBytesMax);
    size_t framed_bytes = 0;  // header + payload of every frame returned so far
    for (size_t at = 0; at < stream.size(); at += chunk_bytes) {
        decoder.feed(stream.substr(at, chunk_bytes));
        std::string_view payload;
        for (;;) {
            const FrameDecoder::State state = decoder.next(payload);
            if (state == FrameDecoder::State::kNeedMore) {
                break;
            }
            if (state == FrameDecoder::State::kTooLarge) {
                RL_ASSERT(decoder.rejected_length() > kFrameBytesMax);
                return 0;
            }
            RL_ASSERT(payload.size() <= kFrameBytesMax);
            // The payload is exactly the bytes after its header in the stream.
            RL_ASSERT(stream.substr(framed_bytes + 4, payload.size()) == payload);
            framed_bytes += 4 + payload.size();
            auto request = raftlock::net::decode_request(payload);
            if (request.ok()) {
                RL_ASSERT(request->body_case() != raftlock::proto::Request::BODY_NOT_SET);
                // What we accept we can re-encode, and it decodes to the same request.
                auto again = raftlock::net::decode_request(request->SerializeAsString());
                RL_ASSERT(again.ok());
                RL_ASSERT(again->SerializeAsString() == request->SerializeAsString());
            } else {
                RL_ASSERT(!request.error().empty());
            }
        }
    }
    RL_ASSERT(framed_bytes + decoder.buffered_bytes() == stream.size());
    return 0;
}
