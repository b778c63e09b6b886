#include "jepsen/checker/wgl.h"

#include <algorithm>
#include <array>
#include <map>

#include "jepsen/checker/config_cache.h"

namespace raftlock::jepsen {

const char* to_string(Verdict verdict) {
    switch (verdict) {
        case Verdict::kLinearizable:
            return "linearizable";
        case Verdict::kNotLinearizable:
            return "not linearizable";
        case Verdict::kUnknown:
            return "unknown";
    }
    return "?";
}

namespace {

constexpr int32_t kNil = -1;
constexpr int32_t kHead = 0;

// The call/return entries in real-time order as a doubly linked list with a head sentinel. Lifting
// an operation unlinks its call and return; unlifting relinks them in reverse order, which
// restores the list exactly (Knuth's dancing links, as in Lowe 2017 and Porcupine).
class EntryList {
public:
    explicit EntryList(std::span<const SearchOp> ops) {
        struct Raw {
            int64_t pos;
            int32_t op;
            bool is_call;
        };
        std::vector<Raw> raw;
        raw.reserve(ops.size() * 2);
        for (size_t i = 0; i < ops.size(); ++i) {
            RL_ASSERT(ops[i].call_pos < ops[i].return_pos);
            raw.push_back({ops[i].call_pos, static_cast<int32_t>(i), true});
            raw.push_back({ops[i].return_pos, static_cast<int32_t>(i), false});
        }
        // Unknown returns all sit at +infinity; ties there are broken by operation index.
        std::sort(raw.begin(), raw.end(), [](const Raw& x, const Raw& y) {
            return x.pos != y.pos ? x.pos < y.pos : x.op < y.op;
        });
        entries_.resize(raw.size() + 1);
        std::vector<int32_t> call_entry(ops.size(), kNil);
        for (size_t i = 0; i < raw.size(); ++i) {
            int32_t e = static_cast<int32_t>(i) + 1;
            entries_[e] = Entry{raw[i].op, raw[i].is_call, kNil, e - 1, kNil};
            entries_[e - 1].next = e;
            if (raw[i].is_call) {
                call_entry[raw[i].op] = e;
            } else {
                RL_ASSERT(call_entry[raw[i].op] != kNil);
                entries_[call_entry[raw[i].op]].match = e;
            }
        }
        entries_[kHead] = Entry{kNil, false, kNil, kNil, raw.empty() ? kNil : 1};
    }

    int32_t first() const { return entries_[kHead].next; }
    int32_t next(int32_t e) const { return entries_[e].next; }
    int32_t op(int32_t e) const { return entries_[e].op; }
    bool is_call(int32_t e) const { return entries_[e].is_call; }

    void lift(int32_t call) {
        unlink(call);
        unlink(entries_[call].match);
    }
    void unlift(int32_t call) {
        relink(entries_[call].match);
        relink(call);
    }

private:
    struct Entry {
        int32_t op = kNil;
        bool is_call = false;
        int32_t match = kNil;  // for a call: its return entry
        int32_t prev = kNil;
        int32_t next = kNil;
    };

    void unlink(int32_t e) {
        entries_[entries_[e].prev].next = entries_[e].next;
        if (entries_[e].next != kNil) {
            entries_[entries_[e].next].prev = entries_[e].prev;
        }
    }
    void relink(int32_t e) {
        entries_[entries_[e].prev].next = e;
        if (entries_[e].next != kNil) {
            entries_[entries_[e].next].prev = e;
        }
    }

    std::vector<Entry> entries_;
};

struct Frame {
    int32_t call_entry;
    State state_before;
    // Linearized as soon as it was legal because it cannot change any state: placing it later
    // is never needed, so backtracking does not try that (see try_linearize).
    bool eager;
};

// Checked every kBudgetStride steps: the clock is too slow to read on every step.
constexpr uint64_t kBudgetStride = 1024;

bool over_budget(const Budget& budget, const ConfigCache& cache) {
    if (budget.cancel != nullptr && budget.cancel->load(std::memory_order_relaxed)) {
        return true;
    }
    if (cache.bytes() > budget.memory_bytes_max) {
        return true;
    }
    return std::chrono::steady_clock::now() > budget.deadline;
}

// One run of the search. The state of the walk lives in members so that each move (try to
// linearize the call at `entry_`, or backtrack from a return) is a short method.
class Search {
public:
    Search(const Model& model, std::span<const SearchOp> ops, const Budget& budget)
        : model_(model),
          ops_(ops),
          budget_(budget),
          list_(ops),
          known_(ops.size()),
          unknown_index_(ops.size(), -1),
          state_(model.init()) {
        int32_t unknown_count = 0;
        for (size_t i = 0; i < ops.size(); ++i) {
            if (i > 0) {
                RL_ASSERT(ops[i - 1].call_pos < ops[i].call_pos);  // call order (find_twins)
            }
            if (ops[i].op.unknown) {
                unknown_index_[i] = unknown_count++;
            }
        }
        unknown_bits_.assign((static_cast<size_t>(unknown_count) + 63) / 64, 0);
        find_twins();
        stack_.reserve(ops.size());
        result_.best_state = state_;
    }

    SearchResult run() {
        entry_ = list_.first();
        // Each step lifts an operation (never twice into the same configuration, thanks to the
        // cache), moves right along the list, or backtracks; the budget bounds the total.
        while (list_.first() != kNil) {
            if (++result_.steps % kBudgetStride == 0 && over_budget(budget_, cache_)) {
                return finish(Verdict::kUnknown);
            }
            RL_ASSERT(entry_ != kNil);
            if (!(list_.is_call(entry_) ? try_linearize() : backtrack())) {
                return finish(Verdict::kNotLinearizable);
            }
        }
        return finish(Verdict::kLinearizable);
    }

private:
    bool is_unknown(int32_t op) const { return unknown_index_[op] >= 0; }

    bool unknown_linearized(int32_t op) const {
        auto u = static_cast<uint32_t>(unknown_index_[op]);
        return ((unknown_bits_[u / 64] >> (u % 64)) & 1) != 0;
    }

    // Operations with an unknown outcome that are identical (same compiled op) are
    // interchangeable once both are called: both return at +infinity, so a linearization that
    // places the later one while the earlier one is pending can swap them. So they are placed
    // in call order only (a symmetry reduction): twin_[i] is the previous identical one, or -1.
    void find_twins() {
        twin_.assign(ops_.size(), -1);
        std::map<std::array<int64_t, 4>, int32_t> last;
        for (size_t i = 0; i < ops_.size(); ++i) {
            const CompiledOp& c = ops_[i].op;
            if (!c.unknown) {
                continue;
            }
            auto [it, inserted] =
                last.try_emplace({c.kind, c.a, c.b, c.c}, static_cast<int32_t>(i));
            if (!inserted) {
                twin_[i] = it->second;
                it->second = static_cast<int32_t>(i);
            }
        }
    }

    bool waits_for_twin(int32_t op) const {
        return twin_[op] >= 0 && !unknown_linearized(twin_[op]);
    }

    void mark(int32_t op, bool linearized) {
        if (!is_unknown(op)) {
            linearized ? known_.set(op) : known_.clear(op);
            return;
        }
        auto u = static_cast<uint32_t>(unknown_index_[op]);
        uint64_t bit = uint64_t{1} << (u % 64);
        unknown_bits_[u / 64] =
            linearized ? unknown_bits_[u / 64] | bit : unknown_bits_[u / 64] & ~bit;
    }

    // True when the configuration reached by linearizing `op` into state `next` was seen before
    // (and so failed: a configuration on the current path has fewer operations).
    bool known_to_fail(const State& next) { return !cache_.insert(known_, unknown_bits_, next); }

    // Linearizes the call at entry_ now if the model allows it and the resulting configuration
    // is new; otherwise moves on to the next entry. Returns false when the search is exhausted.
    //
    // A read-only operation (Model::read_only) that is legal now is linearized now, without
    // trying it later: in any linearization that places it later, moving it here keeps every
    // step legal (it changes no state) and respects real time (every operation that returned
    // before its call is already linearized, or its call would not be reachable). If its
    // configuration is known to fail, so does every alternative, and we backtrack.
    bool try_linearize() {
        int32_t op = list_.op(entry_);
        const CompiledOp& compiled = ops_[op].op;
        if (compiled.unknown && waits_for_twin(op)) {
            entry_ = list_.next(entry_);
            return true;
        }
        State next;
        bool legal = model_.step(state_, compiled, &next);
        if (!legal && compiled.unknown) {
            // An operation with an unknown outcome that cannot take effect here is placed as
            // never having happened. Together with its return at +infinity (it can always be
            // placed last) this covers "at any point after its call, or never".
            next = state_;
            legal = true;
        }
        if (!legal) {
            entry_ = list_.next(entry_);
            return true;
        }
        bool eager = !compiled.unknown && model_.read_only(compiled);
        mark(op, true);
        if (known_to_fail(next)) {
            mark(op, false);
            if (eager) {
                return backtrack();
            }
            entry_ = list_.next(entry_);
            return true;
        }
        stack_.push_back(Frame{entry_, state_, eager});
        state_ = next;
        list_.lift(entry_);
        remember_if_deepest();
        entry_ = list_.first();
        return true;
    }

    // At a return entry its operation was not linearized in time (or an eager operation hit a
    // known failure): undo the latest choice that has an alternative and try the entry after
    // it. Returns false when there is nothing left to undo.
    bool backtrack() {
        if (stack_.size() == result_.best_linearization.size() && result_.stuck_id == -1) {
            result_.stuck_id = ops_[list_.op(entry_)].id;
        }
        // Bounded by the stack, which holds at most one frame per operation.
        while (!stack_.empty()) {
            Frame top = stack_.back();
            stack_.pop_back();
            best_shared_ = std::min(best_shared_, stack_.size());
            mark(list_.op(top.call_entry), false);
            state_ = top.state_before;
            list_.unlift(top.call_entry);
            if (!top.eager) {
                entry_ = list_.next(top.call_entry);
                return true;
            }
        }
        return false;
    }

    void remember_if_deepest() {
        if (stack_.size() <= result_.best_linearization.size()) {
            return;
        }
        // Only the part of the stack that changed since the last copy is copied again, which
        // keeps a long linearizable history linear rather than quadratic.
        result_.best_linearization.resize(best_shared_);
        for (size_t i = best_shared_; i < stack_.size(); ++i) {
            result_.best_linearization.push_back(ops_[list_.op(stack_[i].call_entry)].id);
        }
        best_shared_ = stack_.size();
        result_.best_state = state_;
        result_.stuck_id = -1;
    }

    SearchResult finish(Verdict verdict) {
        result_.verdict = verdict;
        result_.cache_entries = cache_.size();
        return std::move(result_);
    }

    const Model& model_;
    std::span<const SearchOp> ops_;
    const Budget& budget_;
    EntryList list_;
    LinearizedSet known_;                 // linearized operations with a known outcome
    std::vector<int32_t> unknown_index_;  // op -> dense index among unknown ones, or -1
    std::vector<uint64_t> unknown_bits_;  // linearized operations with an unknown outcome
    std::vector<int32_t> twin_;           // see find_twins
    State state_;
    ConfigCache cache_;
    std::vector<Frame> stack_;
    int32_t entry_ = kNil;
    SearchResult result_;
    // stack_[0, best_shared_) still equals the start of result_.best_linearization.
    size_t best_shared_ = 0;
};

}  // namespace

SearchResult wgl_search(const Model& model, std::span<const SearchOp> ops, const Budget& budget) {
    return Search(model, ops, budget).run();
}

}  // namespace raftlock::jepsen
