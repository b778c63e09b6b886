#pragma once

// Client's implementation: the blocking call() through the core, and the listener that
// routes network events to the session keeper and the watcher. Internal to the library; the
// public methods live in client.cc (sessions, cluster), client_locks.cc and client_nodes.cc.

#include <atomic>
#include <functional>
#include <optional>

#include "client/client.h"
#include "client/core.h"
#include "client/session_keeper.h"
#include "client/watcher.h"

namespace raftlock::client {

class Client::Impl final : public CoreListener {
public:
    explicit Impl(ClientOptions options);
    ~Impl() override;

    struct CallSpec {
        RequestClass request_class = RequestClass::kRead;
        std::optional<std::chrono::milliseconds> timeout;  // default options.request_timeout
        std::optional<Endpoint> pinned;                    // only for kPinned
        // Runs on the network thread with an OK answer before the caller wakes up; an error it
        // returns replaces the answer (used to register watches atomically with their read).
        std::function<std::optional<Error>(const proto::Response&)> on_ok;
    };

    // Sends `request` and waits for the answer, any code, or a client-side error.
    ClientResult<proto::Response> call(proto::Request request, CallSpec spec);
    // Inside the core (client/core.h): the same without waiting.
    void start_call(proto::Request request, CallSpec spec, Completion done);
    std::optional<Error> check_thread() const;

    const ClientOptions& options() const { return options_; }
    SessionKeeper& keeper() { return keeper_; }
    Watcher& watcher() { return watcher_; }
    Core& core() { return core_; }
    uint64_t connection_count() const { return connections_.load(std::memory_order_relaxed); }

    // CoreListener (inside the core).
    void before_send(proto::Request& request) override { keeper_.before_send(request); }
    void on_connected() override;
    void on_watch_event(const proto::WatchEvent& event) override { watcher_.on_event(event); }
    void on_session_ended(const proto::SessionEnded& ended) override;
    void on_lock_revoked(const proto::LockRevoked& revoked) override;
    bool wants_connection() const override;
    // Inside the core only.
    void set_lock_revoked_callback(LockRevokedCallback callback) {
        lock_revoked_ = std::move(callback);
    }

private:
    ClientOptions options_;
    // Connections made so far; written on the network thread before it handles anything that
    // arrives on the new connection, so a callback there sees the connection its event came on.
    std::atomic<uint64_t> connections_{0};
    SessionKeeper keeper_;
    Watcher watcher_;
    LockRevokedCallback lock_revoked_;  // inside the core
    // Last: destroyed first, so the network thread is joined before the parts it calls go.
    Core core_;
};

// The answer's code as an Error (message from the server, or `what` when it sent none); empty for
// OK. Client-side errors pass through.
std::optional<Error> answer_error(const ClientResult<proto::Response>& answer,
                                  std::string_view what);

}  // namespace raftlock::client
