#include "client/core.h"

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include "base/assert.h"
#include "client/connection.h"
#include "client/leader_routing.h"

namespace raftlock::client {

namespace asio = boost::asio;

namespace {

// The core a thread is inside through run_here(), if any (core.h).
thread_local const Core* inside_this_thread = nullptr;

uint64_t pick_seed(uint64_t seed) {
    if (seed != 0) {
        return seed;
    }
    std::random_device device;
    return (uint64_t{device()} << 32) | device();
}

}  // namespace

class Core::Impl {
    // `handler` as one that runs inside the core (holding its lock), for the network thread.
    template <typename Handler>
    auto locked(Handler handler) {
        return [this, handler = std::move(handler)](auto&&... args) mutable {
            const std::lock_guard lock(mutex_);
            handler(std::forward<decltype(args)>(args)...);
        };
    }

public:
    Impl(const ClientOptions& options, CoreListener& listener)
        : options_(options),
          listener_(listener),
          table_(options.pending_requests_max),
          rng_(pick_seed(options.seed)),
          routing_(options.endpoints.size()),
          work_(asio::make_work_guard(io_)),
          deadline_timer_(io_) {
        RL_ASSERT(!options.endpoints.empty());
        cursor_ = rng_() % options.endpoints.size();
        thread_ = std::thread([this] {
            thread_id_ = std::this_thread::get_id();
            io_.run();
        });
    }

    void stop() {
        if (!thread_.joinable()) {
            return;
        }
        asio::post(io_, locked([this] { shutdown_on_thread(); }));
        thread_.join();
    }

    bool on_network_thread() const { return std::this_thread::get_id() == thread_id_; }
    std::mutex& mutex() { return mutex_; }

    void submit(PendingRequest pending) {
        if (stopped_) {
            pending.done(Error{ErrorCode::kClosed, "the client is shutting down"});
            return;
        }
        if (table_.full()) {
            pending.done(Error{ErrorCode::kTooManyPending,
                               fmt::format("{} requests are already in flight on this client",
                                           options_.pending_requests_max)});
            return;
        }
        pending.failed_rounds_at_submit = refused_rounds_;
        const SteadyTime deadline = pending.deadline;
        const uint64_t id = table_.add(std::move(pending));
        arm_deadline(deadline);
        if (connected_) {
            send(*table_.find(id));
        } else {
            ensure_connection();
        }
    }

    void submit_pinned(PendingRequest pending, const Endpoint& endpoint);

    TimerId after(std::chrono::milliseconds delay, std::function<void()> task) {
        const TimerId id = next_timer_++;
        auto& slot = timers_[id];
        slot.timer = std::make_unique<asio::steady_timer>(io_, delay);
        slot.task = std::move(task);
        slot.timer->async_wait(locked([this, id](const boost::system::error_code& ec) {
            auto it = timers_.find(id);
            if (ec || it == timers_.end()) {
                return;
            }
            auto task = std::move(it->second.task);
            timers_.erase(it);
            task();
        }));
        return id;
    }

    void cancel_timer(TimerId id) { timers_.erase(id); }

    void ensure_connection() {
        if (stopped_ || conn_ || reconnect_timer_ != 0 || !wants_connection()) {
            return;
        }
        connect_next();
    }

    bool fail_over_if_silent_since(SteadyTime since, const std::string& why) {
        if (!connected_ || last_heard_ >= since) {
            return false;  // not this connection's silence, or the node spoke since
        }
        RL_ASSERT(conn_ != nullptr);
        failover(fmt::format(
            "{} sent nothing for {} ms: {}", to_string(conn_->endpoint()),
            std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - last_heard_)
                .count(),
            why));
        return true;
    }

private:
    struct TimerSlot {
        std::unique_ptr<asio::steady_timer> timer;
        std::function<void()> task;
    };

    bool wants_connection() const {
        // Pinned requests have connections of their own.
        return table_.size() > pinned_.size() || listener_.wants_connection();
    }

    void connect_next();
    void on_connected(uint64_t generation);
    void on_message(uint64_t generation, proto::ServerMessage&& message);
    void on_response(proto::Response&& response);
    void on_connection_end(bool was_connected, const std::string& reason);
    void on_login_refused(const std::string& reason);
    void failover(const std::string& reason);
    void drop_connection();
    void follow_leader(uint64_t node_id, uint64_t leader);
    void end_round();
    void fail_unreachable();
    void healthy();
    void retry_here(uint64_t request_id);
    void send(PendingRequest& pending);
    void arm_deadline(SteadyTime deadline);
    void on_deadline();
    Error expiry_error(const PendingRequest& pending) const;
    std::string unreachable_message() const;
    void finish_pinned(uint64_t request_id, ClientResult<proto::Response> result);
    void shutdown_on_thread();

    const ClientOptions& options_;
    CoreListener& listener_;
    RequestTable table_;
    std::mt19937_64 rng_;
    LeaderRouting routing_;
    // Held by whichever thread is inside the core (core.h): the network thread around each of
    // its handlers, or a caller in run_here(). Declared before everything it guards.
    std::mutex mutex_;
    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    std::thread thread_;
    std::atomic<std::thread::id> thread_id_{};
    bool stopped_ = false;

    // The connection of the moment and the failover state.
    std::shared_ptr<Connection> conn_;
    uint64_t generation_ = 0;  // tells a current connection's callbacks from an old one's
    bool connected_ = false;
    SteadyTime last_heard_{};  // when conn_ connected or last delivered a message
    size_t cursor_ = 0;        // the endpoint to try next
    size_t current_ = 0;       // the endpoint of conn_
    size_t attempts_in_round_ = 0;
    size_t refusals_in_round_ = 0;
    uint32_t rounds_since_healthy_ = 0;
    uint64_t refused_rounds_ = 0;  // rounds in which no endpoint accepted a connection
    TimerId reconnect_timer_ = 0;
    std::string last_error_ = "no connection attempted yet";

    std::map<uint64_t, std::shared_ptr<Connection>> pinned_;  // by request id
    std::map<TimerId, TimerSlot> timers_;
    TimerId next_timer_ = 1;
    asio::steady_timer deadline_timer_;
    std::optional<SteadyTime> deadline_armed_;
};

void Core::Impl::connect_next() {
    current_ = cursor_;
    const Endpoint endpoint = options_.endpoints[cursor_];
    cursor_ = (cursor_ + 1) % options_.endpoints.size();
    const uint64_t generation = ++generation_;
    ConnectionHandlers handlers;
    handlers.on_connected = [this, generation] { on_connected(generation); };
    handlers.on_message = [this, generation](proto::ServerMessage&& message) {
        on_message(generation, std::move(message));
    };
    handlers.on_closed = [this, generation](bool was_connected, const std::string& reason) {
        if (generation == generation_) {
            // Only a connection that failed or broke makes the endpoint a poor move target; a
            // node that answered UNAVAILABLE during an election may lead a moment later.
            routing_.on_connection_failed(current_, SteadyClock::now());
            on_connection_end(was_connected, reason);
        }
    };
    handlers.on_login_refused = [this, generation](const std::string& reason) {
        if (generation == generation_) {
            on_login_refused(reason);
        }
    };
    ConnectionOptions connection_options;
    connection_options.connect_timeout = options_.connect_timeout;
    connection_options.frame_bytes_max = options_.frame_bytes_max;
    connection_options.tls = options_.tls;
    connection_options.user = options_.user;
    connection_options.password = options_.password;
    connection_options.serial = &mutex_;
    conn_ = start_connection(io_, endpoint, connection_options, std::move(handlers));
}

void Core::Impl::on_connected(uint64_t generation) {
    if (generation != generation_) {
        return;
    }
    connected_ = true;
    last_heard_ = SteadyClock::now();
    // Ascending ids: a session's writes go out in seq order.
    for (uint64_t id : table_.unsent_ids()) {
        send(*table_.find(id));
        if (!connected_) {
            return;  // the send queue overflowed and closed the connection
        }
    }
    listener_.on_connected();
}

void Core::Impl::on_message(uint64_t generation, proto::ServerMessage&& message) {
    if (generation != generation_) {
        return;
    }
    last_heard_ = SteadyClock::now();
    switch (message.body_case()) {
        case proto::ServerMessage::kResponse:
            on_response(std::move(*message.mutable_response()));
            return;
        case proto::ServerMessage::kWatchEvent:
            listener_.on_watch_event(message.watch_event());
            return;
        case proto::ServerMessage::kSessionEnded:
            listener_.on_session_ended(message.session_ended());
            return;
        case proto::ServerMessage::kLockRevoked:
            listener_.on_lock_revoked(message.lock_revoked());
            return;
        case proto::ServerMessage::BODY_NOT_SET:
            return;  // a newer server's push this client does not know
    }
}

void Core::Impl::on_response(proto::Response&& response) {
    const uint64_t id = response.request_id();
    PendingRequest* pending = table_.find(id);
    if (pending == nullptr || !pending->on_wire) {
        return;  // the late answer of a request we gave up on
    }
    const ErrorCode code = error_code_from_wire(response.code());
    const RetryAction action = client::on_response(code, pending->request_class);
    if (action == RetryAction::kDeliver) {
        healthy();
        auto taken = table_.take(id);
        const uint64_t node_id = response.node_id();
        const uint64_t leader = response.leader_hint();
        taken->done(std::move(response));
        follow_leader(node_id, leader);
        return;
    }
    pending->last_error = Error{code, response.message()};
    pending->on_wire = false;
    if (action == RetryAction::kRetryHere) {
        healthy();  // the node is alive and answering, only busy
        retry_here(id);
        return;
    }
    RL_ASSERT(conn_ != nullptr);
    failover(fmt::format("{} answered {}: {}", to_string(conn_->endpoint()), to_string(code),
                         response.message()));
}

void Core::Impl::retry_here(uint64_t request_id) {
    PendingRequest* pending = table_.find(request_id);
    RL_ASSERT(pending != nullptr);
    const auto delay = backoff(pending->retries_here++, rng_());
    after(delay, [this, request_id] {
        PendingRequest* again = table_.find(request_id);
        // Gone (deadline) or already re-sent on a new connection: nothing to do.
        if (again != nullptr && !again->on_wire && connected_) {
            send(*again);
        }
    });
}

void Core::Impl::failover(const std::string& reason) {
    conn_->close();
    on_connection_end(true, reason);
}

// After a delivered answer: move to the leader's endpoint if the routing says so. The move is a
// planned failover: requests on the wire go out again on the new connection, writes with their
// seq (exactly once), and the listener registers watches and keepalives there as after any
// reconnect. It counts as no failed attempt.
void Core::Impl::follow_leader(uint64_t node_id, uint64_t leader) {
    if (!options_.prefer_leader || !connected_) {
        return;  // the answer's callback may have closed the client, or a failover began
    }
    const auto target = routing_.on_response(current_, node_id, leader, SteadyClock::now());
    if (!target) {
        return;
    }
    RL_ASSERT(*target != current_);
    RL_ASSERT(conn_ != nullptr);
    conn_->close();
    drop_connection();
    cursor_ = *target;
    ensure_connection();
}

// Forgets the connection of the moment: its callbacks are ignored from now on and every request
// it carried is to be sent again on the next one.
void Core::Impl::drop_connection() {
    conn_.reset();
    connected_ = false;
    generation_++;
    table_.mark_all_off_wire();
}

void Core::Impl::on_connection_end(bool was_connected, const std::string& reason) {
    drop_connection();
    last_error_ = reason;
    attempts_in_round_++;
    if (!was_connected) {
        refusals_in_round_++;
    }
    if (attempts_in_round_ < options_.endpoints.size()) {
        ensure_connection();
        return;
    }
    // Every endpoint failed once: pause before the next round so a cluster that is down (or has
    // no leader) is not hammered. The timer is set first: end_round() completes requests, and
    // their callbacks may submit new ones, which must wait for it too.
    const auto delay = backoff(rounds_since_healthy_++, rng_());
    reconnect_timer_ = after(delay, [this] {
        reconnect_timer_ = 0;
        ensure_connection();
    });
    end_round();
}

// Users are replicated: a login one node refuses, every node refuses. The calls waiting for a
// connection end now, with the node's reason, instead of trying every node until the deadline.
void Core::Impl::on_login_refused(const std::string& reason) {
    drop_connection();
    last_error_ = reason;
    healthy();  // the nodes are up; a later call starts a fresh round
    for (uint64_t id : table_.unsent_ids()) {
        std::optional<PendingRequest> taken = table_.take(id);
        if (!taken) {
            continue;
        }
        // A write sent on an earlier connection may still apply: its outcome is unknown.
        taken->done(taken->sends > 0 && taken->request_class == RequestClass::kSessionWrite
                        ? Error{ErrorCode::kTimeout,
                                fmt::format("the write may or may not have been applied, and "
                                            "then {}",
                                            reason)}
                        : Error{ErrorCode::kPermissionDenied, reason});
    }
}

void Core::Impl::end_round() {
    const bool all_refused = refusals_in_round_ == attempts_in_round_;
    attempts_in_round_ = 0;
    refusals_in_round_ = 0;
    if (all_refused) {
        refused_rounds_++;
        fail_unreachable();
    }
}

void Core::Impl::fail_unreachable() {
    for (uint64_t id : table_.unsent_ids()) {
        const PendingRequest* pending = table_.find(id);
        if (pending != nullptr && pending->sends == 0 &&
            refused_rounds_ - pending->failed_rounds_at_submit >= options_.connect_rounds_max) {
            auto taken = table_.take(id);
            taken->done(Error{ErrorCode::kConnectFailed, unreachable_message()});
        }
    }
}

void Core::Impl::healthy() {
    attempts_in_round_ = 0;
    refusals_in_round_ = 0;
    rounds_since_healthy_ = 0;
}

void Core::Impl::send(PendingRequest& pending) {
    RL_ASSERT(connected_);
    RL_ASSERT(!pending.on_wire);
    listener_.before_send(pending.request);
    pending.on_wire = true;
    pending.sends++;
    if (pending.first_sent == SteadyTime{}) {
        pending.first_sent = SteadyClock::now();
    }
    conn_->send(pending.request);
}

void Core::Impl::arm_deadline(SteadyTime deadline) {
    if (deadline_armed_ && *deadline_armed_ <= deadline) {
        return;
    }
    deadline_armed_ = deadline;
    deadline_timer_.expires_at(deadline);
    deadline_timer_.async_wait(locked([this](const boost::system::error_code& ec) {
        if (!ec) {
            on_deadline();
        }
    }));
}

void Core::Impl::on_deadline() {
    deadline_armed_.reset();
    for (PendingRequest& pending : table_.take_expired(SteadyClock::now())) {
        const uint64_t id = pending.request.request_id();
        if (auto it = pinned_.find(id); it != pinned_.end()) {
            it->second->close();
            pinned_.erase(it);
        }
        pending.done(expiry_error(pending));
    }
    if (auto next = table_.earliest_deadline()) {
        arm_deadline(*next);
    }
}

Error Core::Impl::expiry_error(const PendingRequest& pending) const {
    if (pending.sends == 0 && pending.request_class != RequestClass::kPinned) {
        return Error{ErrorCode::kConnectFailed, unreachable_message()};
    }
    const std::string last = pending.last_error ? fmt::format("; the last answer was {}: {}",
                                                              to_string(pending.last_error->code),
                                                              pending.last_error->message)
                                                : std::string();
    // A write that reached a node may be applied later: its caller must hear "unknown", not the
    // last retryable answer.
    if (pending.request_class == RequestClass::kSessionWrite) {
        return Error{ErrorCode::kTimeout,
                     fmt::format("no answer before the deadline{}; the write may or may not have "
                                 "been applied",
                                 last)};
    }
    if (pending.last_error) {
        return Error{pending.last_error->code, fmt::format("gave up at the deadline{}", last)};
    }
    if (!connected_) {
        // Why the connections ended says more than the deadline: a TLS port, say.
        return Error{ErrorCode::kTimeout,
                     fmt::format("no answer before the deadline, and no connection at it (the "
                                 "last ended: {})",
                                 last_error_)};
    }
    return Error{ErrorCode::kTimeout, "no answer before the deadline"};
}

std::string Core::Impl::unreachable_message() const {
    return fmt::format(
        "no raftlock node reachable at {}: is the cluster up? try `scripts/cluster.sh up` "
        "(last error: {})",
        to_string(options_.endpoints), last_error_);
}

void Core::Impl::submit_pinned(PendingRequest pending, const Endpoint& endpoint) {
    pending.request_class = RequestClass::kPinned;
    if (stopped_ || table_.full()) {
        pending.done(Error{stopped_ ? ErrorCode::kClosed : ErrorCode::kTooManyPending,
                           "the client cannot take more requests now"});
        return;
    }
    const SteadyTime deadline = pending.deadline;
    const uint64_t id = table_.add(std::move(pending));
    arm_deadline(deadline);
    ConnectionHandlers handlers;
    handlers.on_connected = [this, id] {
        PendingRequest* p = table_.find(id);
        auto it = pinned_.find(id);
        if (p != nullptr && it != pinned_.end()) {
            p->sends++;
            p->on_wire = true;
            it->second->send(p->request);
        }
    };
    handlers.on_message = [this, id](proto::ServerMessage&& message) {
        if (message.has_response() && message.response().request_id() == id) {
            finish_pinned(id, std::move(*message.mutable_response()));
        }
    };
    // The reason names the endpoint and the cause ("connect to 127.0.0.1:7102: Connection
    // refused").
    handlers.on_closed = [this, id](bool, const std::string& reason) {
        finish_pinned(id, Error{ErrorCode::kConnectFailed, reason});
    };
    handlers.on_login_refused = [this, id](const std::string& reason) {
        finish_pinned(id, Error{ErrorCode::kPermissionDenied, reason});
    };
    ConnectionOptions connection_options;
    connection_options.connect_timeout = options_.connect_timeout;
    connection_options.frame_bytes_max = options_.frame_bytes_max;
    connection_options.tls = options_.tls;
    connection_options.user = options_.user;
    connection_options.password = options_.password;
    connection_options.serial = &mutex_;
    pinned_[id] = start_connection(io_, endpoint, connection_options, std::move(handlers));
}

void Core::Impl::finish_pinned(uint64_t request_id, ClientResult<proto::Response> result) {
    if (auto it = pinned_.find(request_id); it != pinned_.end()) {
        it->second->close();
        pinned_.erase(it);
    }
    if (auto taken = table_.take(request_id)) {
        taken->done(std::move(result));
    }
}

void Core::Impl::shutdown_on_thread() {
    stopped_ = true;
    if (conn_) {
        conn_->close();
        conn_.reset();
    }
    for (auto& [id, connection] : pinned_) {
        connection->close();
    }
    pinned_.clear();
    timers_.clear();
    deadline_timer_.cancel();
    for (PendingRequest& pending : table_.take_all()) {
        pending.done(Error{ErrorCode::kClosed, "the client is shutting down"});
    }
    work_.reset();
    io_.stop();
}

Core::Core(const ClientOptions& options, CoreListener& listener)
    : options_(options), impl_(std::make_unique<Impl>(options_, listener)) {}

Core::~Core() {
    stop();
}

void Core::stop() {
    impl_->stop();
}
bool Core::in_core() const {
    return inside_this_thread == this || impl_->on_network_thread();
}

Core::Inside::Inside(Core& core) : outer_(inside_this_thread) {
    RL_ASSERT_MSG(!core.in_core(), "a thread inside the client's core entered it again");
    lock_ = std::unique_lock(core.impl_->mutex());
    inside_this_thread = &core;
}

Core::Inside::~Inside() {
    inside_this_thread = outer_;
}
void Core::submit(PendingRequest pending) {
    impl_->submit(std::move(pending));
}
void Core::submit_pinned(PendingRequest pending, const Endpoint& endpoint) {
    impl_->submit_pinned(std::move(pending), endpoint);
}
TimerId Core::after(std::chrono::milliseconds delay, std::function<void()> task) {
    return impl_->after(delay, std::move(task));
}
void Core::cancel_timer(TimerId id) {
    impl_->cancel_timer(id);
}
void Core::ensure_connection() {
    impl_->ensure_connection();
}

bool Core::fail_over_if_silent_since(SteadyTime since, const std::string& why) {
    return impl_->fail_over_if_silent_since(since, why);
}

}  // namespace raftlock::client
