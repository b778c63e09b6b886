// lock.failover, part two: the leader dies. `clients` clients cycle acquire + release on locks of
// their own (lock.uncontended) while a control thread, a quarter into the measured window, asks
// bench/peers.sh which node leads, SIGKILLs it, and starts it again `restart_after_s` later.
// Every completed cycle's end time is kept; the unavailability window is the longest gap between
// two consecutive completions (of any client) that ends after the kill. The longest gap before
// the kill is reported too, as the baseline of what a gap is without a failure. Failed calls are
// counted (a client of a system without client-side failover, such as our etcd driver that stays
// on its member, fails until the member is back).

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "bench/peers_control.h"
#include "bench/run_clients.h"
#include "bench/run_clock.h"
#include "bench/scenario.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

// Pause after a failed call, so a client whose node is down does not spin.
constexpr auto kErrorPause = 10ms;

struct Control {
    int leader = 0;
    Clock::time_point killed_at;
    Clock::time_point restarted_at;
    std::string error;
};

void control_loop(const PeersControl& peers,
                  const Timeline& timeline,
                  double restart_after_s,
                  Control& out) {
    std::this_thread::sleep_until(timeline.measure_from +
                                  (timeline.end - timeline.measure_from) / 4);
    auto leader = peers.leader();
    if (!leader.ok()) {
        out.error = "leader: " + leader.error();
        return;
    }
    out.leader = *leader;
    out.killed_at = Clock::now();
    if (Status s = peers.kill_node(out.leader); !s.ok()) {
        out.error = "kill-node: " + s.error();
        return;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(restart_after_s));
    out.restarted_at = Clock::now();
    if (Status s = peers.start_node(out.leader); !s.ok()) {
        out.error = "start-node: " + s.error();
    }
}

void cycle_loop(const RunOptions& o,
                Session& session,
                int client,
                const Timeline& timeline,
                ErrorLog& errors,
                Histogram& latency,
                std::vector<Clock::time_point>& completions) {
    const std::string name = fmt::format("{}-leader-{}", o.prefix, client);
    while (Clock::now() < timeline.end) {
        const auto start = Clock::now();
        LockHandle handle;
        Status s = session.lock(name, o.lock_wait, handle);
        if (s.ok()) {
            s = session.unlock(handle);
        }
        const auto done = Clock::now();
        if (!s.ok()) {
            errors.add(s.error());
            std::this_thread::sleep_for(kErrorPause);
            continue;
        }
        if (timeline.measured(start)) {
            latency.record(ns_between(start, done));
            completions.push_back(done);
        }
    }
}

double ms_of(Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

// The longest gap between consecutive `times` (sorted) that ends after `after` and, separately,
// the longest that ends before it. Returns {start of the gap after, its length, longest before}.
struct Gaps {
    Clock::time_point start;
    Clock::duration after{0};
    Clock::duration before{0};
};

Gaps longest_gaps(const std::vector<Clock::time_point>& times, Clock::time_point after) {
    Gaps g;
    for (size_t i = 1; i < times.size(); ++i) {
        const auto gap = times[i] - times[i - 1];
        if (times[i] > after && gap > g.after) {
            g.after = gap;
            g.start = times[i - 1];
        } else if (times[i] <= after) {
            g.before = std::max(g.before, gap);
        }
    }
    return g;
}

}  // namespace

RunResult run_leader_crash(Driver& driver, const RunOptions& o) {
    RunResult r;
    r.system = driver.name();
    r.scenario = "lock.failover.leader";
    r.mode = "closed";
    r.clients = std::max(1, o.clients);
    r.seconds = o.duration_s;
    if (o.peer_system == "redis" || o.peer_system == "redis-nofsync") {
        r.note = "no failover: single node";
        return r;
    }
    const PeersControl peers(o.peers_script, o.peer_system);
    const auto n = static_cast<size_t>(r.clients);
    std::vector<Histogram> latency(n);
    std::vector<std::vector<Clock::time_point>> completions(n);
    ErrorLog errors;
    Timeline timeline;
    Control control;
    std::vector<std::unique_ptr<Session>> sessions(n);
    run_clients(
        n, o.warmup_s, o.duration_s, timeline,
        [&](size_t i) {
            auto session = driver.open(static_cast<int>(i));
            if (session.ok()) {
                sessions[i] = std::move(*session);
            } else {
                errors.add("open: " + session.error());
            }
        },
        [&](size_t i) {
            if (sessions[i]) {
                cycle_loop(o, *sessions[i], static_cast<int>(i), timeline, errors, latency[i],
                           completions[i]);
                sessions[i].reset();  // closed on its own thread, beside the others
            }
        },
        [&] { control_loop(peers, timeline, o.restart_after_s, control); });

    std::vector<Clock::time_point> all;
    for (size_t i = 0; i < n; ++i) {
        r.latency.merge(latency[i]);
        all.insert(all.end(), completions[i].begin(), completions[i].end());
    }
    std::sort(all.begin(), all.end());
    r.ops = all.size();
    r.errors = errors.count();
    r.first_error = errors.first();
    if (!control.error.empty()) {
        r.note = control.error;
        r.errors++;
        return r;
    }
    // The window starts at the last completion before the kill at the latest.
    const Gaps gaps = longest_gaps(all, control.killed_at);
    r.figures.emplace_back("leader_node", control.leader);
    r.figures.emplace_back("unavailable_ms", ms_of(gaps.after));
    r.figures.emplace_back("gap_start_after_kill_ms", ms_of(gaps.start - control.killed_at));
    r.figures.emplace_back("longest_gap_before_kill_ms", ms_of(gaps.before));
    r.figures.emplace_back("restarted_after_kill_ms",
                           ms_of(control.restarted_at - control.killed_at));
    r.note = "unavailable_ms = the longest gap between completed cycles ending after the kill";
    return r;
}

}  // namespace raftlock::bench
