#pragma once

// One condition variable for everything the worker thread may wait for: the end of its work sleep,
// a watch on the ZooKeeper recipe's predecessor, a session loss, and a stop request (SIGTERM).
// Sharing it keeps every wait interruptible by a stop without polling.
//
// Threads: notify() and request_stop() from any thread (the client's network thread included:
// they only take a mutex for a moment); the waits from the worker thread.

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace raftlock::labworker {

using SteadyClock = std::chrono::steady_clock;
using SteadyTime = SteadyClock::time_point;

class Wakeup {
public:
    // Something a waiter's predicate looks at has changed.
    // The change itself (an atomic flag) is made before; passing through the mutex orders it
    // before a waiter's next look at its predicate, so no wakeup is lost.
    void notify() {
        { std::lock_guard lock(mutex_); }
        changed_.notify_all();
    }

    // The worker should release what it holds and end.
    void request_stop() {
        {
            std::lock_guard lock(mutex_);
            stop_requested_ = true;
        }
        changed_.notify_all();
    }
    bool stop_requested() const {
        std::lock_guard lock(mutex_);
        return stop_requested_;
    }

    // Waits until `ready()` holds, a stop is requested or `deadline` passes. `ready` runs under
    // the internal mutex, so it must only read flags (atomics), never call out. Returns ready().
    template <typename Ready>
    bool wait_until(SteadyTime deadline, Ready ready) {
        std::unique_lock lock(mutex_);
        changed_.wait_until(lock, deadline, [&] { return stop_requested_ || ready(); });
        return ready();
    }

    // Sleeps `duration`; false when a stop request cut it short.
    bool sleep_for(std::chrono::milliseconds duration) {
        const SteadyTime deadline = SteadyClock::now() + duration;
        std::unique_lock lock(mutex_);
        return !changed_.wait_until(lock, deadline, [&] { return stop_requested_; });
    }

    // The worker has finished its loop (released what it held); the stop watcher may stop waiting.
    void mark_finished() {
        {
            std::lock_guard lock(mutex_);
            finished_ = true;
        }
        changed_.notify_all();
    }
    bool wait_finished_for(std::chrono::milliseconds duration) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, duration, [&] { return finished_; });
    }

private:
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    bool stop_requested_ = false;
    bool finished_ = false;
};

}  // namespace raftlock::labworker
