#pragma once

// Where a replica's store writes run (DESIGN.md §5): off the Raft loop, one after another in
// submission order, each followed by its completion back on the loop. A server runs them on a
// thread (storage_worker.h); the simulator on a seeded queue that completes them in simulated
// time and loses the unsynced ones at a crash (tests/sim/replica/).

#include <functional>

namespace raftlock::server {

class StorageExecutor {
public:
    using Task = std::function<void()>;
    virtual ~StorageExecutor() = default;

    // Runs `job` after every job submitted before it, then `done` (when set) on the loop thread.
    virtual void submit(Task job, Task done) = 0;
};

}  // namespace raftlock::server
