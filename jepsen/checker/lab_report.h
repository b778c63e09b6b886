#pragma once

// What raftlock-lab-check writes: the metrics object (stdout), the sections table (--sections)
// and the history (--history).

#include <cstdint>
#include <string>
#include <vector>

#include "jepsen/checker/lab_accounting.h"

namespace raftlock::jepsen {

// One JSON object on one line, keys in the order of LabMetrics: sections, overlaps, overlap_ms,
// corruptions, refused, accepted_writes, final_counter, counter_shortfall, acquisitions,
// acquisitions_per_s, acquire_ms_p50, acquire_ms_p99 (null without samples),
// unavailable_ms_max, losses, told_in_time, progress {before_first_fault, after_final_heal:
// {"<worker>": n}}, invalid [reasons], history_ops.
std::string lab_metrics_json(const LabMetrics& metrics);

// A table for gnuplot timelines: the header line
// `worker grant start_s end_s overlapped accepted_writes refused`, then one line per section in
// order of start, fields separated by tabs; seconds since origin_ns, overlapped 0 / 1.
std::string lab_sections_tsv(const LabCell& cell, const std::vector<LabSection>& sections);

// The DESIGN.md §6 history of the cell's `event` records, in log order: one record per event,
// {"index","time_ns" (the record's t),"process","type","f","key","value"}, with index from 0.
// `records` is the count of lines. Only token families have one: when cell.tokens is false the
// text is empty and the count 0 (and raftlock-lab-check writes no file).
struct LabHistory {
    std::string text;
    int64_t records = 0;
};
LabHistory lab_history_jsonl(const LabCell& cell, const std::vector<LabRecord>& records);

}  // namespace raftlock::jepsen
