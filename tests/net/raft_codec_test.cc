#include "net/raft_codec.h"

#include <catch2/catch.hpp>

#include "raft/conf_change.h"
#include "raft/text.h"

namespace raftlock::net {
namespace {

// raft::Message has no operator== (the core never compares messages); compare field by field.
void check_equal(const raft::Message& a, const raft::Message& b) {
    CHECK(a.type == b.type);
    CHECK(a.from == b.from);
    CHECK(a.to == b.to);
    CHECK(a.term == b.term);
    CHECK(a.log_term == b.log_term);
    CHECK(a.index == b.index);
    CHECK(a.entries == b.entries);
    CHECK(a.commit == b.commit);
    CHECK(a.reject == b.reject);
    CHECK(a.reject_hint == b.reject_hint);
    CHECK(a.transfer == b.transfer);
    CHECK(a.read_round == b.read_round);
    CHECK(a.context == b.context);
    CHECK(a.snapshot_meta == b.snapshot_meta);
    CHECK(a.snapshot_size_bytes == b.snapshot_size_bytes);
    CHECK(a.snapshot_offset == b.snapshot_offset);
    CHECK(a.snapshot_chunk == b.snapshot_chunk);
}

raft::Message round_trip(const raft::Message& m) {
    proto::RaftMessage p;
    to_proto(m, p);
    // Through bytes as well, as on the wire.
    proto::RaftMessage parsed;
    REQUIRE(parsed.ParseFromString(p.SerializeAsString()));
    auto back = from_proto(parsed);
    REQUIRE(back.ok());
    return std::move(back).value();
}

// Every field set to a distinct non-default value.
raft::Message full_message(raft::MessageType type) {
    raft::Message m;
    m.type = type;
    m.from = 1;
    m.to = 2;
    m.term = 3;
    m.log_term = 4;
    m.index = 5;
    m.entries = {raft::Entry{4, 6, raft::EntryType::kNormal, "x"},
                 raft::Entry{4, 7, raft::EntryType::kConfChange, std::string("\0\xff", 2)},
                 raft::Entry{4, 8, raft::EntryType::kNormal, ""}};
    m.commit = 9;
    m.reject = true;
    m.reject_hint = 10;
    m.transfer = true;
    m.read_round = 11;
    m.context = "ctx";
    m.snapshot_meta = raft::SnapshotMetadata{12, 13, raft::ConfState{{1, 2, 3}, {4}}};
    m.snapshot_size_bytes = 14;
    m.snapshot_offset = 15;
    m.snapshot_chunk = std::string(1000, '\x7f');
    return m;
}

TEST_CASE("every field of every message type survives a round trip", "[net][raft_codec]") {
    for (uint8_t t = 0; t <= static_cast<uint8_t>(raft::MessageType::kTimeoutNow); ++t) {
        const raft::Message m = full_message(static_cast<raft::MessageType>(t));
        INFO(raft::to_string(m));
        check_equal(round_trip(m), m);
    }
}

TEST_CASE("a default message round-trips and leaves the snapshot metadata unset",
          "[net][raft_codec]") {
    const raft::Message m;
    proto::RaftMessage p;
    to_proto(m, p);
    CHECK(!p.has_snapshot_meta());
    check_equal(round_trip(m), m);
}

TEST_CASE("extreme integer values round-trip", "[net][raft_codec]") {
    raft::Message m = full_message(raft::MessageType::kAppend);
    m.from = UINT64_MAX;
    m.term = UINT64_MAX;
    m.index = UINT64_MAX;
    m.entries = {raft::Entry{UINT64_MAX, UINT64_MAX, raft::EntryType::kNormal, "y"}};
    m.snapshot_meta.conf_state = {};
    m.snapshot_meta.index = 0;
    m.snapshot_meta.term = 1;  // metadata with only a term is still carried
    check_equal(round_trip(m), m);
}

TEST_CASE("to_proto replaces what the output held", "[net][raft_codec]") {
    proto::RaftMessage p;
    to_proto(full_message(raft::MessageType::kSnapshot), p);
    to_proto(raft::Message{}, p);
    CHECK(p.entries_size() == 0);
    CHECK(!p.has_snapshot_meta());
    CHECK(p.snapshot_chunk().empty());
}

TEST_CASE("an unknown message type is rejected with its number", "[net][raft_codec]") {
    proto::RaftMessage p;
    to_proto(full_message(raft::MessageType::kAppend), p);
    p.set_type(77);
    auto r = from_proto(p);
    REQUIRE(!r.ok());
    CHECK(r.error() == "unknown message type 77");
    p.set_type(static_cast<uint32_t>(raft::MessageType::kTimeoutNow) + 1);
    CHECK(!from_proto(p).ok());
    p.set_type(UINT32_MAX);
    CHECK(!from_proto(p).ok());
}

TEST_CASE("an unknown entry type is rejected with the entry's position", "[net][raft_codec]") {
    proto::RaftMessage p;
    to_proto(full_message(raft::MessageType::kAppend), p);
    p.mutable_entries(1)->set_type(2);
    auto r = from_proto(p);
    REQUIRE(!r.ok());
    CHECK(r.error() == "entries[1]: unknown entry type 2");
}

TEST_CASE("decoding refuses more entries than the limit before copying any",
          "[net][raft_codec][peer_input]") {
    raft::PeerInputLimits limits;
    limits.entries_per_message_max = 3;
    proto::RaftMessage p;
    p.set_type(static_cast<uint32_t>(raft::MessageType::kAppend));
    for (int i = 0; i < 3; ++i) {
        p.add_entries()->set_index(static_cast<uint64_t>(i + 1));
    }
    CHECK(decode_raft_message(p, limits).ok());
    p.add_entries()->set_index(4);
    auto r = decode_raft_message(p, limits);
    REQUIRE(!r.ok());
    CHECK(r.error().fault == raft::MessageFault::kEntriesTooMany);
    CHECK(r.error().reason == "4 entries, more than 3");
}

TEST_CASE("decoding refuses a configuration larger than any the log accepts",
          "[net][raft_codec][peer_input]") {
    proto::RaftMessage p;
    p.set_type(static_cast<uint32_t>(raft::MessageType::kSnapshot));
    proto::ConfState* conf = p.mutable_snapshot_meta()->mutable_conf_state();
    for (uint64_t id = 1; id <= raft::kConfMembersMax; ++id) {
        conf->add_voters(id);
    }
    CHECK(decode_raft_message(p, raft::PeerInputLimits{}).ok());
    conf->add_voters(raft::kConfMembersMax + 1);
    auto r = decode_raft_message(p, raft::PeerInputLimits{});
    REQUIRE(!r.ok());
    CHECK(r.error().fault == raft::MessageFault::kMembersTooMany);
}

TEST_CASE("decoding passes out-of-range terms and indexes on for the core to judge",
          "[net][raft_codec][peer_input]") {
    // The codec checks what would cost memory; ranges depend on the receiver's state, which only
    // the core knows (raft/peer_input.h).
    proto::RaftMessage p;
    p.set_type(static_cast<uint32_t>(raft::MessageType::kHeartbeat));
    p.set_term(UINT64_MAX);
    p.set_commit(UINT64_MAX);
    auto r = decode_raft_message(p, raft::PeerInputLimits{});
    REQUIRE(r.ok());
    CHECK(r->term == UINT64_MAX);
    CHECK(r->commit == UINT64_MAX);
}

TEST_CASE("decoding names the malformed field as the fault's reason", "[net][raft_codec]") {
    proto::RaftMessage p;
    p.set_type(77);
    auto r = decode_raft_message(p, raft::PeerInputLimits{});
    REQUIRE(!r.ok());
    CHECK(r.error().fault == raft::MessageFault::kMalformed);
    CHECK(r.error().reason == "unknown message type 77");
}

}  // namespace
}  // namespace raftlock::net
