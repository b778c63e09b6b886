// Configuration entries: their encoding (data from disk or a peer is never trusted) and the rules
// of one-server-at-a-time changes.

#include "raft/conf_change.h"

#include <initializer_list>
#include <string>

#include <catch2/catch.hpp>

#include "raft/text.h"

namespace raftlock::raft {
namespace {

std::string bytes(std::initializer_list<int> list) {
    std::string out;
    for (int b : list) {
        out.push_back(static_cast<char>(b));
    }
    return out;
}

std::string hex(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        out += fmt::format("{:02x} ", c);
    }
    return out;
}

TEST_CASE("a configuration record survives an encode/decode round trip", "[raft][conf_change]") {
    const std::vector<ConfChangeRecord> records{
        {std::nullopt, ConfState{{1}, {}}},
        {std::nullopt, ConfState{{1, 2, 3}, {4, 5}}},
        {ConfChange{ConfChangeType::kAddVoter, 4}, ConfState{{1, 2, 3, 4}, {}}},
        {ConfChange{ConfChangeType::kAddLearner, 300}, ConfState{{1, 2}, {300}}},
        {ConfChange{ConfChangeType::kRemoveNode, UINT64_MAX},
         ConfState{{1, 127, 128, 16384, UINT64_MAX - 1}, {UINT64_MAX}}},
        {std::nullopt, ConfState{}},
    };
    for (const ConfChangeRecord& r : records) {
        const std::string data = encode_conf_change(r);
        INFO(to_string(r.conf_state) << " bytes: " << hex(data));
        auto decoded = decode_conf_change(data);
        REQUIRE(decoded.ok());
        CHECK(*decoded == r);
    }
}

TEST_CASE("every malformed configuration record is rejected", "[raft][conf_change]") {
    struct Case {
        const char* what;
        std::string data;
    };
    // Valid: {1, 0, 1, 1, 0} = version 1, no change, voters (1), no learners.
    REQUIRE(decode_conf_change(bytes({1, 0, 1, 1, 0})).ok());
    REQUIRE(decode_conf_change(bytes({1, 1, 2, 5, 1, 1, 1, 5})).ok());
    const std::vector<Case> cases{
        {"empty", ""},
        {"version only", bytes({1})},
        {"version 0", bytes({0, 0, 1, 1, 0})},
        {"version 2", bytes({2, 0, 1, 1, 0})},
        {"bad change flag", bytes({1, 2, 1, 1, 0})},
        {"change flag without change", bytes({1, 1})},
        {"unknown change type", bytes({1, 1, 3, 5, 1, 1, 0})},
        {"change of node 0", bytes({1, 1, 0, 0, 1, 1, 0})},
        {"unterminated node id", bytes({1, 1, 0, 0x85})},
        {"missing voter list", bytes({1, 0})},
        {"missing learner list", bytes({1, 0, 1, 1})},
        {"voter count beyond the data", bytes({1, 0, 3, 1, 2})},
        {"unterminated voter id", bytes({1, 0, 1, 0x81})},
        {"voter id 0", bytes({1, 0, 1, 0, 0})},
        {"learner id 0", bytes({1, 0, 1, 1, 1, 0})},
        {"unsorted voters", bytes({1, 0, 2, 3, 2, 0})},
        {"duplicate voters", bytes({1, 0, 2, 2, 2, 0})},
        {"unsorted learners", bytes({1, 0, 1, 1, 2, 5, 4})},
        {"duplicate learners", bytes({1, 0, 1, 1, 2, 4, 4})},
        {"voter and learner", bytes({1, 0, 2, 1, 2, 1, 2})},
        {"trailing bytes", bytes({1, 0, 1, 1, 0, 0})},
        {"too many members", bytes({1, 0, 0x81, 0x08})},
        {"varint longer than 64 bits",
         bytes({1, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0})},
    };
    for (const Case& c : cases) {
        INFO(c.what << ": " << hex(c.data));
        auto decoded = decode_conf_change(c.data);
        CHECK_FALSE(decoded.ok());
        if (!decoded.ok()) {
            CHECK(decoded.error().code == ErrorCode::kInvalidArgument);
        }
    }
}

TEST_CASE("every strict prefix of a valid configuration record is rejected",
          "[raft][conf_change]") {
    const ConfChangeRecord r{ConfChange{ConfChangeType::kAddLearner, 70000},
                             ConfState{{1, 2, 300}, {70000, 80000}}};
    const std::string data = encode_conf_change(r);
    for (size_t len = 0; len < data.size(); ++len) {
        INFO("prefix of " << len << " bytes: " << hex(data.substr(0, len)));
        CHECK_FALSE(decode_conf_change(data.substr(0, len)).ok());
    }
}

// Every byte string up to 5 bytes over an alphabet of interesting bytes: whatever decodes must
// satisfy the ConfState invariants (sorted, unique, disjoint, no node 0).
TEST_CASE("whatever decodes is a well-formed configuration", "[raft][conf_change]") {
    const int alphabet[] = {0, 1, 2, 3, 0x7f, 0x80, 0x81, 0xff};
    size_t accepted = 0;
    for (size_t len = 0; len <= 5; ++len) {
        std::vector<size_t> digits(len, 0);
        for (;;) {
            std::string data;
            for (size_t d : digits) {
                data.push_back(static_cast<char>(alphabet[d]));
            }
            auto decoded = decode_conf_change(data);
            if (decoded.ok()) {
                ++accepted;
                const ConfState& cs = decoded->conf_state;
                INFO(hex(data));
                CHECK(std::is_sorted(cs.voters.begin(), cs.voters.end()));
                CHECK(std::adjacent_find(cs.voters.begin(), cs.voters.end()) == cs.voters.end());
                CHECK(std::is_sorted(cs.learners.begin(), cs.learners.end()));
                for (NodeId id : cs.learners) {
                    CHECK_FALSE(is_voter(cs, id));
                    CHECK(id != kNoNode);
                }
                for (NodeId id : cs.voters) {
                    CHECK(id != kNoNode);
                }
                if (decoded->change) {
                    CHECK(decoded->change->node_id != kNoNode);
                }
            }
            size_t i = 0;
            while (i < len && ++digits[i] == std::size(alphabet)) {
                digits[i++] = 0;
            }
            if (i == len) {
                break;
            }
        }
    }
    CHECK(accepted > 0);
}

// Two byte strings must never decode to the same record: non-minimal varints (0x81 0x00 for 1)
// and bits beyond 64 in a tenth byte are malformed. (The decoder used to accept both.)
TEST_CASE("only the canonical encoding of a configuration record is accepted",
          "[raft][conf_change]") {
    const std::vector<std::string> non_canonical{
        bytes({1, 0, 0x81, 0x00, 1, 0}),  // voter count 1 in two bytes
        bytes({1, 0, 1, 0x81, 0x00, 0}),  // voter id 1 in two bytes
        bytes({1, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0}),
    };
    for (const std::string& data : non_canonical) {
        auto decoded = decode_conf_change(data);
        INFO(hex(data));
        CHECK_FALSE(decoded.ok());
        if (decoded.ok()) {
            CHECK(encode_conf_change(*decoded) == data);
        }
    }
}

TEST_CASE("apply_conf_change follows the one-server change rules", "[raft][conf_change]") {
    struct Case {
        ConfState conf;
        ConfChange change;
        std::optional<ConfState> want;  // nullopt: rejected
    };
    using T = ConfChangeType;
    const std::vector<Case> cases{
        {{{1, 2, 3}, {}}, {T::kAddVoter, 4}, ConfState{{1, 2, 3, 4}, {}}},
        {{{1, 3}, {}}, {T::kAddVoter, 2}, ConfState{{1, 2, 3}, {}}},         // stays sorted
        {{{1, 2, 3}, {}}, {T::kAddVoter, 3}, std::nullopt},                  // already a voter
        {{{1, 2, 3}, {4}}, {T::kAddVoter, 4}, ConfState{{1, 2, 3, 4}, {}}},  // promotion
        {{{1, 2, 3}, {}}, {T::kAddLearner, 4}, ConfState{{1, 2, 3}, {4}}},
        {{{1, 2, 3}, {4}}, {T::kAddLearner, 4}, std::nullopt},           // already a learner
        {{{1, 2, 3}, {}}, {T::kAddLearner, 2}, ConfState{{1, 3}, {2}}},  // demotion
        {{{1}, {}}, {T::kAddLearner, 1}, std::nullopt},                  // no voter left
        {{{1, 2, 3}, {4}}, {T::kRemoveNode, 2}, ConfState{{1, 3}, {4}}},
        {{{1, 2, 3}, {4}}, {T::kRemoveNode, 4}, ConfState{{1, 2, 3}, {}}},
        {{{1, 2, 3}, {}}, {T::kRemoveNode, 5}, std::nullopt},  // not a member
        {{{1}, {2}}, {T::kRemoveNode, 1}, std::nullopt},       // no voter left
        {{{1, 2, 3}, {}}, {T::kAddVoter, kNoNode}, std::nullopt},
        {{{1, 2, 3}, {}}, {T::kRemoveNode, kNoNode}, std::nullopt},
    };
    for (const Case& c : cases) {
        INFO(to_string(c.conf) << " + " << to_string(c.change));
        auto got = apply_conf_change(c.conf, c.change);
        REQUIRE(got.ok() == c.want.has_value());
        if (got.ok()) {
            CHECK(*got == *c.want);
        } else {
            CHECK(got.error().code == ErrorCode::kInvalidArgument);
        }
    }
}

TEST_CASE("the bootstrap entry carries the initial configuration at index 1 of term 1",
          "[raft][conf_change]") {
    const ConfState initial{{1, 2, 3}, {4}};
    const Bootstrap b = make_bootstrap(initial);
    CHECK(b.entry.index == 1);
    CHECK(b.entry.term == 1);
    CHECK(b.entry.type == EntryType::kConfChange);
    auto record = decode_conf_change(b.entry.data);
    REQUIRE(record.ok());
    CHECK_FALSE(record->change.has_value());
    CHECK(record->conf_state == initial);
    CHECK(b.hard_state == HardState{1, kNoNode, 1});
}

TEST_CASE("members' addresses travel with the configuration", "[raft][conf_change]") {
    using T = ConfChangeType;
    ConfState conf{{1, 2, 3}, {}, {{1, "10.0.0.1:7001"}, {2, "10.0.0.2:7001"}, {3, "h3:7001"}}};

    SECTION("round trip, with the change's address") {
        const ConfChangeRecord r{ConfChange{T::kAddVoter, 4, "[::1]:7004"},
                                 ConfState{{1, 2, 3, 4}, {}, {{1, "a:1"}, {4, "[::1]:7004"}}}};
        auto decoded = decode_conf_change(encode_conf_change(r));
        REQUIRE(decoded.ok());
        CHECK(*decoded == r);
    }
    SECTION("an add records the address; a promotion without one keeps it") {
        auto learner = apply_conf_change(conf, ConfChange{T::kAddLearner, 4, "h4:7001"});
        REQUIRE(learner.ok());
        CHECK(learner->addresses.at(4) == "h4:7001");
        auto voter = apply_conf_change(*learner, ConfChange{T::kAddVoter, 4, ""});
        REQUIRE(voter.ok());
        CHECK(voter->voters == std::vector<NodeId>{1, 2, 3, 4});
        CHECK(voter->addresses.at(4) == "h4:7001");
        CHECK(valid_conf_state(*voter));
    }
    SECTION("a removal forgets the address") {
        auto removed = apply_conf_change(conf, ConfChange{T::kRemoveNode, 2, ""});
        REQUIRE(removed.ok());
        CHECK(removed->addresses.count(2) == 0);
        CHECK(removed->addresses.size() == 2);
    }
    SECTION("an address of a node that is not a member is refused") {
        ConfState stray = conf;
        stray.addresses[9] = "h9:7001";
        CHECK_FALSE(valid_conf_state(stray));
        const std::string data = encode_conf_change(ConfChangeRecord{std::nullopt, stray});
        CHECK_FALSE(decode_conf_change(data).ok());
    }
    SECTION("version 1 records, written before addresses, still decode") {
        // {1, 1, type 0, node 5, voters (1, 5), no learners}
        auto old = decode_conf_change(bytes({1, 1, 0, 5, 2, 1, 5, 0}));
        REQUIRE(old.ok());
        CHECK(old->change == ConfChange{T::kAddVoter, 5, ""});
        CHECK(old->conf_state == ConfState{{1, 5}, {}, {}});
    }
}

}  // namespace
}  // namespace raftlock::raft
