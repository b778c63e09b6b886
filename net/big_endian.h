#pragma once

// Big-endian ("network order") integers in byte strings: the framing of every raftlock stream
// (net/frame.h), and the PostgreSQL and ZooKeeper protocols. Loads check their bounds with an
// assertion: callers check lengths from the wire first and refuse what is short.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/assert.h"

namespace raftlock::net {

inline uint16_t load_u16(std::string_view s, size_t at) {
    RL_ASSERT(at + 2 <= s.size());
    return static_cast<uint16_t>(static_cast<uint8_t>(s[at]) << 8 |
                                 static_cast<uint8_t>(s[at + 1]));
}

inline uint32_t load_u32(std::string_view s, size_t at) {
    RL_ASSERT(at + 4 <= s.size());
    return static_cast<uint32_t>(load_u16(s, at)) << 16 | load_u16(s, at + 2);
}

inline uint64_t load_u64(std::string_view s, size_t at) {
    RL_ASSERT(at + 8 <= s.size());
    return static_cast<uint64_t>(load_u32(s, at)) << 32 | load_u32(s, at + 4);
}

inline void put_u16(uint16_t v, std::string& out) {
    out.push_back(static_cast<char>(v >> 8));
    out.push_back(static_cast<char>(v & 0xff));
}

inline void put_u32(uint32_t v, std::string& out) {
    put_u16(static_cast<uint16_t>(v >> 16), out);
    put_u16(static_cast<uint16_t>(v & 0xffff), out);
}

inline void put_u64(uint64_t v, std::string& out) {
    put_u32(static_cast<uint32_t>(v >> 32), out);
    put_u32(static_cast<uint32_t>(v & 0xffffffff), out);
}

}  // namespace raftlock::net
