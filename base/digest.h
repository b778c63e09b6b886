#pragma once

// Message digests and HMAC, computed by OpenSSL's libcrypto (issue 18: raftlock keeps no
// hand-written cryptography). What each one is for here:
//   md5          PostgreSQL's "md5" password exchange (net/pg_codec.h) and the PostgreSQL front
//                end's salts; MD5 is broken as a cryptographic hash and nothing else may use it.
//   sha1         Redis script ids (EVALSHA, SCRIPT LOAD, redis.sha1hex) and ZooKeeper digest ids;
//                both must match the real servers bit for bit.
//   sha256,      SCRAM-SHA-256 and authenticated tokens.
//   hmac_sha256
// Pure functions of their input: the state machine may use them (they allocate only inside the
// call, and keep nothing).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace raftlock::base {

using Md5Digest = std::array<uint8_t, 16>;
using Sha1Digest = std::array<uint8_t, 20>;
using Sha256Digest = std::array<uint8_t, 32>;

Md5Digest md5(std::string_view data);
Sha1Digest sha1(std::string_view data);
Sha256Digest sha256(std::string_view data);
// HMAC (RFC 2104) with SHA-256; a key of any length, the empty one included.
Sha256Digest hmac_sha256(std::string_view key, std::string_view data);

// A digest as lowercase hexadecimal digits, without allocating (for callers that must not own
// heap memory, such as the Lua C functions of statemachine/redis/lua_script.cc).
template <size_t N>
std::array<char, 2 * N> hex_chars(const std::array<uint8_t, N>& digest) {
    constexpr std::string_view kDigits = "0123456789abcdef";
    std::array<char, 2 * N> out{};
    for (size_t i = 0; i < N; ++i) {
        out[2 * i] = kDigits[digest[i] >> 4];
        out[2 * i + 1] = kDigits[digest[i] & 0x0f];
    }
    return out;
}

// The same as a string, e.g. hex(sha1("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d".
template <size_t N>
std::string hex(const std::array<uint8_t, N>& digest) {
    const std::array<char, 2 * N> chars = hex_chars(digest);
    return std::string(chars.data(), chars.size());
}

}  // namespace raftlock::base
