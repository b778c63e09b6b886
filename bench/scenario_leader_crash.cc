// lock.failover, part two: the leader dies. `clients` clients cycle acquire + release on locks of
// their own (lock.uncontended) while a control thread, a quarter into the measured window, asks
// bench/peers.sh which node leads, SIGKILLs it, and starts it again `restart_after_s` later.
// Every completed cycle's end time is kept; the unavailability window is the longest gap between
// two consecutive completions (of any client) that ends after the kill. The longest gap before
// the kill is reported too, as the baseline of what a gap is without a failure. Failed calls are
// counted (a client of a system without client-side failover, such as our etcd driver that stays
// on its member, fails until the member is back).
//
// The window is broken down from outside, the same way for every system: after the kill the
// control thread asks peers.sh who leads every kLeaderPoll until another node says it does
// (detection and election: the failure detection timeout plus the vote), and the end of the
// window shows when the clients were back (the rest: finding the new leader, a retry, a cycle).
// A poll runs the script, which takes its own time, so the election is known to within the
// interval from the start of the poll before the one that saw the new leader, reported beside it;
// the kill itself happens while `peers.sh kill-node` runs, whose duration is reported too.

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
// Between two questions to peers.sh about the leader after the kill.
constexpr auto kLeaderPoll = 5ms;

struct Control {
    int leader = 0;
    Clock::time_point killed_at;  // peers.sh kill-node was started
    Clock::time_point kill_returned;
    Clock::time_point restarted_at;
    int new_leader = 0;                         // 0: none named before the restart
    Clock::time_point new_leader_seen;          // the poll that named it returned
    Clock::duration new_leader_uncertainty{0};  // since the poll before it started
    std::string error;
};

// Asks who leads until a node other than `out.leader` does, or until `until`.
void watch_election(const PeersControl& peers, Clock::time_point until, Control& out) {
    // The poll before asked each node in turn while it ran: the leader it missed may have been
    // elected at any moment since it started.
    auto previous_start = out.killed_at;
    while (Clock::now() < until) {
        const auto started = Clock::now();
        auto leader = peers.leader_now();
        const auto returned = Clock::now();
        if (leader.ok() && *leader != 0 && *leader != out.leader) {
            out.new_leader = *leader;
            out.new_leader_seen = returned;
            out.new_leader_uncertainty = returned - previous_start;
            return;
        }
        previous_start = started;
        std::this_thread::sleep_for(kLeaderPoll);
    }
}

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
    out.kill_returned = Clock::now();
    const auto restart_at = out.killed_at + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(restart_after_s));
    watch_election(peers, restart_at, out);
    std::this_thread::sleep_until(restart_at);
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
    if (control.new_leader != 0) {
        r.figures.emplace_back("new_leader_node", control.new_leader);
        r.figures.emplace_back("new_leader_seen_after_kill_ms",
                               ms_of(control.new_leader_seen - control.killed_at));
        r.figures.emplace_back("new_leader_seen_within_ms", ms_of(control.new_leader_uncertainty));
    }
    r.figures.emplace_back("kill_node_took_ms", ms_of(control.kill_returned - control.killed_at));
    if (gaps.after > Clock::duration::zero()) {
        r.figures.emplace_back("clients_back_after_kill_ms",
                               ms_of(gaps.start + gaps.after - control.killed_at));
    }
    r.note = "unavailable_ms = the longest gap between completed cycles ending after the kill";
    return r;
}

}  // namespace raftlock::bench
