#include "net/md5.h"

#include <cstring>

#include "base/assert.h"

namespace raftlock::net {

namespace {

constexpr size_t kBlockBytes = 64;
// Where the 64-bit message length goes in the last block: after the padding, in its final 8 bytes.
constexpr size_t kLengthOffset = kBlockBytes - 8;

// RFC 1321 §3.4: T[i] = floor(2^32 * |sin(i)|) for i = 1..64, written out rather than computed so
// that no floating point is involved.
constexpr std::array<uint32_t, 64> kSine = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

// The left rotations of each round's four steps (RFC 1321 §3.4, S11..S44).
constexpr std::array<std::array<int, 4>, 4> kShifts = {{
    {7, 12, 17, 22},
    {5, 9, 14, 20},
    {4, 11, 16, 23},
    {6, 10, 15, 21},
}};

uint32_t rotate_left(uint32_t x, int n) {
    RL_ASSERT(n > 0 && n < 32);
    return (x << n) | (x >> (32 - n));
}

struct State {
    std::array<uint32_t, 4> abcd = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
};

// One 64-byte block (RFC 1321 §3.4). The message words are little-endian.
void transform(State& state, const uint8_t* block) {
    std::array<uint32_t, 16> x{};
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<uint32_t>(block[4 * i]) | static_cast<uint32_t>(block[4 * i + 1]) << 8 |
               static_cast<uint32_t>(block[4 * i + 2]) << 16 |
               static_cast<uint32_t>(block[4 * i + 3]) << 24;
    }
    uint32_t a = state.abcd[0];
    uint32_t b = state.abcd[1];
    uint32_t c = state.abcd[2];
    uint32_t d = state.abcd[3];
    for (size_t i = 0; i < 64; ++i) {
        const size_t round = i / 16;
        uint32_t f = 0;
        size_t k = 0;
        switch (round) {
            case 0:  // F(X,Y,Z) = XY v not(X) Z
                f = (b & c) | (~b & d);
                k = i;
                break;
            case 1:  // G(X,Y,Z) = XZ v Y not(Z)
                f = (b & d) | (c & ~d);
                k = (1 + 5 * i) % 16;
                break;
            case 2:  // H(X,Y,Z) = X xor Y xor Z
                f = b ^ c ^ d;
                k = (5 + 3 * i) % 16;
                break;
            default:  // I(X,Y,Z) = Y xor (X v not(Z))
                RL_ASSERT(round == 3);
                f = c ^ (b | ~d);
                k = (7 * i) % 16;
                break;
        }
        // Each step computes a new "a" and rotates the roles: (a, b, c, d) <- (d, a', b, c).
        const uint32_t rotated = rotate_left(a + f + x[k] + kSine[i], kShifts[round][i % 4]);
        a = d;
        d = c;
        c = b;
        b = b + rotated;
    }
    state.abcd[0] += a;
    state.abcd[1] += b;
    state.abcd[2] += c;
    state.abcd[3] += d;
}

void append_hex(const Md5Digest& digest, std::string& out) {
    constexpr std::string_view kDigits = "0123456789abcdef";
    for (uint8_t byte : digest) {
        out.push_back(kDigits[byte >> 4]);
        out.push_back(kDigits[byte & 0x0f]);
    }
}

}  // namespace

Md5Digest md5(std::string_view data) {
    State state;
    const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
    const size_t whole = data.size() / kBlockBytes * kBlockBytes;
    for (size_t at = 0; at < whole; at += kBlockBytes) {
        transform(state, bytes + at);
    }
    // The tail, the 0x80 byte, zeros, and the length in bits (mod 2^64, little-endian): one block
    // when the tail leaves room for the 9 bytes of padding, otherwise two (RFC 1321 §3.1, §3.2).
    std::array<uint8_t, 2 * kBlockBytes> last{};
    const size_t tail = data.size() - whole;
    RL_ASSERT(tail < kBlockBytes);
    if (tail > 0) {
        std::memcpy(last.data(), bytes + whole, tail);
    }
    last[tail] = 0x80;
    const size_t blocks = tail < kLengthOffset ? 1 : 2;
    const uint64_t length_bits = static_cast<uint64_t>(data.size()) * 8;
    for (size_t i = 0; i < 8; ++i) {
        last[blocks * kBlockBytes - 8 + i] = static_cast<uint8_t>(length_bits >> (8 * i));
    }
    for (size_t i = 0; i < blocks; ++i) {
        transform(state, last.data() + i * kBlockBytes);
    }
    Md5Digest digest{};
    for (size_t i = 0; i < 16; ++i) {
        digest[i] = static_cast<uint8_t>(state.abcd[i / 4] >> (8 * (i % 4)));
    }
    return digest;
}

std::string md5_hex(std::string_view data) {
    std::string out;
    out.reserve(32);
    append_hex(md5(data), out);
    RL_ASSERT(out.size() == 32);
    return out;
}

std::string pg_md5_password(std::string_view password,
                            std::string_view user,
                            std::array<uint8_t, 4> salt) {
    std::string inner(password);
    inner.append(user);
    std::string outer = md5_hex(inner);
    for (uint8_t byte : salt) {
        outer.push_back(static_cast<char>(byte));
    }
    std::string out = "md5";
    append_hex(md5(outer), out);
    RL_ASSERT(out.size() == 35);
    return out;
}

}  // namespace raftlock::net
