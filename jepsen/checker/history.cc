#include "jepsen/checker/history.h"

#include <unordered_map>

namespace raftlock::jepsen {

const char* to_string(EventType type) {
    switch (type) {
        case EventType::kInvoke:
            return "invoke";
        case EventType::kOk:
            return "ok";
        case EventType::kFail:
            return "fail";
        case EventType::kInfo:
            return "info";
        case EventType::kWatch:
            return "event";
    }
    return "?";
}

namespace {

Outcome outcome_of(EventType type) {
    switch (type) {
        case EventType::kOk:
            return Outcome::kOk;
        case EventType::kFail:
            return Outcome::kFail;
        default:
            return Outcome::kInfo;
    }
}

InputError error_at(const Event& event, std::string message) {
    return InputError{event.line, std::move(message)};
}

void complete(Operation& op, const Event& event, int64_t pos) {
    op.outcome = outcome_of(event.type);
    op.error = event.error;
    op.return_line = event.line;
    op.return_ns = event.time_ns;
    if (op.outcome == Outcome::kOk) {
        op.output = event.value;
    }
    // An `info` completion tells us nothing about when (or whether) the operation took effect, so
    // it keeps its +infinity return; the line is still shown in reports.
    op.return_pos = op.outcome == Outcome::kInfo ? kNeverReturned : pos;
}

}  // namespace

Result<std::vector<Operation>, InputError> pair_operations(const History& history) {
    std::vector<Operation> ops;
    std::unordered_map<int64_t, size_t> open;  // process -> index in ops
    for (size_t pos = 0; pos < history.events.size(); ++pos) {
        const Event& event = history.events[pos];
        if (event.type == EventType::kWatch) {
            continue;
        }
        auto it = open.find(event.process);
        if (event.type == EventType::kInvoke) {
            if (it != open.end()) {
                return error_at(event,
                                "process " + std::to_string(event.process) +
                                    " invokes a new operation while its operation from line " +
                                    std::to_string(ops[it->second].call_line) + " is still open");
            }
            Operation op;
            op.id = static_cast<int32_t>(ops.size());
            op.process = event.process;
            op.f = event.f;
            op.key = event.key;
            op.input = event.value;
            op.call_pos = static_cast<int64_t>(pos);
            op.call_line = event.line;
            op.call_ns = event.time_ns;
            open.emplace(event.process, ops.size());
            ops.push_back(std::move(op));
            continue;
        }
        if (it == open.end()) {
            return error_at(event, std::string("completion '") + to_string(event.type) +
                                       "' for process " + std::to_string(event.process) +
                                       ", which has no open invocation");
        }
        Operation& op = ops[it->second];
        if (op.f != event.f || op.key != event.key) {
            return error_at(event, "completion (" + event.f + " on '" + event.key +
                                       "') does not match the invocation on line " +
                                       std::to_string(op.call_line) + " (" + op.f + " on '" +
                                       op.key + "')");
        }
        complete(op, event, static_cast<int64_t>(pos));
        open.erase(it);
    }
    return ops;
}

}  // namespace raftlock::jepsen
