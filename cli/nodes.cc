// `raftlock get | set | create | delete | ls | stat | watch`: the node tree.

#include <optional>

#include "cli/common.h"
#include "client/duration.h"

namespace raftlock::cli {

namespace {

// --- nodes --------------------------------------------------------------------------------------

struct FenceArgs {
    std::string lock;
    std::optional<uint64_t> token;

    std::optional<client::Fence> fence() const {
        if (lock.empty() != !token.has_value()) {
            throw UsageError{"--fence-lock and --fence-token go together"};
        }
        if (lock.empty()) {
            return std::nullopt;
        }
        return client::Fence{lock, *token};
    }
};

struct NodeArgs {
    std::string path;
    std::string data;
    int32_t version = -1;
    FenceArgs fence;
    std::string session_ttl = "10s";
    // create only
    bool ephemeral = false;
    bool sequential = false;
    bool container = false;
    std::string ttl;
    bool hold = false;
};

// Writes need a session (exactly-once). A plain write opens a short one and closes it after.
template <typename Op>
int with_session(const Context& ctx, const NodeArgs& args, Op op) {
    Client client(ctx.client_options());
    auto session = client.open_session(duration_arg("--session-ttl", args.session_ttl));
    if (!session.ok()) {
        return report(ctx, session.error());
    }
    const int code = op(client);
    (void)client.close_session();
    return code;
}

int cmd_get(const Context& ctx, const std::string& path, bool with_stat) {
    Client client(ctx.client_options());
    auto node = client.get(path);
    if (!node.ok()) {
        return report(ctx, node.error());
    }
    std::string text = node->data + (node->data.ends_with('\n') ? "" : "\n");
    if (with_stat) {
        text += stat_text(node->stat);
    }
    emit(ctx,
         json{{"path", path},
              {"data", node->data},
              {"kind", client::to_string(node->kind)},
              {"stat", stat_json(node->stat)}},
         text);
    return kExitOk;
}

int cmd_set(const Context& ctx, const NodeArgs& args) {
    client::WriteOptions options{args.version, args.fence.fence()};
    return with_session(ctx, args, [&](Client& client) {
        auto stat = client.set(args.path, args.data, options);
        if (!stat.ok()) {
            return report(ctx, stat.error());
        }
        emit(ctx, json{{"path", args.path}, {"stat", stat_json(*stat)}},
             fmt::format("set {} (version {})\n", args.path, stat->version));
        return static_cast<int>(kExitOk);
    });
}

int cmd_delete(const Context& ctx, const NodeArgs& args) {
    client::WriteOptions options{args.version, args.fence.fence()};
    return with_session(ctx, args, [&](Client& client) {
        auto removed = client.remove(args.path, options);
        if (!removed.ok()) {
            return report(ctx, removed.error());
        }
        emit(ctx, json{{"path", args.path}, {"deleted", true}},
             fmt::format("deleted {}\n", args.path));
        return static_cast<int>(kExitOk);
    });
}

client::CreateOptions create_options(const NodeArgs& args) {
    const int kinds = int{args.ephemeral} + int{args.container} + int{!args.ttl.empty()};
    if (kinds > 1 || (args.sequential && args.container)) {
        throw UsageError{
            "--container, --ttl and --ephemeral exclude each other, and "
            "--sequential goes with --ephemeral or --ttl only"};
    }
    if (args.hold && !args.ephemeral) {
        throw UsageError{"--hold only makes sense with --ephemeral"};
    }
    client::CreateOptions options;
    options.fence = args.fence.fence();
    if (args.ephemeral) {
        options.kind =
            args.sequential ? client::NodeKind::kEphemeralSequential : client::NodeKind::kEphemeral;
    } else if (args.sequential && args.ttl.empty()) {
        options.kind = client::NodeKind::kPersistentSequential;
    } else if (args.container) {
        options.kind = client::NodeKind::kContainer;
    } else if (!args.ttl.empty()) {
        options.kind = args.sequential ? client::NodeKind::kTtlSequential : client::NodeKind::kTtl;
        options.ttl = duration_arg("--ttl", args.ttl);
    }
    return options;
}

// An ephemeral node lives as long as the CLI's session. Without --hold the session is left open,
// as `acquire` does: the node stays until the session's TTL (--session-ttl) runs out, `raftlock
// renew` extends it, `raftlock session close` ends it. With --hold the CLI keeps the session alive
// until it is interrupted, then closes it, which deletes the node.
int cmd_create_ephemeral(const Context& ctx,
                         const NodeArgs& args,
                         const client::CreateOptions& options) {
    if (args.hold) {
        block_signals();
    }
    std::atomic<bool> ended{false};  // before the client, whose callback sets it
    Client client(ctx.client_options());
    const milliseconds ttl = duration_arg("--session-ttl", args.session_ttl);
    auto session = client.open_session(ttl);
    if (!session.ok()) {
        return report(ctx, session.error());
    }
    auto created = client.create(args.path, args.data, options);
    if (!created.ok()) {
        (void)client.close_session();
        return report(ctx, created.error());
    }
    emit(ctx, json{{"path", created->path}, {"session", *session}, {"ephemeral", true}},
         fmt::format("created {} (ephemeral, session {}{})\n", created->path, *session,
                     args.hold ? "; held until interrupted"
                               : fmt::format("; gone after {} without `raftlock renew`",
                                             client::format_duration(ttl))));
    if (!args.hold) {
        return kExitOk;
    }
    client.set_session_callback([&ended](client::SessionLoss loss) {
        ended = ended || loss != client::SessionLoss::kSafeUntilPassed;
    });
    wait_for_interrupt([&] { return ended.load(); });
    (void)client.close_session();
    return ended ? kExitFailed : kExitOk;
}

int cmd_create(const Context& ctx, const NodeArgs& args) {
    const client::CreateOptions options = create_options(args);
    if (args.ephemeral) {
        return cmd_create_ephemeral(ctx, args, options);
    }
    return with_session(ctx, args, [&](Client& client) {
        auto created = client.create(args.path, args.data, options);
        if (!created.ok()) {
            return report(ctx, created.error());
        }
        emit(ctx, json{{"path", created->path}, {"stat", stat_json(created->stat)}},
             fmt::format("created {}\n", created->path));
        return static_cast<int>(kExitOk);
    });
}

int cmd_ls(const Context& ctx, const std::string& path) {
    Client client(ctx.client_options());
    auto names = client.children(path);
    if (!names.ok()) {
        return report(ctx, names.error());
    }
    std::string text;
    for (const std::string& name : *names) {
        text += name + "\n";
    }
    emit(ctx, json{{"path", path}, {"children", *names}}, text);
    return kExitOk;
}

int cmd_stat(const Context& ctx, const std::string& path) {
    Client client(ctx.client_options());
    auto stat = client.exists(path);
    if (!stat.ok()) {
        return report(ctx, stat.error());
    }
    if (!stat->has_value()) {
        return report(ctx, Error{ErrorCode::kNoNode, fmt::format("no node {}", path)});
    }
    emit(ctx, json{{"path", path}, {"stat", stat_json(**stat)}}, stat_text(**stat));
    return kExitOk;
}

// Prints events of `path` (and below with --recursive) until interrupted or `count` events.
// The watch is persistent and re-added after a reconnect; events of the gap are not replayed.
int cmd_watch(const Context& ctx, const std::string& path, bool recursive, uint64_t count) {
    block_signals();
    std::atomic<uint64_t> seen{0};  // before the client, whose callback counts in it
    Client client(ctx.client_options());
    const bool as_json = ctx.json;
    auto id = client.add_watch(path, recursive, [&seen, as_json](const client::WatchEvent& e) {
        if (as_json) {
            fmt::print(
                "{}\n",
                json{{"path", e.path}, {"event", client::to_string(e.type)}, {"zxid", e.zxid}}
                    .dump());
        } else {
            fmt::print("{} {} zxid={}\n", client::to_string(e.type), e.path, e.zxid);
        }
        std::fflush(stdout);
        seen++;
    });
    if (!id.ok()) {
        return report(ctx, id.error());
    }
    if (!ctx.json) {
        fmt::print(stderr, "watching {}{} (Ctrl-C to stop)\n", path, recursive ? " and below" : "");
    }
    wait_for_interrupt([&] { return count > 0 && seen >= count; });
    return kExitOk;
}

void add_write_flags(CLI::App& cmd, NodeArgs& args, bool with_version) {
    if (with_version) {
        cmd.add_option("--version", args.version, "expected version (-1: any)")
            ->capture_default_str();
    }
    cmd.add_option("--fence-lock", args.fence.lock,
                   "apply only while --fence-token holds this lock");
    cmd.add_option("--fence-token", args.fence.token, "the fencing token of --fence-lock");
    cmd.add_option("--session-ttl", args.session_ttl, "timeout of the write's session")
        ->capture_default_str();
}

}  // namespace

void add_node_commands(CLI::App& app, Command& run) {
    static std::string read_path;
    static bool get_stat = false;
    auto* cmd = app.add_subcommand("get", "print a node's data");
    cmd->add_option("path", read_path, "node path")->required();
    cmd->add_flag("--stat", get_stat, "print the stat too");
    cmd->callback(
        [&run] { run = [](const Context& ctx) { return cmd_get(ctx, read_path, get_stat); }; });

    static NodeArgs set;
    cmd = app.add_subcommand("set", "set a node's data");
    cmd->add_option("path", set.path, "node path")->required();
    cmd->add_option("data", set.data, "new data")->required();
    add_write_flags(*cmd, set, true);
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_set(ctx, set); }; });

    static NodeArgs create;
    cmd = app.add_subcommand(
        "create",
        "create a node; an --ephemeral node lives as long as its session: without "
        "--hold until the session's TTL (or `raftlock session close`), with --hold until "
        "this command is interrupted");
    cmd->add_option("path", create.path, "node path (a prefix with --sequential)")->required();
    cmd->add_option("data", create.data, "data");
    cmd->add_flag("--ephemeral", create.ephemeral, "deleted when its session ends");
    cmd->add_flag("--sequential", create.sequential, "append a 10-digit sequence number");
    cmd->add_flag("--container", create.container, "deleted with its last child");
    cmd->add_option("--ttl", create.ttl, "deleted when unchanged and childless this long");
    cmd->add_flag("--hold", create.hold, "--ephemeral: keep the session alive until interrupted");
    add_write_flags(*cmd, create, false);
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_create(ctx, create); }; });

    static NodeArgs remove;
    cmd = app.add_subcommand("delete", "delete a node");
    cmd->add_option("path", remove.path, "node path")->required();
    add_write_flags(*cmd, remove, true);
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_delete(ctx, remove); }; });

    cmd = app.add_subcommand("ls", "list a node's children");
    cmd->add_option("path", read_path, "node path")->required();
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_ls(ctx, read_path); }; });

    cmd = app.add_subcommand("stat", "print a node's stat");
    cmd->add_option("path", read_path, "node path")->required();
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_stat(ctx, read_path); }; });

    static bool recursive = false;
    static uint64_t count = 0;
    cmd = app.add_subcommand("watch", "print changes of a node until interrupted");
    cmd->add_option("path", read_path, "node path")->required();
    cmd->add_flag("--recursive", recursive, "also changes below the path");
    cmd->add_option("--count", count, "stop after this many events (0: never)");
    cmd->callback([&run] {
        run = [](const Context& ctx) { return cmd_watch(ctx, read_path, recursive, count); };
    });
}

}  // namespace raftlock::cli
