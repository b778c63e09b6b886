// Differential test: the WGL search (with its reductions: memoization, eager read-only
// operations, unknown outcomes placed last or never) against a brute-force search over every
// order of every small random history. Tests may use a PRNG; the seed is fixed so failures replay.
#include <array>
#include <random>

#include <catch2/catch.hpp>

#include "jepsen/checker/models.h"
#include "jepsen/checker/wgl.h"

namespace raftlock::jepsen {
namespace {

// Tries every real-time-respecting order; an op with an unknown outcome may also never happen.
class BruteForce {
public:
    BruteForce(const Model& model, const std::vector<SearchOp>& ops) : model_(model), ops_(ops) {}

    bool linearizable() { return extend(model_.init(), std::vector<bool>(ops_.size(), false)); }

private:
    // Can `i` go next? Everything that returned before its call must be done already.
    bool ready(size_t i, const std::vector<bool>& done) const {
        for (size_t j = 0; j < ops_.size(); ++j) {
            if (!done[j] && ops_[j].return_pos < ops_[i].call_pos) {
                return false;
            }
        }
        return true;
    }

    // Depth at most the number of operations (7 here), each level at most 7 branches.
    bool extend(const State& state, std::vector<bool> done) {
        bool all = true;
        for (size_t i = 0; i < ops_.size(); ++i) {
            all = all && (done[i] || ops_[i].op.unknown);
        }
        if (all) {
            return true;  // unknown ones left over never happened
        }
        for (size_t i = 0; i < ops_.size(); ++i) {
            if (done[i] || !ready(i, done)) {
                continue;
            }
            State next;
            done[i] = true;
            if (model_.step(state, ops_[i].op, &next) && extend(next, done)) {
                return true;
            }
            // Dropping an unknown op is the same as placing it as a no-op.
            if (ops_[i].op.unknown && extend(state, done)) {
                return true;
            }
            done[i] = false;
        }
        return false;
    }

    const Model& model_;
    const std::vector<SearchOp>& ops_;
};

struct Draw {
    std::mt19937 rng;
    int64_t tokens = 0;             // grants so far, so that tokens increase as a service's would
    std::array<int64_t, 3> held{};  // per process: the token of its last acquire, 0 for none
    int below(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
};

// A random interleaving of `count` operations by 3 processes; `make` invents one operation.
template <typename Make>
std::vector<Operation> random_history(Draw& draw, int count, Make make) {
    std::vector<Operation> ops;
    std::vector<int> open(3, -1);
    int64_t pos = 0;
    int started = 0;
    // Bounded: every iteration starts or completes an operation, 2 * count in all.
    while (started < count || open[0] >= 0 || open[1] >= 0 || open[2] >= 0) {
        int p = draw.below(3);
        if (open[p] < 0 && started < count) {
            Operation op = make(draw, p);
            op.id = static_cast<int32_t>(ops.size());
            op.process = p;
            op.call_pos = pos++;
            open[p] = op.id;
            ops.push_back(op);
            ++started;
        } else if (open[p] >= 0) {
            Operation& op = ops[open[p]];
            int roll = draw.below(10);
            op.outcome = roll < 7 ? Outcome::kOk : roll < 9 ? Outcome::kInfo : Outcome::kFail;
            op.return_pos = op.outcome == Outcome::kInfo ? kNeverReturned : pos;
            ++pos;
            open[p] = -1;
        }
    }
    return ops;
}

Operation register_op(Draw& draw, int /*process*/) {
    auto value = [&draw] { return Value::integer(draw.below(3)); };
    Operation op;
    switch (draw.below(3)) {
        case 0:
            op.f = "read";
            op.output = draw.below(4) == 0 ? Value::null() : value();
            break;
        case 1:
            op.f = "write";
            op.input = value();
            break;
        default:
            op.f = "cas";
            op.input = Value::list({value(), value()});
            op.error = "mismatch";  // used only if the outcome is fail
    }
    return op;
}

// Each process cycles acquire, fenced write, release with the token it was granted; grants are
// numbered in invocation order, so overlapping acquires make the interesting cases.
Operation mutex_op(Draw& draw, int process) {
    Operation op;
    int64_t& held = draw.held[static_cast<size_t>(process)];
    if (held == 0) {
        op.f = "acquire";
        held = ++draw.tokens;
        op.output = Value::integer(held);
    } else if (draw.below(2) == 0) {
        op.f = "fenced-write";
        op.input = Value::list({Value::integer(held), Value::string("d")});
    } else {
        op.f = "release";
        op.input = Value::integer(held);
        held = 0;
    }
    return op;
}

// One session's life: opened by the first operation, then its node created, read, deleted, and
// the session closed or expired, in random order and overlap.
Operation sessions_op(Draw& draw, int /*process*/) {
    Operation op;
    if (draw.tokens++ == 0) {
        op.f = "open";
        return op;
    }
    int roll = draw.below(20);
    if (roll < 8) {
        op.f = "read";
        op.output = draw.below(2) == 0 ? Value::null() : Value::string("x");
    } else if (roll < 13) {
        op.f = "create";
    } else if (roll < 16) {
        op.f = "delete";
    } else {
        op.f = roll < 18 ? "close" : "expire";
    }
    return op;
}

template <typename Make>
void compare(const Model& model, Make make, uint32_t seed, int histories, int each_verdict_min) {
    Draw draw{std::mt19937(seed), 0};
    int agreed_linearizable = 0;
    for (int h = 0; h < histories; ++h) {
        draw.tokens = 0;
        draw.held = {};
        std::vector<Operation> ops = random_history(draw, 7, make);
        Interner interner;
        std::vector<SearchOp> search;
        for (const Operation& op : ops) {
            Compiled c = model.compile(op, interner);
            REQUIRE(c.action != Compiled::Action::kBad);
            if (c.action == Compiled::Action::kKeep) {
                search.push_back(SearchOp{c.op, op.call_pos, op.return_pos, op.id});
            }
        }
        bool expected = BruteForce(model, search).linearizable();
        SearchResult got = wgl_search(model, search, Budget{});
        INFO("seed " << seed << " history " << h);
        REQUIRE(got.verdict == (expected ? Verdict::kLinearizable : Verdict::kNotLinearizable));
        agreed_linearizable += expected ? 1 : 0;
    }
    // Both verdicts must be represented, or the comparison proves little.
    CHECK(agreed_linearizable >= each_verdict_min);
    CHECK(histories - agreed_linearizable >= each_verdict_min);
}

TEST_CASE("the search agrees with brute force on random small register histories",
          "[jepsen][wgl][oracle]") {
    compare(RegisterModel(false), register_op, 7, 3000, 300);
}

TEST_CASE("the search agrees with brute force on random small mutex histories",
          "[jepsen][wgl][oracle]") {
    // Random lock histories are rarely legal, hence more of them and a lower bar.
    compare(MutexModel(), mutex_op, 11, 20000, 100);
}

TEST_CASE("the search agrees with brute force on random small sessions histories",
          "[jepsen][wgl][oracle]") {
    compare(SessionsModel(), sessions_op, 13, 20000, 100);
}

}  // namespace
}  // namespace raftlock::jepsen
