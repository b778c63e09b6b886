// The lab's input parsers; with jsonl_parser.cc and lab_report.cc, the only files that include
// nlohmann/json.
#include "jepsen/checker/lab_log.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "jepsen/checker/parsers.h"

namespace raftlock::jepsen {

namespace {

using Json = nlohmann::json;

bool fits_int64(const Json& json) {
    return json.is_number_integer() &&
           (!json.is_number_unsigned() || json.get<uint64_t>() <= uint64_t{INT64_MAX});
}

// The field readers return an error message, empty when the field is good.
std::string need_int(const Json& json, const std::string& name, int64_t min, int64_t* out) {
    auto it = json.find(name);
    if (it == json.end() || !fits_int64(*it) || it->get<int64_t>() < min) {
        return "\"" + name + "\" must be an integer" +
               (min == INT64_MIN ? "" : " >= " + std::to_string(min));
    }
    *out = it->get<int64_t>();
    return {};
}

std::string need_bool(const Json& json, const std::string& name, bool* out) {
    auto it = json.find(name);
    if (it == json.end() || !it->is_boolean()) {
        return "\"" + name + "\" must be true or false";
    }
    *out = it->get<bool>();
    return {};
}

std::string need_string(const Json& json, const std::string& name, std::string* out) {
    auto it = json.find(name);
    if (it == json.end() || !it->is_string()) {
        return "\"" + name + "\" must be a string";
    }
    *out = it->get<std::string>();
    return {};
}

// An absent field is fine; a present one must be a string.
std::string maybe_string(const Json& json, const std::string& name, std::string* out) {
    return json.contains(name) ? need_string(json, name, out) : "";
}

// Runs the readers in order and returns the first error.
template <typename... Checks>
std::string first_error(Checks&&... checks) {
    std::string error;
    ((error.empty() ? (void)(error = checks()) : (void)0), ...);
    return error;
}

std::string decode_faults(const Json& json, LabCell& cell) {
    auto it = json.find("faults");
    if (it == json.end() || !it->is_array()) {
        return "\"faults\" must be a list";
    }
    for (const Json& item : *it) {
        LabFault fault;
        std::string error =
            item.is_object()
                ? first_error(
                      [&] { return need_int(item, "start_ns", INT64_MIN, &fault.start_ns); },
                      [&] { return need_int(item, "stop_ns", INT64_MIN, &fault.stop_ns); })
                : "a fault must be an object";
        if (!error.empty()) {
            return "faults[" + std::to_string(cell.faults.size()) + "]: " + error;
        }
        cell.faults.push_back(fault);
    }
    return {};
}

// The window's times must nest, or the progress windows mean nothing.
std::string check_cell_times(const LabCell& cell) {
    if (cell.end_ns < cell.origin_ns) {
        return "\"end_ns\" is before \"origin_ns\"";
    }
    if (cell.final_heal_ns < cell.origin_ns || cell.final_heal_ns > cell.end_ns) {
        return "\"final_heal_ns\" is outside [origin_ns, end_ns]";
    }
    for (size_t i = 0; i < cell.faults.size(); ++i) {
        const LabFault& f = cell.faults[i];
        std::string name = "faults[" + std::to_string(i) + "]";
        if (f.start_ns < cell.origin_ns || f.stop_ns < f.start_ns) {
            return name + " needs origin_ns <= start_ns <= stop_ns";
        }
        if (f.stop_ns > cell.final_heal_ns) {
            return name + " stops after \"final_heal_ns\"";
        }
    }
    if (!cell.fault_requested && !cell.faults.empty()) {
        return "faults were injected in a cell with \"fault_requested\": false";
    }
    return {};
}

// `db_final`: absent or null, or an object with the row's `value`.
std::string decode_db_final(const Json& json, LabCell& cell) {
    auto it = json.find("db_final");
    if (it == json.end() || it->is_null()) {
        return {};
    }
    if (!cell.optimistic) {
        return "\"db_final\" in a cell that is not optimistic";
    }
    int64_t value = 0;
    std::string error = it->is_object() ? need_int(*it, "value", INT64_MIN, &value)
                                        : "\"db_final\" must be an object or null";
    if (error.empty()) {
        cell.db_final_value = value;
    }
    return error.empty() ? error : "db_final: " + error;
}

}  // namespace

int64_t LabCell::first_fault_ns() const {
    int64_t first = end_ns;
    for (const LabFault& f : faults) {
        first = std::min(first, f.start_ns);
    }
    return first;
}

Result<LabCell, InputError> parse_lab_cell(std::string_view text) {
    Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object()) {
        return InputError{0, "not a JSON object"};
    }
    LabCell cell;
    std::string error = first_error(
        [&] { return need_string(json, "family", &cell.family); },
        [&] { return need_string(json, "target", &cell.target); },
        [&] { return need_string(json, "fault", &cell.fault); },
        [&] { return need_int(json, "workers", 1, &cell.workers); },
        [&] { return need_bool(json, "fenced", &cell.fenced); },
        [&] { return need_bool(json, "optimistic", &cell.optimistic); },
        [&] { return need_bool(json, "tokens", &cell.tokens); },
        [&] { return need_int(json, "origin_ns", INT64_MIN, &cell.origin_ns); },
        [&] { return need_int(json, "end_ns", INT64_MIN, &cell.end_ns); },
        [&] { return decode_faults(json, cell); },
        [&] { return need_bool(json, "fault_requested", &cell.fault_requested); },
        [&] { return need_int(json, "final_heal_ns", INT64_MIN, &cell.final_heal_ns); },
        [&] { return check_cell_times(cell); }, [&] { return decode_db_final(json, cell); });
    if (!error.empty()) {
        return InputError{0, error};
    }
    return cell;
}

const char* to_string(LabOp op) {
    switch (op) {
        case LabOp::kEvent:
            return "event";
        case LabOp::kRead:
            return "read";
        case LabOp::kWrite:
            return "write";
        case LabOp::kLost:
            return "lost";
        case LabOp::kDb:
            return "db";
    }
    RL_PANIC("unknown LabOp");
}

namespace {

std::optional<LabOp> lab_op(const std::string& name) {
    for (LabOp op : {LabOp::kEvent, LabOp::kRead, LabOp::kWrite, LabOp::kLost, LabOp::kDb}) {
        if (name == to_string(op)) {
            return op;
        }
    }
    return std::nullopt;
}

std::optional<EventType> lab_event_type(const std::string& name) {
    for (EventType type :
         {EventType::kInvoke, EventType::kOk, EventType::kFail, EventType::kInfo}) {
        if (name == to_string(type)) {
            return type;
        }
    }
    return std::nullopt;
}

// `grant` where it may be absent or null (an acquire that did not get one).
std::string maybe_grant(const Json& json, int64_t* grant) {
    auto it = json.find("grant");
    if (it == json.end() || it->is_null()) {
        return {};
    }
    return need_int(json, "grant", 1, grant);
}

std::string decode_event_value(const Json& json, LabRecord& r) {
    auto it = json.find("value");
    if (it == json.end() || it->is_null()) {
        r.value = Value::null();
    } else if (fits_int64(*it)) {
        r.value = Value::integer(it->get<int64_t>());
    } else if (it->is_string()) {
        r.value = Value::string(it->get<std::string>());
    } else {
        return "an event's \"value\" must be null, an integer or a string";
    }
    return {};
}

std::string decode_event(const Json& json, LabRecord& r) {
    std::string type;
    std::string error = first_error(
        [&] { return need_int(json, "process", 0, &r.process); },
        [&] { return need_string(json, "type", &type); },
        [&] {
            auto t = lab_event_type(type);
            r.type = t.value_or(EventType::kInvoke);
            return t ? "" : "\"type\" must be one of invoke, ok, fail, info";
        },
        [&] { return need_string(json, "f", &r.f); },
        [&] {
            return r.f == "acquire" || r.f == "release" ? "" : "\"f\" must be acquire or release";
        },
        [&] { return need_string(json, "key", &r.key); },
        [&] { return decode_event_value(json, r); });
    if (!error.empty()) {
        return error;
    }
    // The grant ties an event to the accesses it covers: an acquire ok and every release name it.
    if (r.f == "release" || r.type == EventType::kOk) {
        return need_int(json, "grant", 1, &r.grant);
    }
    return maybe_grant(json, &r.grant);
}

std::string decode_token(const Json& json, LabRecord& r) {
    auto it = json.find("token");
    if (it == json.end() || it->is_null()) {
        return {};
    }
    if (!fits_int64(*it)) {
        return "\"token\" must be an integer or null";
    }
    r.token = it->get<int64_t>();
    return {};
}

std::string decode_access(const Json& json, LabRecord& r) {
    return first_error(
        [&] { return need_int(json, "grant", 1, &r.grant); }, [&] { return decode_token(json, r); },
        [&] { return need_bool(json, "ok", &r.ok); },
        [&] {
            // A read's value is the reply's; a write's is the request's, refused or not.
            bool has_value = r.op == LabOp::kWrite || r.ok;
            return has_value ? need_int(json, "value", INT64_MIN, &r.counter) : "";
        },
        [&] {
            return r.op == LabOp::kWrite && r.ok ? need_int(json, "before", INT64_MIN, &r.before)
                                                 : "";
        },
        [&] { return r.ok ? "" : maybe_string(json, "refused", &r.refused); });
}

std::string decode_db(const Json& json, LabRecord& r) {
    std::string kind;
    return first_error(
        [&] { return need_int(json, "grant", 1, &r.grant); },
        [&] { return need_string(json, "kind", &kind); },
        [&] {
            r.db_write = kind == "write";
            return kind == "read" || kind == "write" ? "" : "\"kind\" must be read or write";
        },
        [&] { return need_int(json, "value", INT64_MIN, &r.counter); },
        [&] { return need_int(json, "version", INT64_MIN, &r.version); },
        [&] {
            // Whether a write committed is the whole point; a read says so only when it failed.
            r.ok = true;
            return r.db_write || json.contains("ok") ? need_bool(json, "ok", &r.ok) : "";
        },
        [&] {
            // A write whose connection dropped is reported not committed and marked unknown: it
            // may have committed all the same, and the version chain must allow for that.
            if (!json.contains("unknown")) {
                return std::string();
            }
            if (std::string error = need_bool(json, "unknown", &r.unknown); !error.empty()) {
                return error;
            }
            return r.unknown && (!r.db_write || r.ok)
                       ? std::string("\"unknown\" is for a db write reported not committed")
                       : std::string();
        });
}

// Fills `r` from one record; returns an error message, empty when the record is good.
std::string decode_record(const Json& json, LabRecord& r, bool* skip) {
    if (!json.is_object()) {
        return "a record must be a JSON object";
    }
    std::string name;
    if (std::string error = need_string(json, "op", &name); !error.empty()) {
        return error;
    }
    if (name == "holder" || name == "stats") {
        *skip = true;  // the lab's own questions; they touch nothing
        return {};
    }
    std::optional<LabOp> op = lab_op(name);
    if (!op) {
        return "\"op\" must be one of event, read, write, lost, db";
    }
    r.op = *op;
    std::string error = first_error([&] { return need_int(json, "t", 0, &r.t_ns); },
                                    [&] { return need_int(json, "worker", 1, &r.worker); });
    if (!error.empty()) {
        return error;
    }
    switch (r.op) {
        case LabOp::kEvent:
            return decode_event(json, r);
        case LabOp::kRead:
        case LabOp::kWrite:
            return decode_access(json, r);
        case LabOp::kLost:
            return first_error([&] { return need_int(json, "grant", 1, &r.grant); },
                               [&] { return maybe_string(json, "why", &r.why); });
        case LabOp::kDb:
            return decode_db(json, r);
    }
    RL_PANIC("unknown LabOp");
}

// Checks the log as a whole against the contract, record by record, in handling order.
class LogChecker {
public:
    explicit LogChecker(const LabCell& cell) : cell_(cell) {}

    // Returns an error message, empty when the record fits what came before it.
    std::string check(const LabRecord& r) {
        if (r.t_ns < last_t_ns_) {
            return "\"t\" goes backwards (the server logs in handling order)";
        }
        last_t_ns_ = r.t_ns;
        if (r.worker > cell_.workers) {
            return "worker " + std::to_string(r.worker) + " is outside 1.." +
                   std::to_string(cell_.workers) + " (cell.json \"workers\")";
        }
        bool access = r.op == LabOp::kRead || r.op == LabOp::kWrite;
        if (cell_.optimistic && access) {
            return "a resource access in an optimistic cell (its counter is the database row)";
        }
        if (!cell_.optimistic && r.op == LabOp::kDb) {
            return "a db record in a cell that is not optimistic";
        }
        switch (r.op) {
            case LabOp::kEvent:
                return check_event(r);
            case LabOp::kRead:
            case LabOp::kWrite:
                return check_counter(r);
            case LabOp::kDb:
                return check_db(r);
            case LabOp::kLost:
                return {};
        }
        RL_PANIC("unknown LabOp");
    }

private:
    std::string check_event(const LabRecord& r) {
        std::string p = "process " + std::to_string(r.process);
        auto open = open_.find(r.process);
        if (r.type == EventType::kInvoke) {
            if (open != open_.end()) {
                return p + " invokes " + r.f + " while its " + open->second + " is still open";
            }
            open_.emplace(r.process, r.f);
            return {};
        }
        if (open == open_.end() || open->second != r.f) {
            return p + " completes " + r.f + ", which it did not invoke";
        }
        open_.erase(open);
        if (r.f == "acquire" && r.type == EventType::kOk) {
            int64_t& last = last_grant_[r.worker];
            if (r.grant <= last) {
                return "grant " + std::to_string(r.grant) + " of worker " +
                       std::to_string(r.worker) + " is not above its previous grant " +
                       std::to_string(last);
            }
            last = r.grant;
        }
        return {};
    }

    std::string check_counter(const LabRecord& r) {
        if (!r.ok) {
            return {};  // a refused access changes nothing
        }
        int64_t seen = r.op == LabOp::kRead ? r.counter : r.before;
        if (seen != counter_) {
            return std::string(r.op == LabOp::kRead ? "the read returned " : "\"before\" is ") +
                   std::to_string(seen) + " but the previous accepted write (line " +
                   std::to_string(counter_line_) + ") left the counter at " +
                   std::to_string(counter_);
        }
        if (r.op == LabOp::kWrite) {
            counter_ = r.counter;
            counter_line_ = r.line;
        }
        return {};
    }

    std::string check_db(const LabRecord& r) {
        if (r.db_write && !db_written_.emplace(r.worker, r.grant).second) {
            return "attempt " + std::to_string(r.grant) + " of worker " + std::to_string(r.worker) +
                   " has a second db write";
        }
        return {};
    }

    const LabCell& cell_;
    int64_t last_t_ns_ = 0;
    std::map<int64_t, std::string> open_;               // process -> f of its open operation
    std::map<int64_t, int64_t> last_grant_;             // worker -> grant of its last acquire ok
    std::set<std::pair<int64_t, int64_t>> db_written_;  // (worker, grant) with a db write
    int64_t counter_ = 0;                               // the resource starts at 0
    int64_t counter_line_ = 0;                          // 0: nothing has written it yet
};

}  // namespace

Result<std::vector<LabRecord>, InputError> parse_lab_log(std::string_view text,
                                                         const LabCell& cell) {
    std::vector<LabRecord> records;
    LogChecker checker(cell);
    std::optional<InputError> error;
    int64_t long_line = 0;
    const bool lines_ok =
        for_each_line(text, &long_line, [&](int64_t number, std::string_view line) {
            if (line.find_first_not_of(" \t") == std::string_view::npos) {
                return true;
            }
            LabRecord r;
            r.line = number;
            r.pos = static_cast<int64_t>(records.size());
            bool skip = false;
            Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
            std::string message =
                json.is_discarded() ? "not valid JSON" : decode_record(json, r, &skip);
            if (message.empty() && !skip) {
                message = records.size() >= kEventsMax ? "too many records" : checker.check(r);
            }
            if (!message.empty()) {
                error = InputError{number, std::move(message)};
                return false;
            }
            if (!skip) {
                records.push_back(std::move(r));
            }
            return true;
        });
    if (!lines_ok) {
        return InputError{long_line, "line longer than 1 MiB"};
    }
    if (error) {
        return *error;
    }
    return records;
}

}  // namespace raftlock::jepsen
