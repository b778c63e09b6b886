#include "base/crc32c.h"

#include <array>
#include <cstring>

namespace raftlock {
namespace {

// The reflected Castagnoli polynomial.
constexpr uint32_t kPolynomial = 0x82f63b78;

constexpr std::array<uint32_t, 256> make_table() {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int bit = 0; bit < 8; bit++) {
            c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
        }
        table[i] = c;
    }
    return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

uint32_t extend_portable(uint32_t state, const unsigned char* p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        state = kTable[(state ^ p[i]) & 0xff] ^ (state >> 8);
    }
    return state;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t extend_sse42(uint32_t state,
                                                        const unsigned char* p,
                                                        size_t n) {
    uint64_t state64 = state;
    while (n >= 8) {
        uint64_t word;
        std::memcpy(&word, p, 8);
        state64 = __builtin_ia32_crc32di(state64, word);
        p += 8;
        n -= 8;
    }
    auto state32 = static_cast<uint32_t>(state64);
    while (n > 0) {
        state32 = __builtin_ia32_crc32qi(state32, *p);
        p++;
        n--;
    }
    return state32;
}

bool cpu_has_sse42() {
    static const bool has = __builtin_cpu_supports("sse4.2");
    return has;
}
#endif

}  // namespace

uint32_t crc32c_extend(uint32_t crc, std::string_view bytes) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const uint32_t state = ~crc;
#if defined(__x86_64__)
    if (cpu_has_sse42()) {
        return ~extend_sse42(state, p, bytes.size());
    }
#endif
    return ~extend_portable(state, p, bytes.size());
}

uint32_t crc32c_extend_portable(uint32_t crc, std::string_view bytes) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    return ~extend_portable(~crc, p, bytes.size());
}

}  // namespace raftlock
