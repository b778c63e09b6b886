#include "server/storage_worker.h"

#include <pthread.h>

namespace raftlock::server {

StorageWorker::StorageWorker(std::function<void(Task)> post)
    : post_(std::move(post)), thread_([this] { run(); }) {}

StorageWorker::~StorageWorker() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
}

void StorageWorker::submit(Task job, Task done) {
    {
        std::lock_guard lock(mutex_);
        jobs_.emplace_back(std::move(job), std::move(done));
    }
    wake_.notify_one();
}

void StorageWorker::run_on_loop(Task job, Task done) {
    job();
    if (done) {
        done();
    }
}

void StorageWorker::run() {
    pthread_setname_np(pthread_self(), "rl-storage");
    for (;;) {
        std::pair<Task, Task> next;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) {
                return;  // stopping and drained
            }
            next = std::move(jobs_.front());
            jobs_.pop_front();
        }
        next.first();
        if (next.second) {
            post_(std::move(next.second));
        }
    }
}

}  // namespace raftlock::server
