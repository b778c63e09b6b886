// Client: the lock API and LockGuard.

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "client/client.h"
#include "client/client_impl.h"
#include "client/convert.h"

namespace raftlock::client {

namespace {

// The server's bound on the locks of one multi-lock (statemachine/types.h).
constexpr size_t kMultiLockMax = 64;

proto::LockMode lock_mode(bool shared, uint32_t permits) {
    if (permits > 0) {
        return proto::SEMAPHORE;
    }
    return shared ? proto::SHARED : proto::EXCLUSIVE;
}

proto::Request acquire_request(const std::string& name, const AcquireOptions& options) {
    proto::Request request;
    proto::Acquire* acquire = request.mutable_acquire();
    acquire->set_name(name);
    acquire->set_owner_tag(options.owner_tag);
    acquire->set_mode(lock_mode(options.shared, options.permits));
    acquire->set_permits(options.permits);
    acquire->set_wait_ms(options.wait.count());
    acquire->set_lock_delay_ms(options.lock_delay.count());
    return request;
}

proto::Request acquire_many_request(const std::vector<LockRequest>& locks,
                                    const AcquireOptions& options) {
    proto::Request request;
    proto::AcquireMany* many = request.mutable_acquire_many();
    for (const LockRequest& wanted : locks) {
        proto::AcquireMany::Lock* lock = many->add_locks();
        lock->set_name(wanted.name);
        lock->set_mode(lock_mode(wanted.shared, wanted.permits));
        lock->set_permits(wanted.permits);
    }
    many->set_owner_tag(options.owner_tag);
    many->set_wait_ms(options.wait.count());
    many->set_lock_delay_ms(options.lock_delay.count());
    return request;
}

// The caller's deadline passed with the acquire unanswered: it may sit in the queue or even be
// granted. Cancel it, so that either we learn the grant (and give it back) or the session certainly
// does not hold the lock. The cancel's ack_seq covers the abandoned acquire (client/seq_tracker.h),
// so a copy of it still on its way is answered RESULT_DISCARDED, never applied after the cancel.
// For a multi-lock, `names` are the set's: the cancel names the first (any would end the whole
// wait) and a grant that raced it is released on every one.
Error cancel_after_timeout(Client& client,
                           Client::Impl& impl,
                           const std::vector<std::string>& names,
                           const AcquireOptions& options,
                           std::chrono::milliseconds timeout) {
    const std::string name = fmt::format("{}", fmt::join(names, "', '"));
    proto::Request request;
    request.mutable_cancel()->set_name(names.front());
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
        std::optional<Error> failed;
        for (const std::string& granted : names) {
            const Lease lease{granted, options.owner_tag, cancelled->lock().token(),
                              client.session_id().value_or(0), 1};
            if (auto released = client.release(lease); !released.ok() && !failed) {
                failed = released.error();
            }
        }
        raced = !failed ? "; a grant that raced the cancel was released"
                        : fmt::format(
                              "; a grant raced the cancel and its release failed "
                              "({}): close the session",
                              to_string(*failed));
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
        return cancel_after_timeout(*this, *impl_, {name}, options, timeout);
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

ClientResult<std::vector<Lease>> Client::acquire_many(const std::vector<std::string>& names,
                                                      const AcquireOptions& options) {
    std::vector<LockRequest> locks;
    for (const std::string& name : names) {
        locks.push_back(LockRequest{name, options.shared, options.permits});
    }
    return acquire_locks(locks, options);
}

ClientResult<std::vector<Lease>> Client::acquire_locks(const std::vector<LockRequest>& locks,
                                                       const AcquireOptions& options) {
    std::vector<std::string> names;
    for (const LockRequest& lock : locks) {
        names.push_back(lock.name);
    }
    const std::set<std::string> distinct(names.begin(), names.end());
    if (names.empty() || names.size() > kMultiLockMax || distinct.size() != names.size() ||
        distinct.contains("") || options.wait.count() < 0 || options.lock_delay.count() < 0) {
        return Error{ErrorCode::kInvalidArgument,
                     fmt::format("acquire_many needs 1 to {} distinct lock names, and wait and "
                                 "lock delay must not be negative",
                                 kMultiLockMax)};
    }
    const std::string what = fmt::format("acquire '{}'", fmt::join(names, "', '"));
    const auto timeout = options.timeout.value_or(options.wait + impl_->options().request_timeout);
    auto answer =
        impl_->call(acquire_many_request(locks, options), {RequestClass::kSessionWrite, timeout});
    if (!answer.ok() && answer.error().code == ErrorCode::kTimeout) {
        return cancel_after_timeout(*this, *impl_, names, options, timeout);
    }
    if (auto error = answer_error(answer, what)) {
        return *error;
    }
    const proto::LockResult& result = answer->lock();
    if (result.outcome() != proto::LOCK_GRANTED) {
        return Error{ErrorCode::kBadRequest,
                     fmt::format("{}: the server answered OK without a grant", what)};
    }
    std::vector<Lease> leases;
    for (const std::string& name : names) {
        leases.push_back(
            Lease{name, options.owner_tag, result.token(), session_id().value_or(0), 1});
    }
    return leases;
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
