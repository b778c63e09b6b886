// Sessions and ephemeral nodes (DESIGN.md §4 "Sessions"). One partition per node path, owned by
// one session. State: words[0] is the session's life (0 not yet open, 1 live, 2 ended by close or
// expiry), words[1] is 1 while the ephemeral node exists.
#include "jepsen/checker/models.h"

namespace raftlock::jepsen {

namespace {

// (Named, so that the models' kinds stay apart in a unity build.)
struct SessionsOp {
    enum Kind : uint8_t { kOpen, kCreate, kDelete, kRead, kEnd };
};

constexpr int64_t kNotOpen = 0;
constexpr int64_t kLive = 1;
constexpr int64_t kEnded = 2;

}  // namespace

Compiled SessionsModel::compile(const Operation& op, Interner& /*interner*/) const {
    bool info = op.outcome == Outcome::kInfo;
    // A failed operation did not happen; it cannot show a violation in this model.
    bool dropped = op.outcome == Outcome::kFail;
    if (op.f == "read") {
        if (op.outcome != Outcome::kOk) {
            return Compiled::drop();
        }
        // The read returns the node's data, or null when the node does not exist.
        return Compiled::keep(
            CompiledOp{SessionsOp::kRead, false, op.output.is_null() ? 0 : 1, 0, 0});
    }
    uint8_t kind = 0;
    if (op.f == "open") {
        kind = SessionsOp::kOpen;
    } else if (op.f == "create") {
        kind = SessionsOp::kCreate;
    } else if (op.f == "delete") {
        kind = SessionsOp::kDelete;
    } else if (op.f == "close" || op.f == "expire") {
        kind = SessionsOp::kEnd;
    } else {
        return Compiled::bad("the sessions model has no operation '" + op.f +
                             "' (open, create, delete, read, close, expire)");
    }
    if (dropped) {
        return Compiled::drop();
    }
    return Compiled::keep(CompiledOp{kind, info, 0, 0, 0});
}

bool SessionsModel::step(const State& state, const CompiledOp& op, State* next) const {
    int64_t life = state.words[0];
    int64_t exists = state.words[1];
    *next = state;
    switch (op.kind) {
        case SessionsOp::kOpen:
            if (life != kNotOpen) {
                return false;
            }
            next->words[0] = kLive;
            return true;
        case SessionsOp::kCreate:
            // An ephemeral node can be created only in a live session, and only once.
            if (life != kLive || exists != 0) {
                return false;
            }
            next->words[1] = 1;
            return true;
        case SessionsOp::kDelete:
            if (exists == 0) {
                return false;
            }
            next->words[1] = 0;
            return true;
        case SessionsOp::kRead:
            return exists == op.a;
        case SessionsOp::kEnd:
            // Ending the session deletes its ephemeral node in the same step.
            if (life != kLive) {
                return false;
            }
            next->words = {kEnded, 0};
            return true;
        default:
            RL_PANIC("sessions model: unknown op kind");
    }
}

bool SessionsModel::read_only(const CompiledOp& op) const {
    return op.kind == SessionsOp::kRead;
}

std::string SessionsModel::describe(const State& state, const Interner& /*interner*/) const {
    const char* life = state.words[0] == kNotOpen ? "not-open"
                       : state.words[0] == kLive  ? "live"
                                                  : "ended";
    return std::string("session=") + life + " node=" + (state.words[1] != 0 ? "exists" : "absent");
}

}  // namespace raftlock::jepsen
