#pragma once

// Range checks on the messages peers send (issue 16, docs/decisions/0007-peer-input-validation.md).
// A peer is trusted to speak the protocol, never to keep our invariants: every term, index, count
// and size a message carries is checked against fixed bounds and against the receiver's own state
// before the message may change anything. A message that fails one check is dropped whole, and the
// caller learns which check and why (MessageCheck), to count it and log it.
//
// Pure: no I/O, no clock; the same message and view always get the same verdict.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "raft/types.h"

namespace raftlock::raft {

// The largest term and the largest index the core ever holds. No real cluster gets near them (at
// one election per millisecond, 2^62 terms take 146 million years), and they leave room below
// 2^64, so term + 1 and index + entries never wrap. A peer's message above either is dropped.
inline constexpr Term kTermMax = Term{1} << 62;
inline constexpr Index kIndexMax = Index{1} << 62;

// The limits a message from a peer must respect (raft::Config::peer_input). Each is far above what
// a correct peer sends, so only a broken (or hostile) one is ever refused.
struct PeerInputLimits {
    // How far above the receiver's term a message's term may be. Terms grow by one per election;
    // a node that slept through 2^32 elections (136 years at one per second) is not coming back.
    // Bounds how fast a broken peer can push the cluster's term toward kTermMax.
    Term term_jump_max = Term{1} << 32;
    // Entries in one AppendEntries or forwarded proposal. A leader packs entries up to
    // Config::max_size_per_msg_bytes, each counting at least 16 bytes, so 1 MiB sends at most
    // 65,537; Config::validate keeps the two consistent.
    uint64_t entries_per_message_max = uint64_t{1} << 18;
    // Bytes of a ReadIndex request's context (the server's are a few bytes: "r123").
    uint64_t read_context_bytes_max = 1024;
};

// Why a message was dropped. Names (to_string) are stable: they label the metric
// raftlock_peer_messages_dropped_total{reason=...} and appear in docs/operations.md.
enum class MessageFault : uint8_t {
    kNone,
    kMisaddressed,     // not for us, from nobody, or from ourselves
    kMalformed,        // fields that contradict each other (entries out of order, ...)
    kTermBeyondMax,    // a term above kTermMax
    kTermJump,         // a term more than term_jump_max above ours
    kIndexBeyondMax,   // an index above kIndexMax (or entries that would end above it)
    kEntriesTooMany,   // more than entries_per_message_max entries
    kMembersTooMany,   // a configuration with more than kConfMembersMax members
    kContextTooLong,   // a ReadIndex context above read_context_bytes_max
    kSnapshotRange,    // a snapshot chunk outside the snapshot's announced size
    kAckBeyondLog,     // leader: a follower acknowledges entries we never had
    kCommitBeyondLog,  // follower: a heartbeat commits entries we do not hold
    kReadRoundAhead,   // leader: a follower confirms a ReadIndex round not yet started
    kCount,
};

inline constexpr size_t kMessageFaultCount = static_cast<size_t>(MessageFault::kCount);

// "term_beyond_max", ...; "ok" for kNone.
std::string_view to_string(MessageFault fault);

struct MessageCheck {
    MessageFault fault = MessageFault::kNone;
    // For the log, when not ok: the field, its value and the bound it broke.
    std::string reason;

    bool ok() const { return fault == MessageFault::kNone; }
};

// What the receiver knows of itself that a message is checked against.
struct ReceiverView {
    NodeId id = kNoNode;
    Term term = 0;
    Role role = Role::kFollower;
    Index last_index = 0;
    uint64_t read_round = 0;  // the latest ReadIndex round this node started as leader
};

// The verdict on message `m` arriving at `self`. Checks fixed bounds first (cheap, and before
// anything walks the entries), then the shape of the message, then, for messages of our own term,
// its claims about our log. A message of an older term passes these (Raft treats it as stale).
MessageCheck check_message(const Message& m,
                           const ReceiverView& self,
                           const PeerInputLimits& limits);

}  // namespace raftlock::raft
