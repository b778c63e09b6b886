#include "base/crc32c.h"

#include <string>

#include <catch2/catch.hpp>

namespace raftlock {
namespace {

TEST_CASE("crc32c matches the published check values", "[raft][crc32c]") {
    // RFC 3720 appendix B.4 and the common "123456789" check value.
    CHECK(crc32c("") == 0);
    CHECK(crc32c("123456789") == 0xe3069283);
    CHECK(crc32c(std::string(32, '\0')) == 0x8a9136aa);
    CHECK(crc32c(std::string(32, '\xff')) == 0x62a8ab43);
}

TEST_CASE("crc32c hardware and table versions agree and extend in pieces", "[raft][crc32c]") {
    std::string data;
    for (int i = 0; i < 1000; i++) {
        data.push_back(static_cast<char>(i * 7 + i / 13));
    }
    for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 999, 1000}) {
        const std::string_view part(data.data(), n);
        CHECK(crc32c(part) == crc32c_extend_portable(0, part));
        for (size_t cut : {size_t{0}, n / 3, n}) {
            CHECK(crc32c_extend(crc32c(part.substr(0, cut)), part.substr(cut)) == crc32c(part));
        }
    }
}

}  // namespace
}  // namespace raftlock
