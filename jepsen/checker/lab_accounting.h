#pragma once

// The lock lab's accounting (docs/lock-lab.md "What is measured, per cell"): what a cell's lock
// let happen to the resource it protects, computed from cell.json and resource.jsonl alone.
//
// Order. "Before" and "after" between records mean the order the resource server handled them
// (LabRecord::pos, the file order). The server is single-threaded and stamps `t` as it handles,
// so this order agrees with `t` and also breaks ties between equal stamps exactly. Durations use
// `t`. Everything below is defined on this order, never on a worker's clock.
//
// Sections. A critical section is one (worker, grant):
// - lock families: a (worker, grant) with at least one `read` or `write` record, refused ones
//   included (a refused access still shows a worker that believed it held the lock). Its interval
//   runs from its first access to its last, [start, end].
// - optimistic cells: an attempt (worker, grant) whose db write committed (ok). Its interval runs
//   from the attempt's last ok db read before the write to the write; [write, write] when the
//   attempt has no such read. Attempts that did not commit are no sections.
//
// Overlap. Two sections a and b of different workers overlap when a.start < b.end and
// b.start < a.end in handling order. So a single-access section [p, p] overlaps b only when b's
// first access was handled before p and b's last after it (strictly inside), and sections that
// touch (a's last access at the same `t` as b's first, but handled before it) do not overlap:
// the server finished a before it started b. Sections of one worker are never compared.
//
// All counts are over the whole log, except those that name a window.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jepsen/checker/lab_log.h"

namespace raftlock::jepsen {

struct LabSection {
    int64_t worker = 0;
    int64_t grant = 0;
    int64_t start_ns = 0;  // `t` of the first access (optimistic: the db read)
    int64_t end_ns = 0;    // `t` of the last access (optimistic: the committed db write)
    int64_t start_pos = 0;
    int64_t end_pos = 0;
    int64_t accepted_writes = 0;  // ok writes (optimistic: 1, the commit)
    int64_t refused = 0;          // refused reads and writes
    bool overlapped = false;      // in at least one overlapping pair
};

struct LabMetrics {
    // Critical sections, as defined above.
    int64_t sections = 0;
    // Pairs of sections of different workers that overlap, as defined above.
    int64_t overlaps = 0;
    // The total time, by `t`, during which sections of at least two different workers were open.
    double overlap_ms = 0;

    // Lost increments. Lock families: for each accepted write w (in order), its read r is the
    // value of the last accepted read of the same (worker, grant) after that section's previous
    // accepted write; with no such read, r = w.value - 1 (the write is taken at its word). With
    // before = the counter just before w (the reply's `before`): before > r counts before - r (the
    // increments of others that w overwrote); otherwise before < r, or w.value != r + 1, counts 1;
    // otherwise 0. Optimistic cells: commits the row's version chain cannot account for. The
    // committed writes, ordered by the version they were conditioned on (handling order among
    // equal versions: reports can arrive late, the database's order is the version's), and c
    // after p in that order: c.version == p.version counts 1 (two commits on one version: a lost
    // update); otherwise the versions strictly between them are commits the log does not show,
    // which writes of unknown outcome may have made (each at most one, taken in order), and each
    // one beyond those counts 1; and c.value != p.value + (c.version - p.version) counts 1 (the
    // row's value did not follow its commits). Refused accesses never count here.
    int64_t corruptions = 0;
    // Accesses (`read` and `write`) the resource refused.
    int64_t refused = 0;
    // Accepted writes (optimistic: committed attempts), and the counter after the last of them
    // (optimistic: the value the highest version's commit set).
    int64_t accepted_writes = 0;
    int64_t final_counter = 0;
    // Optimistic cells: db writes whose outcome is unknown (the connection dropped), and of
    // them, those the version chain shows committed (versions skipped between acknowledged
    // commits; see corruptions).
    int64_t unknown_writes = 0;
    int64_t unacknowledged_commits = 0;
    // Optimistic cells with the row read at the end (LabCell::db_final_value): the increments
    // the row lacks, negative when it has more. It must hold every acknowledged commit and every
    // unacknowledged one the chain shows, and may hold one more per unknown write the chain did
    // not place (committed after the last acknowledged commit); any difference beyond that is
    // added to corruptions. 0 without db_final.
    int64_t db_lost_increments = 0;
    // The accepted increments the final counter lacks: accepted_writes - (final_counter -
    // initial), with initial 0 for the resource (it starts at 0); for optimistic cells
    // accepted_writes + unacknowledged_commits - (final_counter - initial), initial the lowest
    // version's value - 1. Nonzero only when corruptions is (asserted).
    int64_t counter_shortfall = 0;

    // Acquisitions: acquire ok events (optimistic: committed db writes) with `t` in
    // [origin_ns, end_ns]; per second of that window (0 when the window is empty).
    int64_t acquisitions = 0;
    double acquisitions_per_s = 0;
    // Nearest-rank percentiles of acquire latency: from an acquire invoke to the same process's
    // ok completion (fail and info are left out), over the whole log. nullopt without samples
    // (always, for optimistic cells, which have no acquire events).
    std::optional<double> acquire_ms_p50;
    std::optional<double> acquire_ms_p99;
    // The longest gap between consecutive acquisitions above, counting from origin_ns to the first
    // and from the last to end_ns (the whole window when there is none).
    double unavailable_ms_max = 0;

    // Grants A (an acquire ok of worker X with a grant) such that an acquire ok of another worker
    // on the same key, B, comes after A and before X's first release invoke of A (or at any later
    // point if X never invoked one): the lock changed hands while X still believed it held it.
    // B is the first such acquire ok. Zero for optimistic cells.
    int64_t losses = 0;
    // Of those, grants for which X's first `lost` record of A came before B.
    int64_t told_in_time = 0;

    // Productive sections (with at least one accepted write; optimistic: every section) per
    // worker, 1..workers all present, by the section's start_ns: in [origin_ns, first fault's
    // start_ns) (the whole [origin_ns, end_ns) when no fault was injected), and in
    // [final_heal_ns, end_ns). A section whose every access was refused is no progress.
    std::map<int64_t, int64_t> progress_before_first_fault;
    std::map<int64_t, int64_t> progress_after_final_heal;

    // Why the cell is invalid, empty when valid: the fault was requested but never injected; a
    // worker with no progress in either window; no section at all.
    std::vector<std::string> invalid;

    // Records written to --history (0 when not asked, or when the cell has no tokens).
    int64_t history_ops = 0;
};

struct LabReport {
    LabMetrics metrics;
    std::vector<LabSection> sections;  // in order of start_pos
};

// The accounting of one cell. Precondition: `records` came from parse_lab_log(..., cell).
LabReport account_lab(const LabCell& cell, const std::vector<LabRecord>& records);

// The nearest-rank percentile `p` (0 < p <= 100) of `samples_ns`, in ms; nullopt when empty.
std::optional<double> percentile_ms(std::vector<int64_t> samples_ns, int p);

}  // namespace raftlock::jepsen
