// Native locks: exclusive/shared modes and semaphores, reentrancy, FIFO waiters with server-side
// hand-off, waits with cluster-time deadlines, cancel, lock-delay, multi-lock.
//
// Tokens: every grant gets token = the zxid of the granting entry, so tokens only grow across all
// locks and a holder can be fenced (Kleppmann, "How to do distributed locking"; Chubby's
// sequencers). Hand-off happens inside the entry that frees the lock (release, cancel, expiry,
// close, deadline), so no grant ever waits for another round trip, and every grant appears in that
// entry's ApplyResult for the server to push.
//
// Multi-lock (AcquireMany): all of a set or none. A set that cannot be taken at once may wait: one
// waiter of it joins the tail of every lock's queue in one entry, all sharing a group (the entry's
// zxid), and the set is granted in one entry once its waiters head every queue and each lock can
// take them. That cannot deadlock: every waiter joins at a queue's tail in log order, so the oldest
// wait of all heads each of its queues and waits only for holders, which leave (release, cancel,
// expiry); nobody overtakes a queued set, so it is not starved either. A session that holds one
// lock and waits for another can still wait forever, as with single locks: its wait deadline or
// its session timeout ends that.
//
// Lock-delay (Chubby, Burrows 2006, §2.4): when a holder's session expires (an unclean end), the
// lock is not granted to anyone for lock_delay_ms, so a holder that is merely partitioned away has
// time to notice before somebody else acts under the lock. A clean release does not delay.

#include <algorithm>

#include "base/assert.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine {

bool StateMachine::kind_matches(const Lock& lock, LockMode mode, uint32_t permits) {
    if (lock.semaphore) {
        return mode == LockMode::kSemaphore && permits == lock.permits;
    }
    return mode != LockMode::kSemaphore;
}

bool StateMachine::grantable(const Lock& lock, LockMode mode) const {
    if (lock.free_at_ms > now_ms_) {
        return false;
    }
    if (lock.holders.empty()) {
        return true;
    }
    if (lock.semaphore) {
        return lock.holders.size() < lock.permits;
    }
    if (breaks_exclusion(lock, mode)) {
        return true;
    }
    return mode == LockMode::kShared && lock.mode == LockMode::kShared;
}

bool StateMachine::breaks_exclusion([[maybe_unused]] const Lock& lock,
                                    [[maybe_unused]] LockMode mode) const {
#ifdef RAFTLOCK_NEGATIVE_CONTROLS
    return config_.negative_control_double_grant && !lock.semaphore &&
           mode == LockMode::kExclusive && lock.mode == LockMode::kExclusive &&
           lock.holders.size() == 1;
#else
    return false;
#endif
}

void StateMachine::add_holder(const std::string& name,
                              Lock& lock,
                              SessionId session,
                              const std::string& owner_tag,
                              LockMode mode,
                              Index zxid) {
    RL_ASSERT(zxid >= last_token_);
    RL_ASSERT(kind_matches(lock, mode, lock.permits));
    if (!lock.holders.empty() && !lock.semaphore && !breaks_exclusion(lock, mode)) {
        RL_ASSERT(mode == LockMode::kShared);
        RL_ASSERT(lock.mode == LockMode::kShared);
    }
    lock.mode = mode;
    lock.holders.push_back(Holder{session, owner_tag, zxid, now_ms_, 1});
    last_token_ = zxid;
    sessions_.at(session).locks.insert(name);
    RL_ASSERT(!lock.semaphore || lock.holders.size() <= lock.permits);
}

Response StateMachine::acquire(SessionId session, const Acquire& op, Index zxid) {
    RL_ASSERT(sessions_.contains(session));  // apply checked the session before the operation
    Response response;
    auto it = locks_.find(op.name);
    if (it != locks_.end()) {
        Lock& lock = it->second;
        if (!kind_matches(lock, op.mode, op.permits)) {
            response.code = ErrorCode::kBadArguments;
            return response;
        }
        for (Holder& holder : lock.holders) {
            if (holder.session != session || holder.owner_tag != op.owner_tag) {
                continue;
            }
            // Reentrancy: the same owner counts up; no upgrade from shared to exclusive.
            if (lock.mode != op.mode || holder.count == UINT32_MAX) {
                response.code = ErrorCode::kBadArguments;
                return response;
            }
            holder.count++;
            response.lock = LockOutcome::kGranted;
            response.token = holder.token;
            response.hold_count = holder.count;
            return response;
        }
        for (const Waiter& waiter : lock.waiters) {
            if (waiter.session == session && waiter.owner_tag == op.owner_tag) {
                response.code = ErrorCode::kAlreadyWaiting;
                return response;
            }
        }
    }
    Session& owner = sessions_.at(session);
    if (!owner.locks.contains(op.name) && owner.locks.size() >= kLocksPerSessionMax) {
        response.code = ErrorCode::kLimitExceeded;
        return response;
    }
    if (it == locks_.end()) {
        // A fresh lock is always free: create the record and grant.
        Lock lock;
        lock.semaphore = op.mode == LockMode::kSemaphore;
        lock.permits = op.permits;
        lock.lock_delay_ms = op.lock_delay_ms;
        it = locks_.emplace(op.name, std::move(lock)).first;
    }
    Lock& lock = it->second;
    // FIFO: nobody overtakes a waiter, so shared requests queue behind a waiting exclusive one.
    if (lock.waiters.empty() && grantable(lock, op.mode)) {
        add_holder(it->first, lock, session, op.owner_tag, op.mode, zxid);
        // The token is this entry's index: above every token granted before (fencing).
        RL_ASSERT(lock.holders.back().token == zxid && last_token_ == zxid);
        response.lock = LockOutcome::kGranted;
        response.token = zxid;
        response.hold_count = 1;
        return response;
    }
    if (op.wait_ms == 0) {
        response.code = ErrorCode::kLockBusy;
        return response;
    }
    if (lock.waiters.size() >= kWaitersPerLockMax) {
        response.code = ErrorCode::kLimitExceeded;
        return response;
    }
    Waiter waiter{session, op.owner_tag, op.mode, now_ms_, now_ms_ + op.wait_ms};
    timers_.insert(
        Timer{waiter.deadline_ms, TimerKind::kWaitDeadline, it->first, session, op.owner_tag});
    lock.waiters.push_back(std::move(waiter));
    owner.locks.insert(it->first);
    response.lock = LockOutcome::kQueued;
    return response;
}

Response StateMachine::release(SessionId session, const Release& op, Index zxid, ApplyResult& out) {
    Response response;
    auto it = locks_.find(op.name);
    if (it == locks_.end()) {
        response.code = ErrorCode::kNotLockHolder;
        return response;
    }
    Lock& lock = it->second;
    auto holder = std::find_if(lock.holders.begin(), lock.holders.end(), [&](const Holder& h) {
        return h.session == session && h.owner_tag == op.owner_tag && h.token == op.token;
    });
    // Only the holder can release: a wrong session, tag or token changes nothing.
    if (holder == lock.holders.end()) {
        response.code = ErrorCode::kNotLockHolder;
        return response;
    }
    RL_ASSERT(holder->count > 0);
    holder->count--;
    response.lock = LockOutcome::kReleased;
    response.token = holder->token;
    response.hold_count = holder->count;
    if (holder->count == 0) {
        lock.holders.erase(holder);
        grant_waiters(it->first, lock, zxid, out);
        forget_if_unused(op.name, session);
        // The hold is gone for good (shared holders granted in one entry share its token, so the
        // hold is the owner's with that token).
        auto still = locks_.find(op.name);
        RL_ASSERT(still == locks_.end() ||
                  std::none_of(still->second.holders.begin(), still->second.holders.end(),
                               [&](const Holder& h) {
                                   return h.session == session && h.owner_tag == op.owner_tag &&
                                          h.token == op.token;
                               }));
    }
    return response;
}

Response StateMachine::force_release(const ForceRelease& op, Index zxid, ApplyResult& out) {
    Response response;
    auto it = locks_.find(op.name);
    if (it == locks_.end()) {
        response.code = ErrorCode::kNotLockHolder;
        return response;
    }
    Lock& lock = it->second;
    // One holder per (session, token): a grant's token is its entry's index, and an entry grants
    // a session one hold of a lock.
    auto holder = std::find_if(lock.holders.begin(), lock.holders.end(), [&](const Holder& h) {
        return h.session == op.session && h.token == op.token;
    });
    if (holder == lock.holders.end()) {
        response.code = ErrorCode::kNotLockHolder;  // released already, or never this session's
        return response;
    }
    RL_ASSERT(sessions_.contains(op.session) && sessions_.at(op.session).locks.contains(op.name));
    response.lock = LockOutcome::kReleased;
    response.token = holder->token;
    response.hold_count = 0;  // every count at once
    out.holds_revoked.push_back(HoldRevoked{op.session, op.name, op.token});
    lock.holders.erase(holder);
    if (lock.lock_delay_ms > 0) {
        start_lock_delay(it->first, lock);
    }
    grant_waiters(it->first, lock, zxid, out);
    forget_if_unused(op.name, op.session);
    // From here the token fences nothing: check_fence finds no holder with it.
    RL_ASSERT(check_fence(Fence{op.name, op.token}) == ErrorCode::kFenceRejected);
    return response;
}

void StateMachine::start_lock_delay(const std::string& name, Lock& lock) {
    RL_ASSERT(lock.lock_delay_ms > 0);
    lock.free_at_ms = now_ms_ + lock.lock_delay_ms;
    timers_.insert(Timer{lock.free_at_ms, TimerKind::kLockDelayEnd, name, 0, {}});
}

Response StateMachine::cancel(SessionId session, const Cancel& op, Index zxid, ApplyResult& out) {
    Response response;
    auto it = locks_.find(op.name);
    if (it == locks_.end()) {
        return response;  // kNone: neither waiting nor holding
    }
    Lock& lock = it->second;
    for (size_t i = 0; i < lock.waiters.size(); i++) {
        if (lock.waiters[i].session == session && lock.waiters[i].owner_tag == op.owner_tag) {
            if (const Index group = lock.waiters[i].group; group != 0) {
                // A multi-lock wait is cancelled by any of its locks, on all of them
                // (end_multi_wait asserts it is gone). Its end is reported on each (wait_timeouts):
                // the server answers the set's waiting request under its first lock's name, which
                // need not be this one.
                end_multi_wait(group, nullptr, true, zxid, out);
                response.lock = LockOutcome::kCancelled;
                return response;
            }
            remove_waiter(it->first, lock, i);
            // One waiter per (session, owner tag): acquire refuses a second (kAlreadyWaiting).
            RL_ASSERT(std::none_of(lock.waiters.begin(), lock.waiters.end(), [&](const Waiter& w) {
                return w.session == session && w.owner_tag == op.owner_tag;
            }));
            response.lock = LockOutcome::kCancelled;
            // The waiter may have blocked the ones behind it (FIFO).
            grant_waiters(it->first, lock, zxid, out);
            forget_if_unused(op.name, session);
            return response;
        }
    }
    // The grant won the race: report it so the client can use or release it, never orphan it.
    for (const Holder& holder : lock.holders) {
        if (holder.session == session && holder.owner_tag == op.owner_tag) {
            response.lock = LockOutcome::kGranted;
            response.token = holder.token;
            response.hold_count = holder.count;
            return response;
        }
    }
    return response;
}

Response StateMachine::acquire_many(SessionId session, const AcquireMany& op, Index zxid) {
    RL_ASSERT(sessions_.contains(session));
    Response response;
    Session& owner = sessions_.at(session);
    size_t new_locks = 0;
    bool busy = false;
    for (const LockSpec& spec : op.locks) {
        auto it = locks_.find(spec.name);
        new_locks += owner.locks.contains(spec.name) ? 0 : 1;
        if (it == locks_.end()) {
            continue;
        }
        const Lock& lock = it->second;
        if (!kind_matches(lock, spec.mode, spec.permits) || owner.locks.contains(spec.name)) {
            // No reentrancy or queue mixing inside a multi-lock: it is all-fresh or nothing.
            response.code = ErrorCode::kBadArguments;
            return response;
        }
        busy = busy || !lock.waiters.empty() || !grantable(lock, spec.mode);
    }
    if (owner.locks.size() + new_locks > kLocksPerSessionMax) {
        response.code = ErrorCode::kLimitExceeded;
        return response;
    }
    if (busy && op.wait_ms == 0) {
        response.code = ErrorCode::kLockBusy;
        return response;
    }
    if (busy && std::any_of(op.locks.begin(), op.locks.end(), [&](const LockSpec& spec) {
            auto it = locks_.find(spec.name);
            return it != locks_.end() && it->second.waiters.size() >= kWaitersPerLockMax;
        })) {
        response.code = ErrorCode::kLimitExceeded;
        return response;
    }
    for (const LockSpec& spec : op.locks) {
        auto it = locks_.find(spec.name);
        if (it == locks_.end()) {
            Lock lock;
            lock.semaphore = spec.mode == LockMode::kSemaphore;
            lock.permits = spec.permits;
            lock.lock_delay_ms = op.lock_delay_ms;
            it = locks_.emplace(spec.name, std::move(lock)).first;
        }
        if (!busy) {
            add_holder(it->first, it->second, session, op.owner_tag, spec.mode, zxid);
        }
    }
    if (busy) {
        queue_multi_wait(session, op, zxid);
        response.lock = LockOutcome::kQueued;
        return response;
    }
    // All or nothing: every lock of the set is held now, with this entry's token.
    RL_ASSERT(std::all_of(op.locks.begin(), op.locks.end(), [&](const LockSpec& spec) {
        const Lock& lock = locks_.at(spec.name);
        return !lock.holders.empty() && lock.holders.back().session == session &&
               lock.holders.back().token == zxid;
    }));
    response.lock = LockOutcome::kGranted;
    response.token = zxid;
    response.hold_count = 1;
    return response;
}

void StateMachine::queue_multi_wait(SessionId session, const AcquireMany& op, Index zxid) {
    RL_ASSERT(op.wait_ms > 0 && !multi_waits_.contains(zxid));
    MultiWait wait{session, op.owner_tag, {}};
    const TimeMs deadline_ms = now_ms_ + op.wait_ms;
    for (const LockSpec& spec : op.locks) {
        auto it = locks_.find(spec.name);
        RL_ASSERT(it != locks_.end());  // acquire_many made the missing records
        it->second.waiters.push_back(
            Waiter{session, op.owner_tag, spec.mode, now_ms_, deadline_ms, zxid});
        timers_.insert(
            Timer{deadline_ms, TimerKind::kWaitDeadline, it->first, session, op.owner_tag});
        sessions_.at(session).locks.insert(it->first);
        wait.names.push_back(spec.name);
    }
    std::sort(wait.names.begin(), wait.names.end());
    multi_waits_.emplace(zxid, std::move(wait));
    // It joined at the tails, behind a waiter or a lock it cannot have: nothing to grant now.
    RL_ASSERT(!multi_grantable(zxid));
}

bool StateMachine::multi_grantable(Index group) const {
    const MultiWait& wait = multi_waits_.at(group);
    RL_ASSERT(!wait.names.empty());
    return std::all_of(wait.names.begin(), wait.names.end(), [&](const std::string& name) {
        const Lock& lock = locks_.at(name);
        return !lock.waiters.empty() && lock.waiters.front().group == group &&
               grantable(lock, lock.waiters.front().mode);
    });
}

bool StateMachine::head_grantable(const Lock& lock) const {
    if (lock.waiters.empty()) {
        return false;
    }
    const Waiter& head = lock.waiters.front();
    return head.group == 0 ? grantable(lock, head.mode) : multi_grantable(head.group);
}

void StateMachine::grant_multi(Index group,
                               Index zxid,
                               ApplyResult& out,
                               std::vector<std::string>& moved) {
    RL_ASSERT(multi_grantable(group));
    const MultiWait wait = std::move(multi_waits_.at(group));
    multi_waits_.erase(group);
    for (const std::string& name : wait.names) {
        auto it = locks_.find(name);
        Lock& lock = it->second;
        const Waiter head = std::move(lock.waiters.front());
        lock.waiters.pop_front();
        const size_t erased = timers_.erase(
            Timer{head.deadline_ms, TimerKind::kWaitDeadline, name, head.session, head.owner_tag});
        RL_ASSERT(erased == 1 && head.group == group);
        add_holder(it->first, lock, head.session, head.owner_tag, head.mode, zxid);
        out.grants.push_back(LockGrant{head.session, it->first, head.owner_tag, zxid});
        moved.push_back(name);  // whoever queued behind the set may be grantable now
    }
}

void StateMachine::remove_waiter(const std::string& name, Lock& lock, size_t position) {
    RL_ASSERT(position < lock.waiters.size());
    const Waiter& w = lock.waiters[position];
    const size_t erased =
        timers_.erase(Timer{w.deadline_ms, TimerKind::kWaitDeadline, name, w.session, w.owner_tag});
    RL_ASSERT(erased == 1);  // every waiter has exactly its own deadline timer
    lock.waiters.erase(lock.waiters.begin() + static_cast<ptrdiff_t>(position));
}

void StateMachine::grant_waiters(const std::string& name,
                                 Lock& lock,
                                 Index zxid,
                                 ApplyResult& out) {
    std::vector<std::string> moved;  // locks whose queue a multi-lock grant moved
    grant_queue(name, lock, zxid, out, moved);
    // Each round grants at least one waiter, so this ends within the number of waiters.
    while (!moved.empty()) {
        const std::string next = std::move(moved.back());
        moved.pop_back();
        auto it = locks_.find(next);
        RL_ASSERT(it != locks_.end());                         // it has just been granted to
        grant_queue(it->first, it->second, zxid, out, moved);  // asserts its head is settled
    }
}

void StateMachine::grant_queue(const std::string& name,
                               Lock& lock,
                               Index zxid,
                               ApplyResult& out,
                               std::vector<std::string>& moved) {
    // Grant the longest compatible prefix of the queue: one exclusive waiter, or a batch of shared
    // ones, or as many semaphore waiters as there are free permits; a multi-lock wait in it only
    // together with the rest of its set.
    while (!lock.waiters.empty() && grantable(lock, lock.waiters.front().mode)) {
        if (const Index group = lock.waiters.front().group; group != 0) {
            if (!multi_grantable(group)) {
                break;  // FIFO: nobody behind it goes first
            }
            grant_multi(group, zxid, out, moved);
            continue;
        }
        const Waiter w = std::move(lock.waiters.front());
        lock.waiters.pop_front();
        const size_t erased = timers_.erase(
            Timer{w.deadline_ms, TimerKind::kWaitDeadline, name, w.session, w.owner_tag});
        RL_ASSERT(erased == 1);
        add_holder(name, lock, w.session, w.owner_tag, w.mode, zxid);
        out.grants.push_back(LockGrant{w.session, name, w.owner_tag, zxid});
    }
    // FIFO: the first waiter left cannot be granted now (else the prefix would be longer).
    RL_ASSERT(!head_grantable(lock));
}

StateMachine::MultiWait StateMachine::drop_multi_wait(Index group,
                                                      const std::string* timer_fired_on) {
    auto it = multi_waits_.find(group);
    RL_ASSERT(it != multi_waits_.end());
    MultiWait wait = std::move(it->second);
    multi_waits_.erase(it);
    for (const std::string& name : wait.names) {
        Lock& lock = locks_.at(name);
        auto w = std::find_if(lock.waiters.begin(), lock.waiters.end(),
                              [&](const Waiter& x) { return x.group == group; });
        RL_ASSERT(w != lock.waiters.end() && w->session == wait.session);
        if (timer_fired_on != nullptr && *timer_fired_on == name) {
            lock.waiters.erase(w);  // its timer fired: advance_time took it out
        } else {
            remove_waiter(name, lock, static_cast<size_t>(w - lock.waiters.begin()));
        }
    }
    return wait;
}

void StateMachine::end_multi_wait(Index group,
                                  const std::string* timer_fired_on,
                                  bool report_ended,
                                  Index zxid,
                                  ApplyResult& out) {
    const MultiWait wait = drop_multi_wait(group, timer_fired_on);
    for (const std::string& name : wait.names) {
        if (report_ended) {
            out.wait_timeouts.push_back(WaitTimeout{wait.session, name, wait.owner_tag});
        }
        // The set may have blocked the ones behind it (FIFO).
        auto it = locks_.find(name);
        grant_waiters(it->first, it->second, zxid, out);
    }
    // Only after every grant: a record forgotten before could not take a grant a cascade gives.
    for (const std::string& name : wait.names) {
        forget_if_unused(name, wait.session);
    }
    RL_ASSERT(!multi_waits_.contains(group));
}

void StateMachine::forget_if_unused(const std::string& name_ref, SessionId session) {
    const std::string name = name_ref;  // name_ref may be the key we erase
    auto it = locks_.find(name);
    RL_ASSERT(it != locks_.end());
    const Lock& lock = it->second;
    if (session != kNoSession) {
        bool involved = std::any_of(lock.holders.begin(), lock.holders.end(),
                                    [&](const Holder& h) { return h.session == session; }) ||
                        std::any_of(lock.waiters.begin(), lock.waiters.end(),
                                    [&](const Waiter& w) { return w.session == session; });
        if (!involved) {
            sessions_.at(session).locks.erase(name);
        }
    }
    // A lock in lock-delay keeps its record so that describe() shows "free at T".
    if (lock.holders.empty() && lock.waiters.empty() && lock.free_at_ms <= now_ms_) {
        locks_.erase(it);
    }
}

void StateMachine::release_session_locks(SessionId id,
                                         SessionEnd reason,
                                         Index zxid,
                                         ApplyResult& out) {
    const std::set<std::string> names = sessions_.at(id).locks;  // copy: forget_if_unused edits it
    // Its waits first, on every lock, so that no grant below goes to a wait of this session (a
    // multi-lock wait leaves the queues of all its locks at once).
    for (const std::string& name : names) {
        auto it = locks_.find(name);
        RL_ASSERT(it != locks_.end());
        Lock& lock = it->second;
        for (size_t i = lock.waiters.size(); i-- > 0;) {
            if (i >= lock.waiters.size() || lock.waiters[i].session != id) {
                continue;
            }
            if (lock.waiters[i].group != 0) {
                (void)drop_multi_wait(lock.waiters[i].group, nullptr);
            } else {
                remove_waiter(it->first, lock, i);
            }
        }
    }
    for (const std::string& name : names) {
        auto it = locks_.find(name);
        RL_ASSERT(it != locks_.end());
        Lock& lock = it->second;
        RL_ASSERT(std::none_of(lock.waiters.begin(), lock.waiters.end(),
                               [&](const Waiter& w) { return w.session == id; }));
        size_t held = std::erase_if(lock.holders, [&](const Holder& h) { return h.session == id; });
        if (held > 0 && reason == SessionEnd::kExpired && lock.lock_delay_ms > 0) {
            start_lock_delay(it->first, lock);
        }
        grant_waiters(it->first, lock, zxid, out);
        forget_if_unused(name, id);
    }
}

void StateMachine::fire_wait_deadline(const Timer& timer, Index zxid, ApplyResult& out) {
    // The timer is erased whenever its waiter leaves the queue, so the waiter is still there.
    auto it = locks_.find(timer.key);
    RL_ASSERT(it != locks_.end());
    Lock& lock = it->second;
    auto w = std::find_if(lock.waiters.begin(), lock.waiters.end(), [&](const Waiter& x) {
        return x.session == timer.id && x.owner_tag == timer.tag;
    });
    RL_ASSERT(w != lock.waiters.end());
    RL_ASSERT(w->deadline_ms == timer.at_ms);
    if (w->group != 0) {
        // The set's first deadline timer to fire (they share the deadline) ends it everywhere.
        end_multi_wait(w->group, &timer.key, true, zxid, out);
        return;
    }
    out.wait_timeouts.push_back(WaitTimeout{w->session, it->first, w->owner_tag});
    lock.waiters.erase(w);
    grant_waiters(it->first, lock, zxid, out);
    forget_if_unused(timer.key, timer.id);
}

void StateMachine::fire_lock_delay_end(const Timer& timer, Index zxid, ApplyResult& out) {
    auto it = locks_.find(timer.key);
    // A later expiry may have pushed free_at further; that one has its own timer.
    if (it == locks_.end() || it->second.free_at_ms > now_ms_) {
        return;
    }
    it->second.free_at_ms = 0;
    grant_waiters(it->first, it->second, zxid, out);
    forget_if_unused(timer.key, kNoSession);
}

}  // namespace raftlock::statemachine
