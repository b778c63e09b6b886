// Users on the native port (docs/security.md, "Users and permissions"): a connection's login
// (SCRAM-SHA-256), the checks of what the state machine does not see (reads, watches,
// keepalives), the early refusal of writes it would refuse anyway, and the root password's
// bootstrap. Writes are decided where they apply (statemachine/permissions.cc), against the user
// this node stamps on them.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/scram.h"
#include "server/replica.h"
#include "server/request_codec.h"
#include "statemachine/codec.h"

namespace raftlock::server {

namespace sm = statemachine;
namespace scram = base::scram;

namespace {

// A login that fails this often on one connection closes it: guessing costs a connection each
// time (and a TLS handshake, on a TLS port), and the counter shows it.
constexpr int kNativeLoginFailuresMax = 3;
constexpr std::string_view kScramSha256 = "SCRAM-SHA-256";

}  // namespace

void Replica::authenticate(const ClientRef& client, const proto::Request& request) {
    Connection& c = connections_.at(client.conn);
    const proto::Authenticate& step = request.authenticate();
    auto refuse = [&](const std::string& why) {
        c.login.reset();
        ++metrics_.auth_failures_total;
        ++c.login_failures;
        respond_error(client, proto::PERMISSION_DENIED, "authentication failed: " + why);
        if (c.login_failures >= kNativeLoginFailuresMax) {
            spdlog::warn("closing client connection from {}: {} failed logins", c.remote,
                         c.login_failures);
            clients_.close(client.conn);
        }
    };
    if (step.mechanism() != kScramSha256) {
        // Not echoed: it is the client's bytes, and a reply's text must be valid UTF-8.
        refuse(fmt::format("unknown mechanism (this node speaks {})", kScramSha256));
        return;
    }
    if (c.login == nullptr) {
        Result<scram::ClientFirst, scram::Error> first = scram::parse_client_first(step.data());
        if (!first.ok()) {
            refuse(first.error().message);
            return;
        }
        // An unknown user (or one without a password) gets a decoy exchange that fails as a wrong
        // password does, so that a login does not tell who exists.
        const std::optional<sm::Credentials> stored = sm_.auth().credentials(first->user);
        if (decoy_secret_.empty()) {
            decoy_secret_ = scram::random_bytes(32);
        }
        const scram::Verifier verifier = stored && stored->has_password()
                                             ? sm::to_verifier(*stored)
                                             : scram::decoy_verifier(first->user, decoy_secret_);
        c.login_user = first->user;
        c.login = std::make_unique<scram::ServerExchange>(std::move(first).value(), verifier,
                                                          scram::random_nonce());
        proto::Response response;
        response.mutable_authenticate()->set_data(c.login->server_first());
        respond(client, response);
        return;
    }
    Result<std::string, scram::Error> last = c.login->client_final(step.data());
    c.login.reset();
    if (!last.ok()) {
        refuse(last.error().message);
        return;
    }
    c.user = std::move(c.login_user);
    c.login_user.clear();
    ++metrics_.auth_logins_total;
    proto::Response response;
    response.mutable_authenticate()->set_data(*last);
    response.mutable_authenticate()->set_done(true);
    response.mutable_authenticate()->set_user(c.user);
    respond(client, response);
}

void Replica::on_client_certificate(net::ConnectionId id, const std::string& common_name) {
    if (!config_.tls_client_cert_user) {
        return;
    }
    auto it = connections_.find(id);
    RL_ASSERT(it != connections_.end());
    RL_ASSERT(it->second.user.empty());
    // The CA vouched for the name; whether that user exists and what it may do is checked at
    // each request, as after a password login.
    it->second.user = common_name;
    ++metrics_.auth_logins_total;
}

const std::string& Replica::user_of(net::ConnectionId conn) const {
    static const std::string kNobody;
    auto it = connections_.find(conn);
    return it == connections_.end() ? kNobody : it->second.user;
}

std::optional<std::string> Replica::request_refusal(net::ConnectionId conn,
                                                    const proto::Request& request) const {
    const sm::AuthStore& auth = sm_.auth();
    if (!auth.enabled()) {
        return std::nullopt;
    }
    using B = proto::Request::BodyCase;
    const B body = request.body_case();
    if (body == B::kAuthenticate || body == B::kAuthStatus || body == B::kNodeStatus) {
        return std::nullopt;  // what a client needs before it logs in
    }
    const std::string& user = user_of(conn);
    if (user.empty()) {
        return std::string(sm::kAuthenticationRequired);
    }
    if (!auth.user_exists(user)) {
        return sm::unknown_user_message(user);
    }
    auto need = [&](sm::Access access, sm::Space space,
                    std::string_view name) -> std::optional<std::string> {
        const sm::Need needed{access, space, name};
        if (auth.permits(user, needed)) {
            return std::nullopt;
        }
        return sm::lacks_message(user, needed);
    };
    auto read_node = [&](const std::string& path) {
        return need(sm::Access::kRead, sm::Space::kNode, path);
    };
    auto root_only = [&](std::string_view what) -> std::optional<std::string> {
        if (auth.is_root(user)) {
            return std::nullopt;
        }
        return sm::root_only_message(user, what);
    };
    switch (body) {
        case B::kGet:
            return read_node(request.get().path());
        case B::kExists:
            return read_node(request.exists().path());
        case B::kChildren:
            return read_node(request.children().path());
        case B::kCountDescendants:
            return read_node(request.count_descendants().path());
        case B::kGetAcl:
            return read_node(request.get_acl().path());
        case B::kAddWatch:
            return read_node(request.add_watch().path());
        case B::kRestoreWatches: {
            const proto::RestoreWatches& r = request.restore_watches();
            for (const auto* paths : {&r.data(), &r.exists(), &r.children(), &r.persistent(),
                                      &r.persistent_recursive()}) {
                for (const std::string& path : *paths) {
                    if (auto refused = read_node(path)) {
                        return refused;
                    }
                }
            }
            return std::nullopt;
        }
        case B::kDescribeLock:
            return need(sm::Access::kRead, sm::Space::kLock, request.describe_lock().name());
        case B::kListLocks:
            return need(sm::Access::kRead, sm::Space::kLock, request.list_locks().prefix());
        case B::kListEphemerals:
        case B::kKeepAlive:
            if (!sm_.may_use_session(user, request.session_id())) {
                return sm::foreign_session_message(user, request.session_id());
            }
            return std::nullopt;
        case B::kListSessions:
            return root_only("list every session");
        case B::kChangeMember:
            return root_only("change the cluster's members");
        case B::kTransferLeadership:
            return root_only("transfer leadership");
        case B::kListUsers:
            return root_only("list users");
        case B::kListRoles:
            return root_only("list roles");
        case B::kGetUser:
            if (request.get_user().name().empty() || request.get_user().name() == user) {
                return std::nullopt;
            }
            return root_only("read another user");
        case B::kGetRole:
            if (const std::optional<sm::UserInfo> info = auth.user(user);
                info && std::find(info->roles.begin(), info->roles.end(),
                                  request.get_role().name()) != info->roles.end()) {
                return std::nullopt;
            }
            return root_only("read a role it does not hold");
        default:
            // Writes: decided where they apply (write_refusal checks them early too); the rest
            // (members, remove_watch) need only a user.
            return std::nullopt;
    }
}

std::optional<sm::Response> Replica::write_refusal(const sm::Command& command) const {
    if (!sm_.auth().enabled()) {
        return std::nullopt;  // the common case: no lookups on the write path
    }
    // A retry of a write that applied already gets its saved reply, whatever changed since.
    if (command.client_id != sm::kNoSession &&
        sm_.saved_response(command.client_id, command.seq).has_value()) {
        return std::nullopt;
    }
    return sm_.refusal(command);
}

void Replica::serve_auth_read(net::ConnectionId conn,
                              const proto::Request& request,
                              proto::Response& response) const {
    const sm::AuthStore& auth = sm_.auth();
    using B = proto::Request::BodyCase;
    switch (request.body_case()) {
        case B::kGetUser: {
            const std::string& name =
                request.get_user().name().empty() ? user_of(conn) : request.get_user().name();
            const std::optional<sm::UserInfo> info = auth.user(name);
            if (!info) {
                response.set_code(proto::NO_USER);
                response.set_message(name.empty() ? "this connection has not logged in"
                                                  : fmt::format("no user \"{}\"", name));
                return;
            }
            response.mutable_user()->set_name(info->name);
            response.mutable_user()->set_has_password(info->has_password);
            for (const std::string& role : info->roles) {
                response.mutable_user()->add_roles(role);
            }
            return;
        }
        case B::kGetRole: {
            const std::optional<sm::RoleInfo> info = auth.role(request.get_role().name());
            if (!info) {
                response.set_code(proto::NO_ROLE);
                response.set_message(fmt::format("no role \"{}\"", request.get_role().name()));
                return;
            }
            response.mutable_role()->set_name(info->name);
            for (const sm::Permission& p : info->permissions) {
                to_proto(p, *response.mutable_role()->add_permissions());
            }
            return;
        }
        case B::kListUsers:
            for (const std::string& name : auth.user_names()) {
                response.mutable_names()->add_names(name);
            }
            return;
        case B::kListRoles:
            for (const std::string& name : auth.role_names()) {
                response.mutable_names()->add_names(name);
            }
            return;
        default:
            RL_PANIC("serve_auth_read given a request that is not a user or role read");
    }
}

void Replica::fill_auth_status(net::ConnectionId conn, proto::AuthStatusResult& out) const {
    out.set_enabled(sm_.auth().enabled());
    out.set_user(user_of(conn));
    out.set_root(sm_.auth().is_root(user_of(conn)));
}

void Replica::enforce_login_deadline() {
    if (!sm_.auth().enabled() || ticks_ % 10 != 0) {
        return;
    }
    const int64_t now_ms = clock_.steady_ms();
    std::vector<net::ConnectionId> late;
    for (const auto& [id, c] : connections_) {
        if (c.user.empty() && now_ms - c.opened_ms > config_.login_deadline_ms) {
            late.push_back(id);
        }
    }
    for (net::ConnectionId id : late) {
        ++metrics_.login_deadline_closed_total;
        spdlog::info("closing client connection from {}: not logged in within {} ms",
                     connections_.at(id).remote, config_.login_deadline_ms);
        clients_.close(id);
    }
}

// The first leader of a cluster started with --root-password-file creates root and enables
// authentication, once the log it leads holds no user: every node may have the file, the state
// machine applies only the first such entry (AuthBootstrap is refused once a user exists).
void Replica::maybe_bootstrap_root() {
    if (!config_.root_credentials || sm_.auth().user_count() > 0 ||
        applied_index_ < raw_->committed() || root_bootstrap_term_ == raw_->term()) {
        return;
    }
    root_bootstrap_term_ = raw_->term();
    sm::Command c;
    c.op = sm::AuthBootstrap{*config_.root_credentials};
    RL_ASSERT(sm::validate_command(c) == sm::ErrorCode::kOk);  // checked when the file was read
    spdlog::info("proposing the root user from --root-password-file (the cluster has no users)");
    propose_command(std::move(c));
}

}  // namespace raftlock::server
