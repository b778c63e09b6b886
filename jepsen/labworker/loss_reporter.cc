#include "jepsen/labworker/loss_reporter.h"

#include <chrono>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::labworker {

namespace {

using namespace std::chrono_literals;

// After the worker is done, queued reports get this long to go out: a stop must stay prompt.
constexpr auto kDrainWait = 1000ms;

}  // namespace

LossReporter::LossReporter(client::Endpoint resource, uint32_t worker)
    : worker_(worker), resource_(std::move(resource)), thread_([this] { run(); }) {
    RL_ASSERT(worker_ >= 1);
}

LossReporter::~LossReporter() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    queued_.notify_all();
    thread_.join();
}

void LossReporter::report(uint64_t grant, std::string_view why) {
    RL_ASSERT(grant >= 1);
    {
        std::lock_guard lock(mutex_);
        if (grant <= last_grant_ || queue_.size() >= kQueueMax) {
            return;
        }
        last_grant_ = grant;
        ++reported_;
        queue_.push_back(Loss{grant, std::string(why)});
    }
    queued_.notify_one();
}

uint64_t LossReporter::reported() const {
    std::lock_guard lock(mutex_);
    return reported_;
}

void LossReporter::run() {
    std::chrono::steady_clock::time_point drain_deadline{};
    for (;;) {
        Loss loss;
        {
            std::unique_lock lock(mutex_);
            queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_ && drain_deadline == std::chrono::steady_clock::time_point{}) {
                drain_deadline = std::chrono::steady_clock::now() + kDrainWait;
            }
            if (queue_.empty() ||
                (stopping_ && std::chrono::steady_clock::now() > drain_deadline)) {
                return;
            }
            loss = std::move(queue_.front());
            queue_.pop_front();
        }
        std::string error;
        const nlohmann::json request = {
            {"op", "lost"}, {"worker", worker_}, {"grant", loss.grant}, {"why", loss.why}};
        if (!resource_.call(request, &error)) {
            fmt::print(stderr, "worker {}: lost report for grant {} not delivered: {}\n", worker_,
                       loss.grant, error);
        }
    }
}

}  // namespace raftlock::labworker
