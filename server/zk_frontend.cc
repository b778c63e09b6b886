#include "server/zk_frontend.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/assert.h"
#include "server/zk_auth.h"

namespace raftlock::server {

namespace zk = net::zk;

namespace {

// The ZooKeeper release whose client protocol this front end speaks (admin tools print it).
constexpr std::string_view kZkVersion = "3.8.0";

// Mixes 64 bits (splitmix64's finalizer): the password only has to be a function of the session
// that a client cannot guess from the id alone without the seed.
uint64_t password_mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

zk::Stat zk_stat_of(const proto::Stat& s) {
    zk::Stat out;
    out.czxid = static_cast<int64_t>(s.czxid());
    out.mzxid = static_cast<int64_t>(s.mzxid());
    out.pzxid = static_cast<int64_t>(s.pzxid());
    out.ctime = s.ctime_ms();
    out.mtime = s.mtime_ms();
    out.version = s.version();
    out.cversion = s.cversion();
    out.aversion = s.aversion();
    out.ephemeral_owner = static_cast<int64_t>(s.ephemeral_owner());
    out.data_length = s.data_length();
    out.num_children = s.num_children();
    return out;
}

// The native codes a ZooKeeper client understands as such. The others (no leader, an unknown
// outcome, a node going away) are answered by closing the connection: see complete().
std::optional<zk::Err> zk_error_of(proto::Code code) {
    switch (code) {
        case proto::OK:
            return zk::Err::kOk;
        case proto::NO_NODE:
            return zk::Err::kNoNode;
        case proto::NODE_EXISTS:
            return zk::Err::kNodeExists;
        case proto::NOT_EMPTY:
            return zk::Err::kNotEmpty;
        case proto::BAD_VERSION:
            return zk::Err::kBadVersion;
        case proto::NO_CHILDREN_FOR_EPHEMERALS:
            return zk::Err::kNoChildrenForEphemerals;
        case proto::BAD_ARGUMENTS:
        case proto::BAD_REQUEST:
            return zk::Err::kBadArguments;
        case proto::SESSION_EXPIRED:
            return zk::Err::kSessionExpired;
        case proto::RESULT_DISCARDED:
            // A write of this connection refused because another connection attached the session
            // since: ZooKeeper's SessionMovedException.
            return zk::Err::kSessionMoved;
        case proto::LIMIT_EXCEEDED:
            return zk::Err::kQuotaExceeded;
        case proto::TOO_MANY_REQUESTS:
            return zk::Err::kThrottledOp;
        case proto::ROLLED_BACK:
            return zk::Err::kRuntimeInconsistency;
        case proto::NO_AUTH:
            return zk::Err::kNoAuth;
        case proto::INVALID_ACL:
            return zk::Err::kInvalidAcl;
        default:
            break;
    }
    return std::nullopt;
}

std::optional<proto::NodeKind> zk_create_kind(int32_t flags) {
    switch (static_cast<zk::CreateMode>(flags)) {
        case zk::CreateMode::kPersistent:
            return proto::PERSISTENT;
        case zk::CreateMode::kEphemeral:
            return proto::EPHEMERAL;
        case zk::CreateMode::kPersistentSequential:
            return proto::PERSISTENT_SEQUENTIAL;
        case zk::CreateMode::kEphemeralSequential:
            return proto::EPHEMERAL_SEQUENTIAL;
        case zk::CreateMode::kContainer:
            return proto::CONTAINER;
        case zk::CreateMode::kPersistentWithTtl:
            return proto::TTL;
        case zk::CreateMode::kPersistentSequentialWithTtl:
            return proto::TTL_SEQUENTIAL;
    }
    return std::nullopt;
}

// The native Create for one of ZooKeeper's four create operations, or the error to refuse it with.
std::optional<zk::Err> native_create(zk::OpCode type,
                                     const zk::CreateRequest& in,
                                     const ZkIdentity& identity,
                                     proto::Create& out) {
    // The ACL first: ZooKeeper refuses an invalid one before it looks at the tree.
    Result<std::vector<proto::AclEntry>, zk::Err> acl = zk_native_acl(in.acl, identity);
    if (!acl.ok()) {
        return acl.error();
    }
    int32_t flags = in.flags;
    if (type == zk::OpCode::kCreateContainer) {
        flags = static_cast<int32_t>(zk::CreateMode::kContainer);
    }
    std::optional<proto::NodeKind> kind = zk_create_kind(flags);
    if (!kind) {
        return zk::Err::kBadArguments;
    }
    // A TTL mode only through createTTL, and createTTL only with one (as ZooKeeper).
    const bool ttl_mode = *kind == proto::TTL || *kind == proto::TTL_SEQUENTIAL;
    if (ttl_mode != (type == zk::OpCode::kCreateTtl) || (ttl_mode && in.ttl <= 0)) {
        return zk::Err::kBadArguments;
    }
    out.set_path(in.path);
    out.set_data(in.data.value_or(""));
    out.set_kind(*kind);
    out.set_ttl_ms(ttl_mode ? in.ttl : 0);
    for (proto::AclEntry& entry : *acl) {
        *out.add_acl() = std::move(entry);
    }
    return std::nullopt;
}

// One operation of a multi as the native Multi's (the codec let only writes and checks in).
std::optional<zk::Err> native_multi_op(const zk::MultiOp& in,
                                       const ZkIdentity& identity,
                                       proto::MultiOp& out) {
    switch (in.type) {
        case zk::OpCode::kDelete: {
            const auto& body = std::get<zk::DeleteRequest>(in.body);
            out.mutable_delete_()->set_path(body.path);
            out.mutable_delete_()->set_version(body.version);
            return std::nullopt;
        }
        case zk::OpCode::kSetData: {
            const auto& body = std::get<zk::SetDataRequest>(in.body);
            out.mutable_set_data()->set_path(body.path);
            out.mutable_set_data()->set_data(body.data.value_or(""));
            out.mutable_set_data()->set_version(body.version);
            return std::nullopt;
        }
        case zk::OpCode::kCheck: {
            const auto& body = std::get<zk::CheckVersionRequest>(in.body);
            out.mutable_check()->set_path(body.path);
            out.mutable_check()->set_version(body.version);
            return std::nullopt;
        }
        default:
            return native_create(in.type, std::get<zk::CreateRequest>(in.body), identity,
                                 *out.mutable_create());
    }
}

// exists, getData, getChildren(2), alone or in a multiRead: the native read, with its watch flag.
void native_path_read(zk::OpCode type, const zk::PathWatchRequest& in, proto::Request& out) {
    if (type == zk::OpCode::kExists) {
        out.mutable_exists()->set_path(in.path);
        out.mutable_exists()->set_watch(in.watch);
    } else if (type == zk::OpCode::kGetData) {
        out.mutable_get()->set_path(in.path);
        out.mutable_get()->set_watch(in.watch);
    } else {
        RL_ASSERT(type == zk::OpCode::kGetChildren || type == zk::OpCode::kGetChildren2);
        out.mutable_children()->set_path(in.path);
        out.mutable_children()->set_watch(in.watch);
    }
}

// "127.0.0.1:5000" -> "127.0.0.1", "[::1]:5000" -> "::1": the address whoAmI names.
std::string host_of(const std::string& remote) {
    std::string host = remote.substr(0, remote.rfind(':'));
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    return host;
}

zk::EventType zk_event_type(proto::EventType type) {
    switch (type) {
        case proto::NODE_CREATED:
            return zk::EventType::kNodeCreated;
        case proto::NODE_DELETED:
            return zk::EventType::kNodeDeleted;
        case proto::NODE_DATA_CHANGED:
            return zk::EventType::kNodeDataChanged;
        case proto::NODE_CHILDREN_CHANGED:
            return zk::EventType::kNodeChildrenChanged;
        default:
            break;
    }
    RL_PANIC("a watch event of an unknown type from the replica");
}

}  // namespace

ZkFrontend::ZkFrontend(ZkFrontendOptions options, ZkOutput& output, net::ClientHandler& backend)
    : options_(options), output_(output), backend_(backend) {
    RL_ASSERT(options_.session_timeout_ms_min > 0);
    RL_ASSERT(options_.session_timeout_ms_min <= options_.session_timeout_ms_max);
}

std::string ZkFrontend::password_of(uint64_t session) const {
    std::string out;
    uint64_t word = password_mix(session ^ options_.password_seed);
    for (size_t i = 0; i < zk::kPasswordBytes; ++i) {
        if (i == 8) {
            word = password_mix(word ^ options_.password_seed);
        }
        out.push_back(static_cast<char>(word >> (8 * (i % 8))));
    }
    return out;
}

void ZkFrontend::on_zk_open(net::ConnectionId id, const std::string& remote) {
    auto [it, inserted] = conns_.try_emplace(id);
    RL_ASSERT(inserted);
    it->second.remote = remote;
    it->second.identity.address = host_of(remote);
    it->second.caller = zk_caller(it->second.identity);
    backend_.on_client_open(id, remote);
}

void ZkFrontend::on_zk_close(net::ConnectionId id) {
    if (conns_.erase(id) > 0) {
        backend_.on_client_close(id);
    }
}

void ZkFrontend::on_zk_message(net::ConnectionId id, std::string_view payload) {
    auto it = conns_.find(id);
    RL_ASSERT(it != conns_.end());
    Conn& c = it->second;
    switch (c.phase) {
        case Phase::kAwaitConnect:
            handle_connect(id, c, payload);
            return;
        case Phase::kConnecting:
            // A client sends nothing before its ConnectResponse.
            fail_connection(id, c, "a request before the session was established");
            return;
        case Phase::kClosing:
            return;
        case Phase::kOpen:
            break;
    }
    Result<zk::Request, zk::DecodeError> request = zk::decode_request(payload);
    if (!request.ok()) {
        const zk::DecodeError& e = request.error();
        if (e.fatal) {
            fail_connection(id, c, "malformed request: " + e.message);
            return;
        }
        // An operation this server does not serve: answered in its turn, the connection stays.
        Pending p;
        p.xid = e.xid;
        p.route = Route::kNow;
        std::string bytes;
        zk::encode_reply(e.xid, c.last_zxid, zk::Err::kUnimplemented, zk::EmptyResponse{}, bytes);
        p.reply = std::move(bytes);
        c.pending.push_back(std::move(p));
        flush(id, c);
        return;
    }
    handle_request(id, c, std::move(request).value());
}

std::optional<std::string> ZkFrontend::on_zk_four_letter_word(std::string_view word) {
    if (word == "ruok") {
        return std::string("imok");
    }
    if (word == "isro") {
        return std::string("rw");  // this server never serves read-only sessions
    }
    if (word == "conf") {
        return fmt::format(
            "minSessionTimeout={}\nmaxSessionTimeout={}\njute.maxbuffer={}\nreads={}\n",
            options_.session_timeout_ms_min, options_.session_timeout_ms_max, zk::kDefaultMaxBuffer,
            options_.local_reads ? "local" : "linearizable");
    }
    if (word == "cons") {
        std::string text;
        for (const auto& [id, c] : conns_) {
            text += fmt::format(" /{}[1](queued={},sid=0x{:x},to={})\n", c.remote, c.pending.size(),
                                c.session, c.timeout_ms);
        }
        return text + "\n";
    }
    if (!options_.server_facts) {
        return std::nullopt;  // the rest report the node's state
    }
    const ZkServerFacts facts = options_.server_facts();
    const char* mode = facts.leader ? "leader" : "follower";
    if (word == "srvr" || word == "stat") {
        std::string text = fmt::format(
            "Zookeeper version: {}-raftlock, built on raftlock\n"
            "Connections: {}\n"
            "Zxid: 0x{:x}\n"
            "Mode: {}\n"
            "Node count: {}\n",
            kZkVersion, conns_.size(), facts.applied_index, mode, facts.node_count);
        if (word == "stat") {
            text.insert(text.find("Connections"), "Clients:\n\n");
        }
        return text;
    }
    if (word == "mntr") {
        size_t outstanding = 0;
        for (const auto& [id, c] : conns_) {
            outstanding += c.pending.size();
        }
        return fmt::format(
            "zk_version\t{}-raftlock, built on raftlock\n"
            "zk_server_state\t{}\n"
            "zk_num_alive_connections\t{}\n"
            "zk_outstanding_requests\t{}\n"
            "zk_znode_count\t{}\n"
            "zk_watch_count\t{}\n"
            "zk_ephemerals_count\t{}\n"
            "zk_global_sessions\t{}\n"
            "zk_last_zxid\t{}\n",
            kZkVersion, mode, conns_.size(), outstanding, facts.node_count, facts.watches,
            facts.ephemeral_count, facts.session_count, facts.applied_index);
    }
    if (word == "envi") {
        return fmt::format(
            "Environment:\nzookeeper.version={}-raftlock, built on raftlock\nraftlock.node_id={}\n",
            kZkVersion, facts.node_id);
    }
    if (word == "wchs") {
        return fmt::format("{} connections watching {} paths\nTotal watches:{}\n", facts.watchers,
                           facts.watched_paths, facts.watches);
    }
    return std::nullopt;
}

void ZkFrontend::handle_connect(net::ConnectionId id, Conn& c, std::string_view payload) {
    Result<zk::ConnectRequest, std::string> connect = zk::decode_connect_request(payload);
    if (!connect.ok()) {
        fail_connection(id, c, "malformed ConnectRequest: " + connect.error());
        return;
    }
    c.connect = std::move(connect).value();
    c.phase = Phase::kConnecting;
    proto::Request request;
    c.connect_request_id = c.next_request_id++;
    request.set_request_id(c.connect_request_id);
    if (c.connect.session_id == 0) {
        const int32_t timeout = std::clamp(c.connect.timeout_ms, options_.session_timeout_ms_min,
                                           options_.session_timeout_ms_max);
        request.mutable_open_session()->set_timeout_ms(timeout);
    } else {
        const auto session = static_cast<uint64_t>(c.connect.session_id);
        if (c.connect.password != password_of(session)) {
            // ZooKeeper answers a wrong password as an expired session: timeout 0, no session.
            std::string bytes;
            zk::encode_connect_response(zk::ConnectResponse{}, bytes);
            output_.send(id, std::move(bytes));
            c.phase = Phase::kClosing;
            output_.close(id);
            return;
        }
        request.set_session_id(session);
        request.mutable_attach_session();
    }
    backend_.on_client_request(id, std::move(request));
}

void ZkFrontend::answer_connect(net::ConnectionId id, Conn& c, const proto::Response& response) {
    RL_ASSERT(c.phase == Phase::kConnecting);
    zk::ConnectResponse out;
    out.password = std::string(zk::kPasswordBytes, '\0');
    if (response.code() == proto::OK && response.has_open_session()) {
        c.session = response.open_session().session_id();
        c.timeout_ms = static_cast<int32_t>(response.open_session().timeout_ms());
        c.next_seq = 1;  // a new session: no other connection has written
    } else if (response.code() == proto::OK && response.has_attach_session()) {
        c.session = static_cast<uint64_t>(c.connect.session_id);
        c.timeout_ms = static_cast<int32_t>(response.attach_session().timeout_ms());
        c.next_seq = response.attach_session().first_seq();
    } else if (response.code() == proto::SESSION_EXPIRED) {
        std::string bytes;
        zk::encode_connect_response(zk::ConnectResponse{}, bytes);  // timeout 0: expired
        output_.send(id, std::move(bytes));
        c.phase = Phase::kClosing;
        output_.close(id);
        return;
    } else {
        // No leader, a timeout, shutting down: the client tries another node.
        fail_connection(id, c, "cannot establish the session now: " + response.message());
        return;
    }
    RL_ASSERT(c.session != 0 && c.next_seq > 0);
    out.timeout_ms = c.timeout_ms;
    out.session_id = static_cast<int64_t>(c.session);
    out.password = password_of(c.session);
    out.read_only = false;
    c.last_zxid = static_cast<int64_t>(response.applied_index());
    c.phase = Phase::kOpen;
    // Opening or attaching the session renewed it.
    c.keepalive_sent_ms = options_.steady_ms ? options_.steady_ms() : 0;
    std::string bytes;
    zk::encode_connect_response(out, bytes);
    output_.send(id, std::move(bytes));
}

void ZkFrontend::keep_session_alive(net::ConnectionId id, Conn& c, zk::OpCode type) {
    if (!options_.steady_ms || c.phase != Phase::kOpen || type == zk::OpCode::kCloseSession) {
        return;
    }
    RL_ASSERT(c.session != 0 && c.timeout_ms > 0);
    const int64_t now_ms = options_.steady_ms();
    if (type == zk::OpCode::kPing) {
        c.keepalive_sent_ms = now_ms;  // the ping is the keepalive
        return;
    }
    if (now_ms - c.keepalive_sent_ms < c.timeout_ms / 3) {
        return;
    }
    c.keepalive_sent_ms = now_ms;
    proto::Request request;
    request.set_request_id(c.next_request_id++);
    request.set_session_id(c.session);
    request.mutable_keep_alive();
    backend_.on_client_request(id, std::move(request));
}

void ZkFrontend::handle_request(net::ConnectionId id, Conn& c, zk::Request&& in) {
    keep_session_alive(id, c, in.type);
    Pending p;
    p.xid = in.xid;
    p.type = in.type;
    if (std::optional<zk::Err> refused = translate(c, in, p)) {
        RL_ASSERT(p.requests.empty() && p.seq == 0);  // refused before anything was numbered
        p.route = Route::kNow;
        std::string bytes;
        zk::encode_reply(p.xid, c.last_zxid, *refused, zk::EmptyResponse{}, bytes);
        p.reply = std::move(bytes);
    }
    c.pending.push_back(std::move(p));
    if (c.pending.size() >= options_.pipeline_max && !c.paused) {
        c.paused = true;
        output_.pause_reading(id, true);
    }
    dispatch(id, c);
    flush(id, c);
}

std::optional<zk::Err> ZkFrontend::translate(Conn& c, const zk::Request& in, Pending& out) {
    auto native = [&]() -> proto::Request& {
        proto::Request& r = out.requests.emplace_back();
        r.set_session_id(c.session);
        *r.mutable_caller() = c.caller;  // checked against the nodes' ACLs where they apply
        return r;
    };
    auto read = [&]() -> proto::Request& {
        out.route = Route::kRead;
        proto::Request& r = native();
        r.set_local_read(options_.local_reads);
        return r;
    };
    auto write = [&]() -> proto::Request& {
        out.route = Route::kWrite;
        out.seq = c.next_seq++;
        // Unanswered from now: ack_seq stays below it until its reply comes.
        c.writes_outstanding.insert(out.seq);
        proto::Request& r = native();
        r.set_seq(out.seq);
        return r;
    };
    auto answer_now = [&](const zk::ResponseBody& body) {
        std::string bytes;
        zk::encode_reply(in.xid, c.last_zxid, zk::Err::kOk, body, bytes);
        out.reply = std::move(bytes);
        return std::nullopt;
    };
    switch (in.type) {
        case zk::OpCode::kPing:
            read().mutable_keep_alive();
            return std::nullopt;
        case zk::OpCode::kCreate:
        case zk::OpCode::kCreate2:
        case zk::OpCode::kCreateContainer:
        case zk::OpCode::kCreateTtl: {
            proto::Create create;
            if (std::optional<zk::Err> refused = native_create(
                    in.type, std::get<zk::CreateRequest>(in.body), c.identity, create)) {
                return refused;
            }
            *write().mutable_create() = std::move(create);
            return std::nullopt;
        }
        case zk::OpCode::kDelete: {
            const auto& body = std::get<zk::DeleteRequest>(in.body);
            proto::Delete* del = write().mutable_delete_();
            del->set_path(body.path);
            del->set_version(body.version);
            return std::nullopt;
        }
        case zk::OpCode::kSetData: {
            const auto& body = std::get<zk::SetDataRequest>(in.body);
            proto::SetData* set = write().mutable_set_data();
            set->set_path(body.path);
            set->set_data(body.data.value_or(""));
            set->set_version(body.version);
            return std::nullopt;
        }
        case zk::OpCode::kMulti: {
            const auto& body = std::get<zk::MultiRequest>(in.body);
            if (body.ops.empty()) {
                return answer_now(zk::MultiResponse{});  // ZooKeeper answers an empty one too
            }
            proto::Multi multi;
            for (const zk::MultiOp& op : body.ops) {
                if (std::optional<zk::Err> refused =
                        native_multi_op(op, c.identity, *multi.add_ops())) {
                    return refused;
                }
                out.op_types.push_back(op.type);
            }
            *write().mutable_multi() = std::move(multi);
            return std::nullopt;
        }
        case zk::OpCode::kMultiRead: {
            // Each read on its own, as ZooKeeper answers each (an error in one fails only it).
            const auto& body = std::get<zk::MultiRequest>(in.body);
            if (body.ops.empty()) {
                return answer_now(zk::MultiResponse{});
            }
            for (const zk::MultiOp& op : body.ops) {
                native_path_read(op.type, std::get<zk::PathWatchRequest>(op.body), read());
            }
            out.answers.resize(out.requests.size());
            return std::nullopt;
        }
        case zk::OpCode::kExists:
        case zk::OpCode::kGetData:
        case zk::OpCode::kGetChildren:
        case zk::OpCode::kGetChildren2:
            native_path_read(in.type, std::get<zk::PathWatchRequest>(in.body), read());
            return std::nullopt;
        case zk::OpCode::kCheck: {
            // A read of the node's version: linearizable, and ordered after this connection's
            // writes like every read here, so it needs no log entry of its own. A get, not an
            // exists: it needs READ, as ZooKeeper's check does (the data stays on this node).
            const auto& body = std::get<zk::CheckVersionRequest>(in.body);
            read().mutable_get()->set_path(body.path);
            out.version = body.version;
            return std::nullopt;
        }
        case zk::OpCode::kGetAcl:
            read().mutable_get_acl()->set_path(std::get<zk::PathRequest>(in.body).path);
            return std::nullopt;
        case zk::OpCode::kSetAcl: {
            const auto& body = std::get<zk::SetAclRequest>(in.body);
            Result<std::vector<proto::AclEntry>, zk::Err> acl = zk_native_acl(body.acl, c.identity);
            if (!acl.ok()) {
                return acl.error();
            }
            proto::SetAcl* set = write().mutable_set_acl();
            set->set_path(body.path);
            set->set_version(body.version);
            for (proto::AclEntry& entry : *acl) {
                *set->add_acl() = std::move(entry);
            }
            return std::nullopt;
        }
        case zk::OpCode::kAuth: {
            // In its turn: the requests after it carry the ids it proves. A failure ends the
            // connection after the reply, as ZooKeeper's does (AUTHFAILED).
            const auto& body = std::get<zk::AuthRequest>(in.body);
            const bool proved =
                zk_add_auth(c.identity, body.scheme, body.auth, options_.super_digest);
            if (!proved) {
                // (The scheme is the client's: cut, so a hostile one cannot flood the log.)
                spdlog::info("zookeeper connection from {}: authentication with scheme {} failed",
                             c.remote, body.scheme.substr(0, 32));
                out.closes = true;
                std::string bytes;
                zk::encode_reply(zk::kXidAuth, c.last_zxid, zk::Err::kAuthFailed,
                                 zk::EmptyResponse{}, bytes);
                out.reply = std::move(bytes);
                return std::nullopt;
            }
            c.caller = zk_caller(c.identity);
            std::string bytes;
            zk::encode_reply(zk::kXidAuth, c.last_zxid, zk::Err::kOk, zk::EmptyResponse{}, bytes);
            out.reply = std::move(bytes);
            return std::nullopt;
        }
        case zk::OpCode::kGetAllChildrenNumber:
            read().mutable_count_descendants()->set_path(std::get<zk::PathRequest>(in.body).path);
            return std::nullopt;
        case zk::OpCode::kGetEphemerals:
            read().mutable_list_ephemerals()->set_prefix(std::get<zk::PathRequest>(in.body).path);
            return std::nullopt;
        case zk::OpCode::kSync: {
            // One ReadIndex round, so that the reads after it are served at or after it. With
            // linearizable reads that holds for every read already; with local reads the sync is
            // a barrier: the reads after it are sent only once this node applied up to its point.
            const auto& body = std::get<zk::PathRequest>(in.body);
            proto::Request& r = read();
            r.set_local_read(false);
            r.mutable_exists()->set_path(body.path);
            out.route = options_.local_reads ? Route::kBarrier : Route::kRead;
            out.path = body.path;
            return std::nullopt;
        }
        case zk::OpCode::kAddWatch: {
            // A persistent watch on this node (ZooKeeper 3.6), as the native AddWatch sets it. A
            // read's place in the order: it sees the connection's writes before it.
            const auto& body = std::get<zk::AddWatchRequest>(in.body);
            if (body.mode != 0 && body.mode != 1) {
                return zk::Err::kBadArguments;
            }
            proto::AddWatch* add = read().mutable_add_watch();
            add->set_path(body.path);
            add->set_recursive(body.mode == 1);
            return std::nullopt;
        }
        case zk::OpCode::kSetWatches:
        case zk::OpCode::kSetWatches2: {
            // A reconnecting client's watches, set again on this node by ZooKeeper's rule.
            const auto& body = std::get<zk::SetWatchesRequest>(in.body);
            proto::RestoreWatches* restore = read().mutable_restore_watches();
            restore->set_relative_zxid(
                static_cast<uint64_t>(std::max<int64_t>(0, body.relative_zxid)));
            restore->mutable_data()->Add(body.data_watches.begin(), body.data_watches.end());
            restore->mutable_exists()->Add(body.exist_watches.begin(), body.exist_watches.end());
            restore->mutable_children()->Add(body.child_watches.begin(), body.child_watches.end());
            restore->mutable_persistent()->Add(body.persistent_watches.begin(),
                                               body.persistent_watches.end());
            restore->mutable_persistent_recursive()->Add(body.persistent_recursive_watches.begin(),
                                                         body.persistent_recursive_watches.end());
            return std::nullopt;
        }
        case zk::OpCode::kRemoveWatches:
        case zk::OpCode::kCheckWatches: {
            const auto& body = std::get<zk::WatchesRequest>(in.body);
            std::vector<proto::WatchKind> kinds;
            switch (body.type) {  // ZooKeeper's WatcherType
                case 1:
                    kinds = {proto::WATCH_CHILDREN};
                    break;
                case 2:
                    kinds = {proto::WATCH_DATA};
                    break;
                case 3:
                    kinds = {proto::WATCH_DATA, proto::WATCH_CHILDREN, proto::WATCH_PERSISTENT,
                             proto::WATCH_PERSISTENT_RECURSIVE};
                    break;
                case 4:
                    kinds = {proto::WATCH_PERSISTENT};
                    break;
                case 5:
                    kinds = {proto::WATCH_PERSISTENT_RECURSIVE};
                    break;
                default:
                    return zk::Err::kBadArguments;
            }
            proto::RemoveWatch* remove = read().mutable_remove_watch();
            remove->set_path(body.path);
            for (proto::WatchKind kind : kinds) {
                remove->add_kinds(kind);
            }
            remove->set_check_only(in.type == zk::OpCode::kCheckWatches);
            return std::nullopt;
        }
        case zk::OpCode::kWhoAmI:
            return answer_now(zk::WhoAmIResponse{zk_who_am_i(c.identity)});
        case zk::OpCode::kCloseSession:
            write().mutable_close_session();
            out.closes = true;
            return std::nullopt;
        default:
            break;
    }
    return zk::Err::kUnimplemented;
}

void ZkFrontend::dispatch(net::ConnectionId id, Conn& c) {
    if (c.dispatching) {
        c.progressed = true;
        return;
    }
    c.dispatching = true;
    do {
        c.progressed = false;
        dispatch_pass(id, c);
    } while (c.progressed && c.phase == Phase::kOpen);
    c.dispatching = false;
}

void ZkFrontend::dispatch_pass(net::ConnectionId id, Conn& c) {
    // The requests from the first one not yet sent: each goes when nothing of the other route is
    // in flight, in order; kNow ones are answered already. Indexes, not iterators: a synchronous
    // answer may add to the deque's end (never removes: flush waits for dispatch to finish).
    std::optional<Route> flying;
    for (size_t i = 0; i < c.pending.size() && c.phase == Phase::kOpen; ++i) {
        Pending& p = c.pending[i];
        if (p.route == Route::kNow) {
            continue;
        }
        if (p.dispatched) {
            if (!p.reply) {
                flying = p.route;
            }
            continue;
        }
        if (flying && (*flying != p.route || p.route == Route::kBarrier)) {
            return;
        }
        flying = p.route;
        p.dispatched = true;
        p.first_request_id = c.next_request_id;
        c.next_request_id += p.requests.size();
        RL_ASSERT(!p.requests.empty());
        for (size_t k = 0; k < p.requests.size(); ++k) {
            proto::Request& request = p.requests[k];
            request.set_request_id(p.first_request_id + k);
            if (p.route == Route::kWrite) {
                request.set_ack_seq(ack_seq(c));
                RL_ASSERT(request.ack_seq() < p.seq);
            }
            // Moved: the reply needs only what Pending keeps beside it. `p` stays valid if a
            // synchronous answer adds to the deque (a deque's push_back keeps references).
            backend_.on_client_request(id, std::move(request));
        }
    }
}

uint64_t ZkFrontend::ack_seq(const Conn& c) const {
    // Every write below the oldest unanswered one has its reply; none at or above it is acked.
    const uint64_t oldest =
        c.writes_outstanding.empty() ? c.next_seq : *c.writes_outstanding.begin();
    return oldest - 1;
}

void ZkFrontend::on_server_message(net::ConnectionId id, const proto::ServerMessage& message) {
    auto it = conns_.find(id);
    if (it == conns_.end()) {
        return;
    }
    Conn& c = it->second;
    if (message.has_watch_event()) {
        const proto::WatchEvent& e = message.watch_event();
        c.last_zxid = std::max(c.last_zxid, static_cast<int64_t>(e.zxid()));
        std::string bytes;
        zk::encode_watch_event(static_cast<int64_t>(e.zxid()), zk_event_type(e.type()),
                               zk::KeeperState::kSyncConnected, e.path(), bytes);
        output_.send(id, std::move(bytes));
        return;
    }
    if (message.has_session_ended()) {
        // The session expired or was closed elsewhere: a ZooKeeper server closes the connection,
        // and the client learns of the expiry when it reconnects.
        if (message.session_ended().session_id() == c.session) {
            fail_connection(id, c, "the session ended");
        }
        return;
    }
    if (!message.has_response()) {
        return;
    }
    const proto::Response& response = message.response();
    if (c.phase == Phase::kConnecting && response.request_id() == c.connect_request_id) {
        answer_connect(id, c, response);
        return;
    }
    complete(id, c, response.request_id(), response);
}

void ZkFrontend::complete(net::ConnectionId id,
                          Conn& c,
                          uint64_t request_id,
                          const proto::Response& response) {
    if (c.phase != Phase::kOpen) {
        return;  // the connection is closing
    }
    auto p = std::find_if(c.pending.begin(), c.pending.end(), [&](const Pending& q) {
        return q.dispatched && !q.reply && request_id >= q.first_request_id &&
               request_id - q.first_request_id < q.requests.size();
    });
    if (p == c.pending.end()) {
        return;  // a request of an earlier phase
    }
    if (p->route == Route::kWrite) {
        c.writes_outstanding.erase(p->seq);
    }
    if (!zk_error_of(response.code())) {
        // The outcome is unknown or no leader can serve: close, and let the client reconnect
        // elsewhere (its session stays; a write in flight is ZooKeeper's ConnectionLoss). Going
        // on would let this connection's writes outnumber what an attach elsewhere expects.
        fail_connection(id, c,
                        "cannot serve the request now (" + proto::Code_Name(response.code()) + ")");
        return;
    }
    c.last_zxid = std::max(c.last_zxid, static_cast<int64_t>(response.applied_index()));
    if (p->type == zk::OpCode::kMultiRead) {
        const size_t slot = request_id - p->first_request_id;
        RL_ASSERT(slot < p->answers.size() && p->answered < p->answers.size());
        p->answers[slot] = response;
        if (++p->answered < p->answers.size()) {
            return;  // more to come; nothing new to flush
        }
        p->reply = format_multi_read(c, *p);
    } else {
        p->reply = format_reply(c, *p, response);
    }
    if (c.dispatching) {
        c.progressed = true;  // dispatch() goes round again and its caller flushes
        return;
    }
    dispatch(id, c);
    flush(id, c);
}

std::string ZkFrontend::format_reply(const Conn& c,
                                     const Pending& p,
                                     const proto::Response& r) const {
    if (p.type == zk::OpCode::kMulti) {
        return format_multi(c, p, r);
    }
    std::string bytes;
    zk::Err err = *zk_error_of(r.code());
    const int64_t zxid = c.last_zxid;
    if (err == zk::Err::kNoNode &&
        (p.type == zk::OpCode::kRemoveWatches || p.type == zk::OpCode::kCheckWatches)) {
        err = zk::Err::kNoWatcher;  // the native answer for "no such watch here"
    }
    if (err != zk::Err::kOk) {
        zk::encode_reply(p.xid, zxid, err, zk::EmptyResponse{}, bytes);
        return bytes;
    }
    switch (p.type) {
        case zk::OpCode::kCreate:
            zk::encode_reply(p.xid, zxid, err, zk::CreateResponse{r.node().path()}, bytes);
            break;
        case zk::OpCode::kCreate2:
        case zk::OpCode::kCreateContainer:
        case zk::OpCode::kCreateTtl:
            zk::encode_reply(p.xid, zxid, err,
                             zk::Create2Response{r.node().path(), zk_stat_of(r.node().stat())},
                             bytes);
            break;
        case zk::OpCode::kSetData:
            zk::encode_reply(p.xid, zxid, err, zk::StatResponse{zk_stat_of(r.node().stat())},
                             bytes);
            break;
        case zk::OpCode::kExists:
            if (!r.exists().exists()) {
                zk::encode_reply(p.xid, zxid, zk::Err::kNoNode, zk::EmptyResponse{}, bytes);
            } else {
                zk::encode_reply(p.xid, zxid, err, zk::StatResponse{zk_stat_of(r.exists().stat())},
                                 bytes);
            }
            break;
        case zk::OpCode::kGetData:
            zk::encode_reply(p.xid, zxid, err,
                             zk::GetDataResponse{r.get().data(), zk_stat_of(r.get().stat())},
                             bytes);
            break;
        case zk::OpCode::kGetChildren:
        case zk::OpCode::kGetChildren2: {
            zk::ChildrenResponse children;
            children.children.assign(r.children().names().begin(), r.children().names().end());
            if (p.type == zk::OpCode::kGetChildren2) {
                children.stat = zk_stat_of(r.children().stat());
            }
            zk::encode_reply(p.xid, zxid, err, children, bytes);
            break;
        }
        case zk::OpCode::kSync:
            zk::encode_reply(p.xid, zxid, err, zk::PathResponse{p.path}, bytes);
            break;
        case zk::OpCode::kCheck: {
            // (A missing node came back as NO_NODE, answered above.)
            const bool matches = p.version == -1 || p.version == r.get().stat().version();
            zk::encode_reply(p.xid, zxid, matches ? zk::Err::kOk : zk::Err::kBadVersion,
                             zk::EmptyResponse{}, bytes);
            break;
        }
        case zk::OpCode::kGetAcl:
            zk::encode_reply(
                p.xid, zxid, err,
                zk::GetAclResponse{zk_acl_of(r.acl().acl()), zk_stat_of(r.acl().stat())}, bytes);
            break;
        case zk::OpCode::kSetAcl:
            zk::encode_reply(p.xid, zxid, err, zk::StatResponse{zk_stat_of(r.node().stat())},
                             bytes);
            break;
        case zk::OpCode::kGetAllChildrenNumber:
            zk::encode_reply(p.xid, zxid, err,
                             zk::CountResponse{static_cast<int32_t>(std::min<uint64_t>(
                                 r.count().count(), std::numeric_limits<int32_t>::max()))},
                             bytes);
            break;
        case zk::OpCode::kGetEphemerals: {
            zk::PathsResponse paths;
            paths.paths.assign(r.paths().paths().begin(), r.paths().paths().end());
            zk::encode_reply(p.xid, zxid, err, paths, bytes);
            break;
        }
        case zk::OpCode::kAddWatch:
            zk::encode_reply(p.xid, zxid, err, zk::ErrorResponse{zk::Err::kOk}, bytes);
            break;
        default:  // ping, delete, closeSession, setWatches
            zk::encode_reply(p.xid, zxid, err, zk::EmptyResponse{}, bytes);
            break;
    }
    return bytes;
}

std::string ZkFrontend::format_multi(const Conn& c,
                                     const Pending& p,
                                     const proto::Response& r) const {
    std::string bytes;
    const zk::Err err = *zk_error_of(r.code());
    if (static_cast<size_t>(r.multi().results_size()) != p.op_types.size()) {
        // Refused as a whole before any operation ran (a malformed path, a limit): the header
        // carries the error, as ZooKeeper's for a request it cannot take.
        RL_ASSERT(err != zk::Err::kOk);
        zk::encode_reply(p.xid, c.last_zxid, err, zk::EmptyResponse{}, bytes);
        return bytes;
    }
    zk::MultiResponse out;
    bool failed_seen = false;
    for (size_t i = 0; i < p.op_types.size(); ++i) {
        const proto::SubResult& sub = r.multi().results(static_cast<int>(i));
        zk::MultiResult& result = out.results.emplace_back();
        if (err != zk::Err::kOk) {
            // ZooKeeper's failed multi: the operations before the failing one say OK (kazoo's
            // RolledBackError), the failing one its error, the later ones RUNTIMEINCONSISTENCY.
            result.type = zk::OpCode::kError;
            if (sub.code() != proto::ROLLED_BACK) {
                result.err = zk_error_of(sub.code()).value_or(zk::Err::kApiError);
                failed_seen = true;
            } else {
                result.err = failed_seen ? zk::Err::kRuntimeInconsistency : zk::Err::kOk;
            }
            continue;
        }
        result.type = p.op_types[i];
        switch (p.op_types[i]) {
            case zk::OpCode::kCreate:
                result.body = zk::CreateResponse{sub.path()};
                break;
            case zk::OpCode::kCreate2:
            case zk::OpCode::kCreateContainer:
            case zk::OpCode::kCreateTtl:
                // Clients read every create with a stat as create2's result
                // (OpResult.CreateResult).
                result.type = zk::OpCode::kCreate2;
                result.body = zk::Create2Response{sub.path(), zk_stat_of(sub.stat())};
                break;
            case zk::OpCode::kSetData:
                result.body = zk::StatResponse{zk_stat_of(sub.stat())};
                break;
            default:  // delete, check
                result.body = zk::EmptyResponse{};
                break;
        }
    }
    RL_ASSERT(err == zk::Err::kOk || failed_seen);
    // The header says OK either way: the outcome of each operation is in its result.
    zk::encode_reply(p.xid, c.last_zxid, zk::Err::kOk, out, bytes);
    return bytes;
}

std::string ZkFrontend::format_multi_read(const Conn& c, const Pending& p) const {
    zk::MultiResponse out;
    for (const proto::Response& r : p.answers) {
        zk::MultiResult& result = out.results.emplace_back();
        const zk::Err err = *zk_error_of(r.code());
        if (err != zk::Err::kOk) {
            result.type = zk::OpCode::kError;
            result.err = err;
        } else if (r.has_get()) {
            result.type = zk::OpCode::kGetData;
            result.body = zk::GetDataResponse{r.get().data(), zk_stat_of(r.get().stat())};
        } else {
            RL_ASSERT(r.has_children());
            result.type = zk::OpCode::kGetChildren;
            zk::ChildrenResponse children;
            children.children.assign(r.children().names().begin(), r.children().names().end());
            result.body = std::move(children);
        }
    }
    std::string bytes;
    zk::encode_reply(p.xid, c.last_zxid, zk::Err::kOk, out, bytes);
    return bytes;
}

void ZkFrontend::flush(net::ConnectionId id, Conn& c) {
    RL_ASSERT(!c.dispatching);
    while (c.phase == Phase::kOpen && !c.pending.empty() && c.pending.front().reply) {
        Pending p = std::move(c.pending.front());
        c.pending.pop_front();
        output_.send(id, std::move(*p.reply));
        if (p.closes) {
            c.phase = Phase::kClosing;
            output_.close(id);
            return;
        }
    }
    if (c.paused && c.pending.size() < options_.pipeline_max / 2) {
        c.paused = false;
        output_.pause_reading(id, false);
    }
}

void ZkFrontend::fail_connection(net::ConnectionId id, Conn& c, const std::string& why) {
    if (c.phase == Phase::kClosing) {
        return;
    }
    spdlog::debug("zookeeper connection {} from {}: closing: {}", id, c.remote, why);
    c.phase = Phase::kClosing;
    output_.close(id);
}

}  // namespace raftlock::server
