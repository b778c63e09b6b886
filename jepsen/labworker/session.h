#pragma once

// The worker's raftlock session: a Client with one open session, replaced by a new Client with a
// new session whenever the old one is lost or its state is unknown (docs/lock-lab.md: the worker
// "makes sure it holds nothing, then continues").
//
// The session callback is the library telling the holder it lost the lock (safe-until passed, or
// the session ended). It runs on the client's network thread, so it only sets a flag, queues a
// `lost` report for the grant held at that moment, and wakes the worker thread.
//
// Threads: everything but interrupt() belongs to the worker thread.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "client/client.h"
#include "jepsen/labworker/loss_reporter.h"
#include "jepsen/labworker/wakeup.h"
#include "jepsen/labworker/worker_options.h"

namespace raftlock::labworker {

class LabSession {
public:
    LabSession(const WorkerOptions& options, LossReporter& reporter, Wakeup& wakeup);
    // Abandons the session (best effort close).
    ~LabSession();
    LabSession(const LabSession&) = delete;
    LabSession& operator=(const LabSession&) = delete;

    // Makes sure there is an open session that the library has not reported lost: the current
    // one, or else a new one on a new Client (the old session abandoned first).
    client::ClientResult<client::SessionId> ensure();
    // Precondition: ensure() succeeded since the last abandon().
    client::Client& client();
    client::SessionId id() const { return session_id_; }

    // True once the session callback fired for the current session: safe-until passed, or the
    // session ended. The worker then abandons the session after its current step.
    bool lost() const;

    // Closes the session (its locks are released, its ephemeral nodes deleted), waiting at most
    // the request timeout, then drops the Client. A session that cannot be closed expires.
    void abandon();

    // The grant the worker holds now under the current session: a loss is reported for it, at
    // once if the session was lost already (during the acquire).
    // Precondition of hold(): ensure() succeeded since the last abandon().
    void hold(uint64_t grant);
    void unhold();

    // From another thread (the stop watcher): starts closing the current session, so a worker
    // blocked in an acquire or holding the lock lets go of it. Returns at once; the close runs on
    // a detached thread that keeps the Client alive until it is answered.
    void interrupt();

    uint64_t sessions_opened() const { return sessions_opened_; }

private:
    // What the session callback touches: one per Client, shared with its callback (which may run
    // until the Client is destroyed, even by interrupt()'s thread after this object is gone), so
    // the callback never reaches into this object. `retired` silences it once the worker moved on.
    struct CallbackState {
        std::atomic<bool> lost{false};
        std::atomic<bool> retired{false};
        std::atomic<uint64_t> held_grant{0};  // 0: none
        std::atomic<client::SessionLoss> last_loss{client::SessionLoss::kSafeUntilPassed};
    };

    client::ClientOptions client_options();

    const WorkerOptions& options_;
    LossReporter& reporter_;
    Wakeup& wakeup_;
    std::shared_ptr<CallbackState> state_;
    client::SessionId session_id_ = 0;
    uint64_t clients_made_ = 0;
    uint64_t sessions_opened_ = 0;
    mutable std::mutex client_mutex_;  // guards client_ against interrupt()'s reading of it
    std::shared_ptr<client::Client> client_;
};

}  // namespace raftlock::labworker
