#include "bench/scenario.h"

#include <algorithm>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "bench/run_clients.h"
#include "bench/run_clock.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

// After the run's end, an open-loop client that is behind its schedule gets this long to catch
// up; what it has not started by then counts as missed.
constexpr auto kCatchUpGrace = 5s;
constexpr auto kErrorPause = 1ms;

struct ClientOut {
    Histogram latency;
    Histogram acquire;
    uint64_t ops = 0;
    uint64_t missed = 0;
};

// One operation of the scenario on `session` for client `client`; `acquired` is set when a lock
// was granted (lock.uncontended), for the acquire-only latency.
Status one_op(const RunOptions& o,
              Session& session,
              int client,
              const std::string& value,
              Clock::time_point& acquired) {
    const std::string key = fmt::format("{}-{}", o.prefix, client);
    if (o.scenario == "lock.uncontended") {
        LockHandle handle;
        if (Status s = session.lock(key, o.lock_wait, handle); !s.ok()) {
            return s;
        }
        acquired = Clock::now();
        return session.unlock(handle);
    }
    if (o.scenario == "kv.write") {
        return session.put(key, value);
    }
    auto r = session.get(key);
    if (!r.ok()) {
        return r.error();
    }
    if (r->text.size() != value.size()) {
        return fmt::format("read {} bytes, expected {}", r->text.size(), value.size());
    }
    return Done{};
}

void client_loop(const RunOptions& o,
                 Session& session,
                 int client,
                 const Timeline& timeline,
                 ErrorLog& errors,
                 ClientOut& out) {
    const std::string value = make_value(o.value_bytes, client);
    const bool open_loop = o.rate_per_s > 0;
    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(open_loop ? o.clients / o.rate_per_s : 0));
    Clock::time_point intended = timeline.start + interval * client / std::max(1, o.clients);
    for (;;) {
        auto now = Clock::now();
        if (!open_loop) {
            if (now >= timeline.end) {
                return;
            }
            intended = now;
        } else {
            if (intended >= timeline.end) {
                return;
            }
            if (now >= timeline.end + kCatchUpGrace) {
                out.missed += static_cast<uint64_t>((timeline.end - intended) / interval) + 1;
                return;
            }
            if (intended > now) {
                std::this_thread::sleep_until(intended);
            }
        }
        Clock::time_point acquired{};
        const Status s = one_op(o, session, client, value, acquired);
        const auto done = Clock::now();
        if (!s.ok()) {
            errors.add(s.error());
            std::this_thread::sleep_for(kErrorPause);
        } else if (timeline.measured(intended)) {
            out.latency.record(ns_between(intended, done));
            if (acquired != Clock::time_point{}) {
                out.acquire.record(ns_between(intended, acquired));
            }
            out.ops++;
        }
        intended += interval;
    }
}

}  // namespace

std::string make_value(size_t bytes, int client) {
    std::string v(bytes, 'x');
    for (size_t i = 0; i < bytes; ++i) {
        v[i] = static_cast<char>('a' + (i + static_cast<size_t>(client)) % 26);
    }
    return v;
}

const std::vector<std::string>& scenario_names() {
    static const std::vector<std::string> names = {
        "lock.uncontended",      "lock.handoff",   "kv.write",          "kv.read",
        "watch.latency",         "lock.failover",  "session.keepalive", "floor.fsync",
        "floor.fsync.overwrite", "floor.loopback",
    };
    return names;
}

bool scenario_needs_driver(const std::string& scenario) {
    return scenario.rfind("floor.", 0) != 0;
}

void run_scenario(Driver* driver, const RunOptions& options, const ReportFn& report) {
    if (options.scenario == "floor.fsync" || options.scenario == "floor.fsync.overwrite") {
        report(run_floor_fsync(options));
    } else if (options.scenario == "floor.loopback") {
        report(run_floor_loopback(options));
    } else if (options.scenario == "lock.handoff") {
        RL_ASSERT(driver != nullptr);
        report(run_handoff(*driver, options));
    } else if (options.scenario == "watch.latency") {
        RL_ASSERT(driver != nullptr);
        report(run_watch(*driver, options));
    } else if (options.scenario == "lock.failover") {
        RL_ASSERT(driver != nullptr);
        report(run_holder_crash(*driver, options));
        report(run_leader_crash(*driver, options));
    } else if (options.scenario == "session.keepalive") {
        RL_ASSERT(driver != nullptr);
        run_keepalive(*driver, options, report);
    } else {
        RL_ASSERT(driver != nullptr);
        report(run_ops(*driver, options));
    }
}

RunResult run_ops(Driver& driver, const RunOptions& o) {
    const auto n = static_cast<size_t>(std::max(1, o.clients));
    std::vector<ClientOut> outs(n);
    ErrorLog errors;
    Timeline timeline;
    std::vector<std::unique_ptr<Session>> sessions(n);
    std::vector<Status> prepared(n, Done{});
    run_clients(
        n, o.warmup_s, o.duration_s, timeline,
        [&](size_t i) {
            const int client = static_cast<int>(i);
            auto session = driver.open(client);
            if (!session.ok()) {
                prepared[i] = "open: " + session.error();
                return;
            }
            sessions[i] = std::move(*session);
            if (o.scenario == "kv.write" || o.scenario == "kv.read") {
                prepared[i] = sessions[i]->prepare_key(fmt::format("{}-{}", o.prefix, client),
                                                       make_value(o.value_bytes, client));
            }
        },
        [&](size_t i) {
            if (!prepared[i].ok()) {
                errors.add(prepared[i].error());
                return;
            }
            client_loop(o, *sessions[i], static_cast<int>(i), timeline, errors, outs[i]);
            sessions[i].reset();  // closed on its own thread, beside the others
        });

    RunResult r;
    r.system = driver.name();
    r.scenario = o.scenario;
    r.mode = o.rate_per_s > 0 ? "open" : "closed";
    r.clients = static_cast<int>(n);
    r.rate_per_s = o.rate_per_s;
    r.seconds = o.duration_s;
    Histogram acquire;
    uint64_t missed = 0;
    for (const ClientOut& out : outs) {
        r.latency.merge(out.latency);
        acquire.merge(out.acquire);
        r.ops += out.ops;
        missed += out.missed;
    }
    if (o.scenario == "lock.uncontended") {
        r.more_latency.emplace_back("acquire", acquire);
    }
    if (o.rate_per_s > 0) {
        r.figures.emplace_back("missed", static_cast<double>(missed));
    }
    r.errors = errors.count();
    r.first_error = errors.first();
    return r;
}

}  // namespace raftlock::bench
