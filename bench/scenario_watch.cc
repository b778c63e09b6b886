// watch.latency: client 0 writes one key; clients 1..watchers watch it. Each round the writer
// notes the time, writes, and waits until every watcher has its event and its watch is armed
// again; each watcher's latency is its event's arrival - the write call's start. A round whose
// events do not all arrive within kRoundTimeout counts as an error.

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "bench/run_clock.h"
#include "bench/scenario.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto kRoundTimeout = 5s;

// Collects one round of events from every watcher.
class Round {
public:
    explicit Round(size_t watchers) : received_(watchers) {}

    void reset() {
        std::lock_guard lock(mutex_);
        std::fill(received_.begin(), received_.end(), Clock::time_point{});
        events_ = 0;
        armed_ = 0;
    }
    void event(size_t watcher, Clock::time_point t) {
        std::lock_guard lock(mutex_);
        if (received_[watcher] == Clock::time_point{}) {
            received_[watcher] = t;
            events_++;
        }
        cv_.notify_all();
    }
    void armed() {
        std::lock_guard lock(mutex_);
        armed_++;
        cv_.notify_all();
    }
    // True when every watcher got its event and re-armed before `deadline`.
    bool wait(Clock::time_point deadline) {
        std::unique_lock lock(mutex_);
        return cv_.wait_until(lock, deadline, [this] {
            return events_ >= received_.size() && armed_ >= received_.size();
        });
    }
    std::vector<Clock::time_point> received() {
        std::lock_guard lock(mutex_);
        return received_;
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<Clock::time_point> received_;
    size_t events_ = 0;
    size_t armed_ = 0;
};

class Sink final : public WatchSink {
public:
    Sink(Round& round, size_t index) : round_(round), index_(index) {}
    void event(Clock::time_point received) override { round_.event(index_, received); }
    void armed() override { round_.armed(); }

private:
    Round& round_;
    size_t index_;
};

}  // namespace

RunResult run_watch(Driver& driver, const RunOptions& o) {
    RunResult r;
    r.system = driver.name();
    r.scenario = o.scenario;
    r.mode = "closed";
    r.clients = std::max(1, o.watchers);
    r.seconds = o.duration_s;
    r.figures.emplace_back("watchers", r.clients);
    ErrorLog errors;
    const auto fail = [&](const std::string& error) {
        r.errors = 1;
        r.first_error = error;
        return r;
    };

    const std::string key = fmt::format("{}-watched", o.prefix);
    const std::string value = make_value(o.value_bytes, 0);
    auto writer = driver.open(0);
    if (!writer.ok()) {
        return fail("open writer: " + writer.error());
    }
    if (Status s = (*writer)->prepare_key(key, value); !s.ok()) {
        return fail("prepare: " + s.error());
    }
    const auto n = static_cast<size_t>(r.clients);
    Round round(n);
    std::vector<std::unique_ptr<Sink>> sinks;
    std::vector<std::unique_ptr<Session>> watchers;
    for (size_t i = 0; i < n; ++i) {
        sinks.push_back(std::make_unique<Sink>(round, i));
        auto w = driver.open(static_cast<int>(i + 1));
        if (!w.ok()) {
            return fail("open watcher: " + w.error());
        }
        if (Status s = (*w)->watch(key, *sinks.back()); !s.ok()) {
            return fail("watch: " + s.error());
        }
        watchers.push_back(std::move(*w));
    }

    Histogram last;  // per round: the slowest watcher
    const Timeline timeline = Timeline::from_now(o.warmup_s, o.duration_s);
    while (Clock::now() < timeline.end) {
        round.reset();
        const auto start = Clock::now();
        if (Status s = (*writer)->put(key, value); !s.ok()) {
            errors.add(s.error());
            continue;
        }
        if (!round.wait(Clock::now() + kRoundTimeout)) {
            errors.add("a watcher missed an event (no event within 5 s)");
            continue;
        }
        if (!timeline.measured(start)) {
            continue;
        }
        uint64_t slowest = 0;
        for (Clock::time_point t : round.received()) {
            r.latency.record(ns_between(start, t));
            slowest = std::max(slowest, ns_between(start, t));
        }
        last.record(slowest);
        r.ops++;
    }
    watchers.clear();  // before the sinks they report to
    r.more_latency.emplace_back("last_watcher", last);
    r.errors = errors.count();
    r.first_error = errors.first();
    return r;
}

}  // namespace raftlock::bench
