// Client: construction, the blocking call machinery, sessions and cluster queries.

#include "client/client.h"

#include <future>

#include <fmt/format.h>

#include "base/assert.h"
#include "client/client_impl.h"
#include "client/convert.h"

namespace raftlock::client {

namespace {

// The network thread enforces every deadline itself; this only guards against a stuck thread.
constexpr std::chrono::milliseconds kWaitGrace{2000};

// For answers without a message of their own: what the code means for the caller.
std::string_view default_hint(ErrorCode code) {
    switch (code) {
        case ErrorCode::kLockBusy:
            return ": held by another session (or others wait first)";
        case ErrorCode::kNotLockHolder:
            return ": not held by this session with that owner tag and token";
        case ErrorCode::kWaitTimeout:
            return ": not granted within the wait; nothing is held";
        case ErrorCode::kNoNode:
            return ": no such node";
        case ErrorCode::kNodeExists:
            return ": the node exists";
        case ErrorCode::kBadVersion:
            return ": the node's version differs";
        case ErrorCode::kSessionExpired:
            return ": the session has ended; open a new one";
        case ErrorCode::kFenceRejected:
            return ": the fencing token is not a current holder's";
        case ErrorCode::kResultDiscarded:
            return ": the server no longer has this request's result; nothing was applied now";
        default:
            return "";
    }
}

}  // namespace

std::optional<Error> answer_error(const ClientResult<proto::Response>& answer,
                                  std::string_view what) {
    if (!answer.ok()) {
        return answer.error();
    }
    const ErrorCode code = error_code_from_wire(answer->code());
    if (code == ErrorCode::kOk) {
        return std::nullopt;
    }
    std::string message = answer->message();
    if (message.empty()) {
        message = fmt::format("{}{}", what, default_hint(code));
    }
    return Error{code, std::move(message)};
}

Client::Impl::Impl(ClientOptions options)
    : options_(std::move(options)),
      keeper_(core_),
      watcher_(core_, options_.watches_max),
      core_(options_, *this) {}

Client::Impl::~Impl() {
    core_.stop();
}

std::optional<Error> Client::Impl::check_thread() const {
    if (core_.in_core()) {
        return Error{ErrorCode::kWrongThread,
                     "a blocking client call from a watch or session callback would deadlock: "
                     "hand the work to another thread"};
    }
    return std::nullopt;
}

ClientResult<proto::Response> Client::Impl::call(proto::Request request, CallSpec spec) {
    if (auto error = check_thread()) {
        return *error;
    }
    const auto timeout = spec.timeout.value_or(options_.request_timeout);
    // Shared: the network thread may answer after the wait below gave up.
    auto promise = std::make_shared<std::promise<ClientResult<proto::Response>>>();
    auto future = promise->get_future();
    // The request leaves from this thread (decision 0022); the answer comes on the network
    // thread.
    core_.run_here([&] {
        start_call(std::move(request), std::move(spec),
                   [promise](ClientResult<proto::Response> answer) {
                       promise->set_value(std::move(answer));
                   });
    });
    if (future.wait_for(timeout + kWaitGrace) != std::future_status::ready) {
        return Error{ErrorCode::kTimeout, "the client's network thread did not answer"};
    }
    return future.get();
}

void Client::Impl::start_call(proto::Request request, CallSpec spec, Completion done) {
    if (spec.request_class == RequestClass::kSessionWrite) {
        if (auto error = keeper_.prepare_write(request)) {
            done(*error);
            return;
        }
    }
    PendingRequest pending;
    pending.request_class = spec.request_class;
    pending.deadline = core_.now() + spec.timeout.value_or(options_.request_timeout);
    const bool session_request = request.session_id() != 0;
    pending.done = [this, sent = session_request ? request : proto::Request(),
                    on_ok = std::move(spec.on_ok),
                    done = std::move(done)](ClientResult<proto::Response> answer) {
        keeper_.on_answer(sent, answer);
        if (on_ok && answer.ok() && answer->code() == proto::OK) {
            if (auto error = on_ok(*answer)) {
                done(*error);
                return;
            }
        }
        done(std::move(answer));
    };
    pending.request = std::move(request);
    if (spec.pinned) {
        core_.submit_pinned(std::move(pending), *spec.pinned);
    } else {
        core_.submit(std::move(pending));
    }
}

void Client::Impl::on_connected() {
    connections_.fetch_add(1, std::memory_order_relaxed);
    keeper_.on_connected();
    watcher_.on_connected();
}

void Client::Impl::on_session_ended(const proto::SessionEnded& ended) {
    keeper_.on_session_ended(ended);
}

void Client::Impl::on_lock_revoked(const proto::LockRevoked& revoked) {
    // Pushed to connections that used the session; a client that moved on to another session
    // since holds nothing of the old one.
    if (lock_revoked_ && keeper_.id() == revoked.session_id()) {
        lock_revoked_(revoked.name(), revoked.token());
    }
}

bool Client::Impl::wants_connection() const {
    return keeper_.wants_connection() || watcher_.wants_connection();
}

Client::Client(ClientOptions options) {
    RL_ASSERT(!options.endpoints.empty());
    impl_ = std::make_unique<Impl>(std::move(options));
}

Client::~Client() = default;

ClientResult<SessionId> Client::open_session(std::chrono::milliseconds timeout) {
    if (auto error = impl_->check_thread()) {
        return *error;
    }
    const auto margin = impl_->options().safety_margin.value_or(default_safety_margin(timeout));
    if (timeout.count() <= 0 || margin.count() < 0 || margin >= timeout) {
        return Error{ErrorCode::kInvalidArgument,
                     fmt::format("session timeout {} ms must exceed the safety margin {} ms",
                                 timeout.count(), margin.count())};
    }
    std::promise<ClientResult<proto::Response>> answered;
    impl_->core().run_here([&] {
        if (auto error = impl_->keeper().begin_open()) {
            answered.set_value(*error);
            return;
        }
        proto::Request request;
        request.mutable_open_session()->set_timeout_ms(timeout.count());
        const SteadyTime submitted = SteadyClock::now();
        Impl::CallSpec spec;
        spec.request_class = RequestClass::kOpenSession;
        impl_->start_call(std::move(request), std::move(spec),
                          [&, submitted](ClientResult<proto::Response> answer) {
                              impl_->keeper().end_open(answer, timeout, margin, submitted);
                              answered.set_value(std::move(answer));
                          });
    });
    auto answer = answered.get_future().get();
    if (auto error = answer_error(answer, "open session")) {
        return *error;
    }
    return answer->open_session().session_id();
}

ClientResult<Done> Client::attach_session(SessionId id) {
    if (auto error = impl_->check_thread()) {
        return *error;
    }
    if (id == 0) {
        return Error{ErrorCode::kInvalidArgument, "session id must be > 0"};
    }
    // The cluster picks the first seq: above every seq the session used, so that none of another
    // process's writes (applied or still on their way) can share one with ours.
    proto::Request request;
    request.set_session_id(id);
    request.mutable_attach_session();
    auto answer = impl_->call(std::move(request), {RequestClass::kOpenSession});
    if (auto error = answer_error(answer, "attach session")) {
        return *error;
    }
    const uint64_t first_seq = answer->attach_session().first_seq();
    if (first_seq == 0) {
        return Error{ErrorCode::kProtocolError, "the node's attach answer has no first seq"};
    }
    std::optional<Error> error;
    impl_->core().run_here([&] { error = impl_->keeper().attach(id, first_seq); });
    if (error) {
        return *error;
    }
    return Done{};
}

ClientResult<Done> Client::keep_alive() {
    if (auto error = impl_->check_thread()) {
        return *error;
    }
    std::promise<ClientResult<proto::Response>> answered;
    impl_->core().run_here([&] {
        impl_->keeper().keep_alive_now(
            [&](ClientResult<proto::Response> answer) { answered.set_value(std::move(answer)); });
    });
    if (auto error = answer_error(answered.get_future().get(), "keepalive")) {
        return *error;
    }
    return Done{};
}

ClientResult<Done> Client::close_session() {
    proto::Request request;
    request.mutable_close_session();
    auto answer = impl_->call(std::move(request), {RequestClass::kSessionWrite});
    if (answer.ok() && answer->code() == proto::SESSION_EXPIRED) {
        return Done{};  // gone already: closed either way
    }
    if (auto error = answer_error(answer, "close session")) {
        return *error;
    }
    return Done{};
}

std::optional<SessionId> Client::session_id() const {
    return impl_->keeper().id();
}

uint64_t Client::connection_count() const {
    return impl_->connection_count();
}

std::optional<SteadyTime> Client::safe_until() const {
    return impl_->keeper().safe_until();
}

void Client::set_lock_revoked_callback(LockRevokedCallback callback) {
    if (impl_->check_thread()) {
        impl_->set_lock_revoked_callback(std::move(callback));  // already inside the core
        return;
    }
    impl_->core().run_here([&] { impl_->set_lock_revoked_callback(std::move(callback)); });
}

void Client::set_session_callback(SessionCallback callback) {
    if (impl_->check_thread()) {
        impl_->keeper().set_callback(std::move(callback));  // already inside the core
        return;
    }
    impl_->core().run_here([&] { impl_->keeper().set_callback(std::move(callback)); });
}

ClientResult<NodeStatus> Client::node_status(const Endpoint& endpoint) {
    proto::Request request;
    request.mutable_node_status();
    Impl::CallSpec spec;
    spec.request_class = RequestClass::kPinned;
    spec.pinned = endpoint;
    auto answer = impl_->call(std::move(request), std::move(spec));
    if (auto error = answer_error(answer, "node status")) {
        return *error;
    }
    return from_proto(answer->node_status());
}

ClientResult<std::vector<SessionInfo>> Client::list_sessions() {
    proto::Request request;
    request.mutable_list_sessions();
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, "list sessions")) {
        return *error;
    }
    std::vector<SessionInfo> out;
    for (const proto::SessionInfo& info : answer->sessions().sessions()) {
        out.push_back(from_proto(info));
    }
    return out;
}

ClientResult<std::vector<Member>> Client::members() {
    proto::Request request;
    request.mutable_list_members();
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, "list members")) {
        return *error;
    }
    return from_proto(answer->members());
}

ClientResult<std::vector<Member>> Client::change_member(MemberChange change,
                                                        uint64_t node_id,
                                                        const std::string& address) {
    proto::Request request;
    proto::ChangeMember* body = request.mutable_change_member();
    switch (change) {
        case MemberChange::kAddVoter:
            body->set_kind(proto::ChangeMember::ADD_VOTER);
            break;
        case MemberChange::kAddLearner:
            body->set_kind(proto::ChangeMember::ADD_LEARNER);
            break;
        case MemberChange::kRemove:
            body->set_kind(proto::ChangeMember::REMOVE);
            break;
    }
    body->set_node_id(node_id);
    body->set_address(address);
    // The default request class: a follower's UNAVAILABLE moves the call on to the next node
    // until it reaches the leader.
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, "member change")) {
        return *error;
    }
    return from_proto(answer->members());
}

ClientResult<uint64_t> Client::transfer_leadership(uint64_t node_id) {
    proto::Request request;
    request.mutable_transfer_leadership()->set_node_id(node_id);
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, "leadership transfer")) {
        return *error;
    }
    return answer->leader_hint();  // (the node that answered saw it lead)
}

}  // namespace raftlock::client
