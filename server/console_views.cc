#include "server/console_views.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/assert.h"

namespace raftlock::server {

namespace sm = statemachine;
using nlohmann::json;

namespace {

// Names and data are arbitrary bytes: what is not UTF-8 is replaced rather than thrown on.
std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json lock_view(const sm::LockInfo& info, int64_t now_ms) {
    json holders = json::array();
    for (size_t i = 0; i < info.holders.size() && i < kConsoleQueueMax; ++i) {
        const sm::HolderInfo& h = info.holders[i];
        holders.push_back({{"session", h.session},
                           {"owner", h.owner_tag},
                           {"token", h.token},
                           {"since_cluster_ms", h.since_ms},
                           {"held_for_ms", std::max<int64_t>(0, now_ms - h.since_ms)},
                           {"count", h.count}});
    }
    json waiters = json::array();
    for (size_t i = 0; i < info.waiters.size() && i < kConsoleQueueMax; ++i) {
        const sm::WaiterInfo& w = info.waiters[i];
        waiters.push_back({{"position", i + 1},
                           {"session", w.session},
                           {"owner", w.owner_tag},
                           {"mode", sm::to_string(w.mode)},
                           {"waited_ms", std::max<int64_t>(0, now_ms - w.enqueued_ms)},
                           {"deadline_in_ms", w.deadline_ms - now_ms},
                           {"together", w.together}});
    }
    const auto more = [](size_t n) { return n > kConsoleQueueMax ? n - kConsoleQueueMax : 0; };
    return json{{"name", info.name},
                {"kind", info.semaphore ? "semaphore" : sm::to_string(info.mode)},
                {"permits", info.permits},
                {"holders", std::move(holders)},
                {"holders_more", more(info.holders.size())},
                {"waiters", std::move(waiters)},
                {"waiters_more", more(info.waiters.size())},
                {"lock_delay_ms", info.lock_delay_ms},
                {"delay_left_ms", std::max<int64_t>(0, info.free_at_ms - now_ms)}};
}

}  // namespace

std::string console_locks_json(const sm::StateMachine& machine,
                               std::string_view prefix,
                               size_t limit_max,
                               int64_t now_ms) {
    RL_ASSERT(limit_max <= kConsoleListMax);
    // One name more than asked for says whether there are more.
    const std::vector<std::string> names = machine.list_locks(prefix, limit_max + 1);
    json locks = json::array();
    for (size_t i = 0; i < names.size() && i < limit_max; ++i) {
        const std::optional<sm::LockInfo> info = machine.describe_lock(names[i]);
        RL_ASSERT(info.has_value());  // just listed
        locks.push_back(lock_view(*info, now_ms));
    }
    return dump(json{{"total", machine.lock_count()},
                     {"more", names.size() > limit_max},
                     {"cluster_ms", now_ms},
                     {"locks", std::move(locks)}});
}

std::string console_lock_json(const sm::StateMachine& machine,
                              std::string_view name,
                              int64_t now_ms,
                              bool& found) {
    const std::optional<sm::LockInfo> info = machine.describe_lock(name);
    found = info.has_value();
    if (!found) {
        return dump(json{{"error", "no such lock"}, {"name", name}});
    }
    return dump(lock_view(*info, now_ms));
}

std::string console_node_json(const sm::StateMachine& machine,
                              std::string_view path,
                              size_t limit_max,
                              bool& found) {
    RL_ASSERT(limit_max <= kConsoleListMax);
    const Result<sm::NodeView, sm::ErrorCode> node = machine.get(path);
    found = node.ok();
    if (!found) {
        return dump(json{
            {"error", node.error() == sm::ErrorCode::kNoNode ? "no such node" : "not a valid path"},
            {"path", path}});
    }
    const sm::Stat& st = node->stat;
    json j{{"path", path},
           {"kind", sm::to_string(node->kind)},
           {"stat",
            {{"czxid", st.czxid},
             {"mzxid", st.mzxid},
             {"ctime", st.ctime},
             {"mtime", st.mtime},
             {"version", st.version},
             {"ephemeral_owner", st.ephemeral_owner},
             {"num_children", st.num_children},
             {"data_length", st.data_length}}}};
    // The admin port asks for no login: data is shown only where no login would be needed.
    const std::optional<sm::Acl> acl = machine.acl(path);
    if (machine.auth().enabled()) {
        j["data_hidden"] = "authentication is enabled";
    } else if (acl && !acl->empty()) {
        j["data_hidden"] = "the node has an ACL";
    } else {
        j["data"] = node->data.substr(0, kConsoleDataBytesMax);
        j["data_cut"] = node->data.size() > kConsoleDataBytesMax;
    }
    const auto children = machine.children(path);
    RL_ASSERT(children.ok());  // the node exists
    json names = json::array();
    for (size_t i = 0; i < children->size() && i < limit_max; ++i) {
        names.push_back((*children)[i]);
    }
    j["children"] = std::move(names);
    j["more"] = children->size() > limit_max ? children->size() - limit_max : 0;
    return dump(j);
}

}  // namespace raftlock::server
