// The lock table's snapshot form, invariant checker and text forms (lock_table.h); the locking
// itself is in lock_table.cc.

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/lock_table.h"

namespace raftlock::statemachine::sql {

namespace {

constexpr uint8_t kSnapshotVersion = 1;

// Every item of a snapshot takes at least one byte: a count above what is left is malformed, and
// so is one above `max`.
uint64_t read_count(Reader& r, uint64_t max) {
    const uint64_t n = r.varint();
    if (n > r.remaining() || n > max) {
        r.fail();
        return 0;
    }
    return n;
}

std::string quoted(std::string_view name) {
    std::string out = "\"";
    for (const char c : name) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(c);
        } else if (byte < 0x20 || byte > 0x7e) {
            out += fmt::format("\\x{:02x}", byte);
        } else {
            out.push_back(c);
        }
    }
    out.push_back('"');
    return out;
}

}  // namespace

// --- snapshot --------------------------------------------------------------------------------

// Format (version 1): u8 version; varint key count; per key in key order: u8 space, bytes name,
// varint holder count (>= 1), per holder in grant order: varint owner and four varint counts
// (shared/session, shared/transaction, exclusive/session, exclusive/transaction); varint waiter
// count, per waiter head first: varint owner, varint ticket, u8 strength, u8 scope, svarint
// deadline. Sequences are not written: read() renumbers them in the same order.
void LockTable::write(Writer& w) const {
    w.u8(kSnapshotVersion);
    w.varint(keys_.size());
    for (const auto& [key, ks] : keys_) {
        w.u8(static_cast<uint8_t>(key.space));
        w.bytes(key.name);
        const std::vector<SessionId> order = holders(key);
        w.varint(order.size());
        for (const SessionId owner : order) {
            w.varint(owner);
            for (const uint32_t count : ks.holders.at(owner).counts) {
                w.varint(count);
            }
        }
        w.varint(ks.queue.size());
        for (const auto& [seq, waiter] : ks.queue) {
            w.varint(waiter.owner);
            w.varint(waiter.ticket);
            w.u8(static_cast<uint8_t>(waiter.strength));
            w.u8(static_cast<uint8_t>(waiter.scope));
            w.svarint(waiter.deadline_ms);
        }
    }
}

bool LockTable::read(Reader& r) {
    RL_ASSERT(keys_.empty());
    RL_ASSERT(owners_.empty());
    RL_ASSERT(deadlines_.empty());
    if (r.u8() != kSnapshotVersion) {
        return false;
    }
    for (uint64_t n = read_count(r, limits_.keys_max); r.ok() && n > 0; --n) {
        if (!read_key(r)) {
            return false;
        }
    }
    // The rest (an exclusive holder alone, heads blocked, upgrades at the head, ...) is what the
    // invariant checker checks; data is checked after it is decoded.
    return r.ok() && check_invariants().empty();
}

// Reads one key with its holders and queue, and indexes them. False on anything malformed, out
// of order or beyond a limit.
bool LockTable::read_key(Reader& r) {
    const uint8_t space = r.u8();
    std::string name = r.bytes(limits_.key_bytes_max);
    if (!r.ok() || !valid_space(space)) {
        return false;
    }
    LockKey key{static_cast<LockSpace>(space), std::move(name)};
    if (!keys_.empty() && !(keys_.rbegin()->first < key)) {
        return false;  // keys are written strictly ascending
    }
    const auto it = keys_.emplace_hint(keys_.end(), key, KeyState{});
    KeyState& ks = it->second;
    ks.next_tail_seq = kQueueSeqStart;
    const uint64_t holder_count = read_count(r, std::numeric_limits<uint64_t>::max());
    if (holder_count == 0) {
        return false;
    }
    for (uint64_t i = 0; i < holder_count; i++) {
        const SessionId owner = r.varint();
        Holder holder;
        holder.grant_seq = ks.next_grant_seq++;
        for (uint32_t& count : holder.counts) {
            count = static_cast<uint32_t>(r.varint_in(0, limits_.hold_count_max));
        }
        if (!r.ok() || owner == kNoSession || !holds_any(holder) ||
            !ks.holders.emplace(owner, holder).second) {
            return false;
        }
        OwnerState& os = owners_[owner];
        os.held.insert(key);
        if (os.held.size() > limits_.keys_per_owner_max) {
            return false;
        }
    }
    for (uint64_t n = read_count(r, limits_.waiters_per_key_max); r.ok() && n > 0; --n) {
        Waiter waiter;
        waiter.owner = r.varint();
        waiter.ticket = r.varint();
        waiter.strength = static_cast<LockStrength>(r.varint_in(0, 1));
        waiter.scope = static_cast<LockScope>(r.varint_in(0, 1));
        waiter.deadline_ms = r.svarint();
        if (!r.ok() || waiter.owner == kNoSession || waiter.deadline_ms < 0) {
            return false;
        }
        OwnerState& os = owners_[waiter.owner];
        if (os.wait.has_value()) {
            return false;  // a second wait of one owner
        }
        const uint64_t seq = ks.next_tail_seq++;
        ks.queue.emplace(seq, waiter);
        os.wait = WaitRef{key, seq};
        if (waiter.deadline_ms != 0) {
            deadlines_.emplace(waiter.deadline_ms, waiter.owner);
        }
    }
    return r.ok();
}

// --- invariants ------------------------------------------------------------------------------

std::string LockTable::check_invariants() const {
    if (keys_.size() > limits_.keys_max) {
        return fmt::format("{} keys, more than keys_max {}", keys_.size(), limits_.keys_max);
    }
    for (const auto& [key, ks] : keys_) {
        std::string error = check_key(key, ks);
        if (!error.empty()) {
            return to_string(key) + ": " + error;
        }
    }
    return check_owners();
}

// The key's own invariants, and that the owner and deadline indexes have an entry for each of
// its holders and waiters (check_owners checks the converse).
std::string LockTable::check_key(const LockKey& key, const KeyState& ks) const {
    if (!valid_space(static_cast<uint8_t>(key.space)) || key.name.size() > limits_.key_bytes_max) {
        return "invalid key";
    }
    if (ks.holders.empty()) {
        return "no holder";
    }
    std::set<uint64_t> grant_seqs;
    for (const auto& [owner, holder] : ks.holders) {
        const auto os = owners_.find(owner);
        if (owner == kNoSession || os == owners_.end() || !os->second.held.contains(key)) {
            return fmt::format("holder s{} missing from the owner index", owner);
        }
        if (!holds_any(holder) ||
            std::any_of(holder.counts.begin(), holder.counts.end(),
                        [&](uint32_t c) { return c > limits_.hold_count_max; })) {
            return fmt::format("holder s{} with a count out of range", owner);
        }
        if (holder.grant_seq >= ks.next_grant_seq || !grant_seqs.insert(holder.grant_seq).second) {
            return fmt::format("holder s{} with a bad grant sequence", owner);
        }
        if (holds_exclusive(holder) && ks.holders.size() != 1) {
            return fmt::format("exclusive holder s{} does not hold alone", owner);
        }
    }
    if (ks.queue.size() > limits_.waiters_per_key_max) {
        return "more waiters than waiters_per_key_max";
    }
    for (const auto& [seq, waiter] : ks.queue) {
        const auto os = owners_.find(waiter.owner);
        if (os == owners_.end() || !os->second.wait.has_value() || os->second.wait->key != key ||
            os->second.wait->queue_seq != seq || seq >= ks.next_tail_seq) {
            return fmt::format("waiter s{} missing from the owner index", waiter.owner);
        }
        if (waiter.deadline_ms < 0 ||
            (waiter.deadline_ms != 0 && !deadlines_.contains({waiter.deadline_ms, waiter.owner}))) {
            return fmt::format("waiter s{} missing from the deadline index", waiter.owner);
        }
        const auto holder = ks.holders.find(waiter.owner);
        if (holder != ks.holders.end() &&
            (seq != ks.queue.begin()->first || waiter.strength != LockStrength::kExclusive ||
             holds_exclusive(holder->second))) {
            return fmt::format("waiter s{} holds the key but is not an upgrade at the head",
                               waiter.owner);
        }
    }
    if (!ks.queue.empty()) {
        const Waiter& head = ks.queue.begin()->second;
        if (!conflicts(ks, head.owner, head.strength)) {
            return fmt::format("head waiter s{} is grantable", head.owner);
        }
    }
    return {};
}

const LockTable::Waiter* LockTable::find_waiter(const WaitRef& ref) const {
    const auto it = keys_.find(ref.key);
    if (it == keys_.end()) {
        return nullptr;
    }
    const auto w = it->second.queue.find(ref.queue_seq);
    return w == it->second.queue.end() ? nullptr : &w->second;
}

std::string LockTable::check_owners() const {
    size_t waits_with_deadline = 0;
    for (const auto& [owner, os] : owners_) {
        if (os.held.empty() && !os.wait.has_value()) {
            return fmt::format("owner s{} holds and waits for nothing", owner);
        }
        if (os.held.size() > limits_.keys_per_owner_max) {
            return fmt::format("owner s{} holds more than keys_per_owner_max", owner);
        }
        for (const LockKey& key : os.held) {
            const auto it = keys_.find(key);
            if (it == keys_.end() || !it->second.holders.contains(owner)) {
                return fmt::format("owner s{} indexes {} which it does not hold", owner,
                                   to_string(key));
            }
        }
        if (os.wait.has_value()) {
            const Waiter* waiter = find_waiter(*os.wait);
            if (waiter == nullptr || waiter->owner != owner) {
                return fmt::format("owner s{} indexes a wait that is not queued", owner);
            }
            waits_with_deadline += waiter->deadline_ms != 0 ? 1 : 0;
            // A grant never checks the limit: acquire did, and the owner took nothing since.
            if (!os.held.contains(os.wait->key) && os.held.size() >= limits_.keys_per_owner_max) {
                return fmt::format("owner s{} waits for a key it could not hold", owner);
            }
        }
    }
    // Every waiter with a deadline has its entry (check_key); equal sizes leave no stray entry.
    if (waits_with_deadline != deadlines_.size()) {
        return fmt::format("{} deadline entries for {} waits with a deadline", deadlines_.size(),
                           waits_with_deadline);
    }
    return {};
}

// --- text forms ------------------------------------------------------------------------------

std::string to_string(LockSpace space) {
    switch (space) {
        case LockSpace::kAdvisory:
            return "advisory";
        case LockSpace::kAdvisoryPair:
            return "advisory-pair";
        case LockSpace::kNamed:
            return "named";
        case LockSpace::kRow:
            return "row";
        case LockSpace::kUniqueKey:
            return "unique-key";
    }
    return "?";
}

std::string to_string(const LockKey& key) {
    const bool numeric = key.space == LockSpace::kAdvisory || key.space == LockSpace::kAdvisoryPair;
    return to_string(key.space) + ":" + (numeric ? key.name : quoted(key.name));
}

std::string to_string(LockStrength strength) {
    return strength == LockStrength::kShared ? "shared" : "exclusive";
}

std::string to_string(LockScope scope) {
    return scope == LockScope::kSession ? "session" : "transaction";
}

std::string to_string(AcquireOutcome outcome) {
    switch (outcome) {
        case AcquireOutcome::kGranted:
            return "granted";
        case AcquireOutcome::kWaiting:
            return "waiting";
        case AcquireOutcome::kBusy:
            return "busy";
        case AcquireOutcome::kDeadlock:
            return "deadlock";
        case AcquireOutcome::kLimit:
            return "limit";
    }
    return "?";
}

std::string to_string(const LockGrant& grant) {
    return fmt::format("grant s{} #{} {} {}/{}", grant.owner, grant.ticket, to_string(grant.key),
                       to_string(grant.strength), to_string(grant.scope));
}

std::string to_string(const LockTimeout& timeout) {
    return fmt::format("timeout s{} #{} {}", timeout.owner, timeout.ticket, to_string(timeout.key));
}

std::string to_string(const LockEvents& events) {
    std::vector<std::string> parts;
    for (const LockGrant& grant : events.grants) {
        parts.push_back(to_string(grant));
    }
    for (const LockTimeout& timeout : events.timeouts) {
        parts.push_back(to_string(timeout));
    }
    return fmt::format("{}", fmt::join(parts, "; "));
}

std::string to_string(const LockTable& table) {
    std::vector<std::string> lines;
    for (const auto& [key, ks] : table.keys_) {
        std::vector<std::string> held;
        for (const SessionId owner : table.holders(key)) {
            const auto& counts = ks.holders.at(owner).counts;
            for (size_t i = 0; i < counts.size(); i++) {
                if (counts[i] > 0) {
                    held.push_back(fmt::format("s{} {}/{}*{}", owner,
                                               to_string(LockTable::hold_strength(i)),
                                               to_string(LockTable::hold_scope(i)), counts[i]));
                }
            }
        }
        std::vector<std::string> queue;
        for (const auto& [seq, w] : ks.queue) {
            std::string entry = fmt::format("s{} {}/{} #{}", w.owner, to_string(w.strength),
                                            to_string(w.scope), w.ticket);
            if (w.deadline_ms != 0) {
                entry += fmt::format(" @{}", w.deadline_ms);
            }
            queue.push_back(std::move(entry));
        }
        lines.push_back(fmt::format("{} held=[{}] queue=[{}]", to_string(key),
                                    fmt::join(held, ", "), fmt::join(queue, ", ")));
    }
    return fmt::format("{}", fmt::join(lines, "\n"));
}

}  // namespace raftlock::statemachine::sql
