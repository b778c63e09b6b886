// "No acknowledged write lost", in O(n log n) per key: for each read r, take w, the acknowledged
// write that returned before r was invoked and was itself invoked last. Every write that returned
// before r constrains r at most as much as w does, because "a write that may come after w" is the
// weakest requirement for the latest-invoked w. r must see w's value or the value of a write x
// that may be ordered after w (x invoked before r returned, x not returned before w was invoked).
#include <algorithm>
#include <map>

#include "jepsen/checker/linear_checks.h"

namespace raftlock::jepsen {

namespace {

struct Writer {
    const Operation* op;
    std::string value;  // to_string of the written value
};

// Writers of one value, by call position, with the running maximum of their return positions.
struct ValueWriters {
    std::vector<int64_t> call_pos;
    std::vector<int64_t> return_max;
};

struct KeyIndex {
    std::vector<Writer> acknowledged;  // sorted by return position
    std::vector<size_t> latest_call;   // prefix argmax of call position over `acknowledged`
    std::map<std::string, ValueWriters> by_value;  // ok and info writers
};

const Value* written_value(const Operation& op) {
    if (op.f == "write") {
        return &op.input;
    }
    if (op.f == "cas" && op.input.kind == Value::Kind::kList && op.input.items.size() == 2) {
        return &op.input.items[1];
    }
    return nullptr;
}

std::map<std::string, KeyIndex> build_index(const std::vector<Operation>& ops, bool per_key) {
    std::map<std::string, KeyIndex> index;
    for (const Operation& op : ops) {  // in call order, so by_value lists are sorted by call
        const Value* v = written_value(op);
        if (v == nullptr || op.outcome == Outcome::kFail) {
            continue;
        }
        KeyIndex& k = index[per_key ? op.key : std::string()];
        std::string text = to_string(*v);
        ValueWriters& w = k.by_value[text];
        int64_t prior_max = w.return_max.empty() ? INT64_MIN : w.return_max.back();
        w.call_pos.push_back(op.call_pos);
        w.return_max.push_back(std::max(prior_max, op.return_pos));
        if (op.outcome == Outcome::kOk) {
            k.acknowledged.push_back(Writer{&op, std::move(text)});
        }
    }
    for (auto& [key, k] : index) {
        std::sort(
            k.acknowledged.begin(), k.acknowledged.end(),
            [](const Writer& x, const Writer& y) { return x.op->return_pos < y.op->return_pos; });
        for (size_t i = 0; i < k.acknowledged.size(); ++i) {
            size_t best = i == 0 ? 0 : k.latest_call.back();
            bool later = k.acknowledged[i].op->call_pos > k.acknowledged[best].op->call_pos;
            k.latest_call.push_back(later ? i : best);
        }
    }
    return index;
}

// True when some writer of `value` was invoked before `before` and had not returned by `after`.
bool may_follow(const KeyIndex& k, const std::string& value, int64_t before, int64_t after) {
    auto it = k.by_value.find(value);
    if (it == k.by_value.end()) {
        return false;
    }
    const ValueWriters& w = it->second;
    size_t n = std::lower_bound(w.call_pos.begin(), w.call_pos.end(), before) - w.call_pos.begin();
    return n > 0 && w.return_max[n - 1] > after;
}

}  // namespace

std::vector<Finding> check_acknowledged_writes(const std::vector<Operation>& ops, bool per_key) {
    std::map<std::string, KeyIndex> index = build_index(ops, per_key);
    std::vector<Finding> out;
    for (const Operation& read : ops) {
        if (read.f != "read" || read.outcome != Outcome::kOk ||
            out.size() >= kFindingsPerCheckMax) {
            continue;
        }
        auto kit = index.find(per_key ? read.key : std::string());
        if (kit == index.end() || kit->second.acknowledged.empty()) {
            continue;
        }
        const KeyIndex& k = kit->second;
        auto done =
            std::lower_bound(k.acknowledged.begin(), k.acknowledged.end(), read.call_pos,
                             [](const Writer& w, int64_t pos) { return w.op->return_pos < pos; });
        if (done == k.acknowledged.begin()) {
            continue;  // nothing was acknowledged before this read began
        }
        const Writer& w = k.acknowledged[k.latest_call[done - k.acknowledged.begin() - 1]];
        std::string seen = to_string(read.output);
        if (seen == w.value || may_follow(k, seen, read.return_pos, w.op->call_pos)) {
            continue;
        }
        out.push_back(Finding{
            "acknowledged-write",
            "write of " + w.value + " by process " + std::to_string(w.op->process) + " (line " +
                std::to_string(w.op->call_line) +
                ") was acknowledged, but a later read by process " + std::to_string(read.process) +
                " (line " + std::to_string(read.call_line) + ") returned " + seen,
            {w.op->call_line, w.op->return_line, read.call_line}});
    }
    return out;
}

}  // namespace raftlock::jepsen
