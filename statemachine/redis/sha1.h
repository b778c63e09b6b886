#pragma once

// SHA-1 (FIPS 180-4), for Redis's script ids: EVALSHA and SCRIPT LOAD name a script by the
// lowercase hex SHA-1 of its body, and scripts can hash strings with redis.sha1hex. SHA-1 is used
// here as a name, not for security; it must match Redis bit for bit so clients' precomputed ids
// work.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace raftlock::statemachine::redis {

using Sha1Digest = std::array<uint8_t, 20>;

// The 20-byte digest of `data` (any length, any bytes).
Sha1Digest sha1(std::string_view data);

// The digest as 40 lowercase hex characters, without allocating (for callers that must not own
// heap memory, such as the Lua C functions in lua_script.cc).
std::array<char, 40> sha1_hex_chars(std::string_view data);

// Lowercase hex SHA1 of `data`: Redis's script ids and redis.sha1hex, e.g.
// sha1_hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709".
std::string sha1_hex(std::string_view data);

}  // namespace raftlock::statemachine::redis
