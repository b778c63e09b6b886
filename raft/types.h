#pragma once

// The Raft core's value types: log entries, persistent state, configurations, snapshots and
// messages. They are plain structs so the core stays free of any serialisation library; the network
// and storage layers encode them at the edges. Every type has a stable text form (text.h).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"

namespace raftlock::raft {

using NodeId = uint64_t;
using Term = uint64_t;
using Index = uint64_t;

// Node ids are positive; 0 means "nobody" (no vote, no known leader).
inline constexpr NodeId kNoNode = 0;

enum class EntryType : uint8_t {
    kNormal,      // application data (possibly empty: the leader's term-start entry)
    kConfChange,  // data = encode_conf_change(...): the change and the configuration it results in
};

struct Entry {
    Term term = 0;
    Index index = 0;
    EntryType type = EntryType::kNormal;
    std::string data;

    friend bool operator==(const Entry&, const Entry&) = default;
};

// Bytes an entry counts for in size limits (message batches, Ready batches, uncommitted budget).
inline uint64_t entry_size_bytes(const Entry& e) {
    return e.data.size() + 16;
}

// The state that must be durable before any message that depends on it leaves the node.
struct HardState {
    Term term = 0;
    NodeId vote = kNoNode;
    Index commit = 0;

    bool empty() const { return term == 0 && vote == kNoNode && commit == 0; }
    friend bool operator==(const HardState&, const HardState&) = default;
};

// A cluster configuration. Both lists are sorted, without duplicates, and disjoint.
struct ConfState {
    std::vector<NodeId> voters;
    std::vector<NodeId> learners;
    // Where members can be reached ("host:port" for raftlockd), opaque to the core: it only keeps
    // them with the configuration so every node, and every snapshot, knows them (as LogCabin's
    // configurations do). Keys are members; a member may have none (the simulator uses none).
    std::map<NodeId, std::string> addresses;

    bool empty() const { return voters.empty() && learners.empty(); }
    friend bool operator==(const ConfState&, const ConfState&) = default;
};

// One-server-at-a-time membership changes (Raft thesis §4.1). Promoting a learner is kAddVoter on
// a node that is currently a learner; demoting a voter is kAddLearner on a voter.
enum class ConfChangeType : uint8_t { kAddVoter, kAddLearner, kRemoveNode };

struct ConfChange {
    ConfChangeType type = ConfChangeType::kAddVoter;
    NodeId node_id = kNoNode;
    // For an add: the node's address, recorded in the configuration. Empty keeps the one it has.
    std::string address;

    friend bool operator==(const ConfChange&, const ConfChange&) = default;
};

struct SnapshotMetadata {
    Index index = 0;       // last entry covered by the snapshot
    Term term = 0;         // its term
    ConfState conf_state;  // the configuration in effect at `index`

    friend bool operator==(const SnapshotMetadata&, const SnapshotMetadata&) = default;
};

struct Snapshot {
    SnapshotMetadata metadata;
    std::string data;  // opaque application state

    bool empty() const { return metadata.index == 0; }
};

enum class MessageType : uint8_t {
    kPropose,            // follower -> leader: forwarded proposal (entries)
    kAppend,             // leader -> follower: AppendEntries
    kAppendResponse,     // follower -> leader
    kHeartbeat,          // leader -> follower: commit + ReadIndex round
    kHeartbeatResponse,  // follower -> leader
    kVote,               // candidate -> all: RequestVote
    kVoteResponse,
    kPreVote,  // pre-candidate -> all: "would you vote for me?" (thesis §9.6); changes no state
    kPreVoteResponse,
    kSnapshot,           // leader -> follower: one chunk of InstallSnapshot
    kSnapshotResponse,   // follower -> leader: bytes of the snapshot received so far
    kReadIndex,          // follower -> leader: forwarded ReadIndex request
    kReadIndexResponse,  // leader -> follower: the read index for the request's context
    kTransferLeader,     // follower -> leader: forwarded leadership transfer request
    kTimeoutNow,         // leader -> transferee: start an election now (thesis §3.10)
};

// One message between two nodes. Fields not used by a type keep their defaults; text.h prints only
// the fields each type uses.
struct Message {
    MessageType type = MessageType::kAppend;
    NodeId from = kNoNode;
    NodeId to = kNoNode;
    Term term = 0;  // 0 only for kPropose/kReadIndex/kTransferLeader, which carry no term

    // kAppend: term/index of the entry before `entries`. kVote/kPreVote: the candidate's last
    // entry. kAppendResponse: on success the follower's match index; on reject the rejected index.
    Term log_term = 0;
    Index index = 0;
    std::vector<Entry> entries;
    Index commit = 0;

    // kAppendResponse/kVoteResponse/kPreVoteResponse/kSnapshotResponse.
    bool reject = false;
    // On a rejected append: the follower's hint for the leader's next probe, an index <= the
    // follower's last index, with `log_term` = its term there (fast back-off, thesis §5.3).
    Index reject_hint = 0;

    // kTransferLeader: the transferee is carried in `index`.
    // kVote/kPreVote sent because of a leadership transfer: overrides leader stickiness.
    bool transfer = false;

    // kHeartbeat/kHeartbeatResponse: the ReadIndex confirmation round (thesis §6.4).
    uint64_t read_round = 0;
    // kReadIndex/kReadIndexResponse: the client's opaque request context.
    std::string context;

    // kSnapshot: a chunk of the snapshot described by `snapshot_meta`, at `snapshot_offset`, of a
    // snapshot of `snapshot_size_bytes` in all. kSnapshotResponse: `snapshot_meta.index` and the
    // bytes received so far in `snapshot_offset`.
    SnapshotMetadata snapshot_meta;
    uint64_t snapshot_size_bytes = 0;
    uint64_t snapshot_offset = 0;
    std::string snapshot_chunk;
};

// The result of a ReadIndex request: once the application has applied up to `index`, a read
// served from its state is linearizable (thesis §6.4).
struct ReadState {
    Index index = 0;
    std::string context;

    friend bool operator==(const ReadState&, const ReadState&) = default;
};

enum class Role : uint8_t { kFollower, kPreCandidate, kCandidate, kLeader };

// Volatile state, reported when it changes (not persisted).
struct SoftState {
    NodeId leader = kNoNode;
    Role role = Role::kFollower;

    friend bool operator==(const SoftState&, const SoftState&) = default;
};

enum class ErrorCode : uint8_t {
    kProposalDropped,     // no leader known, a transfer is in progress, or the budget is used up
    kConfChangeRejected,  // another change is pending, the leader has not committed in its term...
    kInvalidArgument,
    kCompacted,    // storage: the requested index is below the first available entry
    kUnavailable,  // storage: the requested index is above the last entry
    kSnapshotTemporarilyUnavailable,  // storage: no snapshot yet; the leader retries later
};

struct Error {
    ErrorCode code;
    std::string message;
};

// Ok or an Error, for operations with nothing to return.
class [[nodiscard]] Status {
public:
    Status() = default;
    Status(ErrorCode code, std::string message) : failed_(true), error_{code, std::move(message)} {}

    static Status ok_status() { return Status(); }
    bool ok() const { return !failed_; }
    explicit operator bool() const { return ok(); }
    ErrorCode code() const {
        RL_ASSERT(failed_);
        return error_.code;
    }
    const std::string& message() const { return error_.message; }

private:
    bool failed_ = false;
    Error error_{ErrorCode::kInvalidArgument, ""};
};

template <typename T>
using StorageResult = Result<T, Error>;

}  // namespace raftlock::raft
