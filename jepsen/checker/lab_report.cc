#include "jepsen/checker/lab_report.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace raftlock::jepsen {

namespace {

using OrderedJson = nlohmann::ordered_json;

OrderedJson optional_number(const std::optional<double>& v) {
    return v ? OrderedJson(*v) : OrderedJson(nullptr);
}

OrderedJson per_worker(const std::map<int64_t, int64_t>& counts) {
    OrderedJson out = OrderedJson::object();
    for (const auto& [worker, n] : counts) {
        out[std::to_string(worker)] = n;
    }
    return out;
}

OrderedJson to_json(const Value& v) {
    switch (v.kind) {
        case Value::Kind::kNull:
            return nullptr;
        case Value::Kind::kInt:
            return v.int_value;
        case Value::Kind::kString:
            return v.text;
        case Value::Kind::kBool:
        case Value::Kind::kList:
            break;
    }
    RL_PANIC("an event value is null, an integer or a string (lab_log.cc)");
}

std::string seconds(int64_t ns) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6f", static_cast<double>(ns) / 1e9);
    return buffer;
}

}  // namespace

std::string lab_metrics_json(const LabMetrics& m) {
    OrderedJson out;
    out["sections"] = m.sections;
    out["overlaps"] = m.overlaps;
    out["overlap_ms"] = m.overlap_ms;
    out["corruptions"] = m.corruptions;
    out["refused"] = m.refused;
    out["accepted_writes"] = m.accepted_writes;
    out["final_counter"] = m.final_counter;
    out["counter_shortfall"] = m.counter_shortfall;
    out["unknown_writes"] = m.unknown_writes;
    out["unacknowledged_commits"] = m.unacknowledged_commits;
    out["db_lost_increments"] = m.db_lost_increments;
    out["acquisitions"] = m.acquisitions;
    out["acquisitions_per_s"] = m.acquisitions_per_s;
    out["acquire_ms_p50"] = optional_number(m.acquire_ms_p50);
    out["acquire_ms_p99"] = optional_number(m.acquire_ms_p99);
    out["unavailable_ms_max"] = m.unavailable_ms_max;
    out["losses"] = m.losses;
    out["told_in_time"] = m.told_in_time;
    out["progress"] = {{"before_first_fault", per_worker(m.progress_before_first_fault)},
                       {"after_final_heal", per_worker(m.progress_after_final_heal)}};
    out["invalid"] = m.invalid;
    out["history_ops"] = m.history_ops;
    return out.dump() + "\n";
}

std::string lab_sections_tsv(const LabCell& cell, const std::vector<LabSection>& sections) {
    std::string out = "worker\tgrant\tstart_s\tend_s\toverlapped\taccepted_writes\trefused\n";
    for (const LabSection& s : sections) {
        out += std::to_string(s.worker) + "\t" + std::to_string(s.grant) + "\t" +
               seconds(s.start_ns - cell.origin_ns) + "\t" + seconds(s.end_ns - cell.origin_ns) +
               "\t" + (s.overlapped ? "1" : "0") + "\t" + std::to_string(s.accepted_writes) + "\t" +
               std::to_string(s.refused) + "\n";
    }
    return out;
}

LabHistory lab_history_jsonl(const LabCell& cell, const std::vector<LabRecord>& records) {
    LabHistory history;
    if (!cell.tokens) {
        return history;
    }
    for (const LabRecord& r : records) {
        if (r.op != LabOp::kEvent) {
            continue;
        }
        OrderedJson event;
        event["index"] = history.records;
        event["time_ns"] = r.t_ns;
        event["process"] = r.process;
        event["type"] = to_string(r.type);
        event["f"] = r.f;
        event["key"] = r.key;
        event["value"] = to_json(r.value);
        history.text += event.dump() + "\n";
        ++history.records;
    }
    return history;
}

}  // namespace raftlock::jepsen
