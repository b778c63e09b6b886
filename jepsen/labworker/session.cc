#include "jepsen/labworker/session.h"

#include <thread>

#include "base/assert.h"

namespace raftlock::labworker {

namespace {

using namespace std::chrono_literals;
namespace rc = raftlock::client;

}  // namespace

LabSession::LabSession(const WorkerOptions& options, LossReporter& reporter, Wakeup& wakeup)
    : options_(options), reporter_(reporter), wakeup_(wakeup) {}

LabSession::~LabSession() {
    abandon();
}

rc::ClientOptions LabSession::client_options() {
    rc::ClientOptions o;
    o.endpoints = options_.endpoints;
    o.connect_timeout = 500ms;
    // A call that outlives the session timeout is one whose session may be gone anyway.
    o.request_timeout = options_.ttl;
    // Never 0 (that picks a random seed): runs replay from --seed. Each Client gets its own, so a
    // new session starts at another endpoint than the one that just failed.
    o.seed = options_.seed * 1'000'003 + ++clients_made_;
    return o;
}

rc::ClientResult<rc::SessionId> LabSession::ensure() {
    if (client_ && state_ && !state_->lost.load() && client_->session_id()) {
        return session_id_;
    }
    abandon();
    auto client = std::make_shared<rc::Client>(client_options());
    auto state = std::make_shared<CallbackState>();
    // The network thread calls this: it must not block, so it flags, queues and wakes only.
    client->set_session_callback(
        [state, reporter = &reporter_, wakeup = &wakeup_](rc::SessionLoss loss) {
            if (state->retired.load()) {
                return;
            }
            state->last_loss.store(loss);
            state->lost.store(true);
            if (const uint64_t grant = state->held_grant.load(); grant != 0) {
                reporter->report(grant, rc::to_string(loss));
            }
            wakeup->notify();
        });
    auto opened = client->open_session(options_.ttl);
    if (!opened.ok()) {
        // The Client goes; an open that did reach the cluster leaves a session that expires.
        return opened.error();
    }
    RL_ASSERT(*opened != 0);
    {
        std::lock_guard lock(client_mutex_);
        client_ = std::move(client);
    }
    state_ = std::move(state);
    session_id_ = *opened;
    ++sessions_opened_;
    return session_id_;
}

rc::Client& LabSession::client() {
    RL_ASSERT(client_ != nullptr);
    return *client_;
}

bool LabSession::lost() const {
    return state_ != nullptr && state_->lost.load();
}

void LabSession::hold(uint64_t grant) {
    RL_ASSERT(state_ != nullptr);
    RL_ASSERT(grant != 0);
    state_->held_grant.store(grant);
    // A loss that came before the grant was stored found nothing to report; the reporter drops
    // the second report of a grant when the callback raced this one.
    if (state_->lost.load()) {
        reporter_.report(grant, rc::to_string(state_->last_loss.load()));
    }
}

void LabSession::unhold() {
    if (state_ != nullptr) {
        state_->held_grant.store(0);
    }
}

void LabSession::abandon() {
    if (state_ != nullptr) {
        state_->retired.store(true);  // what the session does from now on is no news to anyone
    }
    std::shared_ptr<rc::Client> client;
    {
        std::lock_guard lock(client_mutex_);
        client = std::move(client_);
    }
    if (client && client->session_id()) {
        (void)client->close_session();  // best effort: an unclosed session expires after its ttl
    }
    client.reset();
    state_.reset();
    session_id_ = 0;
}

void LabSession::interrupt() {
    std::shared_ptr<rc::Client> client;
    {
        std::lock_guard lock(client_mutex_);
        client = client_;
    }
    if (client) {
        std::thread([client] { (void)client->close_session(); }).detach();
    }
}

}  // namespace raftlock::labworker
