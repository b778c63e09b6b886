#pragma once

// Tells the resource server that the client library said a grant is lost: {"op":"lost",...}
// (docs/lock-lab.md). The news comes from the session callback, which runs on the client's network
// thread and must not block, so report() only queues; a thread of its own, with its own resource
// connection, sends. The worker thread may be inside a blocking resource call at that moment, so
// the reporter cannot share its connection.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "jepsen/labworker/resource_client.h"

namespace raftlock::labworker {

class LossReporter {
public:
    // Grants rise one by one and each is reported at most once, so this bound is never reached by
    // a working worker; it keeps a broken one from growing without limit.
    static constexpr size_t kQueueMax = 1024;

    LossReporter(client::Endpoint resource, uint32_t worker);
    // Sends what is queued (for at most about a second), then stops the thread.
    ~LossReporter();
    LossReporter(const LossReporter&) = delete;
    LossReporter& operator=(const LossReporter&) = delete;

    // Queues a `lost` record for `grant` (>= 1) unless that grant (or a later one) was reported
    // already. Never blocks beyond a short mutex; callable from any thread.
    void report(uint64_t grant, std::string_view why);

    // How many `lost` records were queued so far (for the worker's summary line).
    uint64_t reported() const;

private:
    struct Loss {
        uint64_t grant = 0;
        std::string why;
    };

    void run();

    const uint32_t worker_;
    ResourceClient resource_;
    mutable std::mutex mutex_;
    std::condition_variable queued_;
    std::deque<Loss> queue_;
    uint64_t last_grant_ = 0;  // the latest grant queued
    uint64_t reported_ = 0;
    bool stopping_ = false;
    std::thread thread_;  // last: started once everything above exists
};

}  // namespace raftlock::labworker
