#include "base/byte_io.h"

namespace raftlock {

namespace {

// A varint of a uint64_t takes at most 10 bytes; the loop stops there even on hostile input.
constexpr int kVarintBytesMax = 10;

}  // namespace

void Writer::varint(uint64_t v) {
    while (v >= 0x80) {
        out_->push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out_->push_back(static_cast<char>(v));
}

void Writer::fixed32(uint32_t v) {
    for (int i = 0; i < 4; i++) {
        out_->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    }
}

void Writer::fixed64(uint64_t v) {
    for (int i = 0; i < 8; i++) {
        out_->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    }
}

uint8_t Reader::u8() {
    if (!ok_ || pos_ >= in_.size()) {
        ok_ = false;
        return 0;
    }
    return static_cast<uint8_t>(in_[pos_++]);
}

uint64_t Reader::varint() {
    uint64_t v = 0;
    for (int i = 0; i < kVarintBytesMax; i++) {
        uint8_t b = u8();
        if (!ok_) {
            return 0;
        }
        // The tenth byte may only carry the top bit of a uint64_t.
        if (i == kVarintBytesMax - 1 && b > 1) {
            ok_ = false;
            return 0;
        }
        v |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
        if ((b & 0x80) == 0) {
            // Canonical form only: an overlong encoding (a final zero byte) would give one value
            // two encodings.
            if (i > 0 && b == 0) {
                ok_ = false;
                return 0;
            }
            return v;
        }
    }
    ok_ = false;
    return 0;
}

uint64_t Reader::varint_in(uint64_t lo, uint64_t hi) {
    uint64_t v = varint();
    if (v < lo || v > hi) {
        ok_ = false;
        return lo;
    }
    return v;
}

int64_t Reader::svarint_in(int64_t lo, int64_t hi) {
    int64_t v = svarint();
    if (v < lo || v > hi) {
        ok_ = false;
        return lo;
    }
    return v;
}

uint32_t Reader::fixed32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        v |= static_cast<uint32_t>(u8()) << (8 * i);
    }
    return ok_ ? v : 0;
}

uint64_t Reader::fixed64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v |= static_cast<uint64_t>(u8()) << (8 * i);
    }
    return ok_ ? v : 0;
}

std::string Reader::bytes(size_t max_bytes) {
    uint64_t n = varint();
    if (!ok_ || n > max_bytes || n > remaining()) {
        ok_ = false;
        return {};
    }
    std::string v(in_.substr(pos_, n));
    pos_ += n;
    return v;
}

}  // namespace raftlock
