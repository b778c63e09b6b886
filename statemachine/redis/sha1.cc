#include "statemachine/redis/sha1.h"

#include <bit>
#include <cstddef>

namespace raftlock::statemachine::redis {

namespace {

constexpr size_t kBlockBytes = 64;

// The running hash of FIPS 180-4 §6.1: five 32-bit words, updated one 64-byte block at a time.
struct Sha1State {
    std::array<uint32_t, 5> h = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};

    void compress(const uint8_t* block) {
        std::array<uint32_t, 80> w;
        for (size_t t = 0; t < 16; t++) {
            w[t] = uint32_t{block[4 * t]} << 24 | uint32_t{block[4 * t + 1]} << 16 |
                   uint32_t{block[4 * t + 2]} << 8 | uint32_t{block[4 * t + 3]};
        }
        for (size_t t = 16; t < 80; t++) {
            w[t] = std::rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (size_t t = 0; t < 80; t++) {
            uint32_t f, k;
            if (t < 20) {
                f = (b & c) | (~b & d);
                k = 0x5A827999u;
            } else if (t < 40) {
                f = b ^ c ^ d;
                k = 0x6ED9EBA1u;
            } else if (t < 60) {
                f = (b & c) | (b & d) | (c & d);
                k = 0x8F1BBCDCu;
            } else {
                f = b ^ c ^ d;
                k = 0xCA62C1D6u;
            }
            const uint32_t temp = std::rotl(a, 5) + f + e + k + w[t];
            e = d;
            d = c;
            c = std::rotl(b, 30);
            b = a;
            a = temp;
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
    }
};

}  // namespace

Sha1Digest sha1(std::string_view data) {
    Sha1State state;
    const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
    size_t whole = data.size() - data.size() % kBlockBytes;
    for (size_t offset = 0; offset < whole; offset += kBlockBytes) {
        state.compress(bytes + offset);
    }

    // Padding (§5.1.1): a 1 bit, zeros, then the message length in bits as a big-endian 64-bit
    // number, filling one block or spilling into a second when fewer than 9 bytes remain.
    std::array<uint8_t, 2 * kBlockBytes> tail{};
    const size_t rest = data.size() - whole;
    for (size_t i = 0; i < rest; i++) {
        tail[i] = bytes[whole + i];
    }
    tail[rest] = 0x80;
    const size_t tail_bytes = rest + 9 <= kBlockBytes ? kBlockBytes : 2 * kBlockBytes;
    const uint64_t length_bits = uint64_t{data.size()} * 8;
    for (size_t i = 0; i < 8; i++) {
        tail[tail_bytes - 1 - i] = static_cast<uint8_t>(length_bits >> (8 * i));
    }
    for (size_t offset = 0; offset < tail_bytes; offset += kBlockBytes) {
        state.compress(tail.data() + offset);
    }

    Sha1Digest digest;
    for (size_t i = 0; i < 5; i++) {
        for (size_t j = 0; j < 4; j++) {
            digest[4 * i + j] = static_cast<uint8_t>(state.h[i] >> (24 - 8 * j));
        }
    }
    return digest;
}

std::array<char, 40> sha1_hex_chars(std::string_view data) {
    constexpr char kHex[] = "0123456789abcdef";
    const Sha1Digest digest = sha1(data);
    std::array<char, 40> hex;
    for (size_t i = 0; i < digest.size(); i++) {
        hex[2 * i] = kHex[digest[i] >> 4];
        hex[2 * i + 1] = kHex[digest[i] & 0xF];
    }
    return hex;
}

std::string sha1_hex(std::string_view data) {
    const std::array<char, 40> hex = sha1_hex_chars(data);
    return std::string(hex.data(), hex.size());
}

}  // namespace raftlock::statemachine::redis
