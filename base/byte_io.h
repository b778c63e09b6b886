#pragma once

// Little helpers for the hand-written binary formats (commands, snapshots, configuration
// entries). The Reader never reads
// past its input: any short or malformed field sets a sticky failure flag and yields zero values,
// so decoders check `ok()` once at the end instead of after every field.

#include <cstdint>
#include <string>
#include <string_view>

namespace raftlock {

class Writer {
public:
    explicit Writer(std::string* out) : out_(out) {}

    void u8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
    // LEB128: small numbers (most ids, versions, lengths) take one or two bytes.
    void varint(uint64_t v);
    // Zig-zag, so that -1 (ZooKeeper's "any version") stays one byte.
    void svarint(int64_t v) {
        varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
    }
    void fixed32(uint32_t v);
    void fixed64(uint64_t v);
    void bytes(std::string_view v) {
        varint(v.size());
        out_->append(v);
    }

private:
    std::string* out_;
};

class Reader {
public:
    explicit Reader(std::string_view in) : in_(in) {}

    bool ok() const { return ok_; }
    bool at_end() const { return pos_ == in_.size(); }
    size_t remaining() const { return in_.size() - pos_; }
    void fail() { ok_ = false; }

    uint8_t u8();
    uint64_t varint();
    int64_t svarint() {
        uint64_t v = varint();
        return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
    }
    // A varint that must lie in [lo, hi]; otherwise the reader fails.
    uint64_t varint_in(uint64_t lo, uint64_t hi);
    int64_t svarint_in(int64_t lo, int64_t hi);
    uint32_t fixed32();
    uint64_t fixed64();
    // A length-prefixed string of at most `max_bytes`.
    std::string bytes(size_t max_bytes);
    bool boolean() { return varint_in(0, 1) == 1; }

private:
    std::string_view in_;
    size_t pos_ = 0;
    bool ok_ = true;
};

}  // namespace raftlock
