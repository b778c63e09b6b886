#pragma once

// Length-prefixed frames, the unit of every raftlock TCP stream (peer and client protocols):
//
//   u32 payload length, big-endian | payload (one serialized protobuf message)
//
// The decoder is pure (no sockets) so the fuzzer and the unit tests drive it with arbitrary bytes.
// A length above the stream's bound is a protocol error: the decoder stops and the connection is
// closed after an error reply, before the payload is buffered.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace raftlock::net {

inline constexpr size_t kFrameHeaderBytes = 4;

// Appends the header and `payload` to `out`. Precondition: payload fits in 32 bits.
void append_frame(std::string& out, std::string_view payload);

class FrameDecoder {
public:
    enum class State : uint8_t {
        kNeedMore,  // no whole frame buffered
        kFrame,     // next() returned a frame
        kTooLarge,  // the next frame's length exceeds frame_bytes_max (sticky)
    };

    explicit FrameDecoder(uint32_t frame_bytes_max) : frame_bytes_max_(frame_bytes_max) {}

    // Adds bytes received from the stream.
    void feed(std::string_view bytes);
    // The next whole frame's payload in `payload` (valid until the next feed() or next()).
    State next(std::string_view& payload);

    // Bytes buffered and not yet returned as frames.
    size_t buffered_bytes() const { return buffer_.size() - consumed_; }
    // The declared length of the frame that was too large (kTooLarge).
    uint32_t rejected_length() const { return rejected_length_; }
    uint32_t frame_bytes_max() const { return frame_bytes_max_; }

private:
    uint32_t frame_bytes_max_;
    std::string buffer_;
    size_t consumed_ = 0;  // bytes of buffer_ already returned
    bool too_large_ = false;
    uint32_t rejected_length_ = 0;
};

}  // namespace raftlock::net
