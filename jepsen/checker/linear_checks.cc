#include "jepsen/checker/linear_checks.h"

#include <algorithm>
#include <map>
#include <utility>

namespace raftlock::jepsen {

namespace {

void add(std::vector<Finding>& out, Finding finding) {
    if (out.size() < kFindingsPerCheckMax) {
        out.push_back(std::move(finding));
    }
}

std::string describe(const Operation& op) {
    return "process " + std::to_string(op.process) + " " + op.f + " " + to_string(op.input) +
           (op.outcome == Outcome::kOk ? " -> " + to_string(op.output) : "") + " (line " +
           std::to_string(op.call_line) + ")";
}

}  // namespace

std::vector<Finding> check_fencing_tokens(const std::vector<Operation>& ops) {
    std::vector<const Operation*> grants;
    for (const Operation& op : ops) {
        if (op.f == "acquire" && op.outcome == Outcome::kOk && op.output.is_int()) {
            grants.push_back(&op);
        }
    }
    std::vector<Finding> out;
    std::map<int64_t, const Operation*> by_token;
    for (const Operation* g : grants) {
        auto [it, inserted] = by_token.emplace(g->output.int_value, g);
        if (!inserted) {
            add(out, {"fencing-tokens",
                      "token " + std::to_string(g->output.int_value) +
                          " granted twice: " + describe(*it->second) + " and " + describe(*g),
                      {it->second->call_line, g->call_line}});
        }
    }
    // Sweep calls in order while admitting grants that returned before each call: the highest
    // token already acknowledged must be below every later grant, whatever the lock.
    std::vector<const Operation*> by_return = grants;
    std::sort(by_return.begin(), by_return.end(),
              [](auto* x, auto* y) { return x->return_pos < y->return_pos; });
    const Operation* highest = nullptr;
    size_t admitted = 0;
    for (const Operation* g : grants) {  // grants are in call order (ids follow calls)
        while (admitted < by_return.size() && by_return[admitted]->return_pos < g->call_pos) {
            const Operation* r = by_return[admitted++];
            if (highest == nullptr || r->output.int_value > highest->output.int_value) {
                highest = r;
            }
        }
        if (highest != nullptr && highest->output.int_value > g->output.int_value) {
            add(out, {"fencing-tokens",
                      "token went backwards: " + describe(*highest) + " was acknowledged before " +
                          describe(*g) + " was invoked",
                      {highest->call_line, g->call_line}});
        }
    }
    return out;
}

std::vector<Finding> check_watch_order(const History& history) {
    std::vector<Finding> out;
    struct Last {
        int64_t zxid;
        int64_t line;
    };
    std::map<std::pair<int64_t, std::string>, Last> last;  // (process, path) -> last event
    for (const Event& e : history.events) {
        if (e.type != EventType::kWatch || !e.value.is_int_list(2)) {
            continue;  // check_history refuses malformed watch records before this runs
        }
        int64_t zxid = e.value.items[0].int_value;
        int64_t prev = e.value.items[1].int_value;
        auto [it, first] = last.try_emplace({e.process, e.key}, Last{zxid, e.line});
        if (first) {
            continue;
        }
        std::string where = "process " + std::to_string(e.process) + " path '" + e.key + "'";
        if (zxid <= it->second.zxid) {
            add(out, {"watch-order",
                      where + ": event zxid " + std::to_string(zxid) +
                          (zxid == it->second.zxid ? " delivered twice" : " after zxid ") +
                          (zxid == it->second.zxid ? "" : std::to_string(it->second.zxid)),
                      {it->second.line, e.line}});
        } else if (prev != it->second.zxid) {
            add(out, {"watch-order",
                      where + ": gap, event zxid " + std::to_string(zxid) + " follows change " +
                          std::to_string(prev) + " but the previous event was zxid " +
                          std::to_string(it->second.zxid),
                      {it->second.line, e.line}});
        }
        it->second = Last{zxid, e.line};
    }
    return out;
}

}  // namespace raftlock::jepsen
