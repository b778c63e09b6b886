// The fenced mutex (DESIGN.md §4 "Locks" and "Fenced writes"). State: words[0] is the holder's
// token (0 = free, kUnknownHolder = granted to an `info` acquire whose token nobody saw),
// words[1] is the highest token granted so far.
#include "jepsen/checker/models.h"

namespace raftlock::jepsen {

namespace {

// (Named, so that the models' kinds stay apart in a unity build.)
struct MutexOp {
    enum Kind : uint8_t { kAcquire, kRelease, kFencedWrite };
};

constexpr int64_t kFree = 0;
constexpr int64_t kUnknownHolder = -1;

bool is_token(const Value& v) {
    return v.is_int() && v.int_value > 0;
}

}  // namespace

Compiled MutexModel::compile(const Operation& op, Interner& /*interner*/) const {
    bool info = op.outcome == Outcome::kInfo;
    if (op.f == "acquire") {
        if (op.outcome == Outcome::kFail) {
            return Compiled::drop();  // the service promises a failed acquire holds nothing
        }
        if (!info && !is_token(op.output)) {
            return Compiled::bad("an ok acquire returns its fencing token (an integer > 0)", true);
        }
        return Compiled::keep(
            CompiledOp{MutexOp::kAcquire, info, info ? 0 : op.output.int_value, 0, 0});
    }
    if (op.f == "release") {
        if (!is_token(op.input)) {
            return Compiled::bad("release needs the holder's token (an integer > 0)");
        }
        if (op.outcome == Outcome::kFail) {
            return Compiled::drop();
        }
        return Compiled::keep(CompiledOp{MutexOp::kRelease, info, op.input.int_value, 0, 0});
    }
    if (op.f == "fenced-write") {
        if (op.input.kind != Value::Kind::kList || op.input.items.size() != 2 ||
            !is_token(op.input.items[0])) {
            return Compiled::bad("fenced-write needs the value [token, data]");
        }
        // Only an accepted write can show a broken fence; a rejected or unknown one cannot.
        if (op.outcome != Outcome::kOk) {
            return Compiled::drop();
        }
        return Compiled::keep(
            CompiledOp{MutexOp::kFencedWrite, false, op.input.items[0].int_value, 0, 0});
    }
    return Compiled::bad("the mutex model has no operation '" + op.f +
                         "' (acquire, release, fenced-write)");
}

bool MutexModel::step(const State& state, const CompiledOp& op, State* next) const {
    int64_t holder = state.words[0];
    int64_t highest = state.words[1];
    *next = state;
    switch (op.kind) {
        case MutexOp::kAcquire:
            if (holder != kFree) {
                return false;
            }
            if (op.unknown) {
                // Its token is unseen, so `highest` stays: later tokens are still checked
                // against every token we know of.
                next->words[0] = kUnknownHolder;
                return true;
            }
            if (op.a <= highest) {
                return false;  // tokens of one lock must increase
            }
            next->words = {op.a, op.a};
            return true;
        case MutexOp::kRelease:
            if (holder != op.a) {
                return false;  // only the holder's token releases
            }
            next->words[0] = kFree;
            return true;
        case MutexOp::kFencedWrite:
            return holder == op.a;  // a stale (or unknown) token must be refused
        default:
            RL_PANIC("mutex model: unknown op kind");
    }
}

bool MutexModel::read_only(const CompiledOp& op) const {
    return op.kind == MutexOp::kFencedWrite;
}

std::string MutexModel::describe(const State& state, const Interner& /*interner*/) const {
    std::string holder = state.words[0] == kFree ? "free"
                         : state.words[0] == kUnknownHolder
                             ? "held(token unknown)"
                             : "held(token " + std::to_string(state.words[0]) + ")";
    return holder + " highest-token=" + std::to_string(state.words[1]);
}

}  // namespace raftlock::jepsen
