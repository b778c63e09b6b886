// The node tree, with ZooKeeper's semantics: create (all kinds), delete, set, check, multi.
// Error precedence follows ZooKeeper's PrepRequestProcessor: NoNode (parent), NodeExists,
// NoChildrenForEphemerals for create; NoNode, BadVersion, NotEmpty for delete.

#include <cstdio>

#include "base/assert.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine {

namespace {

std::string_view parent_of(std::string_view path) {
    size_t pos = path.rfind('/');
    RL_ASSERT(pos != std::string_view::npos);
    return pos == 0 ? std::string_view("/") : path.substr(0, pos);
}

std::string_view name_of(std::string_view path) {
    return path.substr(path.rfind('/') + 1);
}

// ZooKeeper's sequential suffix: the parent's cversion, as "%010d".
std::string sequential_suffix(int32_t cversion) {
    char buf[16];
    int n = std::snprintf(buf, sizeof buf, "%010d", cversion);
    RL_ASSERT(n > 0 && n < static_cast<int>(sizeof buf));
    return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

Response StateMachine::create_node(
    SessionId session, const Create& op, const Caller* caller, Index zxid, ApplyResult& out) {
    std::vector<Timer> timers;
    TreeCtx ctx{zxid, &out.triggers, nullptr, &timers, nullptr, caller};
    Response response;
    response.code = do_create(session, op, ctx, &response.path, &response.stat);
    timers_.insert(timers.begin(), timers.end());
    return response;
}

Response StateMachine::apply_single_write(const Op& op,
                                          const Caller* caller,
                                          Index zxid,
                                          ApplyResult& out) {
    std::vector<Timer> timers;
    TreeCtx ctx{zxid, &out.triggers, nullptr, &timers, nullptr, caller};
    Response response;
    if (const auto* del = std::get_if<Delete>(&op)) {
        response.code = do_delete(del->path, del->version, ctx);
    } else {
        const auto& set = std::get<SetData>(op);
        response.code = do_set(set.path, set.data, set.version, ctx, &response.stat);
    }
    RL_ASSERT(timers.empty());
    return response;
}

ErrorCode StateMachine::do_create(
    SessionId session, const Create& op, TreeCtx& ctx, std::string* created_path, Stat* stat) {
    const std::string parent_path(parent_of(op.path));
    auto parent_it = nodes_.find(parent_path);
    if (parent_it == nodes_.end()) {
        return ErrorCode::kNoNode;
    }
    Node& parent = parent_it->second;
    if (!permitted(parent, kPermCreate, ctx)) {
        return ErrorCode::kNoAuth;
    }
    std::string path = op.path;
    if (is_sequential(op.kind)) {
        path += sequential_suffix(parent.stat.cversion);
    }
    if (nodes_.contains(path)) {
        return ErrorCode::kNodeExists;
    }
    if (is_ephemeral(parent.kind)) {
        return ErrorCode::kNoChildrenForEphemerals;
    }
    if (is_ephemeral(op.kind) &&
        sessions_.at(session).ephemerals.size() >= kEphemeralsPerSessionMax) {
        return ErrorCode::kLimitExceeded;
    }
    Node node;
    node.data = op.data;
    node.kind = op.kind;
    node.ttl_ms = op.ttl_ms;
    node.acl = canonical_acl(op.acl);
    node.stat.czxid = node.stat.mzxid = node.stat.pzxid = ctx.zxid;
    node.stat.ctime = node.stat.mtime = now_ms_;
    node.stat.ephemeral_owner = is_ephemeral(op.kind) ? session : kNoSession;
    node.stat.data_length = static_cast<int32_t>(op.data.size());
    if (ctx.undo != nullptr) {
        ctx.undo->push_back(Undo{Undo::Kind::kCreated, path, {}, parent.stat});
    }
    parent.children.emplace(name_of(path));
    parent.stat.cversion++;
    parent.stat.pzxid = ctx.zxid;
    parent.stat.num_children++;
    if (node.stat.ephemeral_owner != kNoSession) {
        sessions_.at(session).ephemerals.insert(path);
    }
    if (is_ttl(op.kind)) {
        ctx.timers->push_back(Timer{now_ms_ + op.ttl_ms, TimerKind::kTtl, path, ctx.zxid, {}});
    }
    *stat = node.stat;
    nodes_.emplace(path, std::move(node));
    ctx.triggers->push_back(WatchTrigger{path, EventType::kNodeCreated, ctx.zxid});
    ctx.triggers->push_back(WatchTrigger{parent_path, EventType::kNodeChildrenChanged, ctx.zxid});
    *created_path = std::move(path);
    return ErrorCode::kOk;
}

ErrorCode StateMachine::do_delete(std::string_view path, int32_t version, TreeCtx& ctx) {
    auto it = nodes_.find(path);
    if (it == nodes_.end() || path == "/") {
        return path == "/" ? ErrorCode::kBadArguments : ErrorCode::kNoNode;
    }
    auto parent = nodes_.find(parent_of(path));
    RL_ASSERT(parent != nodes_.end());  // a node's parent exists
    if (!permitted(parent->second, kPermDelete, ctx)) {
        return ErrorCode::kNoAuth;
    }
    if (version != -1 && version != it->second.stat.version) {
        return ErrorCode::kBadVersion;
    }
    if (!it->second.children.empty()) {
        return ErrorCode::kNotEmpty;
    }
    remove_node(it->first, ctx);
    return ErrorCode::kOk;
}

void StateMachine::remove_node(const std::string& path_ref, TreeCtx& ctx) {
    const std::string path = path_ref;  // path_ref may live in the node we erase
    auto it = nodes_.find(path);
    RL_ASSERT(it != nodes_.end());
    RL_ASSERT(it->second.children.empty());
    const std::string parent_path(parent_of(path));
    Node& parent = nodes_.at(parent_path);
    if (ctx.undo != nullptr) {
        ctx.undo->push_back(Undo{Undo::Kind::kDeleted, path, it->second, parent.stat});
    }
    if (SessionId owner = it->second.stat.ephemeral_owner; owner != kNoSession) {
        RL_ASSERT(sessions_.at(owner).ephemerals.erase(path) == 1);
    }
    RL_ASSERT(parent.children.erase(std::string(name_of(path))) == 1);
    parent.stat.cversion++;
    parent.stat.pzxid = ctx.zxid;
    parent.stat.num_children--;
    nodes_.erase(it);
    ctx.triggers->push_back(WatchTrigger{path, EventType::kNodeDeleted, ctx.zxid});
    ctx.triggers->push_back(WatchTrigger{parent_path, EventType::kNodeChildrenChanged, ctx.zxid});
    // ZooKeeper's ContainerManager deletes an emptied container some time later; deleting it in
    // the same entry is deterministic and leaves no garbage. Recursion depth <= kPathDepthMax.
    if (parent.kind == NodeKind::kContainer && parent.children.empty()) {
        if (ctx.emptied_containers != nullptr) {
            ctx.emptied_containers->push_back(parent_path);
        } else {
            remove_node(parent_path, ctx);
        }
    }
}

ErrorCode StateMachine::do_set(
    std::string_view path, std::string_view data, int32_t version, TreeCtx& ctx, Stat* stat) {
    auto it = nodes_.find(path);
    if (it == nodes_.end()) {
        return ErrorCode::kNoNode;
    }
    Node& node = it->second;
    if (!permitted(node, kPermWrite, ctx)) {
        return ErrorCode::kNoAuth;
    }
    if (version != -1 && version != node.stat.version) {
        return ErrorCode::kBadVersion;
    }
    if (ctx.undo != nullptr) {
        Node before;
        before.data = node.data;
        before.stat = node.stat;
        ctx.undo->push_back(Undo{Undo::Kind::kSet, it->first, std::move(before), {}});
    }
    node.data = data;
    node.stat.version++;
    node.stat.mzxid = ctx.zxid;
    node.stat.mtime = now_ms_;
    node.stat.data_length = static_cast<int32_t>(data.size());
    *stat = node.stat;
    ctx.triggers->push_back(WatchTrigger{it->first, EventType::kNodeDataChanged, ctx.zxid});
    return ErrorCode::kOk;
}

ErrorCode StateMachine::do_check(std::string_view path, int32_t version, const TreeCtx& ctx) const {
    auto it = nodes_.find(path);
    if (it == nodes_.end()) {
        return ErrorCode::kNoNode;
    }
    if (!permitted(it->second, kPermRead, ctx)) {
        return ErrorCode::kNoAuth;
    }
    if (version != -1 && version != it->second.stat.version) {
        return ErrorCode::kBadVersion;
    }
    return ErrorCode::kOk;
}

Response StateMachine::apply_multi(
    SessionId session, const Multi& op, const Caller* caller, Index zxid, ApplyResult& out) {
    std::vector<Undo> undo;
    std::vector<WatchTrigger> triggers;
    std::vector<Timer> timers;
    std::vector<std::string> emptied;
    TreeCtx ctx{zxid, &triggers, &undo, &timers, op.containers_at_end ? &emptied : nullptr, caller};
    Response response;
    response.results.resize(op.ops.size());
    for (size_t i = 0; i < op.ops.size(); i++) {
        SubResult& result = response.results[i];
        if (const auto* create = std::get_if<Create>(&op.ops[i])) {
            result.code = do_create(session, *create, ctx, &result.path, &result.stat);
        } else if (const auto* del = std::get_if<Delete>(&op.ops[i])) {
            result.code = do_delete(del->path, del->version, ctx);
        } else if (const auto* set = std::get_if<SetData>(&op.ops[i])) {
            result.code = do_set(set->path, set->data, set->version, ctx, &result.stat);
        } else {
            const auto& check = std::get<Check>(op.ops[i]);
            result.code = do_check(check.path, check.version, ctx);
        }
        if (result.code != ErrorCode::kOk) {
            // All or nothing: undo what the earlier sub-ops did; no trigger or timer escapes.
            roll_back(undo);
            ErrorCode failed = result.code;
            for (SubResult& other : response.results) {
                other = SubResult{ErrorCode::kRolledBack, {}, {}};
            }
            response.results[i].code = failed;
            response.code = failed;
            return response;
        }
    }
    // Containers the sub-ops emptied and left empty go now, parents emptied by that after them.
    for (size_t i = 0; i < emptied.size(); i++) {
        RL_ASSERT(i < kMultiOpsMax * kPathDepthMax);
        auto it = nodes_.find(emptied[i]);
        if (it != nodes_.end() && it->second.kind == NodeKind::kContainer &&
            it->second.children.empty()) {
            remove_node(it->first, ctx);
        }
    }
    out.triggers.insert(out.triggers.end(), triggers.begin(), triggers.end());
    timers_.insert(timers.begin(), timers.end());
    return response;
}

Response StateMachine::set_acl(const SetAcl& op, const Caller* caller) {
    Response response;
    auto it = nodes_.find(op.path);
    if (it == nodes_.end()) {
        response.code = ErrorCode::kNoNode;
        return response;
    }
    Node& node = it->second;
    if (caller != nullptr && !acl_permits(node.acl, kPermAdmin, *caller)) {
        response.code = ErrorCode::kNoAuth;
        return response;
    }
    if (op.version != -1 && op.version != node.stat.aversion) {
        response.code = ErrorCode::kBadVersion;
        return response;
    }
    RL_ASSERT(valid_acl(op.acl));
    // No watch fires: ZooKeeper's setACL triggers none either. mzxid stays (data did not change).
    node.acl = canonical_acl(op.acl);
    node.stat.aversion++;
    RL_ASSERT(node.stat.aversion > 0);
    response.stat = node.stat;
    return response;
}

void StateMachine::roll_back(std::vector<Undo>& undo) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
        Undo& u = *it;
        if (u.kind == Undo::Kind::kSet) {
            Node& node = nodes_.at(u.path);
            node.data = std::move(u.before.data);
            node.stat = u.before.stat;
            continue;
        }
        Node& parent = nodes_.at(std::string(parent_of(u.path)));
        parent.stat = u.parent_stat_before;
        if (u.kind == Undo::Kind::kCreated) {
            auto node_it = nodes_.find(u.path);
            RL_ASSERT(node_it != nodes_.end());
            if (SessionId owner = node_it->second.stat.ephemeral_owner; owner != kNoSession) {
                sessions_.at(owner).ephemerals.erase(u.path);
            }
            parent.children.erase(std::string(name_of(u.path)));
            nodes_.erase(node_it);
        } else {
            if (SessionId owner = u.before.stat.ephemeral_owner; owner != kNoSession) {
                sessions_.at(owner).ephemerals.insert(u.path);
            }
            parent.children.emplace(name_of(u.path));
            nodes_.emplace(u.path, std::move(u.before));
        }
    }
    undo.clear();
}

void StateMachine::fire_ttl(const Timer& timer, Index zxid, ApplyResult& out) {
    auto it = nodes_.find(timer.key);
    // The node may be gone, or be a newer node at the same path (which has its own timer).
    if (it == nodes_.end() || !is_ttl(it->second.kind) || it->second.stat.czxid != timer.id) {
        return;
    }
    const Node& node = it->second;
    TimeMs expiry_ms = node.stat.mtime + node.ttl_ms;
    // ZooKeeper: a TTL node is deleted when unmodified for its TTL and without children.
    if (!node.children.empty() || expiry_ms > now_ms_) {
        TimeMs next_ms = expiry_ms > now_ms_ ? expiry_ms : now_ms_ + node.ttl_ms;
        timers_.insert(Timer{next_ms, TimerKind::kTtl, timer.key, timer.id, {}});
        return;
    }
    std::vector<Timer> timers;
    TreeCtx ctx{zxid, &out.triggers, nullptr, &timers};
    remove_node(timer.key, ctx);
}

}  // namespace raftlock::statemachine
