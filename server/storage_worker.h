#pragma once

// The storage thread (DESIGN.md §5): the server's StorageExecutor. It runs the synced writes of the
// Raft loop one after another, in submission order, so the loop thread keeps serving the network
// while the disk works (the leader sends AppendEntries while its own write is in flight). A job's
// completion runs back on the loop thread through `post`.
//
// A failed write is fatal inside the job itself (storage/fatal.h): there is no error path back.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "server/storage_executor.h"

namespace raftlock::server {

class StorageWorker final : public StorageExecutor {
public:
    // `post` hands a completion to the loop thread (e.g. boost::asio::post on its io_context).
    explicit StorageWorker(std::function<void(Task)> post);
    ~StorageWorker() override;  // finishes the queued jobs, then joins
    StorageWorker(const StorageWorker&) = delete;
    StorageWorker& operator=(const StorageWorker&) = delete;

    // Runs `job` on the storage thread after every job submitted before it, then posts `done`.
    void submit(Task job, Task done) override;
    // Runs both on the calling thread (the loop's) before returning.
    void run_on_loop(Task job, Task done) override;

private:
    void run();

    std::function<void(Task)> post_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::pair<Task, Task>> jobs_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace raftlock::server
