#include "bench/run_clients.h"

#include <latch>
#include <thread>
#include <vector>

namespace raftlock::bench {

void run_clients(size_t n,
                 double warmup_s,
                 double duration_s,
                 Timeline& timeline,
                 const std::function<void(size_t)>& prepare,
                 const std::function<void(size_t)>& run,
                 const std::function<void()>& alongside) {
    std::latch ready(static_cast<ptrdiff_t>(n));
    std::latch go(1);
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            prepare(i);
            ready.count_down();
            go.wait();  // `timeline` is written before this opens
            run(i);
        });
    }
    ready.wait();
    timeline = Timeline::from_now(warmup_s, duration_s);
    go.count_down();
    if (alongside) {
        alongside();
    }
    for (std::thread& t : threads) {
        t.join();
    }
}

}  // namespace raftlock::bench
