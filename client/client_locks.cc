// Client: the lock API and LockGuard.

#include <fmt/format.h>

#include "client/client.h"
#include "client/client_impl.h"
#include "client/convert.h"

namespace raftlock::client {

namespace {

proto::Request acquire_request(const std::string& name, const AcquireOptions& options) {
    proto::Request request;
    proto::Acquire* acquire = request.mutable_acquire();
    acquire->set_name(name);
    acquire->set_owner_tag(options.owner_tag);
    if (options.permits > 0) {
        acquire->set_mode(proto::SEMAPHORE);
        acquire->set_permits(options.permits);
    } else {
        acquire->set_mode(options.shared ? proto::SHARED : proto::EXCLUSIVE);
    }
    acquire->set_wait_ms(options.wait.count());
    acquire->set_lock_delay_ms(options.lock_delay.count());
    return request;
}

// The caller's deadline passed with the acquire unanswered: it may sit in the queue or even be
// granted. Cancel it, so that either we learn the grant (and give it back) or the session certainly
// does not hold the lock. The cancel's ack_seq covers the abandoned acquire (client/seq_tracker.h),
// so a copy of it still on its way is answered RESULT_DISCARDED, never applied after the cancel.
Error cancel_after_timeout(Client& client,
                           Client::Impl& impl,
                           const std::string& name,
                           const AcquireOptions& options,
                           std::chrono::milliseconds timeout) {
    proto::Request request;
    request.mutable_cancel()->set_name(name);
    request.mutable_cancel()->set_owner_tag(options.owner_tag);
    auto cancelled = impl.call(std::move(request), {RequestClass::kSessionWrite});
    if (auto error = answer_error(cancelled, "cancel")) {
        return Error{ErrorCode::kTimeout,
                     fmt::format("acquire of '{}' timed out after {} ms and its cancel failed "
                                 "({}): the session may hold the lock; close the session to be "
                                 "sure",
                                 name, timeout.count(), to_string(*error))};
    }
    std::string raced;
    if (cancelled->lock().outcome() == proto::LOCK_GRANTED) {
        const Lease lease{name, options.owner_tag, cancelled->lock().token(),
                          client.session_id().value_or(0), 1};
        auto released = client.release(lease);
        raced = released.ok() ? "; a grant that raced the cancel was released"
                              : fmt::format(
                                    "; a grant raced the cancel and its release failed "
                                    "({}): close the session",
                                    to_string(released.error()));
    }
    return Error{ErrorCode::kTimeout,
                 fmt::format("acquire of '{}' not granted within {} ms; the wait was cancelled{}",
                             name, timeout.count(), raced)};
}

}  // namespace

ClientResult<Lease> Client::acquire(const std::string& name, const AcquireOptions& options) {
    if (name.empty() || options.wait.count() < 0 || options.lock_delay.count() < 0) {
        return Error{ErrorCode::kInvalidArgument,
                     "acquire needs a lock name, and wait and lock delay must not be negative"};
    }
    const auto timeout = options.timeout.value_or(options.wait + impl_->options().request_timeout);
    auto answer =
        impl_->call(acquire_request(name, options), {RequestClass::kSessionWrite, timeout});
    if (!answer.ok() && answer.error().code == ErrorCode::kTimeout) {
        return cancel_after_timeout(*this, *impl_, name, options, timeout);
    }
    if (auto error = answer_error(answer, fmt::format("acquire '{}'", name))) {
        return *error;
    }
    const proto::LockResult& result = answer->lock();
    if (result.outcome() != proto::LOCK_GRANTED) {
        return Error{ErrorCode::kBadRequest,
                     fmt::format("acquire '{}': the server answered OK without a grant", name)};
    }
    return Lease{name, options.owner_tag, result.token(), session_id().value_or(0),
                 std::max<uint32_t>(result.hold_count(), 1)};
}

ClientResult<Lease> Client::try_acquire(const std::string& name, AcquireOptions options) {
    options.wait = std::chrono::milliseconds(0);
    return acquire(name, options);
}

ClientResult<uint32_t> Client::release(const Lease& lease) {
    const auto current = session_id();
    if (lease.session != 0 && current && *current != lease.session) {
        return Error{ErrorCode::kNotLockHolder,
                     fmt::format("the lease of '{}' belongs to session {}, this client's session "
                                 "is {}",
                                 lease.name, lease.session, *current)};
    }
    proto::Request request;
    proto::Release* release = request.mutable_release();
    release->set_name(lease.name);
    release->set_owner_tag(lease.owner_tag);
    release->set_token(lease.token);
    auto answer = impl_->call(std::move(request), {RequestClass::kSessionWrite});
    if (auto error = answer_error(answer, fmt::format("release '{}'", lease.name))) {
        return *error;
    }
    return answer->lock().hold_count();
}

ClientResult<Done> Client::force_release(const std::string& name,
                                         SessionId session,
                                         uint64_t token) {
    proto::Request request;
    proto::ForceRelease* body = request.mutable_force_release();
    body->set_name(name);
    body->set_session(session);
    body->set_token(token);
    // Session-less, like a user change: sent again after a lost reply, as a read is.
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(
            answer, fmt::format("force release of '{}' from session {}", name, session))) {
        return *error;
    }
    return Done{};
}

ClientResult<LockInfo> Client::describe(const std::string& name) {
    proto::Request request;
    request.mutable_describe_lock()->set_name(name);
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, fmt::format("describe '{}'", name))) {
        return *error;
    }
    return from_proto(answer->lock_info());
}

ClientResult<std::vector<std::string>> Client::list_locks(const std::string& prefix,
                                                          uint32_t limit) {
    proto::Request request;
    request.mutable_list_locks()->set_prefix(prefix);
    request.mutable_list_locks()->set_limit(limit);
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, "list locks")) {
        return *error;
    }
    const auto& names = answer->list_locks().names();
    return std::vector<std::string>(names.begin(), names.end());
}

LockGuard::~LockGuard() {
    if (lease_) {
        (void)client_->release(*lease_);
    }
}

LockGuard::LockGuard(LockGuard&& other) noexcept
    : client_(other.client_), lease_(std::exchange(other.lease_, std::nullopt)) {}

LockGuard& LockGuard::operator=(LockGuard&& other) noexcept {
    if (this != &other) {
        if (lease_) {
            (void)client_->release(*lease_);
        }
        client_ = other.client_;
        lease_ = std::exchange(other.lease_, std::nullopt);
    }
    return *this;
}

ClientResult<uint32_t> LockGuard::release() {
    if (!lease_) {
        return Error{ErrorCode::kInvalidArgument, "this guard holds no lease"};
    }
    auto result = client_->release(*lease_);
    lease_.reset();
    return result;
}

}  // namespace raftlock::client
