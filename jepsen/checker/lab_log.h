#pragma once

// The lock lab's two inputs (docs/lock-lab.md): the cell's description `cell.json`, written by the
// lab, and the resource server's log `resource.jsonl`. Parsing is strict: the accounting is only
// as good as its input, so a record that breaks the contract ends the parse with its line number
// (exit status 3 of raftlock-lab-check) and is never skipped.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "jepsen/checker/history.h"
#include "jepsen/checker/value.h"

namespace raftlock::jepsen {

// One injected fault window, [start_ns, stop_ns], in resource time.
struct LabFault {
    int64_t start_ns = 0;
    int64_t stop_ns = 0;
};

// `cell.json`. Times are the resource server's clock: ns of its CLOCK_MONOTONIC since the cell's
// origin, the clock of every `t` in resource.jsonl. Unknown fields (ttl_ms, work_ms, time_s, a
// fault's `detail`, ...) are accepted and ignored.
struct LabCell {
    std::string family;
    std::string target;
    std::string fault;
    int64_t workers = 0;  // workers are numbered 1..workers
    bool fenced = false;
    bool optimistic = false;  // sql-optimistic: sections are the `db` records' committed attempts
    bool tokens = false;      // the family has fencing tokens: --history is meaningful
    int64_t origin_ns = 0;    // the run's window is [origin_ns, end_ns]
    int64_t end_ns = 0;
    std::vector<LabFault> faults;  // in the order the lab wrote them
    bool fault_requested = false;  // false for fault "none"
    int64_t final_heal_ns = 0;     // no fault after it; every worker must progress again
    // Optimistic cells: the counter row's value read after the workers stopped (`db_final`'s
    // `value`; the row is prepared at 0). nullopt when the cell has none.
    std::optional<int64_t> db_final_value;

    // The earliest fault start, or end_ns when no fault was injected.
    int64_t first_fault_ns() const;
};

// Checks, beyond syntax: workers >= 1; origin_ns <= end_ns; every fault has
// origin_ns <= start_ns <= stop_ns; origin_ns <= final_heal_ns <= end_ns and final_heal_ns >= every
// fault's stop_ns; no faults when fault_requested is false; `db_final` only in an optimistic
// cell. `line` of the error is 0.
Result<LabCell, InputError> parse_lab_cell(std::string_view text);

enum class LabOp : uint8_t { kEvent, kRead, kWrite, kLost, kDb };

const char* to_string(LabOp op);

// One line of resource.jsonl: the request's fields, the server's `t` and the reply's fields.
// Fields that the record's op does not have keep their defaults.
struct LabRecord {
    int64_t line = 0;  // 1-based line in resource.jsonl
    int64_t pos = 0;   // 0-based ordinal among the records: the server's handling order
    int64_t t_ns = 0;  // never decreases from one record to the next
    LabOp op = LabOp::kEvent;
    int64_t worker = 0;  // 1..cell.workers
    int64_t grant = 0;   // >= 1 where the record has one; 0 for an event without `grant`

    // kEvent: a history event (DESIGN.md §6). `f` is "acquire" or "release"; `value` is null, an
    // integer (a fencing token) or a string.
    int64_t process = 0;
    EventType type = EventType::kInvoke;
    std::string f;
    std::string key;
    Value value;

    // kRead / kWrite: `token` as sent (nullopt for null or absent); `ok` false when refused.
    // kDb: `ok` is whether the conditional UPDATE committed (a db read is ok unless it says not).
    std::optional<int64_t> token;
    bool ok = false;
    // kRead: the counter value read (when ok). kWrite: the value the worker wrote.
    // kDb: the row's value read, or the value the UPDATE set.
    int64_t counter = 0;
    int64_t before = 0;   // kWrite, ok: the counter just before the write
    std::string refused;  // kRead / kWrite, not ok: the server's reason ("" when not given)

    // kDb: `db_write` tells the worker's conditional UPDATE from its read of the row. `version` is,
    // for a read, the row's version it saw; for a write, the version in its `WHERE version = ?`.
    // The UPDATE itself sets `version = version + 1` in the database, so the row's version
    // counts its commits.
    bool db_write = false;
    int64_t version = 0;
    // kDb write, not ok: the connection dropped before the answer, so the UPDATE may have
    // committed (the worker cannot tell); a conflict (0 rows) or a refused statement is not.
    bool unknown = false;

    std::string why;  // kLost: the reason the worker was given
};

// Parses resource.jsonl for `cell`. Blank lines and records of the lab's own `holder` and `stats`
// ops (no worker) are skipped. Beyond each record's fields (docs/lock-lab.md), it checks the
// whole log against the contract, and refuses, naming the line:
// - `t` going backwards; a worker outside 1..cell.workers;
// - `db` records in a cell that is not optimistic, or `read` / `write` records in one that is;
// - a process that invokes while its previous operation is open, or completes an operation it
//   did not invoke (a different `f` included);
// - an acquire ok whose grant is not above the worker's previous acquire ok's grant;
// - a second db write in one attempt (worker, grant);
// - a counter that does not add up: the resource starts at 0, and an accepted read's `value` and
//   an accepted write's `before` must be what the previous accepted write set. The accounting
//   relies on this chain, so a log that breaks it (lost lines, a restarted server) is refused.
Result<std::vector<LabRecord>, InputError> parse_lab_log(std::string_view text,
                                                         const LabCell& cell);

}  // namespace raftlock::jepsen
