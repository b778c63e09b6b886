#pragma once

// CRC32C (Castagnoli polynomial), the checksum of every log record and snapshot chunk. Uses the
// SSE4.2 crc32 instruction when the CPU has it and a table otherwise; both give the same values.

#include <cstdint>
#include <string_view>

namespace raftlock {

// Extends `crc`, the checksum of some bytes, over `bytes` that follow them. Start with 0.
uint32_t crc32c_extend(uint32_t crc, std::string_view bytes);

// The table-driven version, always; the tests check that both versions agree.
uint32_t crc32c_extend_portable(uint32_t crc, std::string_view bytes);

inline uint32_t crc32c(std::string_view bytes) {
    return crc32c_extend(0, bytes);
}

}  // namespace raftlock
