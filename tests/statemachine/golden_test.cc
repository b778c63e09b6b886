// Log entries as servers wrote them, kept as files, one per line: the encoded bytes in hex, a tab,
// the command's text form. golden/commands-v1.txt holds the entries of format version 1 (before
// explicit tags), commands-v2.txt those of version 2 (before ACLs) and commands-v3.txt those of
// version 3 (before users), commands-v4.txt those of version 4 (before the bound on seqs: the
// same layout) and commands-v5.txt those of version 5 (before Redis lists, sets and sorted sets:
// the same layout), commands-v6.txt those of version 6 (before PUBLISH: the same layout) and
// commands-v7.txt those of version 7 (before MULTI/EXEC: the same layout without tag 33); they
// and commands-v8.txt those of version 8 (before AcquireMany's wait); they must still decode, to
// the command sample_commands() has at that position, so that a log written by an earlier server
// replays. golden/commands-v9.txt pins version 9 byte for byte: an accidental change to the
// encoding fails here, not in a replica. sample_commands() only grows at its end; a new sample
// needs its line in commands-v9.txt (the failure prints it; RAFTLOCK_GOLDEN_WRITE=1 writes it, to
// be reviewed as a diff).

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "sample_commands.h"
#include "statemachine/codec.h"
#include "statemachine/text.h"

namespace raftlock::statemachine {
namespace {

using testing::sample_commands;

struct GoldenLine {
    std::string bytes;
    std::string text;
};

std::vector<GoldenLine> read_golden(const std::string& name) {
    const std::filesystem::path path = std::filesystem::path(RAFTLOCK_GOLDEN_DIR) / name;
    std::ifstream in(path);
    REQUIRE(in.good());
    std::vector<GoldenLine> out;
    std::string line;
    while (std::getline(in, line)) {
        const size_t tab = line.find('\t');
        REQUIRE(tab != std::string::npos);
        REQUIRE(tab % 2 == 0);
        GoldenLine g;
        for (size_t i = 0; i < tab; i += 2) {
            g.bytes.push_back(static_cast<char>(std::stoi(line.substr(i, 2), nullptr, 16)));
        }
        g.text = line.substr(tab + 1);
        out.push_back(std::move(g));
    }
    return out;
}

std::string golden_line(const Command& c) {
    const std::string bytes = encode_command(c).value();
    std::string hex;
    for (unsigned char b : bytes) {
        hex += fmt::format("{:02x}", b);
    }
    return hex + "\t" + to_string(c);
}

// The entries of an older format: each decodes to its sample and re-encodes as today's version.
void check_older_format(const std::string& file, size_t lines, uint8_t version) {
    const std::vector<GoldenLine> golden = read_golden(file);
    const std::vector<Command> samples = sample_commands();
    REQUIRE(golden.size() == lines);
    REQUIRE(samples.size() >= golden.size());
    for (size_t i = 0; i < golden.size(); ++i) {
        INFO(file << " line " << i + 1 << ": " << golden[i].text);
        REQUIRE(static_cast<uint8_t>(golden[i].bytes[0]) == version);
        Result<Command, ErrorCode> decoded = decode_command(golden[i].bytes);
        REQUIRE(decoded.ok());
        CHECK(to_string(decoded.value()) == golden[i].text);
        CHECK(decoded.value() == samples[i]);
        const std::string again = encode_command(decoded.value()).value();
        CHECK(static_cast<uint8_t>(again[0]) == kCommandFormatVersion);
        CHECK(decode_command(again).value() == decoded.value());
    }
}

TEST_CASE("entries of format versions 1 to 8 still decode, and re-encode as version 9",
          "[statemachine][codec][golden]") {
    // The samples of November 2026: every op and both budget forms (version 1), then attach and
    // the containers-at-end multi (version 2, before ACLs), then ACLs (version 3, before users).
    check_older_format("commands-v1.txt", 21, kCommandFormatVersionV1);
    check_older_format("commands-v2.txt", 23, kCommandFormatVersionV2);
    check_older_format("commands-v3.txt", 25, kCommandFormatVersionV3);
    // Version 4 (users, before the bound on seqs): every sample of its time, in version 5's layout.
    check_older_format("commands-v4.txt", 31, kCommandFormatVersionV4);
    // Version 5 (before Redis collections): every sample of its time, in version 6's layout.
    check_older_format("commands-v5.txt", 32, kCommandFormatVersionV5);
    // Version 6 (before PUBLISH): every sample of its time, in version 7's layout.
    check_older_format("commands-v6.txt", 32, kCommandFormatVersionV6);
    // Version 7 (before MULTI/EXEC): every sample of its time, in version 8's layout.
    check_older_format("commands-v7.txt", 33, kCommandFormatVersionV7);
    // Version 8 (before AcquireMany's wait): its multi-lock line ends without one and decodes to
    // a multi-lock that does not wait.
    check_older_format("commands-v8.txt", 34, kCommandFormatVersionV8);
}

TEST_CASE("format version 9 is pinned byte for byte", "[statemachine][codec][golden]") {
    const std::vector<Command> samples = sample_commands();
    std::string expected;
    for (const Command& c : samples) {
        expected += golden_line(c) + "\n";
    }
    if (std::getenv("RAFTLOCK_GOLDEN_WRITE") != nullptr) {
        std::ofstream(std::filesystem::path(RAFTLOCK_GOLDEN_DIR) / "commands-v9.txt") << expected;
    }
    const std::vector<GoldenLine> golden = read_golden("commands-v9.txt");
    INFO("commands-v9.txt for today's samples:\n" << expected);
    REQUIRE(golden.size() == samples.size());
    for (size_t i = 0; i < samples.size(); ++i) {
        INFO("line " << i + 1 << ": " << golden[i].text);
        CHECK(encode_command(samples[i]).value() == golden[i].bytes);
        Result<Command, ErrorCode> decoded = decode_command(golden[i].bytes);
        REQUIRE(decoded.ok());
        CHECK(decoded.value() == samples[i]);
        CHECK(to_string(decoded.value()) == golden[i].text);
    }
}

}  // namespace
}  // namespace raftlock::statemachine
