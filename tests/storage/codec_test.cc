#include "storage/codec.h"

#include <catch2/catch.hpp>

namespace raftlock::storage {
namespace {

// Every single-bit flip of an encoded value must be caught by the decoder.
template <typename Decode>
void check_every_bit_flip_is_caught(const std::string& encoded, Decode decode) {
    for (size_t byte = 0; byte < encoded.size(); byte++) {
        for (int bit = 0; bit < 8; bit++) {
            std::string damaged = encoded;
            damaged[byte] = static_cast<char>(damaged[byte] ^ (1 << bit));
            auto decoded = decode(damaged);
            REQUIRE_FALSE(decoded.ok());
            CHECK(decoded.error().code == StorageErrorCode::kCorruption);
        }
    }
    for (size_t keep = 0; keep < encoded.size(); keep++) {
        CHECK_FALSE(decode(encoded.substr(0, keep)).ok());
    }
}

TEST_CASE("log keys sort in index order and round-trip", "[storage][codec]") {
    for (raft::Index i : {uint64_t{0}, uint64_t{1}, uint64_t{255}, uint64_t{256}, UINT64_MAX}) {
        CHECK(decode_log_key(encode_log_key(i)).value() == i);
    }
    CHECK(encode_log_key(255) < encode_log_key(256));
    CHECK(encode_log_key(1) < encode_log_key(1ull << 40));
    CHECK_FALSE(decode_log_key("short").ok());
}

TEST_CASE("entries round-trip and any damage is caught", "[storage][codec]") {
    raft::Entry entry{7, 42, raft::EntryType::kConfChange, std::string("a\0b", 3)};
    CHECK(decode_entry(encode_entry(entry)).value() == entry);
    raft::Entry empty{1, 1, raft::EntryType::kNormal, ""};
    CHECK(decode_entry(encode_entry(empty)).value() == empty);
    check_every_bit_flip_is_caught(encode_entry(entry), decode_entry);
}

TEST_CASE("hard state and log start round-trip and any damage is caught", "[storage][codec]") {
    raft::HardState hs{9, 2, 1000};
    CHECK(decode_hard_state(encode_hard_state(hs)).value() == hs);
    check_every_bit_flip_is_caught(encode_hard_state(hs), decode_hard_state);
    LogStart start{77, 6};
    CHECK(decode_log_start(encode_log_start(start)).value() == start);
    check_every_bit_flip_is_caught(encode_log_start(start), decode_log_start);
}

TEST_CASE("snapshot records round-trip and any damage is caught", "[storage][codec]") {
    SnapshotRecord record;
    record.meta.index = 500;
    record.meta.term = 8;
    record.meta.conf_state.voters = {1, 2, 3};
    record.meta.conf_state.learners = {9};
    record.meta.conf_state.addresses = {{1, "10.0.0.1:7001"}, {9, "[::1]:7009"}};
    record.file_name = "snap-x.snap";
    record.size_bytes = 123456;
    record.data_crc = 0xdeadbeef;
    CHECK(decode_snapshot_record(encode_snapshot_record(record)).value() == record);
    check_every_bit_flip_is_caught(encode_snapshot_record(record), decode_snapshot_record);
}

}  // namespace
}  // namespace raftlock::storage
