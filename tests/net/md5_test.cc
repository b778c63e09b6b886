#include "net/md5.h"

#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace raftlock::net {
namespace {

// `n` bytes that are not all alike, so that a misplaced byte changes the digest.
std::string pattern(size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s.push_back(static_cast<char>((i * 7 + 3) & 0xff));
    }
    return s;
}

TEST_CASE("md5 matches the test suite of RFC 1321", "[pg][md5]") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"1234567890123456789012345678901234567890123456789012345678901234567890123456789"
         "0",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    for (const auto& [input, digest] : cases) {
        INFO("input: \"" << input << "\"");
        CHECK(md5_hex(input) == digest);
    }
}

// The lengths where the padding needs one block or two (55 and 56 bytes of tail), and where the
// input fills whole blocks. Expected digests from an independent implementation (Python hashlib).
TEST_CASE("md5 pads correctly at every block boundary", "[pg][md5]") {
    const std::vector<std::pair<size_t, std::string>> cases = {
        {55, "52c0e574e1198de5fe3f8f11440dcb1b"},   {56, "46c9907fc908ee68b1e7b8e71286a518"},
        {57, "1c805dd236c35cab25fcb1bc73802c51"},   {63, "a62f6d59e837867693f042f5b8f5a236"},
        {64, "7160b8fb5e9e4023d549c3971fbaeead"},   {65, "70bd662e7aefbda85a0f7244167b7897"},
        {127, "acce2474d6cc8302120d09c818d17ef7"},  {128, "10b2da1a82f16d99a81a7203fe9f02cb"},
        {1000, "10046f077f2082ac19676b8079f1cb1a"},
    };
    for (const auto& [length, digest] : cases) {
        INFO("length " << length);
        CHECK(md5_hex(pattern(length)) == digest);
    }
}

TEST_CASE("md5 hashes NUL bytes like any other byte", "[pg][md5]") {
    CHECK(md5_hex(std::string(3, '\0')) == "693e9af84d3dfcc71e640e005bdc5e2e");
    const Md5Digest digest = md5("abc");
    CHECK(digest[0] == 0x90);
    CHECK(digest[15] == 0x72);
}

TEST_CASE("the PostgreSQL md5 password is md5 of the salted md5 of password and user",
          "[pg][md5]") {
    // md5("postgrespostgres") is what pg_authid holds for user postgres with password postgres.
    CHECK(md5_hex("postgrespostgres") == "3175bce1d3201d16594cebf9d7eb3f9d");
    CHECK(pg_md5_password("postgres", "postgres", {0xde, 0xad, 0xbe, 0xef}) ==
          "md58ee245854025535aedb7b15709315318");
    CHECK(pg_md5_password("secret", "alice", {1, 2, 3, 4}) ==
          "md598a0412b9c31436fc53776e863350083");
    // The salt matters: the same password gives another answer for another salt.
    CHECK(pg_md5_password("secret", "alice", {1, 2, 3, 5}) !=
          pg_md5_password("secret", "alice", {1, 2, 3, 4}));
}

}  // namespace
}  // namespace raftlock::net
