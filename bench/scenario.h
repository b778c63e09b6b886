#pragma once

// The benchmark scenarios, each run against one Driver (or none, for the physical floor) with the
// same options, giving one RunResult.
//
//   lock.uncontended  every client cycles acquire + release on its own lock
//   lock.handoff      every client waits on the same lock; latency is the hand-off: from the
//                     holder's release call to the next holder's acquire returning
//   kv.write          every client overwrites its own key
//   kv.read           every client reads its own key (linearizable where the system can)
//   watch.latency     one writer, `watchers` watching clients; latency from the write call to
//                     each watcher's event; the next write waits for every watcher
//   floor.fsync       4 KiB appends + fdatasync to a file in `dir` (no driver)
//   floor.fsync.overwrite  4 KiB overwrites of one block + fdatasync (no driver)
//   floor.loopback    a 64-byte TCP ping-pong over 127.0.0.1 (no driver)
//   lock.failover     two results: the holder's process is SIGKILLed while a waiter is queued
//                     (time from the kill to the waiter's grant, against the session timeout);
//                     then the leader node is SIGKILLed and restarted while `clients` cycle
//                     lock.uncontended (the longest gap between completed cycles)
//   session.keepalive one kv.write client alone, then beside each count of idle sessions: its
//                     latency, and the servers' CPU time and resident memory
//
// Closed loop (rate 0): each client starts its next operation when the last one returned. Open
// loop (rate > 0, lock.uncontended and kv.* only): the clients share a schedule of `rate`
// operations per second and latency counts from each operation's intended start, so a stall
// shows in the percentiles of every operation that should have started during it (no
// coordinated omission). Operations that never started before the run's end are `missed`.

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/driver.h"
#include "bench/histogram.h"

namespace raftlock::bench {

struct RunOptions {
    std::string scenario;
    int clients = 1;
    double warmup_s = 2;
    double duration_s = 10;
    double rate_per_s = 0;  // 0: closed loop
    size_t value_bytes = 64;
    int watchers = 1;
    std::chrono::milliseconds lock_wait{30'000};
    // Hand-off: a grant that passes over a waiter who asked at least this much earlier counts
    // as a FIFO violation (smaller gaps are within the jitter of when requests reach a server).
    std::chrono::microseconds fifo_slack{1000};
    std::string prefix;     // makes this run's keys and lock names unique
    std::string dir = ".";  // floor.fsync

    // lock.failover and session.keepalive.
    std::string system;  // --system and --endpoints, for the holder's child process
    std::string endpoints;
    std::string peers_script;  // bench/peers.sh, and its SYSTEM argument
    std::string peer_system;
    std::chrono::milliseconds session_timeout{3000};  // the holder's, for every system
    int failover_repeats = 5;
    double restart_after_s = 5;  // how long the killed leader stays down
    std::vector<int> idle_sessions = {1000, 10000};
    std::chrono::milliseconds idle_timeout{10'000};
};

struct RunResult {
    std::string system;
    std::string scenario;
    std::string mode;  // "closed" or "open"
    int clients = 0;
    double rate_per_s = 0;
    double seconds = 0;
    uint64_t ops = 0;
    uint64_t errors = 0;
    std::string first_error;
    Histogram latency;
    std::vector<std::pair<std::string, Histogram>> more_latency;  // e.g. "acquire"
    std::vector<std::pair<std::string, double>> figures;          // e.g. "fifo_violations"
    std::string note;  // for people: why a figure is missing, what a figure means

    double ops_per_s() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0; }
};

const std::vector<std::string>& scenario_names();
bool scenario_needs_driver(const std::string& scenario);
// Receives each result as soon as its run is over (a long scenario's first parts are printed
// before its last ones run).
using ReportFn = std::function<void(const RunResult&)>;

// Precondition: the scenario is one of scenario_names(); a driver unless it needs none.
// Scenarios with more than one part give one result per part.
void run_scenario(Driver* driver, const RunOptions& options, const ReportFn& report);

// Each scenario, for run_scenario.
RunResult run_ops(Driver& driver, const RunOptions& options);
RunResult run_handoff(Driver& driver, const RunOptions& options);
RunResult run_watch(Driver& driver, const RunOptions& options);
RunResult run_floor_fsync(const RunOptions& options);
RunResult run_floor_loopback(const RunOptions& options);
RunResult run_holder_crash(Driver& driver, const RunOptions& options);
RunResult run_leader_crash(Driver& driver, const RunOptions& options);
void run_keepalive(Driver& driver, const RunOptions& options, const ReportFn& report);

// raftlock-bench --hold NAME: the holder process of lock.failover. Takes the lock with a session
// of `options.session_timeout`, writes "held" on stdout, and keeps the session alive until it is
// killed (or its parent dies). Returns only on failure, with the exit status.
int run_hold(Driver& driver, const std::string& lock_name, const RunOptions& options);

}  // namespace raftlock::bench
