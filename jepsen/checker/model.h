#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jepsen/checker/history.h"

namespace raftlock::jepsen {

// A model state small enough to copy, compare and hash in the search's inner loop. Every model
// here fits in two words once values are interned.
struct State {
    std::array<int64_t, 2> words{};

    bool operator==(const State& other) const = default;
};

// An operation reduced to what a model's step needs: a model-specific kind and three arguments.
struct CompiledOp {
    uint8_t kind = 0;
    bool unknown = false;  // outcome info: the result was never observed
    int64_t a = 0;
    int64_t b = 0;
    int64_t c = 0;
};

// Maps values to small integers (0 is reserved for null) so register states stay two words wide.
class Interner {
public:
    int64_t id(const Value& value);
    // The text form of an interned id ("null" for 0).
    std::string text(int64_t id) const;

private:
    std::map<std::string, int64_t> ids_;
    std::vector<std::string> texts_;  // texts_[id - 1]
};

struct Compiled {
    enum class Action : uint8_t { kKeep, kDrop, kBad };
    Action action = Action::kKeep;
    CompiledOp op;
    std::string error;           // kBad: what is wrong with the record's shape
    bool in_completion = false;  // kBad: the completion record is wrong, not the invocation

    static Compiled keep(CompiledOp op) { return Compiled{Action::kKeep, op, {}, false}; }
    static Compiled drop() { return Compiled{Action::kDrop, {}, {}, false}; }
    static Compiled bad(std::string why, bool in_completion = false) {
        return Compiled{Action::kBad, {}, std::move(why), in_completion};
    }
};

// A sequential specification (Herlihy & Wing 1990) in the shape Porcupine uses: an initial state
// and a step function that says whether an operation with its observed result is legal in a state.
class Model {
public:
    virtual ~Model() = default;
    virtual std::string_view name() const = 0;
    // P-compositionality (Herlihy & Wing; Horn & Kroening 2015): keys are independent objects.
    virtual bool partition_by_key() const = 0;
    virtual State init() const = 0;
    // Drops operations that cannot constrain anything (a failed write, a read that timed out).
    virtual Compiled compile(const Operation& op, Interner& interner) const = 0;
    // Precondition: `op` came from compile(). Returns false when `op` is illegal in `state`. The
    // search takes an illegal op whose outcome is unknown (op.unknown) as one that never happened.
    virtual bool step(const State& state, const CompiledOp& op, State* next) const = 0;
    // True when `op` leaves every state unchanged, whatever the state (a read, a fenced write).
    // The search linearizes such operations as early as they are legal, without branching.
    virtual bool read_only(const CompiledOp& op) const = 0;
    virtual std::string describe(const State& state, const Interner& interner) const = 0;
};

// Returns nullptr for an unknown name. Names: register, kv, mutex, sessions, sequential.
std::unique_ptr<Model> make_model(std::string_view name);

}  // namespace raftlock::jepsen
