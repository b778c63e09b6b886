#pragma once

// The shape both client-side idle pools share (bench/idle_raftlock.cc, bench/idle_etcd.cc): a few
// threads, each holding one connection, open their share of the sessions, report how many they
// opened, then renew them on a fixed schedule until the pool is destroyed, and close them.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "bench/driver.h"
#include "bench/run_clock.h"

namespace raftlock::bench {

class IdlePool : public IdleSessions {
public:
    size_t open_count() const override { return opened_.load(); }
    std::string first_error() const override { return errors_.first(); }

protected:
    // Runs on each pool thread: `connection` numbers the thread, `sessions` is its share.
    using Loop = std::function<void(size_t connection, size_t sessions)>;

    // Starts up to `connections` threads running `loop`, splitting `count` between them, and
    // returns once each has called opened().
    void start(size_t count, size_t connections, const Loop& loop);
    // A loop's report that its share is open (n of them); start() waits for every loop's.
    void opened(size_t n);
    // Sleeps until `next`; false once stop() was called (the loop then closes its sessions).
    bool wait_until(Clock::time_point next);
    // Ends the loops and joins the threads. The derived class's destructor calls it first: the
    // loops use the derived class's members.
    void stop();

    ErrorLog errors_;

private:
    std::vector<std::thread> threads_;
    std::atomic<size_t> opened_{0};
    std::mutex mutex_;
    std::condition_variable opened_cv_;
    std::condition_variable wake_;
    size_t started_ = 0;           // written before the threads start
    size_t finished_opening_ = 0;  // under mutex_
    bool stop_ = false;            // under mutex_
};

}  // namespace raftlock::bench
