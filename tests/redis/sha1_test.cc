#include "statemachine/redis/sha1.h"

#include <string>

#include <catch2/catch.hpp>

namespace raftlock::statemachine::redis {
namespace {

// Bytes 0, 1, 2, ... (mod 251), so that lengths around the 64-byte block and the 56-byte padding
// boundary each get distinct content. Expected digests from Python's hashlib.
std::string counting_bytes(size_t size) {
    std::string data;
    for (size_t i = 0; i < size; i++) {
        data.push_back(static_cast<char>(i % 251));
    }
    return data;
}

TEST_CASE("sha1_hex matches the FIPS 180 test vectors", "[sha1]") {
    CHECK(sha1_hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    CHECK(sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
    CHECK(sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    CHECK(sha1_hex(std::string(1'000'000, 'a')) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST_CASE("sha1_hex pads correctly around the block boundaries", "[sha1]") {
    const std::pair<size_t, const char*> cases[] = {
        {55, "8ae2d46729cfe68ff927af5eec9c7d1b66d65ac2"},
        {56, "636e2ec698dac903498e648bd2f3af641d3c88cb"},
        {63, "6d942da0c4392b123528f2905c713a3ce28364bd"},
        {64, "c6138d514ffa2135bfce0ed0b8fac65669917ec7"},
        {65, "69bd728ad6e13cd76ff19751fde427b00e395746"},
        {119, "41c89d06001bab4ab78736b44efe7ce18ce6ae08"},
        {120, "d3dbd653bd8597b7475321b60a36891278e6a04a"},
        {128, "e6434bc401f98603d7eda504790c98c67385d535"},
    };
    for (const auto& [size, expected] : cases) {
        INFO("size " << size);
        CHECK(sha1_hex(counting_bytes(size)) == expected);
    }
}

TEST_CASE("sha1 digest, hex characters and hex string agree", "[sha1]") {
    const Sha1Digest digest = sha1("abc");
    CHECK(digest[0] == 0xa9);
    CHECK(digest[19] == 0x9d);
    const std::array<char, 40> hex = sha1_hex_chars("abc");
    CHECK(std::string(hex.data(), hex.size()) == sha1_hex("abc"));
}

}  // namespace
}  // namespace raftlock::statemachine::redis
