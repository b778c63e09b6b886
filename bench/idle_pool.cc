#include "bench/idle_pool.h"

#include <algorithm>

namespace raftlock::bench {

void IdlePool::start(size_t count, size_t connections, const Loop& loop) {
    const size_t per = (count + connections - 1) / connections;
    size_t assigned = 0;
    for (size_t c = 0; c < connections && assigned < count; ++c) {
        const size_t n = std::min(per, count - assigned);
        assigned += n;
        ++started_;
        threads_.emplace_back([loop, c, n] { loop(c, n); });
    }
    std::unique_lock lock(mutex_);
    opened_cv_.wait(lock, [this] { return finished_opening_ == started_; });
}

void IdlePool::opened(size_t n) {
    opened_ += n;
    std::lock_guard lock(mutex_);
    ++finished_opening_;
    opened_cv_.notify_all();
}

bool IdlePool::wait_until(Clock::time_point next) {
    std::unique_lock lock(mutex_);
    return !wake_.wait_until(lock, next, [this] { return stop_; });
}

void IdlePool::stop() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) {
        if (t.joinable()) {
            t.join();
        }
    }
}

}  // namespace raftlock::bench
