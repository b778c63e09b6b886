#include "net/raft_codec.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "base/assert.h"
#include "raft/conf_change.h"

namespace raftlock::net {

namespace {

// The last enumerator of each enum: a value above it came from a peer that speaks another version
// (or from garbage) and must not be cast into the enum.
constexpr uint32_t kMessageTypeMax = static_cast<uint32_t>(raft::MessageType::kTimeoutNow);
constexpr uint32_t kEntryTypeMax = static_cast<uint32_t>(raft::EntryType::kConfChange);

void conf_state_to_proto(const raft::ConfState& cs, proto::ConfState& out) {
    out.mutable_voters()->Add(cs.voters.begin(), cs.voters.end());
    out.mutable_learners()->Add(cs.learners.begin(), cs.learners.end());
    out.mutable_addresses()->insert(cs.addresses.begin(), cs.addresses.end());
}

raft::ConfState conf_state_from_proto(const proto::ConfState& cs) {
    raft::ConfState out;
    out.voters.assign(cs.voters().begin(), cs.voters().end());
    out.learners.assign(cs.learners().begin(), cs.learners().end());
    out.addresses.insert(cs.addresses().begin(), cs.addresses().end());
    return out;
}

// The counts a message's decoding would allocate for, checked before it does.
std::optional<DecodeError> check_counts(const proto::RaftMessage& message,
                                        const raft::PeerInputLimits& limits) {
    if (message.type() > kMessageTypeMax) {
        return DecodeError{raft::MessageFault::kMalformed,
                           fmt::format("unknown message type {}", message.type())};
    }
    if (static_cast<uint64_t>(message.entries_size()) > limits.entries_per_message_max) {
        return DecodeError{raft::MessageFault::kEntriesTooMany,
                           fmt::format("{} entries, more than {}", message.entries_size(),
                                       limits.entries_per_message_max)};
    }
    const proto::ConfState& conf = message.snapshot_meta().conf_state();
    const auto lists_max = static_cast<uint64_t>(
        std::max({conf.voters_size(), conf.learners_size(), conf.addresses_size()}));
    if (lists_max > raft::kConfMembersMax) {
        return DecodeError{raft::MessageFault::kMembersTooMany,
                           fmt::format("a configuration list of {} members, more than {}",
                                       lists_max, raft::kConfMembersMax)};
    }
    return std::nullopt;
}

}  // namespace

void to_proto(const raft::Message& message, proto::RaftMessage& out) {
    out.Clear();
    out.set_type(static_cast<uint32_t>(message.type));
    out.set_from(message.from);
    out.set_to(message.to);
    out.set_term(message.term);
    out.set_log_term(message.log_term);
    out.set_index(message.index);
    out.mutable_entries()->Reserve(static_cast<int>(message.entries.size()));
    for (const raft::Entry& e : message.entries) {
        proto::Entry* pe = out.add_entries();
        pe->set_term(e.term);
        pe->set_index(e.index);
        pe->set_type(static_cast<uint32_t>(e.type));
        pe->set_data(e.data);
    }
    out.set_commit(message.commit);
    out.set_reject(message.reject);
    out.set_reject_hint(message.reject_hint);
    out.set_transfer(message.transfer);
    out.set_read_round(message.read_round);
    out.set_context(message.context);
    // Only kSnapshot/kSnapshotResponse use the metadata; leaving it unset elsewhere keeps the
    // common AppendEntries frame small.
    const raft::SnapshotMetadata& meta = message.snapshot_meta;
    if (meta.index != 0 || meta.term != 0 || !meta.conf_state.empty()) {
        proto::SnapshotMetadata* pm = out.mutable_snapshot_meta();
        pm->set_index(meta.index);
        pm->set_term(meta.term);
        conf_state_to_proto(meta.conf_state, *pm->mutable_conf_state());
    }
    out.set_snapshot_size_bytes(message.snapshot_size_bytes);
    out.set_snapshot_offset(message.snapshot_offset);
    out.set_snapshot_chunk(message.snapshot_chunk);
}

Result<raft::Message, DecodeError> decode_raft_message(const proto::RaftMessage& message,
                                                       const raft::PeerInputLimits& limits) {
    if (std::optional<DecodeError> error = check_counts(message, limits)) {
        return *std::move(error);
    }
    raft::Message out;
    out.type = static_cast<raft::MessageType>(message.type());
    out.from = message.from();
    out.to = message.to();
    out.term = message.term();
    out.log_term = message.log_term();
    out.index = message.index();
    out.entries.reserve(static_cast<size_t>(message.entries_size()));
    for (int i = 0; i < message.entries_size(); ++i) {
        const proto::Entry& pe = message.entries(i);
        if (pe.type() > kEntryTypeMax) {
            return DecodeError{raft::MessageFault::kMalformed,
                               fmt::format("entries[{}]: unknown entry type {}", i, pe.type())};
        }
        out.entries.push_back(raft::Entry{.term = pe.term(),
                                          .index = pe.index(),
                                          .type = static_cast<raft::EntryType>(pe.type()),
                                          .data = pe.data()});
    }
    out.commit = message.commit();
    out.reject = message.reject();
    out.reject_hint = message.reject_hint();
    out.transfer = message.transfer();
    out.read_round = message.read_round();
    out.context = message.context();
    if (message.has_snapshot_meta()) {
        const proto::SnapshotMetadata& pm = message.snapshot_meta();
        out.snapshot_meta.index = pm.index();
        out.snapshot_meta.term = pm.term();
        out.snapshot_meta.conf_state = conf_state_from_proto(pm.conf_state());
    }
    out.snapshot_size_bytes = message.snapshot_size_bytes();
    out.snapshot_offset = message.snapshot_offset();
    out.snapshot_chunk = message.snapshot_chunk();
    RL_ASSERT(out.entries.size() == static_cast<size_t>(message.entries_size()));
    return out;
}

Result<raft::Message, std::string> from_proto(const proto::RaftMessage& message) {
    Result<raft::Message, DecodeError> decoded =
        decode_raft_message(message, raft::PeerInputLimits{});
    if (!decoded.ok()) {
        return decoded.error().reason;
    }
    return std::move(decoded).value();
}

}  // namespace raftlock::net
