// lock.failover, part one: the holder's process dies. A child process (this program again, in
// --hold mode) takes lock L with a session of `session_timeout` and keeps it alive; a waiter in
// this process asks for L and waits (queued on the server, or polling for Redis); the child is
// SIGKILLed, so nothing releases L: the system must notice the session (lease, PX) is gone.
// Measured: from the kill to the waiter's acquire returning, `failover_repeats` times.

#include <algorithm>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "bench/child_process.h"
#include "bench/run_clock.h"
#include "bench/scenario.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

// How long the child may take to get the lock, and the waiter to get its request queued before
// the kill (queued or polling well before its holder dies, as in a real hand-over). The holder
// refreshes its session every third of the timeout, so the kill lands at a random point of that
// cycle: a fixed delay would always catch the same phase (a kill just after a refresh waits the
// whole timeout, one just before it a third less).
constexpr auto kHoldTimeout = 30s;
constexpr auto kQueueSettle = 1s;
// A holder that lost its parent and its signal still stops on its own.
constexpr auto kHoldLifetimeMax = 10min;

// One take: returns the time from the kill to the grant.
Result<Clock::duration, std::string> one_take(const RunOptions& o,
                                              Session& waiter,
                                              const std::string& lock_name) {
    ChildProcess holder;
    Status started =
        holder.start({"--hold", lock_name, "--system", o.system, "--endpoints", o.endpoints,
                      "--session-timeout-ms", std::to_string(o.session_timeout.count())});
    if (!started.ok()) {
        return started.error();
    }
    auto held = holder.read_line(kHoldTimeout);
    if (!held.ok()) {
        return "holder: " + held.error();
    }
    if (held->text != "held") {
        return "holder said: " + held->text;
    }
    LockHandle handle;
    Status granted = std::string("not yet");
    Clock::time_point granted_at;
    std::thread waiting([&] {
        granted = waiter.lock(lock_name, o.lock_wait, handle);
        granted_at = Clock::now();
    });
    std::uniform_int_distribution<int64_t> phase_ms(0, o.session_timeout.count() / 3);
    thread_local std::mt19937_64 random{std::random_device{}()};
    std::this_thread::sleep_for(kQueueSettle + std::chrono::milliseconds(phase_ms(random)));
    const auto killed_at = Clock::now();
    holder.kill();
    waiting.join();
    holder.stop(true);
    if (!granted.ok()) {
        return "waiter: " + granted.error();
    }
    (void)waiter.unlock(handle);
    if (granted_at < killed_at) {
        return std::string("the waiter got the lock before the holder was killed");
    }
    return granted_at - killed_at;
}

double ms_of(Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

int run_hold(Driver& driver, const std::string& lock_name, const RunOptions& o) {
    driver.set_session_timeout(o.session_timeout);
    auto session = driver.open(0);
    if (!session.ok()) {
        fmt::print(stderr, "raftlock-bench --hold: open: {}\n", session.error());
        return 1;
    }
    LockHandle handle;
    if (Status s = (*session)->lock(lock_name, kHoldTimeout, handle); !s.ok()) {
        fmt::print(stderr, "raftlock-bench --hold: {}\n", s.error());
        return 1;
    }
    fmt::print("held\n");
    std::fflush(stdout);
    const auto stop_at = Clock::now() + kHoldLifetimeMax;
    while (Clock::now() < stop_at) {
        std::this_thread::sleep_for(o.session_timeout / 3);
        if (Status s = (*session)->keep_alive(); !s.ok()) {
            fmt::print(stderr, "raftlock-bench --hold: {}\n", s.error());
        }
    }
    return 1;
}

RunResult run_holder_crash(Driver& driver, const RunOptions& o) {
    RunResult r;
    r.system = driver.name();
    r.scenario = "lock.failover.holder";
    r.mode = "closed";
    r.clients = 1;
    ErrorLog errors;
    std::vector<double> takes_ms;
    auto waiter = driver.open(0);
    if (!waiter.ok()) {
        errors.add("open: " + waiter.error());
    }
    for (int i = 0; waiter.ok() && i < o.failover_repeats; ++i) {
        auto take = one_take(o, **waiter, fmt::format("{}-holder-{}", o.prefix, i));
        if (!take.ok()) {
            errors.add(take.error());
            continue;
        }
        takes_ms.push_back(ms_of(*take));
        r.latency.record(ns_between(Clock::time_point{}, Clock::time_point{} + *take));
        r.figures.emplace_back(fmt::format("take_{}_ms", i + 1), takes_ms.back());
    }
    r.ops = takes_ms.size();
    r.seconds = 0;
    if (!takes_ms.empty()) {
        std::vector<double> sorted = takes_ms;
        std::sort(sorted.begin(), sorted.end());
        const size_t n = sorted.size();
        const double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        r.figures.emplace_back("median_ms", median);
    }
    r.figures.emplace_back("session_timeout_ms", static_cast<double>(o.session_timeout.count()));
    r.note = "kill of the holder process -> the waiter's grant; ops = takes";
    r.errors = errors.count();
    r.first_error = errors.first();
    return r;
}

}  // namespace raftlock::bench
