#pragma once

// The replicated application: a small map of integer registers with client sessions, so a
// command retried under the same (client, seq) takes effect once (LogCabin-style exactly-once
// sessions). Every applied entry also folds into a running digest; two replicas with the same
// digest at the same index have applied the same sequence.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "raft/types.h"

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

// What applying one entry did.
struct ApplyOutcome {
    std::optional<Command> command;  // set when the entry carried one
    bool executed = false;           // first application of (client, seq): it changed the state
    bool duplicate = false;          // (client, seq) seen before: the cached result is returned
    bool ok = false;                 // kWrite: true; kCas: whether the register held `expected`
};

class RegisterApp {
public:
    // A fresh application (nothing applied) or one restored from snapshot data.
    RegisterApp() = default;
    static std::optional<RegisterApp> from_snapshot(raft::Index index, std::string_view data);

    // Precondition: entry.index == applied() + 1.
    ApplyOutcome apply(const raft::Entry& entry);
    std::string snapshot_data() const;

    raft::Index applied() const { return applied_; }
    uint64_t digest() const { return digest_; }
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

    raft::Index applied_ = 0;
    uint64_t digest_ = 0;
    std::map<uint32_t, int64_t> registers_;
    std::map<uint32_t, Session> sessions_;
    raft::ConfState conf_;
};

// The digest after folding in one entry (shared with the checker's expectations).
uint64_t fold_digest(uint64_t digest, const raft::Entry& entry);
uint64_t hash_bytes(std::string_view bytes);

}  // namespace raftlock::sim
