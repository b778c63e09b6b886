#pragma once

// The SQL mode's lock table (docs/decisions/0006-sql-mode.md): every lock a SQL session can hold or
// wait for — PostgreSQL advisory locks (one bigint, or two int4s: separate key spaces), MySQL named
// locks (GET_LOCK), row locks (SELECT ... FOR UPDATE / FOR SHARE, UPDATE, DELETE) and the locks an
// uncommitted INSERT holds on its unique values — with FIFO waits, deadlines and deadlock
// detection.
//
// It runs inside the replicated state machine, so it is a pure value type: no clock (cluster time
// comes in as `now_ms` and deadlines), every container ordered, and the same calls give the same
// state, the same outcomes and the same events on every replica.
//
// Model:
// - An owner is a SQL session (SessionId). It holds a key in one or more *holds*, one per
//   (strength, scope), each with a count: session-level holds stack (lock twice, unlock twice);
//   transaction-level holds are counted too but only ever released all at once.
// - Shared is compatible with shared; exclusive with nothing held by another owner. An owner's own
//   holds never conflict with its new request. Hence at rest an exclusive holder is the only
//   holder of its key.
// - A request is granted at once when no other owner holds the key in a conflicting strength and
//   either the queue is empty or the owner already holds the key (PostgreSQL: "If a session
//   already holds a given advisory lock, additional requests by it will always succeed, even if
//   other sessions are awaiting the lock"). Otherwise it waits at the tail of the key's FIFO queue.
// - Upgrade: an owner that holds the key shared and asks for it exclusive while others hold it
//   shared waits for them, at the *head* of the queue (ahead of waiters that queued behind its
//   shared hold, as PostgreSQL queues a waiter ahead of requests that conflict with what it holds:
//   otherwise the upgrade and an exclusive waiter would wait for each other). Two owners that both
//   hold shared and both want exclusive wait for each other: the second gets kDeadlock.
// - Grants (strict FIFO): whenever holds or waits of a key go away, its queue is walked from the
//   head and every waiter compatible with the current holders is granted, up to the first one that
//   is not; no waiter ever barges past an incompatible one. So a run of shared waiters at the head
//   is granted together, and a new shared request waits behind a queued exclusive one.
// - Deadlock: the wait-for graph has an edge from a waiting owner W (waiting on key K) to every
//   other owner holding K in a strength conflicting with W's request, and to every owner queued
//   ahead of W on K with a conflicting strength. A request that would wait fails with kDeadlock,
//   changing nothing, when an owner it would wait for reaches the requester through these edges
//   (the engine answers SQLSTATE 40P01). Found when the request would wait, not after a timeout.

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/byte_io.h"
#include "statemachine/types.h"

namespace raftlock::statemachine::sql {

// The key spaces: the same name in two spaces names two different locks.
enum class LockSpace : uint8_t {
    kAdvisory = 1,  // pg_advisory_*(bigint): name is the key in decimal, e.g. "-42"
    kAdvisoryPair,  // pg_advisory_*(int4, int4): name is "key1,key2" in decimal, e.g. "1,-2"
    kNamed,         // GET_LOCK(name, timeout): name as the engine normalises it
    kRow,           // row locks: the engine's (table, row id) key
    kUniqueKey,     // an uncommitted INSERT's unique value: the engine's (table, column, value) key
};
inline constexpr uint8_t kLockSpaceMin = static_cast<uint8_t>(LockSpace::kAdvisory);
inline constexpr uint8_t kLockSpaceMax = static_cast<uint8_t>(LockSpace::kUniqueKey);

// Every space, for release_all at the end of a transaction or a session; and the two advisory
// spaces, for pg_advisory_unlock_all().
inline constexpr std::array<LockSpace, 5> kEveryLockSpace = {
    LockSpace::kAdvisory, LockSpace::kAdvisoryPair, LockSpace::kNamed, LockSpace::kRow,
    LockSpace::kUniqueKey};
inline constexpr std::array<LockSpace, 2> kAdvisoryLockSpaces = {LockSpace::kAdvisory,
                                                                 LockSpace::kAdvisoryPair};

struct LockKey {
    LockSpace space = LockSpace::kAdvisory;
    std::string name;  // at most kLockKeyBytesMax bytes; opaque to the table

    // Ordered by (space, name): the order of snapshots, listings and release_all's events.
    auto operator<=>(const LockKey&) const = default;
};

// Keys of the advisory spaces in their canonical text form (pg_advisory_lock(42) and
// pg_advisory_lock(0, 42) are different locks, as in PostgreSQL).
LockKey advisory_key(int64_t key);
LockKey advisory_pair_key(int32_t key1, int32_t key2);

enum class LockStrength : uint8_t { kShared = 0, kExclusive };
enum class LockScope : uint8_t { kSession = 0, kTransaction };

// Limits on what input can grow. They shape replicated state, so every replica must use the same
// values: LockLimits{} (the defaults) everywhere but in tests.
inline constexpr size_t kLockKeyBytesMax = 4096;           // a key's name
inline constexpr size_t kLockKeysPerOwnerMax = 10000;      // keys one owner holds (or would hold)
inline constexpr size_t kLockWaitersPerKeyMax = 10000;     // one key's queue
inline constexpr size_t kLockKeysMax = 1000000;            // keys held or waited for, in total
inline constexpr uint32_t kLockHoldCountMax = 2147483647;  // one hold's count (PostgreSQL: int32)

struct LockLimits {
    size_t key_bytes_max = kLockKeyBytesMax;
    size_t keys_per_owner_max = kLockKeysPerOwnerMax;
    size_t waiters_per_key_max = kLockWaitersPerKeyMax;
    size_t keys_max = kLockKeysMax;
    uint32_t hold_count_max = kLockHoldCountMax;
};

struct LockRequest {
    SessionId owner = kNoSession;  // != kNoSession
    LockKey key;
    LockStrength strength = LockStrength::kExclusive;
    LockScope scope = LockScope::kSession;
    uint64_t ticket = 0;     // the engine's id of the statement; comes back with its grant/timeout
    TimeMs deadline_ms = 0;  // >= 0; 0: wait without a deadline (lock_timeout = 0, GET_LOCK(n, -1))
};

enum class AcquireOutcome : uint8_t {
    kGranted,   // held now (one more count of the hold)
    kWaiting,   // queued; a LockGrant or a LockTimeout with the request's ticket follows later
    kBusy,      // not grantable now and the caller would not wait; nothing changed
    kDeadlock,  // waiting would close a cycle of waits; nothing changed (SQLSTATE 40P01)
    kLimit,     // a LockLimits bound would be exceeded; nothing changed
};

struct LockGrant {
    SessionId owner = kNoSession;
    uint64_t ticket = 0;
    LockKey key;
    LockStrength strength = LockStrength::kExclusive;
    LockScope scope = LockScope::kSession;
    friend bool operator==(const LockGrant&, const LockGrant&) = default;
};

struct LockTimeout {
    SessionId owner = kNoSession;
    uint64_t ticket = 0;
    LockKey key;
    friend bool operator==(const LockTimeout&, const LockTimeout&) = default;
};

// What one call changed for statements other than the caller's own: waits granted (in grant
// order) and waits that timed out (in expiry order). Calls append; the caller clears. Each list is
// bounded by the number of waits in the table.
struct LockEvents {
    std::vector<LockGrant> grants;
    std::vector<LockTimeout> timeouts;
    bool empty() const { return grants.empty() && timeouts.empty(); }
};

// One hold, for listings (pg_locks-style) and tests.
struct LockHold {
    SessionId owner = kNoSession;
    LockKey key;
    LockStrength strength = LockStrength::kExclusive;
    LockScope scope = LockScope::kSession;
    uint32_t count = 0;  // in [1, hold_count_max]
    friend bool operator==(const LockHold&, const LockHold&) = default;
};

// One queued request, for listings and tests.
struct LockWait {
    SessionId owner = kNoSession;
    uint64_t ticket = 0;
    LockStrength strength = LockStrength::kExclusive;
    LockScope scope = LockScope::kSession;
    TimeMs deadline_ms = 0;
    friend bool operator==(const LockWait&, const LockWait&) = default;
};

class LockTable final {
public:
    explicit LockTable(LockLimits limits = {}) : limits_(limits) {}

    // Asks for one count of the hold (request.owner, key, strength, scope). Grantable when no
    // other owner holds the key in a conflicting strength and either nobody is queued or the owner
    // already holds the key (re-entry never queues, in any scope). The outcome, checked in this
    // order:
    // - kLimit for a name longer than key_bytes_max;
    // - grantable: kGranted, or kLimit when the grant would exceed keys_max (a new key),
    //   keys_per_owner_max (a key new to the owner) or hold_count_max (the hold's count);
    // - not grantable: kBusy when `wait` is false (NOWAIT, SKIP LOCKED, pg_try_*, GET_LOCK(n, 0));
    //   kLimit when the queue is at waiters_per_key_max or the owner at keys_per_owner_max;
    //   kDeadlock when waiting would close a cycle of waits; else the request is queued (an
    //   upgrade at the head, anything else at the tail) and kWaiting.
    // Every outcome but kGranted and kWaiting leaves the table unchanged. A waiting request ends
    // with a LockGrant or LockTimeout carrying its ticket in the events of a later call, or with
    // cancel_wait / end_owner.
    // Preconditions (asserted): owner != kNoSession, deadline_ms >= 0, valid enum values, and the
    // owner is not waiting (a session runs one statement at a time).
    AcquireOutcome acquire(const LockRequest& request, bool wait);

    // Releases one count of the owner's session-level hold of `strength` on `key`
    // (pg_advisory_unlock[_shared], RELEASE_LOCK), then grants what that frees. False, changing
    // nothing, when there is no such count: PostgreSQL then warns "you don't own a lock of type
    // ExclusiveLock" (or ShareLock) and returns false; transaction-level holds are never released
    // here. Like release_all, it works for a waiting owner too and leaves its wait as it is.
    bool release(SessionId owner, const LockKey& key, LockStrength strength, LockEvents& events);

    // Releases every count of the owner's holds of `scope` on keys of the listed spaces (an empty
    // list releases nothing), key by key in key order, granting what each frees. Transaction end:
    // (kTransaction, kEveryLockSpace); pg_advisory_unlock_all(): (kSession, kAdvisoryLockSpaces);
    // RELEASE_ALL_LOCKS(): (kSession, {kNamed}). Returns the number of counts released (what
    // RELEASE_ALL_LOCKS returns).
    size_t release_all(SessionId owner,
                       LockScope scope,
                       std::span<const LockSpace> spaces,
                       LockEvents& events);

    // Removes the owner's wait, if any (statement cancelled, statement_timeout), and grants what
    // that frees (waiters behind it may become grantable). Returns the removed wait's ticket;
    // nullopt when the owner was not waiting.
    std::optional<uint64_t> cancel_wait(SessionId owner, LockEvents& events);

    // The session ended: cancels its wait and releases all it holds in every space and scope.
    void end_owner(SessionId owner, LockEvents& events);

    // Every wait whose deadline (non-zero) is <= now_ms ends: a LockTimeout each, in (deadline,
    // owner) order, and after each one the queue behind it may be granted. A wait granted by an
    // earlier timeout's release is granted, not timed out. Work is bounded by the number of waits.
    void expire_waits(TimeMs now_ms, LockEvents& events);
    // The earliest non-zero deadline of a wait; nullopt when no wait has one.
    std::optional<TimeMs> next_deadline_ms() const;

    // True when nobody holds the key (IS_FREE_LOCK). A key that nobody holds has no waiters.
    bool is_free(const LockKey& key) const;
    // The owners holding the key, in the order they first took their current holds (IS_USED_LOCK
    // answers the first).
    std::vector<SessionId> holders(const LockKey& key) const;
    // The count of one hold; 0 when it is not held.
    uint32_t held_count(SessionId owner,
                        const LockKey& key,
                        LockStrength strength,
                        LockScope scope) const;
    // The owner's holds, in (key, strength, scope) order.
    std::vector<LockHold> holds_of(SessionId owner) const;
    // The key's queue, head first.
    std::vector<LockWait> waiters(const LockKey& key) const;
    // The key the owner waits for, if it waits.
    std::optional<LockKey> waiting_for(SessionId owner) const;
    // Keys held (or waited for, which implies held) by anyone.
    size_t key_count() const { return keys_.size(); }
    const LockLimits& limits() const { return limits_; }

    // A deterministic serialisation (version byte, keys in order, holders in grant order, queues
    // head first): equal tables write equal bytes.
    void write(Writer& w) const;
    // Reads what write() wrote into this table, which must be empty. False on malformed input,
    // on input that exceeds this table's limits or breaks an invariant; the table is then
    // unspecified and must be discarded. Never crashes on any input.
    bool read(Reader& r);
    // Empty when every invariant holds, else a sentence naming the first broken one: the owner
    // index agrees with the keys (holds and waits), the deadline index with the waits; no key
    // without holders; counts in [1, hold_count_max]; an exclusive holder holds alone; the head
    // of every queue is blocked by a holder (nothing grantable at rest); only the head may hold
    // the key it waits for (an upgrade); every limit holds, and a waiter's grant would keep
    // keys_per_owner_max.
    std::string check_invariants() const;

    friend std::string to_string(const LockTable& table);

private:
    // Counts of one owner's holds on one key, indexed by hold_index(strength, scope).
    struct Holder {
        uint64_t grant_seq = 0;  // orders holders() by when they first took their current holds
        std::array<uint32_t, 4> counts{};
    };
    struct Waiter {
        SessionId owner = kNoSession;
        uint64_t ticket = 0;
        LockStrength strength = LockStrength::kExclusive;
        LockScope scope = LockScope::kSession;
        TimeMs deadline_ms = 0;
    };
    struct KeyState {
        std::map<SessionId, Holder> holders;  // never empty
        // Queue sequence -> waiter, head first. Tail sequences count up from kQueueSeqStart and
        // upgrades take the head's sequence minus one, so sequences never wrap in practice.
        std::map<uint64_t, Waiter> queue;
        uint64_t next_grant_seq = 0;
        uint64_t next_tail_seq = 0;
    };
    struct WaitRef {
        LockKey key;
        uint64_t queue_seq = 0;
    };
    struct OwnerState {
        std::set<LockKey> held;  // keys with a Holder of this owner
        std::optional<WaitRef> wait;
    };
    // Per key, what a deadlock search has already put on its stack (see push_blockers).
    struct Expansion {
        bool all_holders = false;
        bool exclusive_holder = false;
        uint64_t exclusive_ahead_of = 0;  // every waiter with a lower sequence was pushed
        uint64_t shared_ahead_of = 0;     // every exclusive waiter with a lower sequence was pushed
    };
    using KeyIt = std::map<LockKey, KeyState>::iterator;

    static constexpr uint64_t kQueueSeqStart = uint64_t{1} << 62;

    // Holds are counted per (strength, scope); the four combinations index Holder::counts.
    static constexpr size_t hold_index(LockStrength strength, LockScope scope) {
        return static_cast<size_t>(strength) * 2 + static_cast<size_t>(scope);
    }
    static constexpr LockStrength hold_strength(size_t index) {
        return static_cast<LockStrength>(index / 2);
    }
    static constexpr LockScope hold_scope(size_t index) {
        return static_cast<LockScope>(index % 2);
    }
    static bool valid_space(uint8_t space) {
        return space >= kLockSpaceMin && space <= kLockSpaceMax;
    }
    static bool holds_exclusive(const Holder& holder);
    static bool holds_any(const Holder& holder);

    bool conflicts(const KeyState& ks, SessionId owner, LockStrength strength) const;
    size_t keys_held_by(SessionId owner) const;
    void add_hold(KeyIt it, SessionId owner, LockStrength strength, LockScope scope);
    void enqueue(KeyIt it, const LockRequest& request, bool at_head);
    size_t drop_holds(KeyIt it, SessionId owner, std::span<const size_t> hold_indexes);
    Waiter remove_wait(SessionId owner, KeyIt* key_it);
    void grant_waiters(KeyIt it, LockEvents& events);
    void forget_owner_if_idle(SessionId owner);
    bool would_deadlock(SessionId requester,
                        const KeyState& ks,
                        LockStrength strength,
                        bool at_head) const;
    void push_blockers(const KeyState& ks,
                       SessionId self,
                       LockStrength strength,
                       uint64_t ahead_of_seq,
                       Expansion* memo,
                       std::vector<SessionId>& stack) const;
    bool read_key(Reader& r);
    std::string check_key(const LockKey& key, const KeyState& ks) const;
    std::string check_owners() const;
    const Waiter* find_waiter(const WaitRef& ref) const;  // nullptr when not queued

    LockLimits limits_;
    std::map<LockKey, KeyState> keys_;
    std::map<SessionId, OwnerState> owners_;            // owners holding or waiting for a key
    std::set<std::pair<TimeMs, SessionId>> deadlines_;  // (deadline, owner) of waits with one
};

// Stable text forms for logs and tests:
//   key      advisory:42  advisory-pair:1,2  named:"x"  row:"accounts/17"  unique-key:"t/c/v"
//   grant    grant s7 #12 advisory:42 exclusive/session
//   timeout  timeout s7 #12 advisory:42
//   table    one line per key: advisory:42 held=[s7 exclusive/session*2] queue=[s8 shared/session
//            #3 @1500]
// Quoted names escape '"' and '\' with a backslash and bytes outside printable ASCII as \xNN.
std::string to_string(LockSpace space);
std::string to_string(const LockKey& key);
std::string to_string(LockStrength strength);
std::string to_string(LockScope scope);
std::string to_string(AcquireOutcome outcome);
std::string to_string(const LockGrant& grant);
std::string to_string(const LockTimeout& timeout);
std::string to_string(const LockEvents& events);  // grants then timeouts, separated by "; "
std::string to_string(const LockTable& table);    // "" for an empty table

}  // namespace raftlock::statemachine::sql
