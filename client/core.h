#pragma once

// The client's network machinery, on its own thread: one io_context, the connection to the current
// endpoint, the table of requests in flight, failover and retries (client/retry_policy.h), request
// deadlines, and timers for the session and watch logic. Internal to the library.
//
// Threads: everything except post(), on_network_thread() and the constructor/destructor runs on
// the network thread only.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

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

    // Any thread.
    void post(std::function<void()> task);
    bool on_network_thread() const;

    // --- network thread ---
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
    ClientOptions options_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace raftlock::client
