#pragma once

// The Redis keyspace: the state machine's Redis module (DESIGN.md §4 "Modes", docs/redis-mode.md).
//
// Strings, hashes, lists, sets and sorted sets with TTLs, the script cache, and the at-most-once
// table of the servers that submit Redis writes. Pure and deterministic like the rest of the state
// machine: time is cluster time, passed in; every container is ordered.
//
// - Expiry: a key whose deadline is <= now is gone. advance(), which the state machine calls
//   before every entry, deletes such keys (so no read or write ever sees one), and
//   next_expiry_ms() lets the leader propose a no-op when a deadline passes on an idle cluster.
// - Key order is (64-bit hash of the name, name). KEYS and SCAN return keys in that order, and a
//   SCAN cursor is a hash: a key that exists for the whole iteration is returned, whatever else is
//   added or deleted meanwhile (Redis's SCAN guarantee).
// - Transactions (MULTI/EXEC, docs/redis-mode.md): EXEC is one entry that runs its commands in a
//   row. WATCH is served by a node at some applied index; EXEC carries (key, index) and aborts
//   when the key changed after it. So every key records the index of the last entry that changed
//   it (where Redis calls signalModifiedKey: a write that leaves a key as it was, like SETNX on an
//   existing key, is no change), and a deleted key leaves the index of its deletion in one of
//   kDeletionBuckets buckets chosen by its hash: a missing key counts as changed when another key
//   of its bucket was deleted after the watch. That may abort an EXEC that Redis would run (the
//   client retries, as after any abort), never runs one that Redis would abort, and keeps memory
//   bounded. The records start at the first entry of command format 8 (tracked_since), before
//   which no EXEC can exist: a replica that restored a snapshot written before format 8 and one
//   that replayed the same entries then hold the same state, and a watch older than that aborts.
// - At most once: Redis writes carry no client session. The server that submits one stamps it with
//   its origin (a random id per process) and an increasing sequence number; a write whose number is
//   not above the last one applied from its origin was already applied, or overtaken by a later
//   one, and is refused without effect. That makes it safe for a server to resubmit its pending
//   writes to a new leader (Raft thesis §6.3, with the server as the client).

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/byte_io.h"
#include "statemachine/redis/value.h"
#include "statemachine/types.h"

namespace raftlock::statemachine::redis {

inline constexpr size_t kValueBytesMax = 4u << 20;  // a string value, after APPEND too
inline constexpr size_t kScriptsMax = 10000;        // the script cache
inline constexpr size_t kOriginsMax = 4096;         // the at-most-once table (least recent goes)
// One EVAL's redis.call budget: commands, and bytes of their arguments (every call after either
// is spent fails, so a script cannot grow the keyspace without bound in one entry).
inline constexpr size_t kScriptCallsMax = 10000;
inline constexpr size_t kScriptCallBytesMax = 16u << 20;
// Where deleted keys leave the index of their deletion (a power of two; see the header comment).
inline constexpr size_t kDeletionBuckets = 4096;

class Keyspace final {
public:
    Keyspace() : deletions_(kDeletionBuckets, 0) {}

    // Before every entry the state machine applies, at `index` and cluster time `now_ms`: deletes
    // every key whose deadline is <= now_ms, and records changes as made by `index` until the
    // next call. `format` is the entry's command format.
    void advance(Index index, TimeMs now_ms, uint8_t format);
    // Applies one replicated command at cluster time `now_ms` (writes and reads alike); a script
    // it runs (EVAL, EVALSHA) stops after `script_instructions_max` instructions. `format` is the
    // command format of the entry that carries it: a command added in a later format is unknown
    // there, as it was to the servers that wrote and applied that entry.
    Value apply(const Argv& argv, TimeMs now_ms, uint64_t script_instructions_max, uint8_t format);
    // EXEC: a null array when a watched key changed after its watch, else an array of the
    // commands' replies (an error among them stops nothing: Redis does not roll back). The scripts
    // share one budget of `script_instructions_max` instructions, so that the entry's work stays
    // bounded whatever the number of scripts.
    Value exec(const Transaction& transaction,
               TimeMs now_ms,
               uint64_t script_instructions_max,
               uint8_t format);
    // Whether an entry after `index` changed `key` (or may have: see the header comment).
    bool changed_since(std::string_view key, Index index) const;
    // What the last apply published (PUBLISH, or redis.call('publish') in a script), in order;
    // taking them leaves none. The keyspace keeps no record of a publication: a subscriber that
    // is not connected when its node applies the entry never sees it (Redis's pub/sub delivers at
    // most once too).
    std::vector<Publication> take_published() { return std::exchange(published_, {}); }
    // A read-only command (Route::kRead) against the current state, served after ReadIndex.
    Value query(const Argv& argv, TimeMs now_ms) const;

    // At most once: true when (origin, seq) is new, and records it at `index`.
    bool admit(uint64_t origin, uint64_t seq, Index index);

    std::optional<TimeMs> next_expiry_ms() const;

    size_t key_count() const { return keys_.size(); }
    size_t script_count() const { return scripts_.size(); }

    void write(Writer& w) const;
    // Replaces nothing on failure: reads into *this, which the caller created empty. Lists, sets
    // and sorted sets only when `collections` (snapshot version 6 on), the records of changes only
    // when `changes` (version 7 on). `last_applied`: the snapshot's.
    bool read(Reader& r, bool collections, bool changes, Index last_applied);
    // Empty when the expiry index matches the keys, no change is recorded after the entry being
    // applied, and every limit holds.
    std::string check_invariants() const;

    struct KeyName {
        uint64_t hash = 0;
        std::string name;
        auto operator<=>(const KeyName&) const = default;
    };
    using Hash = std::map<std::string, std::string>;
    using List = std::deque<std::string>;
    using Set = std::set<std::string>;
    // A sorted set: each member's score, and the members in Redis's order (by score, then by the
    // member's bytes). Scores are never NaN.
    struct ZSet {
        using Order = std::set<std::pair<double, std::string>>;
        std::map<std::string, double> scores;
        Order order;
        bool empty() const { return scores.empty(); }
        size_t size() const { return scores.size(); }
    };
    struct Entry {
        std::variant<std::string, Hash, List, Set, ZSet> value;
        TimeMs expire_at_ms = 0;  // 0: no TTL
        Index changed_at = 0;     // the last entry that changed the value or the TTL (0: unknown)
    };
    struct Origin {
        uint64_t last_seq = 0;
        Index last_index = 0;
    };

private:
    friend class Commands;

    // What a change made now records: the entry's index, or 0 before the first entry of command
    // format 8. Nothing is recorded before it, so that a replica that replayed entries of older
    // formats holds the same state as one that restored an older snapshot, byte for byte.
    Index change_index() const { return tracked_since_ == 0 ? 0 : index_; }
    // Deletes the key at `it`, recording the deletion in its bucket for WATCH.
    void erase_at(std::map<KeyName, Entry>::iterator it);
    // One command of the entry being applied (apply and exec have set it up).
    Value run(const Argv& argv, TimeMs now_ms);

    std::map<KeyName, Entry> keys_;
    std::set<std::pair<TimeMs, KeyName>> expiry_;  // (deadline, key) of every key with a TTL
    std::map<std::string, std::string> scripts_;   // sha1 hex -> body
    std::map<uint64_t, Origin> origins_;
    // The index of the last deletion of a key in each bucket (by key_hash % kDeletionBuckets).
    std::vector<Index> deletions_;
    Index tracked_since_ = 0;  // the first entry of command format 8 on (0: none yet)
    Index index_ = 0;          // the entry being applied (or the last one)
    // What the scripts of the entry being applied may still spend.
    uint64_t script_instructions_left_ = 0;
    // The entry's command format (set by apply and exec for their duration).
    uint8_t format_ = 0;
    std::vector<Publication> published_;  // by the entry being applied
};

// The key order's hash: 64-bit FNV-1a (stable across builds and machines).
uint64_t key_hash(std::string_view name);

}  // namespace raftlock::statemachine::redis
