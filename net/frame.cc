#include "net/frame.h"

#include "base/assert.h"
#include "net/big_endian.h"

namespace raftlock::net {

void append_frame(std::string& out, std::string_view payload) {
    RL_ASSERT(payload.size() <= UINT32_MAX);
    put_u32(static_cast<uint32_t>(payload.size()), out);
    out.append(payload);
}

void FrameDecoder::feed(std::string_view bytes) {
    if (too_large_) {
        return;  // the stream is dead; do not buffer what follows
    }
    // Drop the returned prefix before growing, so a long-lived stream does not keep it.
    if (consumed_ > 0) {
        buffer_.erase(0, consumed_);
        consumed_ = 0;
    }
    buffer_.append(bytes);
}

FrameDecoder::State FrameDecoder::next(std::string_view& payload) {
    if (too_large_) {
        return State::kTooLarge;
    }
    const size_t available = buffer_.size() - consumed_;
    if (available < kFrameHeaderBytes) {
        return State::kNeedMore;
    }
    const uint32_t length = load_u32(buffer_, consumed_);
    if (length > frame_bytes_max_) {
        too_large_ = true;
        rejected_length_ = length;
        buffer_.clear();
        consumed_ = 0;
        return State::kTooLarge;
    }
    if (available - kFrameHeaderBytes < length) {
        return State::kNeedMore;
    }
    payload = std::string_view(buffer_).substr(consumed_ + kFrameHeaderBytes, length);
    consumed_ += kFrameHeaderBytes + length;
    return State::kFrame;
}

}  // namespace raftlock::net
