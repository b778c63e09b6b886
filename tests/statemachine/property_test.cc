// Seeded property tests: random command sequences applied to independent instances.
//
// For each sequence: two instances fed the same entry bytes produce identical outputs and state
// hashes; a third restored from a snapshot of the first at a random point and fed the rest ends
// identical too. After every step: the invariants (check_invariants), grant tokens equal the
// granting entry's index (so they strictly increase), and a model of what clients were told
// (replies and pushed grants) matches the holders exactly: no orphaned grant after a cancel, a
// timeout or anything else.

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "statemachine/codec.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine {
namespace {

struct SplitMix {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t below(uint64_t n) { return next() % n; }
    bool chance(int percent) { return below(100) < static_cast<uint64_t>(percent); }
    template <typename T>
    const T& pick(const std::vector<T>& v) {
        return v[below(v.size())];
    }
};

using HoldKey = std::tuple<SessionId, std::string, std::string>;  // session, lock, tag

// What clients know they hold, from the outputs alone.
class ClientModel {
public:
    void observe(const Command& c, const ApplyResult& out) {
        const Response& r = out.response;
        // A replayed reply repeats what the client was told the first time (a real client only
        // retries requests it has no reply for); timers of the entry still count.
        if (!out.replayed) {
            observe_reply(c, r);
        }
        for (const LockGrant& g : out.grants) {
            holds_[{g.session, g.name, g.owner_tag}] = g.token;
        }
        for (const SessionEnded& e : out.sessions_ended) {
            std::erase_if(holds_,
                          [&](const auto& kv) { return std::get<0>(kv.first) == e.session; });
        }
    }

    void observe_reply(const Command& c, const Response& r) {
        if (r.code == ErrorCode::kOk && r.lock == LockOutcome::kGranted) {
            if (const auto* a = std::get_if<Acquire>(&c.op)) {
                holds_[{c.client_id, a->name, a->owner_tag}] = r.token;
            } else if (const auto* x = std::get_if<Cancel>(&c.op)) {
                holds_[{c.client_id, x->name, x->owner_tag}] = r.token;
            } else if (const auto* m = std::get_if<AcquireMany>(&c.op)) {
                for (const LockSpec& spec : m->locks) {
                    holds_[{c.client_id, spec.name, m->owner_tag}] = r.token;
                }
            }
        }
        if (r.code == ErrorCode::kOk && r.lock == LockOutcome::kReleased && r.hold_count == 0) {
            const auto& rel = std::get<Release>(c.op);
            auto it = holds_.find({c.client_id, rel.name, rel.owner_tag});
            if (it != holds_.end() && it->second == r.token) {
                holds_.erase(it);
            }
        }
    }
    std::optional<Index> token(SessionId s, const std::string& lock, const std::string& tag) const {
        auto it = holds_.find({s, lock, tag});
        return it == holds_.end() ? std::nullopt : std::optional<Index>(it->second);
    }
    const std::map<HoldKey, Index>& holds() const { return holds_; }

private:
    std::map<HoldKey, Index> holds_;
};

class Generator {
public:
    explicit Generator(uint64_t seed) : rng_{seed} {}

    Command next(const ClientModel& model) {
        time_ms_ += static_cast<TimeMs>(rng_.below(60));
        if (!history_.empty() && rng_.chance(5)) {
            return rng_.pick(history_);  // a client retry, verbatim
        }
        Command c;
        c.time_ms = time_ms_;
        uint64_t roll = rng_.below(100);
        if (roll < 8 || live_.empty()) {
            c.op = OpenSession{static_cast<TimeMs>(1000 + rng_.below(9000))};
        } else if (roll < 11) {
            c.op = ExpireSession{rng_.chance(90) ? rng_.pick(live_) : 999999};
        } else if (roll < 20) {
            time_ms_ += static_cast<TimeMs>(rng_.below(2500));
            c.time_ms = time_ms_;
            c.op = Noop{};
        } else {
            SessionId s = rng_.chance(97) ? rng_.pick(live_) : 424242;
            c.client_id = s;
            c.seq = ++seqs_[s];
            c.ack_seq = rng_.chance(30) ? c.seq - 1 : acks_[s];
            acks_[s] = c.ack_seq;
            c.op = session_op(s, model);
            if (std::holds_alternative<SetData>(c.op) && rng_.chance(30)) {
                const std::string& lock = rng_.pick(kLocks);
                std::optional<Index> t = model.token(s, lock, "");
                c.fence = Fence{lock, t ? *t : 1 + rng_.below(50)};
            }
        }
        if (history_.size() < kHistoryMax) {
            history_.push_back(c);
        } else {
            history_[rng_.below(kHistoryMax)] = c;
        }
        return c;
    }

    void observe(const ApplyResult& out) {
        if (out.response.session != kNoSession) {
            live_.push_back(out.response.session);
        }
        for (const SessionEnded& e : out.sessions_ended) {
            std::erase(live_, e.session);
        }
    }

private:
    static constexpr size_t kHistoryMax = 32;
    inline static const std::vector<std::string> kPaths = {"/a",   "/a/b", "/a/b/c", "/b",
                                                           "/b/x", "/c",   "/c/y",   "/s-"};
    inline static const std::vector<std::string> kLocks = {"L0", "L1", "L2"};
    inline static const std::vector<std::string> kTags = {"", "t"};

    Create random_create() {
        Create op;
        op.path = rng_.pick(kPaths);
        op.kind = static_cast<NodeKind>(rng_.below(kNodeKindMax + 1));
        op.data = std::string(rng_.below(4), 'd');
        op.ttl_ms = is_ttl(op.kind) ? static_cast<TimeMs>(100 + rng_.below(3000)) : 0;
        return op;
    }

    int32_t random_version() { return rng_.chance(60) ? -1 : static_cast<int32_t>(rng_.below(3)); }

    MultiOp random_multi_op() {
        switch (rng_.below(4)) {
            case 0:
                return random_create();
            case 1:
                return Delete{rng_.pick(kPaths), random_version()};
            case 2:
                return SetData{rng_.pick(kPaths), "m", random_version()};
            default:
                return Check{rng_.pick(kPaths), random_version()};
        }
    }

    Acquire random_acquire() {
        Acquire op;
        op.name = rng_.pick(kLocks);
        op.owner_tag = rng_.pick(kTags);
        op.mode = static_cast<LockMode>(rng_.below(kLockModeMax + 1));
        op.permits = op.mode == LockMode::kSemaphore ? (rng_.chance(90) ? 2 : 3) : 1;
        op.wait_ms = rng_.chance(40) ? 0 : static_cast<TimeMs>(100 + rng_.below(3000));
        op.lock_delay_ms = rng_.chance(70) ? 0 : static_cast<TimeMs>(500 + rng_.below(1500));
        return op;
    }

    Op session_op(SessionId s, const ClientModel& model) {
        uint64_t roll = rng_.below(100);
        if (roll < 14) {
            return random_create();
        } else if (roll < 22) {
            return Delete{rng_.pick(kPaths), random_version()};
        } else if (roll < 30) {
            return SetData{rng_.pick(kPaths), "v", random_version()};
        } else if (roll < 36) {
            Multi m;
            for (uint64_t i = 0, n = 1 + rng_.below(4); i < n; i++) {
                m.ops.push_back(random_multi_op());
            }
            return m;
        } else if (roll < 60) {
            return random_acquire();
        } else if (roll < 80) {
            Release op{rng_.pick(kLocks), rng_.pick(kTags), 0};
            std::optional<Index> t = model.token(s, op.name, op.owner_tag);
            op.token = t && rng_.chance(90) ? *t : 1 + rng_.below(100);
            return op;
        } else if (roll < 88) {
            return Cancel{rng_.pick(kLocks), rng_.pick(kTags)};
        } else if (roll < 93) {
            // Two or three locks in any order, so that waiting sets cross one another.
            AcquireMany m;
            m.owner_tag = rng_.pick(kTags);
            std::vector<std::string> names = kLocks;
            for (size_t i = names.size(); i > 1; i--) {
                std::swap(names[i - 1], names[rng_.below(i)]);
            }
            names.resize(2 + rng_.below(2));
            for (const std::string& name : names) {
                m.locks.push_back(
                    LockSpec{name, rng_.chance(70) ? LockMode::kExclusive : LockMode::kShared, 1});
            }
            m.wait_ms = rng_.chance(30) ? 0 : static_cast<TimeMs>(100 + rng_.below(3000));
            return m;
        } else if (roll < 97) {
            return KeepAlive{};
        }
        return CloseSession{};
    }

    SplitMix rng_;
    TimeMs time_ms_ = 1000;
    std::vector<SessionId> live_;
    std::map<SessionId, uint64_t> seqs_;
    std::map<SessionId, uint64_t> acks_;
    std::vector<Command> history_;
};

// The holders in the state must be exactly what the clients were told.
bool model_matches(const StateMachine& sm, const ClientModel& model) {
    std::map<HoldKey, Index> actual;
    for (const std::string& name : sm.list_locks("", 100)) {
        std::optional<LockInfo> info = sm.describe_lock(name);
        if (!info) {
            return false;
        }
        for (const HolderInfo& h : info->holders) {
            actual[{h.session, name, h.owner_tag}] = h.token;
        }
    }
    return actual == model.holds();
}

// Every fresh grant carries its entry's index, so tokens strictly increase from entry to entry.
bool tokens_fresh(const Command& c, const ApplyResult& out) {
    for (const LockGrant& g : out.grants) {
        if (g.token != out.index) {
            return false;
        }
    }
    bool fresh_reply = !out.replayed && out.response.lock == LockOutcome::kGranted &&
                       ((std::holds_alternative<Acquire>(c.op) && out.response.hold_count == 1) ||
                        std::holds_alternative<AcquireMany>(c.op));
    return !fresh_reply || out.response.token == out.index;
}

// How often the interesting outcomes happened, so a generator that stops reaching them fails.
struct Coverage {
    std::map<ErrorCode, size_t> codes;
    size_t handoffs = 0;
    size_t wait_timeouts = 0;
    size_t expiries = 0;
    size_t replays = 0;
    size_t multi_ok = 0;
    size_t cancel_reported_grant = 0;
    size_t delayed_locks = 0;
    size_t multi_queued = 0;
    size_t multi_handed_off = 0;  // a queued set granted by a later entry

    void observe(const Command& c, const ApplyResult& out, const StateMachine& sm) {
        if (std::holds_alternative<AcquireMany>(c.op) &&
            out.response.lock == LockOutcome::kQueued && !out.replayed) {
            multi_queued++;
        }
        std::map<std::pair<SessionId, std::string>, size_t> granted;
        for (const LockGrant& g : out.grants) {
            multi_handed_off += ++granted[{g.session, g.owner_tag}] == 2 ? 1 : 0;
        }
        codes[out.response.code]++;
        handoffs += out.grants.size();
        wait_timeouts += out.wait_timeouts.size();
        replays += out.replayed ? 1 : 0;
        for (const SessionEnded& e : out.sessions_ended) {
            expiries += e.reason == SessionEnd::kExpired ? 1 : 0;
        }
        if (std::holds_alternative<Multi>(c.op) && out.response.code == ErrorCode::kOk) {
            multi_ok++;
        }
        if (std::holds_alternative<Cancel>(c.op) && out.response.lock == LockOutcome::kGranted) {
            cancel_reported_grant++;
        }
        for (const std::string& name : sm.list_locks("", 100)) {
            delayed_locks += sm.describe_lock(name)->free_at_ms > sm.now_ms() ? 1 : 0;
        }
    }
};

std::optional<Index> held_token(const StateMachine& sm,
                                SessionId session,
                                const std::string& name,
                                const std::string& tag) {
    std::optional<LockInfo> info = sm.describe_lock(name);
    if (info) {
        for (const HolderInfo& h : info->holders) {
            if (h.session == session && h.owner_tag == tag) {
                return h.token;
            }
        }
    }
    return std::nullopt;
}

// A cancel's reply says exactly whether the client holds the lock afterwards (and with which
// token), and a timed-out wait holds nothing: the client never has to guess, even if it missed a
// pushed grant.
bool no_orphaned_grant(const Command& c, const ApplyResult& out, const StateMachine& sm) {
    // Timers fire before the entry's request, so the request itself may grant the same owner
    // again after its old wait timed out; that grant is in its reply.
    bool reply_granted = out.response.lock == LockOutcome::kGranted;
    for (const WaitTimeout& w : out.wait_timeouts) {
        bool names_it = false;
        if (const auto* acquire = std::get_if<Acquire>(&c.op)) {
            names_it = acquire->name == w.name && acquire->owner_tag == w.owner_tag;
        } else if (const auto* many = std::get_if<AcquireMany>(&c.op)) {
            names_it = many->owner_tag == w.owner_tag &&
                       std::any_of(many->locks.begin(), many->locks.end(),
                                   [&](const LockSpec& spec) { return spec.name == w.name; });
        }
        bool regranted = reply_granted && names_it && c.client_id == w.session;
        if (!regranted && held_token(sm, w.session, w.name, w.owner_tag)) {
            return false;
        }
    }
    const auto* cancel = std::get_if<Cancel>(&c.op);
    if (cancel == nullptr || out.replayed || out.response.code != ErrorCode::kOk) {
        return true;
    }
    std::optional<Index> held = held_token(sm, c.client_id, cancel->name, cancel->owner_tag);
    if (held) {
        return out.response.lock == LockOutcome::kGranted && out.response.token == *held;
    }
    return out.response.lock != LockOutcome::kGranted;
}

// What went wrong at one step, or "" when all is well. Strings are built only on failure, so the
// thousands of steps stay cheap (also under the sanitizers).
std::string check_step(const Command& c,
                       const ApplyResult& out_a,
                       const ApplyResult& out_b,
                       const StateMachine& a,
                       const ClientModel& model) {
    if (!(out_a == out_b)) {
        return "replicas disagree: " + to_string(out_b);
    }
    if (std::string broken = a.check_invariants(); !broken.empty()) {
        return "invariant: " + broken;
    }
    if (!tokens_fresh(c, out_a)) {
        return "a grant's token is not its entry's index";
    }
    if (!no_orphaned_grant(c, out_a, a)) {
        return "a cancel or a timeout left the client unsure whether it holds the lock";
    }
    if (!model_matches(a, model)) {
        return "holders differ from what clients were told";
    }
    return {};
}

void run_sequence(uint64_t seed, size_t steps, Coverage& coverage) {
    Generator gen(seed);
    SplitMix rng{seed ^ 0xABCDEF};
    ClientModel model;
    StateMachine a;
    StateMachine b;
    StateMachine restored;
    size_t snapshot_at = rng.below(steps);
    for (size_t step = 0; step < steps; step++) {
        Command c = gen.next(model);
        Result<std::string, ErrorCode> bytes = encode_command(c);
        REQUIRE(bytes.ok());
        Index index = step + 1;
        ApplyResult out_a = a.apply(index, bytes.value());
        ApplyResult out_b = b.apply(index, bytes.value());
        std::string error;
        if (step > snapshot_at && !(restored.apply(index, bytes.value()) == out_a)) {
            error = "the restored instance disagrees";
        }
        if (step == snapshot_at && restored.restore(a.snapshot()) != ErrorCode::kOk) {
            error = "restore failed";
        }
        model.observe(c, out_a);
        gen.observe(out_a);
        if (error.empty()) {
            error = check_step(c, out_a, out_b, a, model);
        }
        if (!error.empty()) {
            FAIL("seed " << seed << " step " << step << ": " << to_string(c) << " => "
                         << to_string(out_a) << ": " << error);
        }
        coverage.observe(c, out_a, a);
    }
    REQUIRE(a.state_hash() == b.state_hash());
    REQUIRE(a.state_hash() == restored.state_hash());
    REQUIRE(restored.check_invariants() == "");
}

TEST_CASE("random command sequences keep replicas identical and every invariant true",
          "[statemachine][property]") {
    constexpr uint64_t kSequences = 2000;
    constexpr size_t kSteps = 40;
    Coverage coverage;
    for (uint64_t seed = 1; seed <= kSequences; seed++) {
        run_sequence(seed, kSteps, coverage);
    }
    // The generator must keep reaching every interesting outcome.
    for (ErrorCode code :
         {ErrorCode::kOk, ErrorCode::kNoNode, ErrorCode::kNodeExists, ErrorCode::kNotEmpty,
          ErrorCode::kBadVersion, ErrorCode::kNoChildrenForEphemerals, ErrorCode::kBadArguments,
          ErrorCode::kSessionExpired, ErrorCode::kResultDiscarded, ErrorCode::kLockBusy,
          ErrorCode::kNotLockHolder, ErrorCode::kFenceRejected, ErrorCode::kAlreadyWaiting}) {
        INFO(to_string(code));
        CHECK(coverage.codes[code] > 0);
    }
    CHECK(coverage.handoffs > 0);
    CHECK(coverage.wait_timeouts > 0);
    CHECK(coverage.expiries > 0);
    CHECK(coverage.replays > 0);
    CHECK(coverage.multi_ok > 0);
    CHECK(coverage.cancel_reported_grant > 0);
    CHECK(coverage.delayed_locks > 0);
    CHECK(coverage.multi_queued > 0);
    CHECK(coverage.multi_handed_off > 0);
}

TEST_CASE("long random sequences keep replicas identical and every invariant true",
          "[statemachine][property]") {
    Coverage coverage;
    for (uint64_t seed = 100001; seed <= 100005; seed++) {
        run_sequence(seed, 2000, coverage);
    }
}

TEST_CASE("mutated entry bytes never crash apply and never break an invariant",
          "[statemachine][property][codec]") {
    // Entries are only ever produced by encode_command, but the apply path must survive anything
    // (a corrupt log record that slipped past storage checksums must not take the cluster down).
    SplitMix rng{7};
    Generator gen(7);
    ClientModel model;
    StateMachine sm;
    for (Index index = 1; index <= 5000; index++) {
        Command c = gen.next(model);
        std::string bytes = encode_command(c).value();
        if (rng.chance(50)) {
            bytes[rng.below(bytes.size())] = static_cast<char>(rng.next());
        }
        ApplyResult out = sm.apply(index, bytes);
        gen.observe(out);
        if (std::string broken = sm.check_invariants(); !broken.empty()) {
            FAIL("index " << index << ": " << broken);
        }
    }
    CHECK(sm.last_applied() == 5000);
}

}  // namespace
}  // namespace raftlock::statemachine
