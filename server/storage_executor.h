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

    // Runs `job`, then `done`, on the loop thread itself, which does nothing else meanwhile: a
    // server runs both before returning; the simulator holds the node's loop for a seeded disk
    // latency and runs them then. Only when every job submitted before has completed (its `done`
    // has run): the caller keeps that count, the executor cannot see the loop's queue.
    virtual void run_on_loop(Task job, Task done) = 0;
};

}  // namespace raftlock::server
