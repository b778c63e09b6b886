// `raftlock describe | locks | session | cluster status`: what the cluster holds and who serves it.

#include <algorithm>
#include <optional>

#include <fmt/chrono.h>
#include <fmt/ranges.h>

#include "cli/common.h"
#include "client/duration.h"

namespace raftlock::cli {

namespace {

// --- describe, locks ----------------------------------------------------------------------------

// Cluster time is milliseconds since the Unix epoch by the leaders' clocks, carried in the log and
// never going back (docs/statemachine.md); the answer's now_ms is that of the last entry applied,
// which stands still while the cluster is idle. This machine's clock says how long ago a time of
// the cluster's was in wall time (its offset from the leaders' clocks included).
int64_t wall_now_ms() {
    return std::chrono::duration_cast<milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// "2026-12-01T22:10:03.123Z"
std::string utc_time(int64_t epoch_ms) {
    const std::chrono::sys_time<milliseconds> t{milliseconds(epoch_ms)};
    const auto seconds = std::chrono::floor<std::chrono::seconds>(t);
    return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", seconds, (t - seconds).count());
}

// A span for people: "850ms", "5.0s", "2m05s", "1h00m07s".
std::string span(int64_t ms) {
    if (ms < 1000) {
        return fmt::format("{}ms", std::max<int64_t>(ms, 0));
    }
    if (ms < 60'000) {
        return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000);
    }
    const int64_t s = ms / 1000;
    if (s < 3600) {
        return fmt::format("{}m{:02}s", s / 60, s % 60);
    }
    return fmt::format("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60);
}

json lock_info_json(const client::LockInfo& info) {
    const int64_t wall_ms = wall_now_ms();
    json holders = json::array();
    for (const client::LockHolder& h : info.holders) {
        holders.push_back(json{{"session", h.session},
                               {"owner", h.owner_tag},
                               {"token", h.token},
                               {"since_ms", h.since_ms},
                               {"since", utc_time(h.since_ms)},
                               {"held_ms", info.now_ms - h.since_ms},
                               {"held_wall_ms", wall_ms - h.since_ms},
                               {"count", h.count}});
    }
    json waiters = json::array();
    for (const client::LockWaiter& w : info.waiters) {
        waiters.push_back(json{{"session", w.session},
                               {"owner", w.owner_tag},
                               {"mode", client::to_string(w.mode)},
                               {"enqueued_ms", w.enqueued_ms},
                               {"deadline_ms", w.deadline_ms},
                               {"together", w.together}});
    }
    return json{{"lock", info.name},
                {"semaphore", info.semaphore},
                {"permits", info.permits},
                {"mode", client::to_string(info.mode)},
                {"holders", holders},
                {"waiters", waiters},
                {"lock_delay_ms", info.lock_delay_ms},
                {"free_at_ms", info.free_at_ms},
                {"now_ms", info.now_ms}};
}

std::string lock_info_text(const client::LockInfo& info) {
    std::string out = fmt::format("lock     {}\n", info.name);
    out += info.semaphore ? fmt::format("kind     semaphore of {} permits\n", info.permits)
                          : fmt::format("kind     {}\n", client::to_string(info.mode));
    out += fmt::format("holders  {}\n", info.holders.size());
    const int64_t wall_ms = wall_now_ms();
    for (const client::LockHolder& h : info.holders) {
        out += fmt::format(
            "  session {}  owner '{}'  token {}  count {}  held {} (cluster time), since {}, {} "
            "ago by this machine's clock\n",
            h.session, h.owner_tag, h.token, h.count, span(info.now_ms - h.since_ms),
            utc_time(h.since_ms), span(wall_ms - h.since_ms));
    }
    out += fmt::format("waiters  {}\n", info.waiters.size());
    for (const client::LockWaiter& w : info.waiters) {
        out += fmt::format("  session {}  owner '{}'  {}  waiting {}{}\n", w.session, w.owner_tag,
                           client::to_string(w.mode), span(info.now_ms - w.enqueued_ms),
                           w.together.empty()
                               ? ""
                               : fmt::format("  together with {}", fmt::join(w.together, ", ")));
    }
    if (info.free_at_ms > info.now_ms) {
        out += fmt::format("delay    free in {}\n", span(info.free_at_ms - info.now_ms));
    }
    return out;
}

int cmd_describe(const Context& ctx, const std::string& name) {
    Client client(ctx.client_options());
    auto info = client.describe(name);
    if (!info.ok()) {
        return report(ctx, info.error());
    }
    emit(ctx, lock_info_json(*info), lock_info_text(*info));
    return kExitOk;
}

int cmd_locks(const Context& ctx, const std::string& prefix, uint32_t limit) {
    Client client(ctx.client_options());
    auto names = client.list_locks(prefix, limit);
    if (!names.ok()) {
        return report(ctx, names.error());
    }
    std::string text;
    for (const std::string& name : *names) {
        text += name + "\n";
    }
    emit(ctx, json{{"locks", *names}}, text);
    return kExitOk;
}

// --- sessions, cluster --------------------------------------------------------------------------

int cmd_session_list(const Context& ctx) {
    Client client(ctx.client_options());
    auto sessions = client.list_sessions();
    if (!sessions.ok()) {
        return report(ctx, sessions.error());
    }
    json rows = json::array();
    std::string text = fmt::format("{:<20} {:>10} {:>10} {:>6} {}\n", "ID", "TIMEOUT", "EPHEMERALS",
                                   "LOCKS", "OWNER");
    for (const client::SessionInfo& s : *sessions) {
        rows.push_back(json{{"id", s.id},
                            {"timeout_ms", s.timeout_ms},
                            {"last_keepalive_ms", s.last_keepalive_ms},
                            {"ephemerals", s.ephemerals},
                            {"locks", s.locks},
                            {"owner", s.owner}});
        text += fmt::format("{:<20} {:>10} {:>10} {:>6} {}\n", s.id,
                            client::format_duration(milliseconds(s.timeout_ms)), s.ephemerals,
                            s.locks, s.owner.empty() ? "-" : s.owner);
    }
    emit(ctx, json{{"sessions", rows}}, text);
    return kExitOk;
}

int cmd_session_close(const Context& ctx, uint64_t session) {
    Client client(ctx.client_options());
    // The library counts closing a session that is already gone as success (right for a retried
    // close); a person asking to close one should hear that it was gone.
    // Listing every session needs the root role: without it, the close itself says what it finds.
    auto sessions = client.list_sessions();
    if (!sessions.ok() && sessions.error().code != ErrorCode::kPermissionDenied) {
        return report(ctx, sessions.error());
    }
    const bool live = !sessions.ok() ||
                      std::any_of(sessions->begin(), sessions->end(),
                                  [&](const client::SessionInfo& s) { return s.id == session; });
    if (!live) {
        return report(ctx, Error{ErrorCode::kSessionExpired,
                                 fmt::format("session {} does not exist: it expired, was closed, "
                                             "or never existed (see `raftlock session list`)",
                                             session)});
    }
    if (auto attached = client.attach_session(session); !attached.ok()) {
        return report(ctx, attached.error());
    }
    if (auto closed = client.close_session(); !closed.ok()) {
        return report(ctx, closed.error());
    }
    emit(ctx, json{{"session", session}, {"closed", true}},
         fmt::format("session {} closed (its locks released, its ephemeral nodes deleted)\n",
                     session));
    return kExitOk;
}

struct NodeRow {
    Endpoint endpoint;
    client::ClientResult<client::NodeStatus> status;
};

std::string cluster_text(const std::vector<NodeRow>& rows, uint64_t commit) {
    std::string out = fmt::format("{:<4} {:<22} {:<13} {:>6} {:>6} {:>10} {:>10} {:>6}\n", "ID",
                                  "ENDPOINT", "ROLE", "TERM", "LEADER", "COMMIT", "APPLIED", "LAG");
    for (const NodeRow& row : rows) {
        const std::string endpoint = client::to_string(row.endpoint);
        if (!row.status.ok()) {
            out += fmt::format("{:<4} {:<22} unreachable ({})\n", "-", endpoint,
                               row.status.error().message);
            continue;
        }
        const client::NodeStatus& s = *row.status;
        out += fmt::format("{:<4} {:<22} {:<13} {:>6} {:>6} {:>10} {:>10} {:>6}\n", s.id, endpoint,
                           s.role, s.term, s.leader, s.commit, s.applied,
                           commit > s.applied ? commit - s.applied : 0);
    }
    return out;
}

// Asks every endpoint about itself, in parallel; unreachable nodes are rows too. The lag of a node
// is how far its applied index trails the highest commit index reported (the leader's, normally).
int cmd_cluster_status(const Context& ctx) {
    Client client(ctx.client_options());
    std::vector<std::future<client::ClientResult<client::NodeStatus>>> pending;
    for (const Endpoint& endpoint : ctx.endpoints) {
        pending.push_back(std::async(std::launch::async,
                                     [&client, endpoint] { return client.node_status(endpoint); }));
    }
    std::vector<NodeRow> rows;
    uint64_t commit = 0;
    for (size_t i = 0; i < pending.size(); i++) {
        rows.push_back(NodeRow{ctx.endpoints[i], pending[i].get()});
        if (rows.back().status.ok()) {
            commit = std::max(commit, rows.back().status->commit);
        }
    }
    json nodes = json::array();
    bool any_reachable = false;
    for (const NodeRow& row : rows) {
        json node{{"endpoint", client::to_string(row.endpoint)}, {"reachable", row.status.ok()}};
        if (row.status.ok()) {
            any_reachable = true;
            const client::NodeStatus& s = *row.status;
            node.update(json{{"id", s.id},
                             {"role", s.role},
                             {"term", s.term},
                             {"leader", s.leader},
                             {"commit", s.commit},
                             {"applied", s.applied},
                             {"lag", commit > s.applied ? commit - s.applied : 0}});
        } else {
            node["error"] = row.status.error().message;
        }
        nodes.push_back(std::move(node));
    }
    emit(ctx, json{{"nodes", nodes}}, cluster_text(rows, commit));
    if (!any_reachable) {
        return report(ctx, Error{ErrorCode::kConnectFailed,
                                 fmt::format("no raftlock node reachable at {}: is the cluster "
                                             "up? try `scripts/cluster.sh up`",
                                             client::to_string(ctx.endpoints))});
    }
    return kExitOk;
}

}  // namespace

void add_inspect_commands(CLI::App& app, Command& run) {
    static std::string describe_name;
    auto* cmd = app.add_subcommand("describe", "show a lock's holders and waiters");
    cmd->add_option("name", describe_name, "lock name")->required();
    cmd->callback(
        [&run] { run = [](const Context& ctx) { return cmd_describe(ctx, describe_name); }; });

    static std::string locks_prefix;
    static uint32_t locks_limit = 0;
    cmd = app.add_subcommand("locks", "list lock names");
    cmd->add_option("prefix", locks_prefix, "only names starting with this");
    cmd->add_option("--limit", locks_limit, "at most this many (0: the server's default)");
    cmd->callback([&run] {
        run = [](const Context& ctx) { return cmd_locks(ctx, locks_prefix, locks_limit); };
    });

    auto* session = app.add_subcommand("session", "list or close sessions");
    session->require_subcommand(1);
    cmd = session->add_subcommand("list", "list live sessions");
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_session_list(ctx); }; });
    static uint64_t close_id = 0;
    cmd = session->add_subcommand("close",
                                  "close a session: releases its locks, deletes its "
                                  "ephemeral nodes");
    cmd->add_option("id", close_id, "session id")->required();
    cmd->callback(
        [&run] { run = [](const Context& ctx) { return cmd_session_close(ctx, close_id); }; });

    auto* cluster = app.add_subcommand("cluster", "cluster-wide views");
    cluster->require_subcommand(1);
    cmd = cluster->add_subcommand("status", "ask every endpoint for its role, term and indexes");
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_cluster_status(ctx); }; });
}

}  // namespace raftlock::cli
