#include "tests/sim/lock_checker.h"

#include <variant>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/codec.h"
#include "statemachine/text.h"

namespace raftlock::sim {

namespace sm = raftlock::statemachine;

namespace {

// Lock names the comparison with the state machine looks at, at most (the workload uses three).
constexpr size_t kLocksComparedMax = 64;

bool executes(const sm::ApplyResult& r) {
    const sm::ErrorCode code = r.response.code;
    return !r.replayed && code != sm::ErrorCode::kSessionExpired &&
           code != sm::ErrorCode::kResultDiscarded && code != sm::ErrorCode::kMalformedCommand;
}

// A fingerprint of everything an ApplyResult tells the clients (cheaper than its text form).
uint64_t fingerprint(const sm::ApplyResult& r) {
    const sm::Response& p = r.response;
    uint64_t h = mix_hash(r.index, r.client_id);
    for (uint64_t v : {r.seq, uint64_t{r.replayed}, uint64_t(p.code), p.session, uint64_t(p.lock),
                       p.token, uint64_t{p.hold_count}, p.stat.mzxid, uint64_t(p.stat.version),
                       hash_bytes(p.path), p.results.size()}) {
        h = mix_hash(h, v);
    }
    for (const sm::LockGrant& g : r.grants) {
        h = mix_hash(mix_hash(mix_hash(h, g.session), g.token), hash_bytes(g.name));
    }
    for (const sm::WaitTimeout& w : r.wait_timeouts) {
        h = mix_hash(mix_hash(h, w.session), hash_bytes(w.name));
    }
    for (const sm::SessionEnded& e : r.sessions_ended) {
        h = mix_hash(mix_hash(h, e.session), uint64_t(e.reason));
    }
    return mix_hash(h, r.triggers.size());
}

}  // namespace

bool LockChecker::on_applied(raft::NodeId id,
                             const raft::Entry& entry,
                             const sm::ApplyResult& result,
                             const SimApp& app) {
    // The oracle goes first, so that its independent view reports a broken rule before the
    // state machine's own checker does.
    const bool first = check_result(id, entry, result, app);
    const std::string broken = app.locks().check_invariants();
    if (!broken.empty()) {
        checker_.fail(fmt::format("lock state machine: node {} broke an invariant at index {}: {}",
                                  id, entry.index, broken));
    }
    return first;
}

bool LockChecker::check_result(raft::NodeId id,
                               const raft::Entry& entry,
                               const sm::ApplyResult& result,
                               const SimApp& app) {
    const uint64_t hash = fingerprint(result) | 1;  // 0 means "not applied yet"
    if (output_hash_at_.size() <= entry.index) {
        output_hash_at_.resize(entry.index + 1, 0);
    }
    uint64_t& known = output_hash_at_[entry.index];
    if (known != 0) {
        if (known != hash) {
            checker_.fail(fmt::format(
                "lock state machine: node {} got {} at index {}, another node a different result",
                id, sm::to_string(result), entry.index));
        }
        return false;
    }
    known = hash;
    if (entry.index <= last_first_applied_) {
        checker_.fail(fmt::format("lock oracle: index {} applied for the first time after {}",
                                  entry.index, last_first_applied_));
        return false;
    }
    last_first_applied_ = entry.index;
    Result<sm::Command, sm::ErrorCode> command =
        sm::decode_command(std::string_view(entry.data).substr(1));
    if (!command.ok()) {
        checker_.fail(fmt::format("lock state machine: entry {} does not decode", entry.index));
        return true;
    }
    first_application(entry.index, command.value(), result, app);
    return true;
}

void LockChecker::first_application(raft::Index index,
                                    const sm::Command& command,
                                    const sm::ApplyResult& result,
                                    const SimApp& app) {
    // End state of the entry: what it removed (timeouts, releases, ended sessions, cancels),
    // then what it granted. Within one entry the state machine also removes before it hands
    // the lock off, so the model never needs an intermediate state.
    apply_removals(command, result);
    apply_additions(index, command, result);
    check_fence(index, command, result);
    check_exactly_once(index, command, result);
    compare_with_state(index, app);
}

void LockChecker::apply_removals(const sm::Command& command, const sm::ApplyResult& result) {
    for (const sm::WaitTimeout& w : result.wait_timeouts) {
        locks_[w.name].waiters.erase({w.session, w.owner_tag});
        ++wait_timeouts_;
    }
    for (const sm::SessionEnded& e : result.sessions_ended) {
        expiries_ += e.reason == sm::SessionEnd::kExpired ? 1 : 0;
        for (auto& [name, lock] : locks_) {
            std::erase_if(lock.holders, [&](const auto& h) { return h.first.first == e.session; });
            std::erase_if(lock.waiters, [&](const auto& w) { return w.first.first == e.session; });
        }
    }
    if (result.replayed) {
        return;
    }
    if (const auto* release = std::get_if<sm::Release>(&command.op)) {
        if (result.response.lock == sm::LockOutcome::kReleased && result.response.hold_count == 0) {
            locks_[release->name].holders.erase({command.client_id, release->owner_tag});
        }
    } else if (const auto* cancel = std::get_if<sm::Cancel>(&command.op)) {
        if (result.response.lock == sm::LockOutcome::kCancelled) {
            locks_[cancel->name].waiters.erase({command.client_id, cancel->owner_tag});
        }
    }
}

void LockChecker::apply_additions(raft::Index index,
                                  const sm::Command& command,
                                  const sm::ApplyResult& result) {
    const sm::Acquire* acquire = std::get_if<sm::Acquire>(&command.op);
    if (acquire != nullptr && !result.replayed) {
        const Owner owner{command.client_id, acquire->owner_tag};
        LockModel& lock = locks_[acquire->name];
        if (result.response.lock == sm::LockOutcome::kGranted) {
            auto held = lock.holders.find(owner);
            if (held == lock.holders.end()) {
                add_holder(index, acquire->name, owner, acquire->mode, result.response.token);
            } else if (held->second.token != result.response.token) {
                checker_.fail(
                    fmt::format("lock oracle: reentrant grant of {} at {} changed the "
                                "token from {} to {}",
                                acquire->name, index, held->second.token, result.response.token));
            }
        } else if (result.response.lock == sm::LockOutcome::kQueued) {
            lock.waiters[owner] = acquire->mode;
        }
    }
    for (const sm::LockGrant& g : result.grants) {
        LockModel& lock = locks_[g.name];
        const Owner owner{g.session, g.owner_tag};
        auto waiter = lock.waiters.find(owner);
        if (waiter == lock.waiters.end()) {
            checker_.fail(
                fmt::format("lock oracle: entry {} hands {} to session {}, which was "
                            "not waiting for it",
                            index, g.name, g.session));
            continue;
        }
        const sm::LockMode mode = waiter->second;
        lock.waiters.erase(waiter);
        ++hand_offs_;
        add_holder(index, g.name, owner, mode, g.token);
    }
}

void LockChecker::add_holder(raft::Index index,
                             const std::string& name,
                             const Owner& owner,
                             sm::LockMode mode,
                             sm::Index token) {
    LockModel& lock = locks_[name];
    if (token != index) {
        checker_.fail(
            fmt::format("fencing: lock {} granted at index {} with token {}", name, index, token));
    }
    // Shared holders granted by one entry share its token; grants of later entries get larger
    // ones (with token == index, a repeated token can only come from the same entry).
    if (token < lock.last_token) {
        checker_.fail(fmt::format("fencing: lock {} granted with token {} after token {}", name,
                                  token, lock.last_token));
    }
    for (const auto& [other, hold] : lock.holders) {
        if (mode == sm::LockMode::kSemaphore) {
            break;  // the workload uses no semaphores; the state machine checks their permits
        }
        if (mode == sm::LockMode::kExclusive || hold.mode == sm::LockMode::kExclusive) {
            checker_.fail(fmt::format(
                "lock safety: entry {} grants {} to session {} ({}) while session {} holds it "
                "({}, token {})",
                index, name, owner.first, sm::to_string(mode), other.first,
                sm::to_string(hold.mode), hold.token));
            break;
        }
    }
    lock.holders[owner] = Hold{mode, token};
    lock.last_token = token;
    ++grants_;
}

void LockChecker::check_fence(raft::Index index,
                              const sm::Command& command,
                              const sm::ApplyResult& result) {
    if (!command.fence || result.replayed) {
        return;
    }
    const sm::ErrorCode code = result.response.code;
    if (code == sm::ErrorCode::kSessionExpired || code == sm::ErrorCode::kResultDiscarded) {
        return;  // never got as far as the fence
    }
    bool current = false;
    for (const auto& [owner, hold] : locks_[command.fence->lock].holders) {
        current = current || hold.token == command.fence->token;
    }
    if (code == sm::ErrorCode::kFenceRejected) {
        ++fenced_rejected_;
    }
    if (current == (code == sm::ErrorCode::kFenceRejected)) {
        checker_.fail(
            fmt::format("fencing: entry {} {} a request fenced by {} token {}, which is "
                        "{}a current holder's",
                        index, current ? "rejected" : "accepted", command.fence->lock,
                        command.fence->token, current ? "" : "not "));
    }
}

void LockChecker::check_exactly_once(raft::Index index,
                                     const sm::Command& command,
                                     const sm::ApplyResult& result) {
    if (command.client_id == sm::kNoSession || !executes(result)) {
        return;
    }
    auto [it, inserted] =
        executed_at_.emplace(std::make_pair(command.client_id, command.seq), index);
    if (!inserted) {
        checker_.fail(
            fmt::format("exactly-once: request {}#{} executed at index {} and again at {}",
                        command.client_id, command.seq, it->second, index));
    }
}

void LockChecker::compare_with_state(raft::Index index, const SimApp& app) {
    std::set<std::string> names;
    for (const auto& [name, lock] : locks_) {
        if (!lock.holders.empty() || !lock.waiters.empty()) {
            names.insert(name);
        }
    }
    for (std::string& name : app.locks().list_locks("", kLocksComparedMax)) {
        names.insert(std::move(name));
    }
    for (const std::string& name : names) {
        const LockModel& model = locks_[name];
        std::map<Owner, sm::Index> held;
        std::set<Owner> waiting;
        if (std::optional<sm::LockInfo> info = app.locks().describe_lock(name)) {
            for (const sm::HolderInfo& h : info->holders) {
                held[{h.session, h.owner_tag}] = h.token;
            }
            for (const sm::WaiterInfo& w : info->waiters) {
                waiting.insert({w.session, w.owner_tag});
            }
        }
        std::map<Owner, sm::Index> model_held;
        for (const auto& [owner, hold] : model.holders) {
            model_held[owner] = hold.token;
        }
        std::set<Owner> model_waiting;
        for (const auto& [owner, mode] : model.waiters) {
            model_waiting.insert(owner);
        }
        if (held != model_held || waiting != model_waiting) {
            checker_.fail(fmt::format(
                "lock oracle: after index {} the state machine has {} holders / {} waiters of {}, "
                "but its outputs announced {} / {}",
                index, held.size(), waiting.size(), name, model_held.size(), model_waiting.size()));
            return;
        }
    }
}

}  // namespace raftlock::sim
