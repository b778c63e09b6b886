#pragma once

// The replicated application, two applications behind one log:
// - a small map of integer registers with client sessions, so a command retried under the same
//   (client, seq) takes effect once (LogCabin-style exactly-once sessions);
// - the real lock state machine (statemachine/StateMachine: sessions, locks, the node tree),
//   whose entries carry a one-byte tag (kLockCommandTag) before the bytes of
//   statemachine::encode_command. Register commands are ASCII text and never start with it.
// Every applied entry folds into a running digest. At every kLockHashEveryEntries-th index the
// digest also covers the lock state machine's state hash, so two replicas with the same digest
// there have applied the same sequence and hold the same lock state; a replica restored from a
// snapshot recomputes the hash from the restored state machine. (Hashing serialises the whole
// state, too costly for every entry; the outputs of every lock entry are compared instead, see
// lock_checker.h.)

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "raft/types.h"
#include "statemachine/output.h"
#include "statemachine/state_machine.h"

namespace raftlock::sim {

enum class OpKind : uint8_t { kWrite, kCas };

struct Command {
    uint32_t client = 0;
    uint64_t seq = 0;
    OpKind kind = OpKind::kWrite;
    uint32_t key = 0;
    int64_t value = 0;     // kWrite: the new value; kCas: the value to set
    int64_t expected = 0;  // kCas: the value the register must hold
};

std::string encode_command(const Command& command);
std::optional<Command> decode_command(std::string_view data);

// The state hash of a fresh lock state machine (computed once).
uint64_t empty_lock_state_hash();

// The lock state hash joins the digest at the indexes that are multiples of this.
inline constexpr raft::Index kLockHashEveryEntries = 16;

// The first byte of an entry that carries a lock state machine command.
inline constexpr char kLockCommandTag = '\x01';
// The entry data for a lock state machine command (tag + statemachine::encode_command bytes).
std::string wrap_lock_command(const statemachine::Command& command);

// What applying one entry did.
struct ApplyOutcome {
    std::optional<Command> command;  // set when the entry carried one
    bool executed = false;           // first application of (client, seq): it changed the state
    bool duplicate = false;          // (client, seq) seen before: the cached result is returned
    bool ok = false;                 // kWrite: true; kCas: whether the register held `expected`
    // Set when the entry carried a lock state machine command: what applying it produced.
    std::optional<statemachine::ApplyResult> lock;
};

class SimApp {
public:
    // A fresh application (nothing applied) or one restored from snapshot data.
    explicit SimApp(const statemachine::Config& lock_config = {}) : sm_(lock_config) {}
    static std::optional<SimApp> from_snapshot(raft::Index index,
                                               std::string_view data,
                                               const statemachine::Config& lock_config = {});

    // Precondition: entry.index == applied() + 1.
    ApplyOutcome apply(const raft::Entry& entry);
    std::string snapshot_data() const;

    raft::Index applied() const { return applied_; }
    // The running digest of the applied entries, combined with the lock state hash when
    // applied() is a multiple of kLockHashEveryEntries.
    uint64_t digest() const;
    const statemachine::StateMachine& locks() const { return sm_; }
    // nullopt: never written.
    std::optional<int64_t> read(uint32_t key) const;
    // The configuration as of applied(), from the configuration entries applied (or the
    // snapshot's metadata, which the node supplies after a restore).
    const raft::ConfState& conf() const { return conf_; }
    void set_conf(const raft::ConfState& conf) { conf_ = conf; }

private:
    struct Session {
        uint64_t last_seq = 0;
        bool last_ok = false;
    };

    ApplyOutcome apply_entry(const raft::Entry& entry);
    void update_lock_hash();

    raft::Index applied_ = 0;
    uint64_t digest_ = 0;  // of the entries applied (stored in snapshots)
    statemachine::StateMachine sm_;
    // sm_.state_hash() as of applied(), valid when applied() % kLockHashEveryEntries == 0.
    uint64_t lock_hash_ = empty_lock_state_hash();
    std::map<uint32_t, int64_t> registers_;
    std::map<uint32_t, Session> sessions_;
    raft::ConfState conf_;
};

// The digest after folding in one entry (shared with the checker's expectations).
uint64_t fold_digest(uint64_t digest, const raft::Entry& entry);
// Mixes v into the hash h (the digest's mixing step).
uint64_t mix_hash(uint64_t h, uint64_t v);
uint64_t hash_bytes(std::string_view bytes);

}  // namespace raftlock::sim
