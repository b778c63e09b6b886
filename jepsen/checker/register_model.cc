// Register and key-value models: read / write / cas on one register, or on one register per key.
#include "jepsen/checker/models.h"

namespace raftlock::jepsen {

namespace {

// (Named, so that the models' kinds stay apart in a unity build.)
struct RegisterOp {
    enum Kind : uint8_t { kRead, kWrite, kCas, kCasMismatch };
};

}  // namespace

RegisterModel::RegisterModel(bool per_key) : per_key_(per_key) {}

std::string_view RegisterModel::name() const {
    return per_key_ ? "kv" : "register";
}

Compiled RegisterModel::compile(const Operation& op, Interner& interner) const {
    bool info = op.outcome == Outcome::kInfo;
    if (op.f == "read") {
        // A read whose result is unknown, or that failed, constrains nothing.
        if (op.outcome != Outcome::kOk) {
            return Compiled::drop();
        }
        if (op.output.kind == Value::Kind::kList) {
            return Compiled::bad("a read returns null or a scalar, not a list", true);
        }
        return Compiled::keep(CompiledOp{RegisterOp::kRead, false, interner.id(op.output), 0, 0});
    }
    if (op.f == "write") {
        if (op.input.is_null() || op.input.kind == Value::Kind::kList) {
            return Compiled::bad("write needs a scalar value");
        }
        if (op.outcome == Outcome::kFail) {
            return Compiled::drop();
        }
        return Compiled::keep(CompiledOp{RegisterOp::kWrite, info, interner.id(op.input), 0, 0});
    }
    if (op.f == "cas") {
        if (op.input.kind != Value::Kind::kList || op.input.items.size() != 2) {
            return Compiled::bad("cas needs the value [from, to]");
        }
        int64_t from = interner.id(op.input.items[0]);
        int64_t to = interner.id(op.input.items[1]);
        if (op.outcome == Outcome::kFail) {
            // A failed compare is an observation (the register did not hold `from`); any other
            // failure means the cas did not happen at all.
            if (op.error != "mismatch") {
                return Compiled::drop();
            }
            return Compiled::keep(CompiledOp{RegisterOp::kCasMismatch, false, from, to, 0});
        }
        return Compiled::keep(CompiledOp{RegisterOp::kCas, info, from, to, 0});
    }
    return Compiled::bad("the " + std::string(name()) + " model has no operation '" + op.f +
                         "' (read, write, cas)");
}

bool RegisterModel::step(const State& state, const CompiledOp& op, State* next) const {
    int64_t current = state.words[0];
    *next = state;
    switch (op.kind) {
        case RegisterOp::kRead:
            return current == op.a;
        case RegisterOp::kWrite:
            next->words[0] = op.a;
            return true;
        case RegisterOp::kCas:
            if (current == op.a) {
                next->words[0] = op.b;
                return true;
            }
            // An unknown cas whose compare fails is a legal no-op.
            return op.unknown;
        case RegisterOp::kCasMismatch:
            return current != op.a;
        default:
            RL_PANIC("register model: unknown op kind");
    }
}

bool RegisterModel::read_only(const CompiledOp& op) const {
    return op.kind == RegisterOp::kRead || op.kind == RegisterOp::kCasMismatch;
}

std::string RegisterModel::describe(const State& state, const Interner& interner) const {
    return "value=" + interner.text(state.words[0]);
}

}  // namespace raftlock::jepsen
