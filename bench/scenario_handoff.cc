// lock.handoff: every client loops acquire -> release on one shared lock, so there is always a
// queue. For each grant in the measured window:
//   hand-off latency = the acquire's return - the previous holder's release call start
//   FIFO violation   = some other client still waiting had asked more than fifo_slack before
//                      the one that got the lock
// Grants/s is the run's throughput.

#include <algorithm>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "bench/run_clients.h"
#include "bench/run_clock.h"
#include "bench/scenario.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto kErrorPause = 1ms;

struct Shared {
    std::string lock_name;
    Timeline timeline;
    ErrorLog errors;
    // The steady-clock time (ns since epoch) at which the current holder began its release.
    std::atomic<int64_t> release_started_ns{0};
    std::mutex mutex;
    std::map<int, Clock::time_point> waiting;  // client -> when it called lock(); under mutex
    uint64_t fifo_violations = 0;              // under mutex
};

struct ClientOut {
    Histogram handoff;
    uint64_t grants = 0;
};

int64_t since_epoch_ns(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

void handoff_loop(
    const RunOptions& o, Session& session, int client, Shared& shared, ClientOut& out) {
    while (Clock::now() < shared.timeline.end) {
        const auto asked = Clock::now();
        {
            std::lock_guard lock(shared.mutex);
            shared.waiting[client] = asked;
        }
        LockHandle handle;
        const Status s = session.lock(shared.lock_name, o.lock_wait, handle);
        const auto granted = Clock::now();
        const int64_t release_started = shared.release_started_ns.load();
        bool passed_over = false;
        {
            std::lock_guard lock(shared.mutex);
            shared.waiting.erase(client);
            for (const auto& [other, other_asked] : shared.waiting) {
                passed_over = passed_over || other_asked + o.fifo_slack < asked;
            }
            if (s.ok() && passed_over && shared.timeline.measured(granted)) {
                shared.fifo_violations++;
            }
        }
        if (!s.ok()) {
            shared.errors.add(s.error());
            std::this_thread::sleep_for(kErrorPause);
            continue;
        }
        if (shared.timeline.measured(granted)) {
            out.grants++;
            const int64_t granted_ns = since_epoch_ns(granted);
            if (release_started != 0 && granted_ns > release_started) {
                out.handoff.record(static_cast<uint64_t>(granted_ns - release_started));
            }
        }
        shared.release_started_ns.store(since_epoch_ns(Clock::now()));
        if (Status u = session.unlock(handle); !u.ok()) {
            shared.errors.add(u.error());
        }
    }
}

}  // namespace

RunResult run_handoff(Driver& driver, const RunOptions& o) {
    const auto n = static_cast<size_t>(std::max(1, o.clients));
    Shared shared;
    shared.lock_name = fmt::format("{}-handoff", o.prefix);
    std::vector<ClientOut> outs(n);
    std::vector<std::unique_ptr<Session>> sessions(n);
    run_clients(
        n, o.warmup_s, o.duration_s, shared.timeline,
        [&](size_t i) {
            auto session = driver.open(static_cast<int>(i));
            if (session.ok()) {
                sessions[i] = std::move(*session);
            } else {
                shared.errors.add("open: " + session.error());
            }
        },
        [&](size_t i) {
            if (sessions[i]) {
                handoff_loop(o, *sessions[i], static_cast<int>(i), shared, outs[i]);
                sessions[i].reset();  // closed on its own thread, beside the others
            }
        });

    RunResult r;
    r.system = driver.name();
    r.scenario = o.scenario;
    r.mode = "closed";
    r.clients = static_cast<int>(n);
    r.seconds = o.duration_s;
    for (const ClientOut& out : outs) {
        r.latency.merge(out.handoff);
        r.ops += out.grants;
    }
    r.figures.emplace_back("fifo_violations", static_cast<double>(shared.fifo_violations));
    r.figures.emplace_back("fifo_slack_us", static_cast<double>(o.fifo_slack.count()));
    r.errors = shared.errors.count();
    r.first_error = shared.errors.first();
    return r;
}

}  // namespace raftlock::bench
