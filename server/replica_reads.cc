// Linearizable reads, served once a ReadIndex round confirmed the read point and this node applied
// up to it (Raft thesis §6.4). A read may set a one-shot watch atomically with it: no change can
// slip between the state read and the watch.

#include <fmt/format.h>

#include "server/replica.h"
#include "server/request_codec.h"
#include "statemachine/codec.h"

namespace raftlock::server {

namespace sm = statemachine;

namespace {

constexpr uint32_t kListLimitDefault = 1000;
constexpr uint32_t kListLimitMax = 100000;

// The permission a read needs under a ZooKeeper caller (ZooKeeper's FinalRequestProcessor): READ
// to read a node's data or children, READ or ADMIN for its ACL; 0 for reads ACLs do not guard
// (exists, as in ZooKeeper; lock and session listings, which only the native port sends).
struct ReadPermission {
    uint8_t perms = 0;
    std::string_view path;
};
ReadPermission read_permission(const proto::Request& request) {
    using B = proto::Request::BodyCase;
    switch (request.body_case()) {
        case B::kGet:
            return {sm::kPermRead, request.get().path()};
        case B::kChildren:
            return {sm::kPermRead, request.children().path()};
        case B::kCountDescendants:
            return {sm::kPermRead, request.count_descendants().path()};
        case B::kGetAcl:
            return {sm::kPermRead | sm::kPermAdmin, request.get_acl().path()};
        default:
            return {};
    }
}

// getACL without ADMIN shows digest ids as `user:x`, as ZooKeeper does (ZOOKEEPER-1392): a reader
// learns who may act, not the hashes it could attack offline.
sm::Acl redacted(sm::Acl acl) {
    for (sm::AclEntry& e : acl) {
        if (e.id.scheme == "digest") {
            e.id.id = e.id.id.substr(0, e.id.id.find(':')) + ":x";
        }
    }
    return acl;
}

}  // namespace

bool Replica::serves_local_reads() const {
    return !shutting_down_ && !catching_up() && soft_.leader != raft::kNoNode &&
           applied_index_ >= raw_->committed();
}

void Replica::serve_read(const ClientRef& client, const proto::Request& request) {
    proto::Response response;
    response.set_code(proto::OK);
    // Only reads an ACL guards look at the caller (not exists, sync or a ping's keepalive).
    std::optional<sm::Caller> caller;
    if (const ReadPermission needed = read_permission(request);
        needed.perms != 0 && request.has_caller()) {
        caller = to_caller(request.caller());
        if (!sm::valid_caller(*caller)) {
            response.set_code(proto::BAD_ARGUMENTS);
        } else if (!sm_.permits(needed.path, needed.perms, *caller)) {
            // Refused before any watch is set, as ZooKeeper checks before it registers one.
            response.set_code(proto::NO_AUTH);
        }
        if (response.code() != proto::OK) {
            response.set_message(response.code() == proto::NO_AUTH ? describe(proto::NO_AUTH)
                                                                   : "invalid caller ids");
            respond(client, response);
            return;
        }
    }
    auto watch = [&](const std::string& path, sm::WatchKind kind) {
        response.set_code(add_watch(client.conn, path, kind));
        if (response.code() == proto::LIMIT_EXCEEDED) {
            response.set_message("too many watches on this connection");
        }
    };
    using B = proto::Request::BodyCase;
    switch (request.body_case()) {
        case B::kGet: {
            Result<sm::NodeView, sm::ErrorCode> node = sm_.get(request.get().path());
            if (!node.ok()) {
                response.set_code(to_proto(node.error()));
                break;
            }
            response.mutable_get()->set_data(node->data);
            to_proto(node->stat, *response.mutable_get()->mutable_stat());
            response.mutable_get()->set_kind(static_cast<proto::NodeKind>(node->kind));
            if (request.get().watch()) {
                watch(request.get().path(), sm::WatchKind::kData);
            }
            break;
        }
        case B::kExists: {
            const std::string& path = request.exists().path();
            if (!sm::valid_path(path)) {
                response.set_code(proto::BAD_ARGUMENTS);
                response.set_message("invalid path");
                break;
            }
            const std::optional<sm::Stat> stat = sm_.exists(path);
            response.mutable_exists()->set_exists(stat.has_value());
            if (stat) {
                to_proto(*stat, *response.mutable_exists()->mutable_stat());
            }
            if (request.exists().watch()) {
                watch(path, stat ? sm::WatchKind::kData : sm::WatchKind::kExists);
            }
            break;
        }
        case B::kChildren: {
            Result<std::vector<std::string>, sm::ErrorCode> names =
                sm_.children(request.children().path());
            if (!names.ok()) {
                response.set_code(to_proto(names.error()));
                break;
            }
            for (const std::string& name : *names) {
                response.mutable_children()->add_names(name);
            }
            const std::optional<sm::Stat> parent = sm_.exists(request.children().path());
            RL_ASSERT(parent.has_value());  // its children were just listed
            to_proto(*parent, *response.mutable_children()->mutable_stat());
            if (request.children().watch()) {
                watch(request.children().path(), sm::WatchKind::kChildren);
            }
            break;
        }
        case B::kRestoreWatches:
            restore_watches(client, request.restore_watches(), response);
            break;
        case B::kCountDescendants: {
            Result<size_t, sm::ErrorCode> count =
                sm_.descendant_count(request.count_descendants().path());
            if (!count.ok()) {
                response.set_code(to_proto(count.error()));
                break;
            }
            response.mutable_count()->set_count(*count);
            break;
        }
        case B::kGetAcl: {
            const std::string& path = request.get_acl().path();
            const std::optional<sm::Acl> acl = sm_.acl(path);
            if (!acl) {
                response.set_code(sm::valid_path(path) ? proto::NO_NODE : proto::BAD_ARGUMENTS);
                break;
            }
            const bool admin = !caller || sm_.permits(path, sm::kPermAdmin, *caller);
            const sm::Acl shown = sm::displayed_acl(*acl);
            to_proto(admin ? shown : redacted(shown), *response.mutable_acl()->mutable_acl());
            to_proto(*sm_.exists(path), *response.mutable_acl()->mutable_stat());
            break;
        }
        case B::kListEphemerals:
            for (std::string& path :
                 sm_.ephemerals_of(request.session_id(), request.list_ephemerals().prefix())) {
                response.mutable_paths()->add_paths(std::move(path));
            }
            break;
        case B::kDescribeLock: {
            // A free lock has no record: it is described as free (no holders, no waiters).
            const std::string& name = request.describe_lock().name();
            sm::LockInfo info;
            info.name = name;
            if (std::optional<sm::LockInfo> found = sm_.describe_lock(name)) {
                info = std::move(*found);
            }
            to_proto(info, *response.mutable_lock_info());
            response.mutable_lock_info()->set_now_ms(sm_.now_ms());
            break;
        }
        case B::kListLocks: {
            uint32_t limit = request.list_locks().limit();
            limit = limit == 0 ? kListLimitDefault : std::min(limit, kListLimitMax);
            for (std::string& name : sm_.list_locks(request.list_locks().prefix(), limit)) {
                response.mutable_list_locks()->add_names(std::move(name));
            }
            break;
        }
        case B::kListSessions: {
            for (const sm::SessionInfo& s : sm_.sessions()) {
                if (response.sessions().sessions_size() >= static_cast<int>(kListLimitMax)) {
                    break;
                }
                to_proto(s, *response.mutable_sessions()->add_sessions());
            }
            break;
        }
        case B::kListMembers:
            // After ReadIndex every committed configuration is applied.
            fill_members(applied_conf_, *response.mutable_members());
            break;
        case B::kGetUser:
        case B::kGetRole:
        case B::kListUsers:
        case B::kListRoles:
            serve_auth_read(client.conn, request, response);
            break;
        default:
            RL_PANIC("serve_read given a request that is not a read");
    }
    respond(client, response);
}

proto::Code Replica::add_watch(net::ConnectionId conn,
                               const std::string& path,
                               sm::WatchKind kind) {
    // The node's own bound (--watches-per-connection-max), below the registry's hard one.
    if (watches_.watch_count(conn) >= config_.watches_per_connection_max) {
        return proto::LIMIT_EXCEEDED;
    }
    return to_proto(watches_.add(conn, path, kind));
}

void Replica::restore_watches(const ClientRef& client,
                              const proto::RestoreWatches& request,
                              proto::Response& response) {
    // ZooKeeper's rule (DataTree.setWatches), checked against the state this read is served at,
    // which a ReadIndex round made at least as new as anything the client saw. All paths are
    // checked first, so a bad one leaves nothing half set.
    for (const auto* paths : {&request.data(), &request.exists(), &request.children(),
                              &request.persistent(), &request.persistent_recursive()}) {
        for (const std::string& path : *paths) {
            if (!sm::valid_path(path)) {
                response.set_code(proto::BAD_ARGUMENTS);
                response.set_message("invalid path in RestoreWatches: " + path);
                return;
            }
        }
    }
    const uint64_t seen = request.relative_zxid();
    std::vector<sm::WatchEvent> fired;
    auto fire = [&](const std::string& path, sm::EventType type, uint64_t zxid) {
        fired.push_back(sm::WatchEvent{client.conn, path, type, zxid});
    };
    size_t limit_hit = 0;
    auto set = [&](const std::string& path, sm::WatchKind kind) {
        const proto::Code added = add_watch(client.conn, path, kind);
        RL_ASSERT(added == proto::OK || added == proto::LIMIT_EXCEEDED);  // paths checked above
        limit_hit += added == proto::OK ? 0 : 1;
    };
    const uint64_t now = sm_.last_applied();
    for (const std::string& path : request.data()) {
        const std::optional<sm::Stat> stat = sm_.exists(path);
        if (!stat) {
            fire(path, sm::EventType::kNodeDeleted, now);
        } else if (stat->mzxid > seen) {
            fire(path, sm::EventType::kNodeDataChanged, stat->mzxid);
        } else {
            set(path, sm::WatchKind::kData);
        }
    }
    for (const std::string& path : request.exists()) {
        if (const std::optional<sm::Stat> stat = sm_.exists(path)) {
            fire(path, sm::EventType::kNodeCreated, stat->czxid);
        } else {
            set(path, sm::WatchKind::kExists);
        }
    }
    for (const std::string& path : request.children()) {
        const std::optional<sm::Stat> stat = sm_.exists(path);
        if (!stat) {
            fire(path, sm::EventType::kNodeDeleted, now);
        } else if (stat->pzxid > seen) {
            fire(path, sm::EventType::kNodeChildrenChanged, stat->pzxid);
        } else {
            set(path, sm::WatchKind::kChildren);
        }
    }
    for (const std::string& path : request.persistent()) {
        set(path, sm::WatchKind::kPersistent);
    }
    for (const std::string& path : request.persistent_recursive()) {
        set(path, sm::WatchKind::kPersistentRecursive);
    }
    // The events leave before the answer, as events of applied entries leave before the answers
    // that see them.
    for (const sm::WatchEvent& event : fired) {
        send_watch_event(event);
    }
    if (limit_hit > 0) {
        response.set_code(proto::LIMIT_EXCEEDED);
        response.set_message(
            fmt::format("too many watches on this connection: {} not set", limit_hit));
    }
}

}  // namespace raftlock::server
