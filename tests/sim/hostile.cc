#include "tests/sim/hostile.h"

#include <limits>
#include <vector>

#include <fmt/format.h>

#include "base/assert.h"
#include "raft/conf_change.h"
#include "raft/text.h"

namespace raftlock::sim {

namespace {

using raft::kIndexMax;
using raft::kTermMax;
using raft::Message;
using raft::MessageFault;
using raft::MessageType;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// What a generator needs to know of the target.
struct Target {
    raft::NodeId id;
    raft::Term term;
    raft::Index last_index;
    uint64_t read_round;
    bool leader;
};

Message base(MessageType type, raft::NodeId from, const Target& t) {
    return Message{.type = type, .from = from, .to = t.id, .term = t.term};
}

// A valid configuration, so only the field under test is wrong.
raft::ConfState small_conf() {
    raft::ConfState conf;
    conf.voters = {1, 2, 3};
    return conf;
}

HostileMessage misaddressed(Rng& rng, raft::NodeId from, const Target& t) {
    Message m = base(MessageType::kHeartbeat, from, t);
    if (rng.chance(1, 2)) {
        m.from = t.id;  // claims to come from the target itself
    } else {
        m.to = t.id + 1 + rng.uniform(8);
    }
    return {m, MessageFault::kMisaddressed};
}

HostileMessage term_beyond_max(Rng& rng, raft::NodeId from, const Target& t) {
    const MessageType types[] = {MessageType::kHeartbeat, MessageType::kAppend, MessageType::kVote,
                                 MessageType::kPreVote, MessageType::kAppendResponse};
    Message m = base(rng.pick(types), from, t);
    const raft::Term terms[] = {kU64Max, kTermMax + 1, kTermMax + 1 + rng.uniform(1ULL << 40)};
    if (rng.chance(1, 4)) {
        m.log_term = rng.pick(terms);  // issue 16's term in another field
    } else {
        m.term = rng.pick(terms);  // issue 16, row 1: a heartbeat of term 2^64-1
    }
    return {m, MessageFault::kTermBeyondMax};
}

HostileMessage term_jump(Rng& rng,
                         raft::NodeId from,
                         const Target& t,
                         const raft::PeerInputLimits& limits) {
    const MessageType types[] = {MessageType::kHeartbeat, MessageType::kAppend, MessageType::kVote,
                                 MessageType::kPreVote, MessageType::kTimeoutNow};
    Message m = base(rng.pick(types), from, t);
    m.term = t.term + limits.term_jump_max + 1 + rng.uniform(1000);
    return {m, MessageFault::kTermJump};
}

HostileMessage index_beyond_max(Rng& rng, raft::NodeId from, const Target& t) {
    Message m = base(MessageType::kHeartbeat, from, t);
    switch (rng.uniform(4)) {
        case 0:
            m.type = MessageType::kVote;
            m.index = kU64Max;  // a candidate with an endless log
            break;
        case 1:
            m.commit = kIndexMax + 1 + rng.uniform(1000);
            break;
        case 2:
            // Entries that would end past kIndexMax.
            m.type = MessageType::kAppend;
            m.index = kIndexMax - 1;
            m.entries = {raft::Entry{.term = t.term, .index = kIndexMax},
                         raft::Entry{.term = t.term, .index = kIndexMax + 1}};
            break;
        default:
            m.type = MessageType::kAppendResponse;
            m.reject = true;
            m.reject_hint = kU64Max;
            break;
    }
    return {m, MessageFault::kIndexBeyondMax};
}

HostileMessage malformed(Rng& rng, raft::NodeId from, const Target& t) {
    Message m = base(MessageType::kAppend, from, t);
    switch (rng.uniform(3)) {
        case 0:
            // A gap between the previous entry and the first new one.
            m.index = t.last_index;
            m.entries = {raft::Entry{.term = t.term, .index = t.last_index + 2}};
            break;
        case 1:
            m.index = t.last_index;
            m.log_term = t.term + 1;  // a previous entry from beyond the leader's own term
            break;
        default:
            m.type = MessageType::kAppendResponse;
            m.reject = true;
            m.index = t.last_index;
            m.reject_hint = t.last_index + 1 + rng.uniform(100);
            break;
    }
    return {m, MessageFault::kMalformed};
}

HostileMessage snapshot_message(Rng& rng, raft::NodeId from, const Target& t) {
    Message m = base(MessageType::kSnapshot, from, t);
    m.snapshot_meta = raft::SnapshotMetadata{
        .index = t.last_index + 1, .term = t.term, .conf_state = small_conf()};
    if (rng.chance(1, 2)) {
        m.snapshot_meta.conf_state.voters.clear();
        for (raft::NodeId id = 1; id <= raft::kConfMembersMax + 1; ++id) {
            m.snapshot_meta.conf_state.voters.push_back(id);
        }
        return {m, MessageFault::kMembersTooMany};
    }
    m.snapshot_size_bytes = rng.uniform(100);
    m.snapshot_offset = m.snapshot_size_bytes + 1 + rng.uniform(100);
    m.snapshot_chunk.assign(1, 'x');  // (= "x" trips a GCC 12 -Wrestrict false alarm)
    return {m, MessageFault::kSnapshotRange};
}

HostileMessage counts(Rng& rng,
                      raft::NodeId from,
                      const Target& t,
                      const raft::PeerInputLimits& limits) {
    if (rng.chance(1, 2)) {
        Message m = base(MessageType::kReadIndex, from, t);
        m.term = 0;  // forwarded: carries no term
        m.context.assign(limits.read_context_bytes_max + 1 + rng.uniform(100), 'c');
        return {m, MessageFault::kContextTooLong};
    }
    Message m = base(MessageType::kAppend, from, t);
    m.index = t.last_index;
    m.log_term = t.term;
    m.entries.resize(limits.entries_per_message_max + 1);
    for (size_t i = 0; i < m.entries.size(); ++i) {
        m.entries[i] = raft::Entry{.term = t.term, .index = t.last_index + 1 + i};
    }
    return {m, MessageFault::kEntriesTooMany};
}

// Claims about the target's own log and rounds that go beyond them.
HostileMessage beyond_state(Rng& rng, raft::NodeId from, const Target& t) {
    if (t.leader && rng.chance(2, 3)) {
        if (rng.chance(1, 2)) {
            Message m = base(MessageType::kAppendResponse, from, t);
            m.index = t.last_index + 1 + rng.uniform(1000);
            return {m, MessageFault::kAckBeyondLog};
        }
        Message m = base(MessageType::kHeartbeatResponse, from, t);
        m.read_round = t.read_round + 1 + rng.uniform(1000);
        return {m, MessageFault::kReadRoundAhead};
    }
    Message m = base(MessageType::kHeartbeat, from, t);
    m.commit = t.last_index + 1 + rng.uniform(1000);
    return {m, MessageFault::kCommitBeyondLog};
}

}  // namespace

HostileMessage make_hostile_message(Rng& rng,
                                    const raft::Raft& target,
                                    raft::NodeId from,
                                    const raft::PeerInputLimits& limits) {
    const Target t{target.id(), target.term(), target.log().last_index(), target.read_round(),
                   target.role() == raft::Role::kLeader};
    RL_ASSERT(from != t.id);
    RL_ASSERT(t.term + limits.term_jump_max < kTermMax);  // so a term jump is not beyond max too
    // The costly one (a message of entries_per_message_max + 1 entries) is the rarest.
    const uint64_t kind = rng.uniform(16);
    HostileMessage h;
    if (kind < 2) {
        h = misaddressed(rng, from, t);
    } else if (kind < 5) {
        h = term_beyond_max(rng, from, t);
    } else if (kind < 7) {
        h = term_jump(rng, from, t, limits);
    } else if (kind < 9) {
        h = index_beyond_max(rng, from, t);
    } else if (kind < 11) {
        h = malformed(rng, from, t);
    } else if (kind < 12) {
        h = snapshot_message(rng, from, t);
    } else if (kind < 13) {
        h = counts(rng, from, t, limits);
    } else {
        h = beyond_state(rng, from, t);
    }
    RL_ASSERT(h.expected != MessageFault::kNone);
    return h;
}

std::string describe(const HostileMessage& hostile) {
    const Message& m = hostile.message;
    if (m.entries.size() <= 4 && m.snapshot_meta.conf_state.voters.size() <= 8 &&
        m.context.size() <= 40) {
        return fmt::format("{} (expect {})", m, raft::to_string(hostile.expected));
    }
    return fmt::format(
        "{}->{} {} term={} with {} entries, {} voters, a {}-byte context (expect {})", m.from, m.to,
        m.type, m.term, m.entries.size(), m.snapshot_meta.conf_state.voters.size(),
        m.context.size(), raft::to_string(hostile.expected));
}

}  // namespace raftlock::sim
