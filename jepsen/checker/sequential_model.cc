// Sequential nodes (DESIGN.md §4: a 10-digit suffix from the parent's counter). State: words[0]
// is the highest number seen under this parent (-1 before any).
#include "jepsen/checker/models.h"

namespace raftlock::jepsen {

namespace {

// (Named, so that the models' kinds stay apart in a unity build.)
struct SequentialOp {
    enum Kind : uint8_t { kCreate };
};

}  // namespace

Compiled SequentialModel::compile(const Operation& op, Interner& /*interner*/) const {
    if (op.f != "create") {
        return Compiled::bad("the sequential model has no operation '" + op.f + "' (create)");
    }
    // An unknown create may have consumed a number nobody saw; numbers need not be contiguous,
    // so it constrains nothing and is left out.
    if (op.outcome != Outcome::kOk) {
        return Compiled::drop();
    }
    if (!op.output.is_int() || op.output.int_value < 0) {
        return Compiled::bad("an ok sequential create returns its number (an integer >= 0)", true);
    }
    return Compiled::keep(CompiledOp{SequentialOp::kCreate, false, op.output.int_value, 0, 0});
}

bool SequentialModel::step(const State& state, const CompiledOp& op, State* next) const {
    RL_ASSERT(op.kind == SequentialOp::kCreate);
    *next = state;
    // Strictly greater: catches both a number going backwards and a duplicate.
    if (op.a <= state.words[0]) {
        return false;
    }
    next->words[0] = op.a;
    return true;
}

bool SequentialModel::read_only(const CompiledOp& /*op*/) const {
    return false;  // every create moves the counter
}

std::string SequentialModel::describe(const State& state, const Interner& /*interner*/) const {
    return "highest=" + std::to_string(state.words[0]);
}

}  // namespace raftlock::jepsen
