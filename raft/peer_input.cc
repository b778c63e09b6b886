#include "raft/peer_input.h"

#include <fmt/format.h>

#include "base/assert.h"
#include "raft/conf_change.h"

namespace raftlock::raft {

namespace {

MessageCheck fail(MessageFault fault, std::string reason) {
    RL_ASSERT(fault != MessageFault::kNone);
    RL_ASSERT(!reason.empty());
    return MessageCheck{fault, std::move(reason)};
}

MessageCheck check_address(const Message& m, const ReceiverView& self) {
    if (m.to != self.id) {
        return fail(MessageFault::kMisaddressed,
                    fmt::format("addressed to node {}, not to this node ({})", m.to, self.id));
    }
    if (m.from == kNoNode || m.from == self.id) {
        return fail(MessageFault::kMisaddressed, fmt::format("sent from node {}", m.from));
    }
    return {};
}

// Counts and sizes, checked before anything walks the entries or the configuration.
MessageCheck check_counts(const Message& m, const PeerInputLimits& limits) {
    if (m.entries.size() > limits.entries_per_message_max) {
        return fail(MessageFault::kEntriesTooMany,
                    fmt::format("{} entries, more than {}", m.entries.size(),
                                limits.entries_per_message_max));
    }
    if (m.context.size() > limits.read_context_bytes_max) {
        return fail(MessageFault::kContextTooLong,
                    fmt::format("a context of {} bytes, more than {}", m.context.size(),
                                limits.read_context_bytes_max));
    }
    // The same bounds as a configuration entry's decoder (conf_change.cc), list by list.
    const ConfState& conf = m.snapshot_meta.conf_state;
    if (conf.voters.size() > kConfMembersMax || conf.learners.size() > kConfMembersMax ||
        conf.addresses.size() > kConfMembersMax) {
        return fail(MessageFault::kMembersTooMany,
                    fmt::format("a configuration of {} voters, {} learners and {} addresses; at "
                                "most {} of each",
                                conf.voters.size(), conf.learners.size(), conf.addresses.size(),
                                kConfMembersMax));
    }
    for (const auto& [id, address] : conf.addresses) {
        if (address.size() > kConfAddressBytesMax) {
            return fail(MessageFault::kMalformed,
                        fmt::format("an address of {} bytes for node {}, more than {}",
                                    address.size(), id, kConfAddressBytesMax));
        }
    }
    return {};
}

MessageCheck check_terms(const Message& m,
                         const ReceiverView& self,
                         const PeerInputLimits& limits) {
    const struct {
        const char* name;
        Term value;
    } terms[] = {
        {"term", m.term}, {"log term", m.log_term}, {"snapshot term", m.snapshot_meta.term}};
    for (const auto& t : terms) {
        if (t.value > kTermMax) {
            return fail(
                MessageFault::kTermBeyondMax,
                fmt::format("{} {} is above the largest term {}", t.name, t.value, kTermMax));
        }
    }
    // Both sides are at most kTermMax here, so the difference cannot wrap.
    if (m.term > self.term && m.term - self.term > limits.term_jump_max) {
        return fail(MessageFault::kTermJump,
                    fmt::format("term {} is more than {} above this node's term {}", m.term,
                                limits.term_jump_max, self.term));
    }
    return {};
}

MessageCheck check_indexes(const Message& m) {
    // An append's entries follow m.index: the last of them must fit too (their count is bounded
    // already, so the subtraction cannot wrap).
    const Index index_max =
        m.type == MessageType::kAppend ? kIndexMax - m.entries.size() : kIndexMax;
    const struct {
        const char* name;
        Index value;
        Index max;
    } indexes[] = {
        // kTransferLeader carries a node id in `index`, not an index.
        {"index", m.type == MessageType::kTransferLeader ? 0 : m.index, index_max},
        {"commit index", m.commit, kIndexMax},
        {"hint index", m.reject_hint, kIndexMax},
        {"snapshot index", m.snapshot_meta.index, kIndexMax},
    };
    for (const auto& i : indexes) {
        if (i.value > i.max) {
            return fail(MessageFault::kIndexBeyondMax,
                        fmt::format("{} {} is above {}", i.name, i.value, i.max));
        }
    }
    return {};
}

// An append's entries follow its previous entry without gaps; their terms never decrease and
// never exceed the leader's term, nor does the previous entry's; configuration entries decode.
// (Only a leader's log is bounded by its term. Any other node may hold entries of a term above its
// own: a store may make entries durable before the hard state of the same Ready, and a crash in
// between keeps the one without the other (raft/raw_node.h); its votes and rejections then carry
// a log term above their term. Found by the simulator, seed 858.)
MessageCheck check_append_entries(const Message& m) {
    if (m.log_term > m.term) {
        return fail(MessageFault::kMalformed, fmt::format("previous log term {} above the "
                                                          "message's term {}",
                                                          m.log_term, m.term));
    }
    Term prev_term = m.log_term;
    for (size_t i = 0; i < m.entries.size(); ++i) {
        const Entry& e = m.entries[i];
        if (e.index != m.index + 1 + i) {
            return fail(MessageFault::kMalformed,
                        fmt::format("entry {} has index {}, not {}", i, e.index, m.index + 1 + i));
        }
        if (e.term < prev_term || e.term > m.term) {
            return fail(MessageFault::kMalformed,
                        fmt::format("entry {} has term {}, outside [{}, {}]", e.index, e.term,
                                    prev_term, m.term));
        }
        if (e.type == EntryType::kConfChange && !decode_conf_change(e.data).ok()) {
            return fail(MessageFault::kMalformed,
                        fmt::format("entry {} is a configuration that does not decode", e.index));
        }
        prev_term = e.term;
    }
    return {};
}

MessageCheck check_snapshot_chunk(const Message& m) {
    const SnapshotMetadata& meta = m.snapshot_meta;
    if (meta.index == 0 || meta.term > m.term || !valid_conf_state(meta.conf_state)) {
        return fail(MessageFault::kMalformed,
                    fmt::format("snapshot metadata {}/{} with an invalid configuration or a term "
                                "above the message's {}",
                                meta.term, meta.index, m.term));
    }
    if (m.snapshot_offset > m.snapshot_size_bytes ||
        m.snapshot_chunk.size() > m.snapshot_size_bytes - m.snapshot_offset) {
        return fail(MessageFault::kSnapshotRange,
                    fmt::format("a chunk of {} bytes at offset {} of a snapshot of {} bytes",
                                m.snapshot_chunk.size(), m.snapshot_offset, m.snapshot_size_bytes));
    }
    return {};
}

// Fields of one message that contradict each other.
MessageCheck check_shape(const Message& m) {
    switch (m.type) {
        case MessageType::kAppend:
            return check_append_entries(m);
        case MessageType::kSnapshot:
            return check_snapshot_chunk(m);
        case MessageType::kAppendResponse:
            if (m.reject && m.reject_hint > m.index) {
                return fail(MessageFault::kMalformed,
                            fmt::format("rejects index {} with a hint above it ({})", m.index,
                                        m.reject_hint));
            }
            return {};
        default:
            return {};
    }
}

// Claims about our own log and rounds, which a peer of our term can only repeat, never exceed.
MessageCheck check_against_state(const Message& m, const ReceiverView& self) {
    const bool leader_of_this_term = self.role == Role::kLeader && m.term == self.term;
    if (leader_of_this_term && m.type == MessageType::kAppendResponse && !m.reject &&
        m.index > self.last_index) {
        // Counting it would commit entries that do not exist.
        return fail(MessageFault::kAckBeyondLog,
                    fmt::format("acknowledges index {}, beyond this node's last index {}", m.index,
                                self.last_index));
    }
    if (leader_of_this_term && m.type == MessageType::kHeartbeatResponse &&
        m.read_round > self.read_round) {
        // Counting it would serve a read before a quorum confirmed this leader.
        return fail(MessageFault::kReadRoundAhead,
                    fmt::format("confirms read round {}, but this node started only {}",
                                m.read_round, self.read_round));
    }
    if (m.type == MessageType::kHeartbeat && m.term >= self.term && m.commit > self.last_index) {
        // A leader commits on a follower only what the follower acknowledged holding.
        return fail(MessageFault::kCommitBeyondLog,
                    fmt::format("commits index {}, beyond this node's last index {}", m.commit,
                                self.last_index));
    }
    return {};
}

}  // namespace

std::string_view to_string(MessageFault fault) {
    switch (fault) {
        case MessageFault::kNone:
            return "ok";
        case MessageFault::kMisaddressed:
            return "misaddressed";
        case MessageFault::kMalformed:
            return "malformed";
        case MessageFault::kTermBeyondMax:
            return "term_beyond_max";
        case MessageFault::kTermJump:
            return "term_jump";
        case MessageFault::kIndexBeyondMax:
            return "index_beyond_max";
        case MessageFault::kEntriesTooMany:
            return "entries_too_many";
        case MessageFault::kMembersTooMany:
            return "members_too_many";
        case MessageFault::kContextTooLong:
            return "context_too_long";
        case MessageFault::kSnapshotRange:
            return "snapshot_range";
        case MessageFault::kAckBeyondLog:
            return "ack_beyond_log";
        case MessageFault::kCommitBeyondLog:
            return "commit_beyond_log";
        case MessageFault::kReadRoundAhead:
            return "read_round_ahead";
        case MessageFault::kCount:
            break;
    }
    RL_PANIC("not a message fault");
}

MessageCheck check_message(const Message& m,
                           const ReceiverView& self,
                           const PeerInputLimits& limits) {
    RL_ASSERT(self.id != kNoNode);
    RL_ASSERT(self.term <= kTermMax);
    RL_ASSERT(self.last_index <= kIndexMax);
    MessageCheck check = check_address(m, self);
    if (check.ok()) {
        check = check_counts(m, limits);
    }
    if (check.ok()) {
        check = check_terms(m, self, limits);
    }
    if (check.ok()) {
        check = check_indexes(m);
    }
    if (check.ok()) {
        check = check_shape(m);
    }
    if (check.ok()) {
        check = check_against_state(m, self);
    }
    return check;
}

}  // namespace raftlock::raft
