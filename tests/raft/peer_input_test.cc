// The peer-input range checks (raft/peer_input.h): the verdicts of check_message, and what the
// core does with a message that fails them (nothing at all).

#include "raft/peer_input.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "raft/conf_change.h"
#include "raft/config.h"
#include "raft/memory_storage.h"
#include "raft/raft.h"
#include "raft/raw_node.h"
#include "raft/text.h"
#include "tests/raft/cluster_fixture.h"

namespace raftlock::raft {
namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// Small limits, so the cases at the bounds stay small too.
PeerInputLimits small_limits() {
    return PeerInputLimits{
        .term_jump_max = 100, .entries_per_message_max = 4, .read_context_bytes_max = 8};
}

// Node 1 at term 5 with 10 entries, by default a follower.
ReceiverView view(Role role = Role::kFollower) {
    return ReceiverView{.id = 1, .term = 5, .role = role, .last_index = 10, .read_round = 3};
}

Message msg(MessageType type, Term term = 5) {
    return Message{.type = type, .from = 2, .to = 1, .term = term};
}

Message append(Index prev_index, Term prev_term, std::vector<Term> entry_terms, Term term = 5) {
    Message m = msg(MessageType::kAppend, term);
    m.index = prev_index;
    m.log_term = prev_term;
    for (size_t i = 0; i < entry_terms.size(); ++i) {
        m.entries.push_back(Entry{.term = entry_terms[i], .index = prev_index + 1 + i});
    }
    return m;
}

template <typename T, typename Change>
T with(T value, Change change) {
    change(value);
    return value;
}

struct Case {
    const char* what;
    Message message;
    ReceiverView self;
    MessageFault expected;
};

std::vector<Case> cases() {
    using MT = MessageType;
    using MF = MessageFault;
    return {
        {"a correct heartbeat", with(msg(MT::kHeartbeat), [](Message& m) { m.commit = 10; }),
         view(), MF::kNone},
        {"a heartbeat of term 2^64-1 (issue 16, row 1)", msg(MT::kHeartbeat, kU64Max), view(),
         MF::kTermBeyondMax},
        {"a vote request just above the largest term", msg(MT::kVote, kTermMax + 1), view(),
         MF::kTermBeyondMax},
        {"a last log term of 2^64-1",
         with(msg(MT::kVote, 6), [](Message& m) { m.log_term = kU64Max; }), view(),
         MF::kTermBeyondMax},
        {"a term exactly term_jump_max above ours", msg(MT::kHeartbeat, 105), view(), MF::kNone},
        {"a term one more than term_jump_max above ours", msg(MT::kHeartbeat, 106), view(),
         MF::kTermJump},
        {"a stale term far below ours", msg(MT::kAppend, 1), view(), MF::kNone},
        {"the largest term, at a node one below it", msg(MT::kHeartbeat, kTermMax),
         with(view(), [](ReceiverView& v) { v.term = kTermMax - 1; }), MF::kNone},
        {"a candidate's last index of 2^64-1",
         with(msg(MT::kVote, 6), [](Message& m) { m.index = kU64Max; }), view(),
         MF::kIndexBeyondMax},
        {"a commit index above the largest index",
         with(msg(MT::kAppend), [](Message& m) { m.commit = kIndexMax + 1; }), view(),
         MF::kIndexBeyondMax},
        {"entries that end at the largest index", append(kIndexMax - 1, 5, {5}), view(), MF::kNone},
        {"entries that would end past the largest index", append(kIndexMax - 1, 5, {5, 5}), view(),
         MF::kIndexBeyondMax},
        {"a rejection hint of 2^64-1",
         with(msg(MT::kAppendResponse),
              [](Message& m) {
                  m.reject = true;
                  m.reject_hint = kU64Max;
              }),
         view(), MF::kIndexBeyondMax},
        {"a transfer names a node in the index field",
         with(msg(MT::kTransferLeader, 0), [](Message& m) { m.index = kU64Max; }), view(),
         MF::kNone},
        {"entries at the count limit", append(10, 5, {5, 5, 5, 5}), view(), MF::kNone},
        {"entries beyond the count limit", append(10, 5, {5, 5, 5, 5, 5}), view(),
         MF::kEntriesTooMany},
        {"a forwarded proposal beyond the count limit",
         with(msg(MT::kPropose, 0), [](Message& m) { m.entries.resize(5); }), view(),
         MF::kEntriesTooMany},
        {"a read context beyond its limit",
         with(msg(MT::kReadIndex, 0), [](Message& m) { m.context = "123456789"; }), view(),
         MF::kContextTooLong},
        {"a snapshot of more members than a configuration holds",
         with(msg(MT::kSnapshot),
              [](Message& m) {
                  m.snapshot_meta.index = 11;
                  for (NodeId id = 1; id <= kConfMembersMax + 1; ++id) {
                      m.snapshot_meta.conf_state.learners.push_back(id);
                  }
              }),
         view(), MF::kMembersTooMany},
    };
}

std::vector<Case> more_cases() {
    using MT = MessageType;
    using MF = MessageFault;
    auto snapshot = [](uint64_t size, uint64_t offset, std::string chunk) {
        Message m = msg(MT::kSnapshot);
        m.snapshot_meta = SnapshotMetadata{.index = 20, .term = 5, .conf_state = {{1, 2, 3}}};
        m.snapshot_size_bytes = size;
        m.snapshot_offset = offset;
        m.snapshot_chunk = std::move(chunk);
        return m;
    };
    return {
        {"the last chunk of a snapshot", snapshot(10, 8, "xy"), view(), MF::kNone},
        {"a chunk past the snapshot's end", snapshot(10, 9, "xy"), view(), MF::kSnapshotRange},
        {"an offset past the snapshot's end", snapshot(10, kU64Max, ""), view(),
         MF::kSnapshotRange},
        {"a snapshot term above the message's",
         with(snapshot(10, 0, ""), [](Message& m) { m.snapshot_meta.term = 6; }), view(),
         MF::kMalformed},
        {"entries with a gap",
         with(append(10, 5, {5, 5}), [](Message& m) { m.entries[1].index = 13; }), view(),
         MF::kMalformed},
        {"entry terms that go down", append(10, 5, {5, 4}), view(), MF::kMalformed},
        {"an entry term above the leader's", append(10, 5, {6}), view(), MF::kMalformed},
        {"a previous term above the message's", append(10, 6, {}), view(), MF::kMalformed},
        // A node may hold entries above its term (raft/raw_node.h: entries durable before the
        // hard state), so its votes and rejections may carry such a log term.
        {"a vote request whose last log term is above its term",
         with(msg(MT::kVote, 6), [](Message& m) { m.log_term = 7; }), view(), MF::kNone},
        {"a rejection whose hint term is above its term",
         with(msg(MT::kAppendResponse),
              [](Message& m) {
                  m.reject = true;
                  m.index = 7;
                  m.log_term = 6;
              }),
         view(), MF::kNone},
        {"a rejection hint above the rejected index",
         with(msg(MT::kAppendResponse),
              [](Message& m) {
                  m.reject = true;
                  m.index = 7;
                  m.reject_hint = 8;
              }),
         view(), MF::kMalformed},
    };
}

// Claims about the receiver's own log and rounds, and addressing.
std::vector<Case> state_cases() {
    using MT = MessageType;
    using MF = MessageFault;
    return {
        {"an append beyond our log (we reject it, as Raft says)", append(50, 5, {5}), view(),
         MF::kNone},
        {"an acknowledgement beyond the leader's log",
         with(msg(MT::kAppendResponse), [](Message& m) { m.index = 11; }), view(Role::kLeader),
         MF::kAckBeyondLog},
        {"an acknowledgement of the leader's last entry",
         with(msg(MT::kAppendResponse), [](Message& m) { m.index = 10; }), view(Role::kLeader),
         MF::kNone},
        {"a stale acknowledgement beyond the log (an older term's)",
         with(msg(MT::kAppendResponse, 4), [](Message& m) { m.index = 11; }), view(Role::kLeader),
         MF::kNone},
        {"a heartbeat that commits beyond our log",
         with(msg(MT::kHeartbeat), [](Message& m) { m.commit = 11; }), view(),
         MF::kCommitBeyondLog},
        {"a heartbeat of a newer term that commits beyond our log",
         with(msg(MT::kHeartbeat, 6), [](Message& m) { m.commit = 11; }), view(),
         MF::kCommitBeyondLog},
        {"a stale heartbeat that commits beyond our log",
         with(msg(MT::kHeartbeat, 4), [](Message& m) { m.commit = 11; }), view(), MF::kNone},
        {"a confirmation of a read round not started",
         with(msg(MT::kHeartbeatResponse), [](Message& m) { m.read_round = 4; }),
         view(Role::kLeader), MF::kReadRoundAhead},
        {"a confirmation of the current read round",
         with(msg(MT::kHeartbeatResponse), [](Message& m) { m.read_round = 3; }),
         view(Role::kLeader), MF::kNone},
        {"a message for another node", with(msg(MT::kHeartbeat), [](Message& m) { m.to = 3; }),
         view(), MF::kMisaddressed},
        {"a message from ourselves", with(msg(MT::kHeartbeat), [](Message& m) { m.from = 1; }),
         view(), MF::kMisaddressed},
        {"a message from nobody", with(msg(MT::kHeartbeat), [](Message& m) { m.from = 0; }), view(),
         MF::kMisaddressed},
    };
}

TEST_CASE("check_message judges terms, indexes and counts at their bounds", "[raft][peer_input]") {
    for (const Case& c : cases()) {
        INFO(c.what << ": " << to_string(c.message));
        const MessageCheck check = check_message(c.message, c.self, small_limits());
        CHECK(to_string(check.fault) == to_string(c.expected));
        CHECK(check.reason.empty() == check.ok());
    }
}

TEST_CASE("check_message judges shapes and claims about our own log", "[raft][peer_input]") {
    std::vector<Case> all = more_cases();
    for (Case& c : state_cases()) {
        all.push_back(std::move(c));
    }
    for (const Case& c : all) {
        INFO(c.what << ": " << to_string(c.message));
        const MessageCheck check = check_message(c.message, c.self, small_limits());
        CHECK(to_string(check.fault) == to_string(c.expected));
        CHECK(check.reason.empty() == check.ok());
    }
}

TEST_CASE("every fault has a distinct metric label", "[raft][peer_input]") {
    std::vector<std::string> names;
    for (size_t i = 0; i < kMessageFaultCount; ++i) {
        const std::string name(to_string(static_cast<MessageFault>(i)));
        CHECK(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos);
        CHECK(std::find(names.begin(), names.end(), name) == names.end());
        names.push_back(name);
    }
}

// A three-node cluster with node 1 leading, at term 2.
testing::TestCluster led_cluster() {
    testing::TestCluster c(3);
    c.node(1).campaign();
    c.pump();
    REQUIRE(c.node(1).status().soft_state.role == Role::kLeader);
    return c;
}

std::string state_of(const RawNode& node) {
    return fmt::format("{} ready={}", to_string(node.status()), node.has_ready());
}

TEST_CASE("a follower drops a heartbeat of term 2^64-1 and keeps its term", "[raft][peer_input]") {
    testing::TestCluster c = led_cluster();
    const std::string before = state_of(c.node(2));
    const MessageCheck check = c.node(2).step(
        Message{.type = MessageType::kHeartbeat, .from = 1, .to = 2, .term = kU64Max, .commit = 0});
    CHECK(check.fault == MessageFault::kTermBeyondMax);
    CHECK(check.reason ==
          "term 18446744073709551615 is above the largest term 4611686018427387904");
    CHECK(state_of(c.node(2)) == before);
    // The cluster goes on as if nothing happened.
    REQUIRE(c.node(1).propose("after").ok());
    c.pump();
    CHECK(c.at(2).applied.back().data == "after");
    CHECK(c.node(2).status().hard_state.term == 2);
}

TEST_CASE("a leader drops acknowledgements and read confirmations beyond what it sent",
          "[raft][peer_input]") {
    testing::TestCluster c = led_cluster();
    const Index last = c.node(1).last_index();
    const std::string before = state_of(c.node(1));
    CHECK(c.node(1)
              .step(Message{.type = MessageType::kAppendResponse,
                            .from = 2,
                            .to = 1,
                            .term = 2,
                            .index = last + 1000})
              .fault == MessageFault::kAckBeyondLog);
    CHECK(c.node(1)
              .step(Message{.type = MessageType::kHeartbeatResponse,
                            .from = 2,
                            .to = 1,
                            .term = 2,
                            .read_round = 1000})
              .fault == MessageFault::kReadRoundAhead);
    CHECK(state_of(c.node(1)) == before);
}

TEST_CASE("a node a whole term_jump_max behind still follows the leader", "[raft][peer_input]") {
    Config base;
    base.peer_input.term_jump_max = 10;
    testing::TestCluster c(3, base);
    c.node(1).campaign();
    c.pump();
    // Exactly term_jump_max above node 2's term 2: accepted, node 2 follows.
    CHECK(c.node(2)
              .step(Message{.type = MessageType::kHeartbeat, .from = 3, .to = 2, .term = 12})
              .ok());
    CHECK(c.node(2).status().hard_state.term == 12);
    CHECK(c.node(2).status().soft_state.leader == 3);
    // One more than that from where it is now: dropped.
    CHECK(c.node(2)
              .step(Message{.type = MessageType::kHeartbeat, .from = 3, .to = 2, .term = 23})
              .fault == MessageFault::kTermJump);
    CHECK(c.node(2).status().hard_state.term == 12);
}

TEST_CASE("a node at the largest term never campaigns, so its term cannot wrap",
          "[raft][peer_input][election]") {
    MemoryStorage storage;
    const Bootstrap boot = make_bootstrap(ConfState{{1, 2, 3}});
    storage.append({boot.entry});
    storage.set_hard_state(HardState{.term = kTermMax, .vote = kNoNode, .commit = 1});
    Config config;
    config.id = 1;
    config.applied = 1;
    RawNode node(config, storage);
    node.campaign();
    for (int i = 0; i < 10 * config.election_tick; ++i) {
        node.tick();
    }
    CHECK(node.status().soft_state.role == Role::kFollower);
    CHECK(node.term() == kTermMax);
    const Ready rd = node.ready();
    CHECK(rd.messages.empty());
    CHECK(rd.early_messages.empty());
    CHECK(!rd.hard_state.has_value());
}

TEST_CASE("config validation keeps the entry limit above what a leader sends",
          "[raft][peer_input][config]") {
    Config config;
    config.id = 1;
    CHECK(config.validate().ok());
    config.max_size_per_msg_bytes = 16 << 20;  // up to 2^20 + 1 entries per message
    CHECK(!config.validate().ok());
    config.peer_input.entries_per_message_max = (1 << 20) + 1;
    CHECK(config.validate().ok());
    config.peer_input.term_jump_max = 0;
    CHECK(!config.validate().ok());
}

}  // namespace
}  // namespace raftlock::raft
