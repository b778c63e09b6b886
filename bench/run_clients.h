#pragma once

// How every multi-client scenario starts its clients: one thread per client opens what it needs,
// and only when all are ready does the run's timeline start, so no client measures while others
// are still connecting.

#include <cstddef>
#include <functional>

#include "bench/run_clock.h"

namespace raftlock::bench {

// Runs `prepare(i)` on client i's thread for every i < n, then sets `timeline` (warm-up, then
// `duration_s` measured) and runs `run(i)` on each thread; `alongside` runs on the calling thread
// meanwhile (a fault schedule, say). Returns when every client thread has finished.
void run_clients(size_t n,
                 double warmup_s,
                 double duration_s,
                 Timeline& timeline,
                 const std::function<void(size_t)>& prepare,
                 const std::function<void(size_t)>& run,
                 const std::function<void()>& alongside = {});

}  // namespace raftlock::bench
