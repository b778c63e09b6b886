#include "jepsen/checker/lab_accounting.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "base/assert.h"

namespace raftlock::jepsen {

namespace {

using SectionKey = std::pair<int64_t, int64_t>;  // (worker, grant)

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// Counters and versions come from workers; a wild value must not overflow the accounting.
int64_t saturating_add(int64_t a, int64_t b) {
    int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out)) {
        return b > 0 ? kInt64Max : kInt64Min;
    }
    return out;
}

int64_t saturating_sub(int64_t a, int64_t b) {
    int64_t out = 0;
    if (__builtin_sub_overflow(a, b, &out)) {
        return b < 0 ? kInt64Max : kInt64Min;
    }
    return out;
}

double ns_to_ms(int64_t ns) {
    return static_cast<double>(ns) / 1e6;
}

std::vector<LabSection> lock_sections(const std::vector<LabRecord>& records) {
    std::map<SectionKey, LabSection> by_key;
    for (const LabRecord& r : records) {
        if (r.op != LabOp::kRead && r.op != LabOp::kWrite) {
            continue;
        }
        auto [it, fresh] = by_key.try_emplace({r.worker, r.grant});
        LabSection& s = it->second;
        if (fresh) {
            s.worker = r.worker;
            s.grant = r.grant;
            s.start_ns = r.t_ns;
            s.start_pos = r.pos;
        }
        s.end_ns = r.t_ns;
        s.end_pos = r.pos;
        s.accepted_writes += r.op == LabOp::kWrite && r.ok ? 1 : 0;
        s.refused += r.ok ? 0 : 1;
    }
    std::vector<LabSection> sections;
    sections.reserve(by_key.size());
    for (auto& [key, s] : by_key) {
        sections.push_back(s);
    }
    return sections;
}

std::vector<LabSection> optimistic_sections(const std::vector<LabRecord>& records) {
    std::map<SectionKey, const LabRecord*> last_read;
    std::vector<LabSection> sections;
    for (const LabRecord& r : records) {
        if (r.op != LabOp::kDb || !r.ok) {
            continue;
        }
        if (!r.db_write) {
            last_read[{r.worker, r.grant}] = &r;
            continue;
        }
        auto read = last_read.find({r.worker, r.grant});
        const LabRecord& first = read == last_read.end() ? r : *read->second;
        sections.push_back(
            LabSection{r.worker, r.grant, first.t_ns, r.t_ns, first.pos, r.pos, 1, 0, false});
    }
    return sections;
}

// Counts the overlapping pairs and marks their sections. `sections` is sorted by start_pos, and no
// two share one (a record belongs to one section), so a.start < b.end holds for every later b.
void mark_overlaps(std::vector<LabSection>& sections, LabMetrics& m) {
    for (size_t i = 0; i < sections.size(); ++i) {
        LabSection& a = sections[i];
        for (size_t j = i + 1; j < sections.size() && sections[j].start_pos < a.end_pos; ++j) {
            LabSection& b = sections[j];
            RL_ASSERT(a.start_pos < b.start_pos);
            if (a.worker != b.worker) {
                ++m.overlaps;
                a.overlapped = true;
                b.overlapped = true;
            }
        }
    }
}

// The measure of the times at which sections of two or more workers are open: a sweep over the
// sections' ends, counting the workers with an open section.
double overlap_ms(const std::vector<LabSection>& sections) {
    struct Edge {
        int64_t t_ns;
        int delta;
        int64_t worker;
    };
    std::vector<Edge> edges;
    edges.reserve(2 * sections.size());
    for (const LabSection& s : sections) {
        edges.push_back({s.start_ns, +1, s.worker});
        edges.push_back({s.end_ns, -1, s.worker});
    }
    // At one instant, openings before closings: a single-access section opens and closes there.
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
        return a.t_ns < b.t_ns || (a.t_ns == b.t_ns && a.delta > b.delta);
    });
    std::map<int64_t, int64_t> open;  // worker -> open sections
    int64_t workers_open = 0;
    int64_t total_ns = 0;
    int64_t prev_ns = 0;
    for (const Edge& e : edges) {
        if (workers_open >= 2) {
            total_ns = saturating_add(total_ns, e.t_ns - prev_ns);
        }
        prev_ns = e.t_ns;
        int64_t& n = open[e.worker];
        workers_open += (n == 0 && e.delta > 0) ? 1 : 0;
        n += e.delta;
        workers_open -= (n == 0 && e.delta < 0) ? 1 : 0;
        RL_ASSERT(n >= 0);
    }
    RL_ASSERT(workers_open == 0);
    return ns_to_ms(total_ns);
}

// The increments one accepted write lost (see LabMetrics::corruptions).
int64_t lost_by_write(int64_t before, int64_t read, int64_t written) {
    if (before > read) {
        return saturating_sub(before, read);
    }
    return before < read || written != saturating_add(read, 1) ? 1 : 0;
}

void count_lock_corruptions(const std::vector<LabRecord>& records, LabMetrics& m) {
    std::map<SectionKey, int64_t> read_of;  // the section's last accepted read since its last write
    for (const LabRecord& r : records) {
        if (r.op == LabOp::kRead && r.ok) {
            read_of[{r.worker, r.grant}] = r.counter;
        }
        if (r.op != LabOp::kWrite || !r.ok) {
            continue;
        }
        auto it = read_of.find({r.worker, r.grant});
        int64_t read = it == read_of.end() ? saturating_sub(r.counter, 1) : it->second;
        if (it != read_of.end()) {
            read_of.erase(it);
        }
        m.corruptions = saturating_add(m.corruptions, lost_by_write(r.before, read, r.counter));
        ++m.accepted_writes;
        m.final_counter = r.counter;
    }
    m.counter_shortfall = saturating_sub(m.accepted_writes, m.final_counter);
}

void count_optimistic_corruptions(const std::vector<LabRecord>& records, LabMetrics& m) {
    std::vector<const LabRecord*> commits;
    for (const LabRecord& r : records) {
        if (r.op == LabOp::kDb && r.db_write) {
            if (r.ok) {
                commits.push_back(&r);
            }
            m.unknown_writes += r.unknown ? 1 : 0;
        }
    }
    // The row's version orders the commits, whatever order their reports reached the resource
    // in: a worker paused between its commit and its report reports after later commits.
    std::stable_sort(commits.begin(), commits.end(), [](const LabRecord* a, const LabRecord* b) {
        return a->version < b->version;
    });
    int64_t unknown_left = m.unknown_writes;
    const LabRecord* prev = nullptr;
    for (const LabRecord* c : commits) {
        if (prev != nullptr && c->version == prev->version) {
            m.corruptions = saturating_add(m.corruptions, 1);  // two commits on one version
        } else if (prev != nullptr) {
            int64_t skipped = saturating_sub(saturating_sub(c->version, prev->version), 1);
            int64_t unacknowledged = std::min(skipped, unknown_left);
            unknown_left -= unacknowledged;
            m.unacknowledged_commits += unacknowledged;
            m.corruptions = saturating_add(m.corruptions, skipped - unacknowledged);
            int64_t steps = saturating_sub(c->version, prev->version);
            bool followed = c->counter == saturating_add(prev->counter, steps);
            m.corruptions = saturating_add(m.corruptions, followed ? 0 : 1);
        }
        RL_ASSERT(prev == nullptr || prev->version <= c->version);
        prev = c;
        ++m.accepted_writes;
    }
    RL_ASSERT(m.unacknowledged_commits <= m.unknown_writes);
    if (commits.empty()) {
        return;
    }
    m.final_counter = commits.back()->counter;
    int64_t initial = saturating_sub(commits.front()->counter, 1);
    m.counter_shortfall =
        saturating_sub(saturating_add(m.accepted_writes, m.unacknowledged_commits),
                       saturating_sub(m.final_counter, initial));
}

void count_db_final(int64_t value, LabMetrics& m) {
    // The row holds at least the commits the chain shows, at most those plus every unknown write
    // the chain did not place; outside that range, the distance to it.
    const int64_t shown = saturating_add(m.accepted_writes, m.unacknowledged_commits);
    const int64_t may_add = saturating_sub(m.unknown_writes, m.unacknowledged_commits);
    RL_ASSERT(may_add >= 0);
    const int64_t nearest = std::clamp(value, shown, saturating_add(shown, may_add));
    m.db_lost_increments = saturating_sub(nearest, value);
    const int64_t distance =
        nearest > value ? saturating_sub(nearest, value) : saturating_sub(value, nearest);
    m.corruptions = saturating_add(m.corruptions, distance);
}

// Acquire ok events (optimistic: commits) in the window, and acquire latencies over the log.
void count_acquisitions(const LabCell& cell, const std::vector<LabRecord>& records, LabMetrics& m) {
    std::vector<int64_t> times_ns;
    std::vector<int64_t> latencies_ns;
    std::map<int64_t, int64_t> invoked_ns;  // process -> t of its open acquire invoke
    for (const LabRecord& r : records) {
        bool acquired = cell.optimistic
                            ? r.op == LabOp::kDb && r.db_write && r.ok
                            : r.op == LabOp::kEvent && r.f == "acquire" && r.type == EventType::kOk;
        if (acquired && r.t_ns >= cell.origin_ns && r.t_ns <= cell.end_ns) {
            times_ns.push_back(r.t_ns);
        }
        if (r.op != LabOp::kEvent || r.f != "acquire") {
            continue;
        }
        if (r.type == EventType::kInvoke) {
            invoked_ns[r.process] = r.t_ns;
        } else if (auto it = invoked_ns.find(r.process); it != invoked_ns.end()) {
            if (r.type == EventType::kOk) {
                latencies_ns.push_back(r.t_ns - it->second);
            }
            invoked_ns.erase(it);
        }
    }
    m.acquisitions = static_cast<int64_t>(times_ns.size());
    int64_t window_ns = cell.end_ns - cell.origin_ns;
    m.acquisitions_per_s =
        window_ns > 0 ? static_cast<double>(m.acquisitions) / (static_cast<double>(window_ns) / 1e9)
                      : 0;
    m.acquire_ms_p50 = percentile_ms(latencies_ns, 50);
    m.acquire_ms_p99 = percentile_ms(std::move(latencies_ns), 99);
    int64_t prev_ns = cell.origin_ns;
    int64_t gap_ns_max = 0;
    for (int64_t t : times_ns) {
        gap_ns_max = std::max(gap_ns_max, t - prev_ns);
        prev_ns = t;
    }
    gap_ns_max = std::max(gap_ns_max, cell.end_ns - prev_ns);
    m.unavailable_ms_max = ns_to_ms(gap_ns_max);
}

void count_losses(const std::vector<LabRecord>& records, LabMetrics& m) {
    std::vector<const LabRecord*> grants;       // acquire ok events, in order
    std::map<SectionKey, int64_t> release_pos;  // the first release invoke of a grant
    std::map<SectionKey, int64_t> lost_pos;     // the first `lost` of a grant
    for (const LabRecord& r : records) {
        if (r.op == LabOp::kLost) {
            lost_pos.try_emplace({r.worker, r.grant}, r.pos);
        }
        if (r.op != LabOp::kEvent) {
            continue;
        }
        if (r.f == "acquire" && r.type == EventType::kOk) {
            grants.push_back(&r);
        } else if (r.f == "release" && r.type == EventType::kInvoke) {
            release_pos.try_emplace({r.worker, r.grant}, r.pos);
        }
    }
    for (size_t i = 0; i < grants.size(); ++i) {
        const LabRecord& a = *grants[i];
        auto release = release_pos.find({a.worker, a.grant});
        int64_t believed_until = release == release_pos.end() ? kInt64Max : release->second;
        for (size_t j = i + 1; j < grants.size() && grants[j]->pos < believed_until; ++j) {
            const LabRecord& b = *grants[j];
            if (b.worker == a.worker || b.key != a.key) {
                continue;
            }
            ++m.losses;
            auto lost = lost_pos.find({a.worker, a.grant});
            m.told_in_time += lost != lost_pos.end() && lost->second < b.pos ? 1 : 0;
            break;
        }
    }
}

void judge_progress(const LabCell& cell, const std::vector<LabSection>& sections, LabMetrics& m) {
    for (int64_t w = 1; w <= cell.workers; ++w) {
        m.progress_before_first_fault[w] = 0;
        m.progress_after_final_heal[w] = 0;
    }
    const int64_t first_fault_ns = cell.first_fault_ns();
    for (const LabSection& s : sections) {
        RL_ASSERT(s.worker >= 1 && s.worker <= cell.workers);
        if (s.accepted_writes == 0) {
            continue;
        }
        if (s.start_ns >= cell.origin_ns && s.start_ns < first_fault_ns) {
            ++m.progress_before_first_fault[s.worker];
        }
        if (s.start_ns >= cell.final_heal_ns && s.start_ns < cell.end_ns) {
            ++m.progress_after_final_heal[s.worker];
        }
    }
    if (cell.fault_requested && cell.faults.empty()) {
        m.invalid.push_back("the fault was never injected");
    }
    if (sections.empty()) {
        m.invalid.push_back("no critical section at all");
    }
    const char* before = cell.faults.empty() ? "in the whole run" : "before the first fault";
    for (int64_t w = 1; w <= cell.workers; ++w) {
        std::string worker = "worker " + std::to_string(w);
        if (m.progress_before_first_fault[w] == 0) {
            m.invalid.push_back(worker + " made no progress " + before);
        }
        if (m.progress_after_final_heal[w] == 0) {
            m.invalid.push_back(worker + " made no progress after the final heal");
        }
    }
}

}  // namespace

std::optional<double> percentile_ms(std::vector<int64_t> samples_ns, int p) {
    RL_ASSERT(p > 0 && p <= 100);
    if (samples_ns.empty()) {
        return std::nullopt;
    }
    std::sort(samples_ns.begin(), samples_ns.end());
    // Nearest rank: the smallest sample with at least p% of the samples at or below it.
    size_t n = samples_ns.size();
    size_t rank = (static_cast<size_t>(p) * n + 99) / 100;
    RL_ASSERT(rank >= 1 && rank <= n);
    return ns_to_ms(samples_ns[rank - 1]);
}

LabReport account_lab(const LabCell& cell, const std::vector<LabRecord>& records) {
    LabReport report;
    LabMetrics& m = report.metrics;
    report.sections = cell.optimistic ? optimistic_sections(records) : lock_sections(records);
    std::sort(report.sections.begin(), report.sections.end(),
              [](const LabSection& a, const LabSection& b) { return a.start_pos < b.start_pos; });
    m.sections = static_cast<int64_t>(report.sections.size());
    mark_overlaps(report.sections, m);
    m.overlap_ms = overlap_ms(report.sections);
    if (cell.optimistic) {
        count_optimistic_corruptions(records, m);
        if (cell.db_final_value) {
            count_db_final(*cell.db_final_value, m);
        }
    } else {
        count_lock_corruptions(records, m);
        count_losses(records, m);
    }
    for (const LabRecord& r : records) {
        bool access = r.op == LabOp::kRead || r.op == LabOp::kWrite;
        m.refused += access && !r.ok ? 1 : 0;
    }
    // With the counter chain that parse_lab_log checked, writes that each lost nothing add up.
    if (m.corruptions == 0) {
        RL_ASSERT(m.counter_shortfall == 0);
    }
    count_acquisitions(cell, records, m);
    judge_progress(cell, report.sections, m);
    return report;
}

}  // namespace raftlock::jepsen
