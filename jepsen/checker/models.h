#pragma once

// The concrete models. The exact `f` / `value` shapes each accepts are in docs/jepsen.md
// ("Checker"); compile() refuses anything else as bad input.

#include "jepsen/checker/model.h"

namespace raftlock::jepsen {

// read / write / cas on one register (`register`: keys ignored) or one per key (`kv`).
class RegisterModel final : public Model {
public:
    explicit RegisterModel(bool per_key);
    std::string_view name() const override;
    bool partition_by_key() const override { return per_key_; }
    State init() const override { return State{}; }
    Compiled compile(const Operation& op, Interner& interner) const override;
    bool step(const State& state, const CompiledOp& op, State* next) const override;
    bool read_only(const CompiledOp& op) const override;
    std::string describe(const State& state, const Interner& interner) const override;

private:
    bool per_key_;
};

// A fenced mutex per key: acquire grants a token greater than every earlier grant of that lock;
// only the holder's token releases it; a fenced write succeeds only with the holder's token.
class MutexModel final : public Model {
public:
    std::string_view name() const override { return "mutex"; }
    bool partition_by_key() const override { return true; }
    State init() const override { return State{}; }
    Compiled compile(const Operation& op, Interner& interner) const override;
    bool step(const State& state, const CompiledOp& op, State* next) const override;
    bool read_only(const CompiledOp& op) const override;
    std::string describe(const State& state, const Interner& interner) const override;
};

// One session and its ephemeral node per key (the node's path): the node can exist only while
// the session lives.
class SessionsModel final : public Model {
public:
    std::string_view name() const override { return "sessions"; }
    bool partition_by_key() const override { return true; }
    State init() const override { return State{}; }
    Compiled compile(const Operation& op, Interner& interner) const override;
    bool step(const State& state, const CompiledOp& op, State* next) const override;
    bool read_only(const CompiledOp& op) const override;
    std::string describe(const State& state, const Interner& interner) const override;
};

// Sequential creates under one parent per key: the numbers handed out strictly increase.
class SequentialModel final : public Model {
public:
    std::string_view name() const override { return "sequential"; }
    bool partition_by_key() const override { return true; }
    State init() const override { return State{{-1, 0}}; }
    Compiled compile(const Operation& op, Interner& interner) const override;
    bool step(const State& state, const CompiledOp& op, State* next) const override;
    bool read_only(const CompiledOp& op) const override;
    std::string describe(const State& state, const Interner& interner) const override;
};

}  // namespace raftlock::jepsen
