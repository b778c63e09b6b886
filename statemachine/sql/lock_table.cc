#include "statemachine/sql/lock_table.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::statemachine::sql {

namespace {

constexpr std::array<size_t, 4> kEveryHold = {0, 1, 2, 3};

bool valid_strength(uint8_t strength) {
    return strength <= static_cast<uint8_t>(LockStrength::kExclusive);
}
bool valid_scope(uint8_t scope) {
    return scope <= static_cast<uint8_t>(LockScope::kTransaction);
}

}  // namespace

LockKey advisory_key(int64_t key) {
    return LockKey{LockSpace::kAdvisory, std::to_string(key)};
}

LockKey advisory_pair_key(int32_t key1, int32_t key2) {
    return LockKey{LockSpace::kAdvisoryPair, std::to_string(key1) + "," + std::to_string(key2)};
}

bool LockTable::holds_exclusive(const Holder& holder) {
    return holder.counts[hold_index(LockStrength::kExclusive, LockScope::kSession)] > 0 ||
           holder.counts[hold_index(LockStrength::kExclusive, LockScope::kTransaction)] > 0;
}

bool LockTable::holds_any(const Holder& holder) {
    return std::any_of(holder.counts.begin(), holder.counts.end(),
                       [](uint32_t c) { return c > 0; });
}

// --- acquiring -------------------------------------------------------------------------------

AcquireOutcome LockTable::acquire(const LockRequest& request, bool wait) {
    const SessionId owner = request.owner;
    RL_ASSERT(owner != kNoSession);
    RL_ASSERT(request.deadline_ms >= 0);
    RL_ASSERT(valid_space(static_cast<uint8_t>(request.key.space)));
    RL_ASSERT(valid_strength(static_cast<uint8_t>(request.strength)));
    RL_ASSERT(valid_scope(static_cast<uint8_t>(request.scope)));
    RL_ASSERT_MSG(!waiting_for(owner).has_value(), "a session waits for one lock at a time");
    if (request.key.name.size() > limits_.key_bytes_max) {
        return AcquireOutcome::kLimit;
    }
    auto it = keys_.find(request.key);
    if (it == keys_.end()) {
        if (keys_.size() >= limits_.keys_max || keys_held_by(owner) >= limits_.keys_per_owner_max) {
            return AcquireOutcome::kLimit;
        }
        it = keys_.emplace(request.key, KeyState{}).first;
        it->second.next_tail_seq = kQueueSeqStart;
        add_hold(it, owner, request.strength, request.scope);
        return AcquireOutcome::kGranted;
    }
    KeyState& ks = it->second;
    const auto holder = ks.holders.find(owner);
    const bool reentry = holder != ks.holders.end();
    const bool blocked = conflicts(ks, owner, request.strength) || (!reentry && !ks.queue.empty());
    if (!blocked) {
        if (reentry) {
            if (holder->second.counts[hold_index(request.strength, request.scope)] >=
                limits_.hold_count_max) {
                return AcquireOutcome::kLimit;
            }
        } else if (keys_held_by(owner) >= limits_.keys_per_owner_max) {
            return AcquireOutcome::kLimit;
        }
        add_hold(it, owner, request.strength, request.scope);
        return AcquireOutcome::kGranted;
    }
    // An owner that holds the key is blocked only when it holds it shared, asks for it exclusive
    // and someone else holds it too: an upgrade.
    if (reentry) {
        RL_ASSERT(request.strength == LockStrength::kExclusive);
        RL_ASSERT(!holds_exclusive(holder->second));
    }
    if (!wait) {
        return AcquireOutcome::kBusy;
    }
    if (ks.queue.size() >= limits_.waiters_per_key_max ||
        (!reentry && keys_held_by(owner) >= limits_.keys_per_owner_max)) {
        return AcquireOutcome::kLimit;
    }
    if (would_deadlock(owner, ks, request.strength, reentry)) {
        return AcquireOutcome::kDeadlock;
    }
    enqueue(it, request, reentry);
    return AcquireOutcome::kWaiting;
}

// Shared conflicts with another owner's exclusive hold, exclusive with any hold of another owner.
// An exclusive holder holds alone (an invariant), so both tests look at one or two holders only.
bool LockTable::conflicts(const KeyState& ks, SessionId owner, LockStrength strength) const {
    const bool own = ks.holders.contains(owner);
    if (strength == LockStrength::kExclusive) {
        return ks.holders.size() > (own ? 1u : 0u);
    }
    if (ks.holders.size() != 1 || own) {
        return false;
    }
    return holds_exclusive(ks.holders.begin()->second);
}

size_t LockTable::keys_held_by(SessionId owner) const {
    const auto it = owners_.find(owner);
    return it == owners_.end() ? 0 : it->second.held.size();
}

void LockTable::add_hold(KeyIt it, SessionId owner, LockStrength strength, LockScope scope) {
    KeyState& ks = it->second;
    auto [holder, inserted] = ks.holders.try_emplace(owner);
    if (inserted) {
        holder->second.grant_seq = ks.next_grant_seq++;
        const bool new_key = owners_[owner].held.insert(it->first).second;
        RL_ASSERT(new_key);
    }
    uint32_t& count = holder->second.counts[hold_index(strength, scope)];
    RL_ASSERT(count < limits_.hold_count_max);
    count++;
}

void LockTable::enqueue(KeyIt it, const LockRequest& request, bool at_head) {
    KeyState& ks = it->second;
    uint64_t seq = 0;
    if (at_head && !ks.queue.empty()) {
        seq = ks.queue.begin()->first - 1;
        RL_ASSERT(seq > 0);
    } else {
        seq = ks.next_tail_seq++;
        RL_ASSERT(seq < std::numeric_limits<uint64_t>::max());
    }
    const Waiter waiter{request.owner, request.ticket, request.strength, request.scope,
                        request.deadline_ms};
    const bool inserted = ks.queue.emplace(seq, waiter).second;
    RL_ASSERT(inserted);
    OwnerState& os = owners_[request.owner];
    RL_ASSERT(!os.wait.has_value());
    os.wait = WaitRef{it->first, seq};
    if (request.deadline_ms != 0) {
        deadlines_.emplace(request.deadline_ms, request.owner);
    }
}

// --- deadlock detection ----------------------------------------------------------------------

// A depth-first search of the wait-for graph from the owners the request would wait for; the
// request deadlocks when the search reaches the requester. Each owner is expanded once (visited
// set) and has at most one out-going wait, and each key's holders and queue are scanned at most
// about twice over all expansions (the Expansion memo), so a search costs O(owners + holds +
// waits) log factors, not O(edges): a queue of n exclusive waiters has n^2/2 edges.
bool LockTable::would_deadlock(SessionId requester,
                               const KeyState& ks,
                               LockStrength strength,
                               bool at_head) const {
    // Edges point at holders and at waiters queued ahead. A request queued at the tail by an
    // owner that holds nothing has neither kind pointing at it, so it closes no cycle.
    if (!at_head && keys_held_by(requester) == 0) {
        return false;
    }
    std::vector<SessionId> stack;
    const uint64_t ahead_of_seq = at_head ? 0 : std::numeric_limits<uint64_t>::max();
    // The requester's own edges are not memoised: they exclude the requester, which later
    // expansions of the same key must find.
    push_blockers(ks, requester, strength, ahead_of_seq, nullptr, stack);
    std::set<SessionId> visited;
    std::map<const KeyState*, Expansion> expanded;
    while (!stack.empty()) {
        const SessionId owner = stack.back();
        stack.pop_back();
        if (owner == requester) {
            return true;
        }
        if (!visited.insert(owner).second) {
            continue;
        }
        const auto os = owners_.find(owner);
        RL_ASSERT(os != owners_.end());
        if (!os->second.wait.has_value()) {
            continue;
        }
        const WaitRef& ref = *os->second.wait;
        const KeyState& waited = keys_.at(ref.key);
        const Waiter& waiter = waited.queue.at(ref.queue_seq);
        push_blockers(waited, owner, waiter.strength, ref.queue_seq, &expanded[&waited], stack);
    }
    return false;
}

// Pushes the owners a request of `self` for `strength` on this key waits for: conflicting
// holders other than `self`, and conflicting waiters with a sequence below `ahead_of_seq`. With a
// memo, skips what an earlier expansion of the same key pushed: those owners are on the stack or
// visited already. (Excluding `self` does not spoil the memo: `self` is visited when expanded.)
void LockTable::push_blockers(const KeyState& ks,
                              SessionId self,
                              LockStrength strength,
                              uint64_t ahead_of_seq,
                              Expansion* memo,
                              std::vector<SessionId>& stack) const {
    const bool exclusive = strength == LockStrength::kExclusive;
    if (memo == nullptr || !(memo->all_holders || (!exclusive && memo->exclusive_holder))) {
        for (const auto& [owner, holder] : ks.holders) {
            if (owner != self && (exclusive || holds_exclusive(holder))) {
                stack.push_back(owner);
            }
        }
        if (memo != nullptr) {
            (exclusive ? memo->all_holders : memo->exclusive_holder) = true;
        }
    }
    uint64_t from_seq = 0;
    if (memo != nullptr) {
        from_seq = exclusive ? memo->exclusive_ahead_of
                             : std::max(memo->exclusive_ahead_of, memo->shared_ahead_of);
    }
    for (auto w = ks.queue.lower_bound(from_seq); w != ks.queue.end() && w->first < ahead_of_seq;
         ++w) {
        if (exclusive || w->second.strength == LockStrength::kExclusive) {
            stack.push_back(w->second.owner);
        }
    }
    if (memo != nullptr) {
        uint64_t& done = exclusive ? memo->exclusive_ahead_of : memo->shared_ahead_of;
        done = std::max(done, ahead_of_seq);
    }
}

// --- releasing -------------------------------------------------------------------------------

bool LockTable::release(SessionId owner,
                        const LockKey& key,
                        LockStrength strength,
                        LockEvents& events) {
    const auto it = keys_.find(key);
    if (it == keys_.end()) {
        return false;
    }
    const auto holder = it->second.holders.find(owner);
    if (holder == it->second.holders.end()) {
        return false;
    }
    uint32_t& count = holder->second.counts[hold_index(strength, LockScope::kSession)];
    if (count == 0) {
        return false;
    }
    count--;
    if (count == 0) {
        // The hold is gone, and with it perhaps the owner's last hold on the key: either may let
        // waiters in (an exclusive hold gone leaves shared ones that admit shared waiters).
        drop_holds(it, owner, {});
        grant_waiters(it, events);
    }
    return true;
}

size_t LockTable::release_all(SessionId owner,
                              LockScope scope,
                              std::span<const LockSpace> spaces,
                              LockEvents& events) {
    const auto os = owners_.find(owner);
    if (os == owners_.end()) {
        return 0;
    }
    // Copied first: releasing may forget keys and the owner's entry.
    std::vector<LockKey> keys;
    for (const LockKey& key : os->second.held) {
        if (std::find(spaces.begin(), spaces.end(), key.space) != spaces.end()) {
            keys.push_back(key);
        }
    }
    const std::array<size_t, 2> indexes = {hold_index(LockStrength::kShared, scope),
                                           hold_index(LockStrength::kExclusive, scope)};
    size_t released = 0;
    for (const LockKey& key : keys) {
        const auto it = keys_.find(key);
        RL_ASSERT(it != keys_.end());
        const size_t n = drop_holds(it, owner, indexes);
        if (n > 0) {
            released += n;
            grant_waiters(it, events);
        }
    }
    return released;
}

std::optional<uint64_t> LockTable::cancel_wait(SessionId owner, LockEvents& events) {
    if (!waiting_for(owner).has_value()) {
        return std::nullopt;
    }
    KeyIt it;
    const Waiter waiter = remove_wait(owner, &it);
    grant_waiters(it, events);
    return waiter.ticket;
}

void LockTable::end_owner(SessionId owner, LockEvents& events) {
    cancel_wait(owner, events);
    const auto os = owners_.find(owner);
    if (os == owners_.end()) {
        return;
    }
    const std::vector<LockKey> keys(os->second.held.begin(), os->second.held.end());
    for (const LockKey& key : keys) {
        const auto it = keys_.find(key);
        RL_ASSERT(it != keys_.end());
        drop_holds(it, owner, kEveryHold);
        grant_waiters(it, events);
    }
    RL_ASSERT(!owners_.contains(owner));
}

void LockTable::expire_waits(TimeMs now_ms, LockEvents& events) {
    // Each pass removes one deadline (the timed-out wait's; grants remove theirs too), so the loop
    // ends after at most as many passes as there are waits with a deadline.
    while (!deadlines_.empty() && deadlines_.begin()->first <= now_ms) {
        const SessionId owner = deadlines_.begin()->second;
        KeyIt it;
        const LockKey key = owners_.at(owner).wait->key;
        const Waiter waiter = remove_wait(owner, &it);
        events.timeouts.push_back(LockTimeout{owner, waiter.ticket, key});
        grant_waiters(it, events);
    }
}

std::optional<TimeMs> LockTable::next_deadline_ms() const {
    if (deadlines_.empty()) {
        return std::nullopt;
    }
    return deadlines_.begin()->first;
}

// Zeroes the owner's counts at `hold_indexes` and returns how many counts that was; when the owner
// then holds nothing on the key, it stops being a holder. Does not grant: the caller does.
size_t LockTable::drop_holds(KeyIt it, SessionId owner, std::span<const size_t> hold_indexes) {
    KeyState& ks = it->second;
    const auto holder = ks.holders.find(owner);
    RL_ASSERT(holder != ks.holders.end());
    size_t released = 0;
    for (const size_t index : hold_indexes) {
        released += std::exchange(holder->second.counts[index], 0);
    }
    if (!holds_any(holder->second)) {
        ks.holders.erase(holder);
        const size_t erased = owners_.at(owner).held.erase(it->first);
        RL_ASSERT(erased == 1);
        forget_owner_if_idle(owner);
    }
    return released;
}

// Removes the owner's wait from its queue and the indexes, and returns it with its key.
LockTable::Waiter LockTable::remove_wait(SessionId owner, KeyIt* key_it) {
    OwnerState& os = owners_.at(owner);
    RL_ASSERT(os.wait.has_value());
    const auto it = keys_.find(os.wait->key);
    RL_ASSERT(it != keys_.end());
    const auto w = it->second.queue.find(os.wait->queue_seq);
    RL_ASSERT(w != it->second.queue.end());
    const Waiter waiter = w->second;
    RL_ASSERT(waiter.owner == owner);
    it->second.queue.erase(w);
    if (waiter.deadline_ms != 0) {
        const size_t erased = deadlines_.erase({waiter.deadline_ms, owner});
        RL_ASSERT(erased == 1);
    }
    os.wait.reset();
    forget_owner_if_idle(owner);
    *key_it = it;
    return waiter;
}

// Strict FIFO: grants waiters from the head while each is compatible with the holders (the ones
// granted just before it included), and stops at the first that is not. Then forgets the key if
// nobody holds it (an empty holder set leaves no waiter blocked, so the queue is empty too).
void LockTable::grant_waiters(KeyIt it, LockEvents& events) {
    KeyState& ks = it->second;
    while (!ks.queue.empty()) {
        const auto head = ks.queue.begin();
        const Waiter waiter = head->second;
        if (conflicts(ks, waiter.owner, waiter.strength)) {
            break;
        }
        KeyIt same;
        remove_wait(waiter.owner, &same);
        RL_ASSERT(same == it);
        add_hold(it, waiter.owner, waiter.strength, waiter.scope);
        events.grants.push_back(
            LockGrant{waiter.owner, waiter.ticket, it->first, waiter.strength, waiter.scope});
    }
    if (ks.holders.empty()) {
        RL_ASSERT(ks.queue.empty());
        keys_.erase(it);
    }
}

void LockTable::forget_owner_if_idle(SessionId owner) {
    const auto os = owners_.find(owner);
    RL_ASSERT(os != owners_.end());
    if (os->second.held.empty() && !os->second.wait.has_value()) {
        owners_.erase(os);
    }
}

// --- queries ---------------------------------------------------------------------------------

bool LockTable::is_free(const LockKey& key) const {
    return !keys_.contains(key);
}

std::vector<SessionId> LockTable::holders(const LockKey& key) const {
    const auto it = keys_.find(key);
    if (it == keys_.end()) {
        return {};
    }
    std::vector<std::pair<uint64_t, SessionId>> by_grant;
    for (const auto& [owner, holder] : it->second.holders) {
        by_grant.emplace_back(holder.grant_seq, owner);
    }
    std::sort(by_grant.begin(), by_grant.end());
    std::vector<SessionId> owners;
    for (const auto& [seq, owner] : by_grant) {
        owners.push_back(owner);
    }
    return owners;
}

uint32_t LockTable::held_count(SessionId owner,
                               const LockKey& key,
                               LockStrength strength,
                               LockScope scope) const {
    const auto it = keys_.find(key);
    if (it == keys_.end()) {
        return 0;
    }
    const auto holder = it->second.holders.find(owner);
    if (holder == it->second.holders.end()) {
        return 0;
    }
    return holder->second.counts[hold_index(strength, scope)];
}

std::vector<LockHold> LockTable::holds_of(SessionId owner) const {
    std::vector<LockHold> holds;
    const auto os = owners_.find(owner);
    if (os == owners_.end()) {
        return holds;
    }
    for (const LockKey& key : os->second.held) {
        const Holder& holder = keys_.at(key).holders.at(owner);
        for (size_t i = 0; i < holder.counts.size(); i++) {
            if (holder.counts[i] > 0) {
                holds.push_back(
                    LockHold{owner, key, hold_strength(i), hold_scope(i), holder.counts[i]});
            }
        }
    }
    return holds;
}

std::vector<LockWait> LockTable::waiters(const LockKey& key) const {
    std::vector<LockWait> waits;
    const auto it = keys_.find(key);
    if (it == keys_.end()) {
        return waits;
    }
    for (const auto& [seq, w] : it->second.queue) {
        waits.push_back(LockWait{w.owner, w.ticket, w.strength, w.scope, w.deadline_ms});
    }
    return waits;
}

std::optional<LockKey> LockTable::waiting_for(SessionId owner) const {
    const auto os = owners_.find(owner);
    if (os == owners_.end() || !os->second.wait.has_value()) {
        return std::nullopt;
    }
    return os->second.wait->key;
}

}  // namespace raftlock::statemachine::sql
