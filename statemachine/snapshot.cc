// Snapshot format, version 8. Integers are LEB128 varints (signed: zig-zag), strings are a varint
// length then bytes, every list is a varint count then its items, in the state's own (sorted)
// order:
//
//   fixed32 magic "RLSM" | u8 version=8 | last_applied | now_ms | last_token
//   sessions: id, timeout_ms, last_keepalive_ms, discarded_through_seq, saved: (seq, response)*,
//             owner (version 5; a saved reply carries its message from version 5 on)
//   nodes (path order, so parents come first): path, data, u8 kind, ttl_ms, stat, acl (version 4;
//   a stat carries its aversion from version 4 on, in nodes and in saved replies)
//   locks: name, u8 semaphore, permits, u8 mode, lock_delay_ms, free_at_ms,
//          holders: (session, owner_tag, token, since_ms, count)*,
//          waiters: (session, owner_tag, u8 mode, enqueued_ms, deadline_ms, group (version 8))*
//   timers: at_ms, u8 kind, key, id, tag
//   the Redis keyspace (version 2; redis/keyspace.cc has its layout; lists, sets and sorted sets
//   from version 6 on, the records of changes that WATCH needs from version 7 on)
//   the SQL engine (version 3; sql/engine_snapshot.cc has its layout), and saved replies carry
//   their SQL result from version 3 on
//   users, roles and permissions (version 5; AuthStore::write has the layout)
//   fixed32 CRC-32C of every byte before it
//
// Derived indexes (children sets, each session's ephemerals and locks) are rebuilt on restore, and
// the result must pass check_invariants() before it replaces the current state.

#include <algorithm>

#include "base/assert.h"
#include "base/byte_io.h"
#include "base/crc32c.h"
#include "statemachine/codec.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine {

namespace {

constexpr uint32_t kSnapshotMagic = 0x4D534C52;  // "RLSM", little-endian
// 2 added the Redis keyspace, 3 the SQL engine, 4 ACLs, 5 users, 6 Redis lists, sets and sorted
// sets, 7 the Redis keys' records of changes (for WATCH), 8 the waiters' multi-lock groups; 1 to 7
// still restore.
constexpr uint8_t kSnapshotVersion = 8;
constexpr size_t kSnapshotTrailerBytes = 4;

}  // namespace

std::string StateMachine::snapshot() const {
    std::string out;
    Writer w(&out);
    w.fixed32(kSnapshotMagic);
    w.u8(kSnapshotVersion);
    w.varint(last_applied_);
    w.svarint(now_ms_);
    w.varint(last_token_);
    w.varint(sessions_.size());
    for (const auto& [id, s] : sessions_) {
        w.varint(id);
        w.svarint(s.timeout_ms);
        w.svarint(s.last_keepalive_ms);
        w.varint(s.discarded_through_seq);
        w.varint(s.saved.size());
        for (const auto& [seq, response] : s.saved) {
            w.varint(seq);
            write_response(w, response);
        }
        w.bytes(s.owner);
    }
    w.varint(nodes_.size());
    for (const auto& [path, node] : nodes_) {
        w.bytes(path);
        w.bytes(node.data);
        w.u8(static_cast<uint8_t>(node.kind));
        w.svarint(node.ttl_ms);
        write_stat(w, node.stat);
        write_acl(w, node.acl);
    }
    w.varint(locks_.size());
    for (const auto& [name, lock] : locks_) {
        w.bytes(name);
        w.u8(lock.semaphore ? 1 : 0);
        w.varint(lock.permits);
        w.u8(static_cast<uint8_t>(lock.mode));
        w.svarint(lock.lock_delay_ms);
        w.svarint(lock.free_at_ms);
        w.varint(lock.holders.size());
        for (const Holder& h : lock.holders) {
            w.varint(h.session);
            w.bytes(h.owner_tag);
            w.varint(h.token);
            w.svarint(h.since_ms);
            w.varint(h.count);
        }
        w.varint(lock.waiters.size());
        for (const Waiter& x : lock.waiters) {
            w.varint(x.session);
            w.bytes(x.owner_tag);
            w.u8(static_cast<uint8_t>(x.mode));
            w.svarint(x.enqueued_ms);
            w.svarint(x.deadline_ms);
            w.varint(x.group);
        }
    }
    w.varint(timers_.size());
    for (const Timer& t : timers_) {
        w.svarint(t.at_ms);
        w.u8(static_cast<uint8_t>(t.kind));
        w.bytes(t.key);
        w.varint(t.id);
        w.bytes(t.tag);
    }
    keyspace_.write(w);
    sql_.write(w);
    auth_.write(w);
    w.fixed32(crc32c(out));
    return out;
}

namespace {

// Reads one section's item count; every item takes at least one byte, so a count larger than what
// is left is malformed (and cannot make us loop for long).
uint64_t read_count(Reader& r) {
    uint64_t n = r.varint();
    if (n > r.remaining()) {
        r.fail();
        return 0;
    }
    return n;
}

}  // namespace

ErrorCode StateMachine::restore(std::string_view bytes) {
    if (bytes.size() < 4 + 1 + kSnapshotTrailerBytes) {
        return ErrorCode::kMalformedCommand;
    }
    std::string_view body = bytes.substr(0, bytes.size() - kSnapshotTrailerBytes);
    Reader trailer(bytes.substr(body.size()));
    if (trailer.fixed32() != crc32c(body)) {
        return ErrorCode::kMalformedCommand;
    }
    Reader r(body);
    if (r.fixed32() != kSnapshotMagic) {
        return ErrorCode::kMalformedCommand;
    }
    const uint8_t version = r.u8();
    if (version < 1 || version > kSnapshotVersion) {
        return ErrorCode::kMalformedCommand;
    }
    StateMachine fresh(config_);
    fresh.nodes_.clear();
    fresh.last_applied_ = r.varint();
    fresh.now_ms_ = r.svarint();
    fresh.last_token_ = r.varint();
    if (!fresh.restore_sessions(r, version >= 3, version >= 4, version >= 5) ||
        !fresh.restore_nodes(r, version >= 4) || !fresh.restore_locks(r, version >= 8) ||
        !fresh.link_multi_waits() || !fresh.restore_timers(r) ||
        (version >= 2 &&
         !fresh.keyspace_.read(r, version >= 6, version >= 7, fresh.last_applied_)) ||
        (version >= 3 && !fresh.sql_.read(r)) || (version >= 5 && !fresh.auth_.read(r)) ||
        !r.ok() || !r.at_end()) {
        return ErrorCode::kMalformedCommand;
    }
    // A snapshot that decodes but breaks an invariant would crash us later: refuse it now.
    if (!fresh.check_invariants().empty()) {
        return ErrorCode::kMalformedCommand;
    }
    *this = std::move(fresh);
    return ErrorCode::kOk;
}

bool StateMachine::restore_sessions(Reader& r, bool with_sql, bool with_acls, bool with_owners) {
    uint64_t n = read_count(r);
    for (uint64_t i = 0; i < n && r.ok(); i++) {
        SessionId id = r.varint();
        Session s;
        s.timeout_ms = r.svarint();
        s.last_keepalive_ms = r.svarint();
        s.discarded_through_seq = r.varint();
        uint64_t saved = r.varint_in(0, kSavedResultsPerSessionMax);
        for (uint64_t k = 0; k < saved && r.ok(); k++) {
            uint64_t seq = r.varint();
            Response response = read_response(r, with_sql, with_acls, with_owners);
            if (seq <= s.discarded_through_seq ||
                !s.saved.emplace(seq, std::move(response)).second) {
                return false;
            }
        }
        if (with_owners) {
            s.owner = r.bytes(kAuthNameBytesMax);
        }
        if (id == kNoSession || !sessions_.emplace(id, std::move(s)).second) {
            return false;
        }
    }
    return r.ok();
}

bool StateMachine::restore_nodes(Reader& r, bool with_acls) {
    uint64_t n = read_count(r);
    for (uint64_t i = 0; i < n && r.ok(); i++) {
        std::string path = r.bytes(kPathBytesMax);
        Node node;
        node.data = r.bytes(kDataBytesMax);
        node.kind = static_cast<NodeKind>(r.varint_in(0, kNodeKindMax));
        node.ttl_ms = r.svarint_in(0, kTtlMsMax);
        node.stat = read_stat(r, with_acls);
        if (with_acls) {
            node.acl = read_acl(r);
        }
        if (!r.ok() || !valid_path(path) || nodes_.contains(path) || !valid_acl(node.acl) ||
            node.acl != canonical_acl(node.acl)) {
            return false;
        }
        if (path != "/") {
            size_t slash = path.rfind('/');
            auto parent = nodes_.find(std::string_view(path).substr(0, slash == 0 ? 1 : slash));
            if (parent == nodes_.end()) {
                return false;  // parents sort before their children, so it must be here already
            }
            parent->second.children.insert(path.substr(slash + 1));
        }
        if (SessionId owner = node.stat.ephemeral_owner; owner != kNoSession) {
            auto s = sessions_.find(owner);
            if (s == sessions_.end()) {
                return false;
            }
            s->second.ephemerals.insert(path);
        }
        nodes_.emplace(std::move(path), std::move(node));
    }
    return r.ok() && nodes_.contains("/");
}

bool StateMachine::restore_locks(Reader& r, bool with_groups) {
    uint64_t n = read_count(r);
    for (uint64_t i = 0; i < n && r.ok(); i++) {
        std::string name = r.bytes(kLockNameBytesMax);
        Lock lock;
        lock.semaphore = r.boolean();
        lock.permits = static_cast<uint32_t>(r.varint_in(1, kSemaphorePermitsMax));
        lock.mode = static_cast<LockMode>(r.varint_in(0, kLockModeMax));
        lock.lock_delay_ms = r.svarint_in(0, kLockDelayMsMax);
        lock.free_at_ms = r.svarint();
        uint64_t holders = read_count(r);
        for (uint64_t k = 0; k < holders && r.ok(); k++) {
            Holder h;
            h.session = r.varint();
            h.owner_tag = r.bytes(kOwnerTagBytesMax);
            h.token = r.varint();
            h.since_ms = r.svarint();
            h.count = static_cast<uint32_t>(r.varint_in(1, UINT32_MAX));
            lock.holders.push_back(std::move(h));
        }
        uint64_t waiters = r.varint_in(0, kWaitersPerLockMax);
        for (uint64_t k = 0; k < waiters && r.ok(); k++) {
            Waiter x;
            x.session = r.varint();
            x.owner_tag = r.bytes(kOwnerTagBytesMax);
            x.mode = static_cast<LockMode>(r.varint_in(0, kLockModeMax));
            x.enqueued_ms = r.svarint();
            x.deadline_ms = r.svarint();
            x.group = with_groups ? r.varint() : 0;
            lock.waiters.push_back(std::move(x));
        }
        if (!r.ok() || name.empty() || locks_.contains(name)) {
            return false;
        }
        if (!link_lock_sessions(name, lock)) {
            return false;
        }
        locks_.emplace(std::move(name), std::move(lock));
    }
    return r.ok();
}

bool StateMachine::link_lock_sessions(const std::string& name, const Lock& lock) {
    for (const Holder& h : lock.holders) {
        auto s = sessions_.find(h.session);
        if (s == sessions_.end()) {
            return false;
        }
        s->second.locks.insert(name);
    }
    for (const Waiter& x : lock.waiters) {
        auto s = sessions_.find(x.session);
        if (s == sessions_.end()) {
            return false;
        }
        s->second.locks.insert(name);
    }
    return true;
}

// The multi-lock waits, from the waiters' groups: one session and owner per group, at most one
// waiter of it per lock. check_invariants() then checks the rest (one deadline, FIFO order).
bool StateMachine::link_multi_waits() {
    RL_ASSERT(multi_waits_.empty());
    for (const auto& [name, lock] : locks_) {  // in name order, so each names list is sorted
        for (const Waiter& x : lock.waiters) {
            if (x.group == 0) {
                continue;
            }
            auto [it, fresh] = multi_waits_.try_emplace(x.group);
            MultiWait& wait = it->second;
            if (fresh) {
                wait.session = x.session;
                wait.owner_tag = x.owner_tag;
            } else if (wait.session != x.session || wait.owner_tag != x.owner_tag ||
                       wait.names.back() == name || wait.names.size() >= kMultiLockMax) {
                return false;
            }
            wait.names.push_back(name);
        }
    }
    return true;
}

bool StateMachine::restore_timers(Reader& r) {
    uint64_t n = read_count(r);
    for (uint64_t i = 0; i < n && r.ok(); i++) {
        Timer t;
        t.at_ms = r.svarint();
        t.kind = static_cast<TimerKind>(r.varint_in(0, static_cast<uint8_t>(TimerKind::kTtl)));
        t.key = r.bytes(std::max(kPathBytesMax, kLockNameBytesMax));
        t.id = r.varint();
        t.tag = r.bytes(kOwnerTagBytesMax);
        if (!r.ok() || !timers_.insert(std::move(t)).second) {
            return false;
        }
    }
    return r.ok();
}

}  // namespace raftlock::statemachine
