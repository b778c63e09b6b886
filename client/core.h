#pragma once

// The client's network machinery, on its own thread: one io_context, the connection to the current
// endpoint, the table of requests in flight, failover and retries (client/retry_policy.h), request
// deadlines, and timers for the session and watch logic. Internal to the library.
//
// Threads: one lock serializes the core's state instead of one thread (decision 0022). The network
// thread holds it around every handler it runs; another thread holds it through run_here(), which
// is how a blocking call sends its request without waking the network thread. Everything marked
// "inside the core" below runs with the lock held, on either thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "client/client.h"
#include "client/request_table.h"

namespace raftlock::client {

// What the rest of the client wants to know from the network; called on the network thread.
class CoreListener {
public:
    virtual ~CoreListener() = default;
    // Every send of a request, first or retry: the place to fill in ack_seq.
    virtual void before_send(proto::Request& request) = 0;
    // A connection is up and the requests in flight were sent on it.
    virtual void on_connected() = 0;
    virtual void on_watch_event(const proto::WatchEvent& event) = 0;
    virtual void on_session_ended(const proto::SessionEnded& ended) = 0;
    virtual void on_lock_revoked(const proto::LockRevoked& revoked) = 0;
    // Keep a connection up even with no request in flight (an open session, watches).
    virtual bool wants_connection() const = 0;
};

using TimerId = uint64_t;

class Core {
public:
    // Starts the network thread. `listener` must outlive the Core's thread (stop()).
    Core(const ClientOptions& options, CoreListener& listener);
    ~Core();
    Core(const Core&) = delete;
    Core& operator=(const Core&) = delete;

    // Fails everything in flight with kClosed and joins the thread; idempotent.
    void stop();

    // Any thread outside the core: runs `task` now, on this thread, inside the core.
    template <typename Task>
    void run_here(Task&& task) {
        const Inside inside(*this);
        std::forward<Task>(task)();
    }
    // True on the network thread and on a thread inside run_here(): there a blocking call would
    // wait for the core it holds, so the client refuses it.
    bool in_core() const;

    // --- inside the core ---
    // Sends (or queues until connected) and calls pending.done exactly once. A full table
    // completes with kTooManyPending at once.
    void submit(PendingRequest pending);
    void submit_pinned(PendingRequest pending, const Endpoint& endpoint);
    TimerId after(std::chrono::milliseconds delay, std::function<void()> task);
    void cancel_timer(TimerId id);
    // Called when wants_connection() may have turned true.
    void ensure_connection();
    // Moves to the next node, as after a broken connection (what was in flight goes out again
    // there), when the connection of the moment has delivered nothing since `since` (it connected
    // before then): a node that stopped (SIGSTOP, a hung host) keeps its TCP connection open and
    // would otherwise hold every request until its deadline. False when it stays.
    bool fail_over_if_silent_since(SteadyTime since, const std::string& why);
    SteadyTime now() const { return SteadyClock::now(); }
    const ClientOptions& options() const { return options_; }

    class Impl;

private:
    // The core's lock, held by a thread other than the network thread, and the mark that says
    // so to in_core().
    class Inside {
    public:
        explicit Inside(Core& core);
        ~Inside();
        Inside(const Inside&) = delete;
        Inside& operator=(const Inside&) = delete;

    private:
        const Core* outer_;  // the core this thread was inside before, if any
        std::unique_lock<std::mutex> lock_;
    };

    ClientOptions options_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace raftlock::client
