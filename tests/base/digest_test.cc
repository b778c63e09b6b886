#include "base/digest.h"

#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace raftlock::base {
namespace {

// The published known answers: they prove the wiring to libcrypto (which algorithm, which bytes,
// which order of hex digits), not the algorithms themselves.
TEST_CASE("md5 gives the answers of RFC 1321's test suite", "[digest]") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"1234567890123456789012345678901234567890123456789012345678901234567890123456789"
         "0",
         "57edf4a22be3c955ac49da2e2107b67a"},
        {std::string(3, '\0'), "693e9af84d3dfcc71e640e005bdc5e2e"},
    };
    for (const auto& [input, expected] : cases) {
        INFO("input of " << input.size() << " bytes");
        CHECK(hex(md5(input)) == expected);
    }
}

TEST_CASE("sha1 gives the answers of FIPS 180", "[digest]") {
    CHECK(hex(sha1("")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    CHECK(hex(sha1("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
    CHECK(hex(sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
          "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    CHECK(hex(sha1(std::string(1'000'000, 'a'))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST_CASE("sha256 gives the answers of FIPS 180", "[digest]") {
    CHECK(hex(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(hex(sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("hmac_sha256 gives the answers of RFC 4231", "[digest]") {
    // Test cases 1, 2 and 6 (a key longer than SHA-256's 64-byte block is hashed first).
    CHECK(hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")) ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    CHECK(hex(hmac_sha256("Jefe", "what do ya want for nothing?")) ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    CHECK(hex(hmac_sha256(std::string(131, '\xaa'),
                          "Test Using Larger Than Block-Size Key - Hash Key First")) ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    // The empty key is legal (Python's hmac agrees).
    CHECK(hex(hmac_sha256("", "")) ==
          "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST_CASE("hex characters and hex strings agree, high nibble first", "[digest]") {
    const Sha1Digest digest = sha1("abc");
    CHECK(digest[0] == 0xa9);
    CHECK(digest[19] == 0x9d);
    const std::array<char, 40> chars = hex_chars(digest);
    CHECK(std::string(chars.data(), chars.size()) == hex(digest));
    CHECK(hex(std::array<uint8_t, 2>{0x0f, 0xf0}) == "0ff0");
}

}  // namespace
}  // namespace raftlock::base
