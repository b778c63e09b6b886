// session.keepalive: what idle sessions cost. One kv.write client writes in a closed loop for the
// run's duration, first with no idle sessions, then beside each count of `idle_sessions` (opened
// by Driver::open_idle with `idle_timeout` and kept alive by their own threads). For each run:
// the writer's latency, and over the measured window the servers' CPU time (utime + stime
// deltas from /proc/PID/stat, summed over the processes bench/peers.sh lists) and their summed
// resident memory (VmRSS) at its end. The load generator's own CPU time over the window (this
// process and any child holding sessions) is reported too: it shares the machine's cores with
// the servers, and ZooKeeper's idle sessions cost two client threads each.

#include <thread>

#include <fmt/format.h>
#include <unistd.h>

#include "bench/peers_control.h"
#include "bench/proc_usage.h"
#include "bench/run_clock.h"
#include "bench/scenario.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

// After the sessions are opened, before measuring: the opening burst's writes settle.
constexpr auto kSettle = 2s;
constexpr auto kErrorPause = 10ms;

RunResult base_result(const Driver& driver, const RunOptions& o, int idle) {
    RunResult r;
    r.system = driver.name();
    r.scenario = "session.keepalive";
    r.mode = "closed";
    r.clients = 1;
    r.seconds = o.duration_s;
    r.figures.emplace_back("idle_sessions", idle);
    r.figures.emplace_back("idle_timeout_ms", static_cast<double>(o.idle_timeout.count()));
    return r;
}

// The writer's closed loop over `timeline`, into `r`.
void write_loop(const RunOptions& o, Session& writer, const Timeline& timeline, RunResult& r) {
    const std::string key = fmt::format("{}-keepalive", o.prefix);
    const std::string value = make_value(o.value_bytes, 0);
    ErrorLog errors;
    while (Clock::now() < timeline.end) {
        const auto start = Clock::now();
        const Status s = writer.put(key, value);
        const auto done = Clock::now();
        if (!s.ok()) {
            errors.add(s.error());
            std::this_thread::sleep_for(kErrorPause);
        } else if (timeline.measured(start)) {
            r.latency.record(ns_between(start, done));
            r.ops++;
        }
    }
    r.errors += errors.count();
    if (r.first_error.empty()) {
        r.first_error = errors.first();
    }
}

// Measures the writer and the servers' usage over one window.
void measure(const RunOptions& o,
             Session& writer,
             const std::vector<int>& pids,
             const std::vector<int>& client_pids,
             RunResult& r) {
    RunResult warm_up;  // its operations are not counted
    write_loop(o, writer, Timeline::from_now(o.warmup_s, 0), warm_up);
    auto before = read_proc_usage(pids);
    auto client_before = read_proc_usage(client_pids);
    const Timeline timeline = Timeline::from_now(0, o.duration_s);
    write_loop(o, writer, timeline, r);
    const double seconds =
        std::chrono::duration<double>(Clock::now() - timeline.measure_from).count();
    auto after = read_proc_usage(pids);
    auto client_after = read_proc_usage(client_pids);
    if (client_before.ok() && client_after.ok()) {
        r.figures.emplace_back("client_cpu_pct",
                               100 * (client_after->cpu_s - client_before->cpu_s) / seconds);
    }
    if (!before.ok() || !after.ok()) {
        r.note = "no server usage: " + (before.ok() ? after.error() : before.error());
        return;
    }
    r.figures.emplace_back("server_cpu_s", after->cpu_s - before->cpu_s);
    r.figures.emplace_back("server_cpu_pct", 100 * (after->cpu_s - before->cpu_s) / seconds);
    r.figures.emplace_back("server_rss_mib", static_cast<double>(after->rss_kib) / 1024);
}

}  // namespace

void run_keepalive(Driver& driver, const RunOptions& o, const ReportFn& report) {
    if (driver.name() == "redis") {
        RunResult r = base_result(driver, o, 0);
        r.note = "not applicable: Redis has no sessions (a lock's lease is its PX)";
        report(r);
        return;
    }
    const PeersControl peers(o.peers_script, o.peer_system);
    auto pids = peers.pids();
    auto writer = driver.open(0);
    Status prepared = writer.ok() ? (*writer)->prepare_key(fmt::format("{}-keepalive", o.prefix),
                                                           make_value(o.value_bytes, 0))
                                  : Status("open: " + writer.error());
    std::vector<int> counts = {0};
    counts.insert(counts.end(), o.idle_sessions.begin(), o.idle_sessions.end());
    for (int idle : counts) {
        RunResult r = base_result(driver, o, idle);
        if (!prepared.ok() || !pids.ok()) {
            r.errors = 1;
            r.first_error = !prepared.ok() ? prepared.error() : "peers.sh pids: " + pids.error();
            report(r);
            continue;
        }
        std::unique_ptr<IdleSessions> sessions;
        if (idle > 0) {
            const auto open_start = Clock::now();
            auto opened = driver.open_idle(static_cast<size_t>(idle), o.idle_timeout);
            if (!opened.ok()) {
                r.note = opened.error();
                r.errors = 1;
                report(r);
                continue;
            }
            sessions = std::move(*opened);
            r.figures.emplace_back(
                "open_s", std::chrono::duration<double>(Clock::now() - open_start).count());
            std::this_thread::sleep_for(kSettle);
        }
        std::vector<int> client_pids = {static_cast<int>(::getpid())};
        if (sessions) {
            const std::vector<int> more = sessions->client_pids();
            client_pids.insert(client_pids.end(), more.begin(), more.end());
        }
        measure(o, **writer, *pids, client_pids, r);
        if (sessions) {
            r.figures.emplace_back("keepalive_errors",
                                   static_cast<double>(sessions->keepalive_errors()));
            if (sessions->keepalive_errors() > 0) {
                r.note += (r.note.empty() ? "" : "; ") + std::string("first keepalive error: ") +
                          sessions->first_error();
            }
        }
        report(r);
    }
}

}  // namespace raftlock::bench
