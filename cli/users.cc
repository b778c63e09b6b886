// `raftlock user | role | auth`: users, roles and authentication.

#include <optional>

#include "cli/common.h"

namespace raftlock::cli {

namespace {

// --- users, roles, authentication --------------------------------------------------------------

int done_or_report(const Context& ctx,
                   const client::ClientResult<client::Done>& result,
                   const json& value,
                   const std::string& text) {
    if (!result.ok()) {
        return report(ctx, result.error());
    }
    emit(ctx, value, text);
    return kExitOk;
}

client::Permission permission_arg(const std::string& access,
                                  const std::string& space,
                                  const std::string& prefix) {
    const std::optional<client::Access> a = client::parse_access(access);
    const std::optional<client::Space> s = client::parse_space(space);
    if (!a) {
        throw UsageError{fmt::format("access '{}': read, write or admin", access)};
    }
    if (!s) {
        throw UsageError{fmt::format("space '{}': lock, node, redis or sql", space)};
    }
    return client::Permission{*a, *s, prefix};
}

json names_json(const std::vector<std::string>& names) {
    return json(names);
}

}  // namespace

void add_user_commands(CLI::App& app, Command& run) {
    static std::string name;
    static std::string role;
    static std::string new_password_file;
    static bool no_password = false;
    auto* user = app.add_subcommand("user", "manage users (needs the root role)");
    user->require_subcommand(1);
    auto* cmd = user->add_subcommand(
        "add", "add a user; its password from --new-password-file, a prompt or stdin");
    cmd->add_option("name", name, "user name")->required();
    cmd->add_option("--new-password-file", new_password_file, "file holding the password");
    cmd->add_flag("--no-password", no_password, "a user that logs in by certificate only");
    cmd->callback([&run] {
        run = [](const Context& ctx) -> int {
            std::optional<std::string> password;
            if (!no_password) {
                password =
                    read_password(new_password_file, fmt::format("new password of {}", name));
            }
            Client client(ctx.client_options());
            return done_or_report(ctx, client.add_user(name, password),
                                  json{{"user", name}, {"added", true}},
                                  fmt::format("user {} added\n", name));
        };
    });
    cmd = user->add_subcommand("passwd", "set a user's password (anyone may set their own)");
    cmd->add_option("name", name, "user name")->required();
    cmd->add_option("--new-password-file", new_password_file, "file holding the password");
    cmd->callback([&run] {
        run = [](const Context& ctx) -> int {
            const std::string password =
                read_password(new_password_file, fmt::format("new password of {}", name));
            Client client(ctx.client_options());
            return done_or_report(ctx, client.set_password(name, password),
                                  json{{"user", name}, {"password_set", true}},
                                  fmt::format("password of {} set\n", name));
        };
    });
    cmd = user->add_subcommand("delete", "delete a user");
    cmd->add_option("name", name, "user name")->required();
    cmd->callback([&run] {
        run = [](const Context& ctx) -> int {
            Client client(ctx.client_options());
            return done_or_report(ctx, client.delete_user(name),
                                  json{{"user", name}, {"deleted", true}},
                                  fmt::format("user {} deleted\n", name));
        };
    });
    for (const bool grant : {true, false}) {
        cmd = user->add_subcommand(grant ? "grant" : "revoke",
                                   grant ? "give a user a role" : "take a role from a user");
        cmd->add_option("name", name, "user name")->required();
        cmd->add_option("role", role, "role name (root: everything)")->required();
        cmd->callback([&run, grant] {
            run = [grant](const Context& ctx) -> int {
                Client client(ctx.client_options());
                return done_or_report(
                    ctx, grant ? client.grant_role(name, role) : client.revoke_role(name, role),
                    json{{"user", name}, {"role", role}, {grant ? "granted" : "revoked", true}},
                    fmt::format("role {} {} user {}\n", role, grant ? "granted to" : "revoked from",
                                name));
            };
        });
    }
    cmd = user->add_subcommand("list", "list users");
    cmd->callback([&run] {
        run = [](const Context& ctx) -> int {
            Client client(ctx.client_options());
            auto names = client.list_users();
            if (!names.ok()) {
                return report(ctx, names.error());
            }
            emit(ctx, json{{"users", names_json(*names)}},
                 names->empty() ? "" : fmt::format("{}\n", fmt::join(*names, "\n")));
            return kExitOk;
        };
    });
    cmd = user->add_subcommand("get", "show a user and its roles (default: yourself)");
    cmd->add_option("name", name, "user name");
    cmd->callback([&run] {
        run = [](const Context& ctx) -> int {
            Client client(ctx.client_options());
            auto info = client.get_user(name);
            if (!info.ok()) {
                return report(ctx, info.error());
            }
            emit(ctx,
                 json{{"user", info->name},
                      {"has_password", info->has_password},
                      {"roles", names_json(info->roles)}},
                 fmt::format("user {}{}\nroles: {}\n", info->name,
                             info->has_password ? "" : " (no password: certificate only)",
                             fmt::join(info->roles, " ")));
            return kExitOk;
        };
    });

    static std::string access;
    static std::string space;
    static std::string prefix;
    auto* roles = app.add_subcommand("role", "manage roles (needs the root role)");
    roles->require_subcommand(1);
    for (const bool add : {true, false}) {
        cmd = roles->add_subcommand(add ? "add" : "delete",
                                    add ? "add a role" : "delete a role (and take it from users)");
        cmd->add_option("name", name, "role name")->required();
        cmd->callback([&run, add] {
            run = [add](const Context& ctx) -> int {
                Client client(ctx.client_options());
                return done_or_report(ctx, add ? client.add_role(name) : client.delete_role(name),
                                      json{{"role", name}, {add ? "added" : "deleted", true}},
                                      fmt::format("role {} {}\n", name, add ? "added" : "deleted"));
            };
        });
    }
    for (const bool grant : {true, false}) {
        cmd = roles->add_subcommand(
            grant ? "grant" : "revoke",
            grant ? "let a role read, write or administer the names under a prefix"
                  : "take a permission from a role");
        cmd->add_option("name", name, "role name")->required();
        cmd->add_option("access", access, "read, write (acquire/release/create/set) or admin")
            ->required();
        cmd->add_option("space", space, "lock (lock names), node (node paths), redis or sql")
            ->required();
        cmd->add_option("prefix", prefix, "byte prefix of the names (default: all)");
        cmd->callback([&run, grant] {
            run = [grant](const Context& ctx) -> int {
                const client::Permission p = permission_arg(access, space, prefix);
                Client client(ctx.client_options());
                return done_or_report(
                    ctx,
                    grant ? client.grant_permission(name, p) : client.revoke_permission(name, p),
                    json{{"role", name},
                         {"access", access},
                         {"space", space},
                         {"prefix", prefix},
                         {grant ? "granted" : "revoked", true}},
                    fmt::format("role {}: {} {} {} \"{}\"\n", name, grant ? "granted" : "revoked",
                                access, space, prefix));
            };
        });
    }
    cmd = roles->add_subcommand("list", "list roles");
    cmd->callback([&run] {
        run = [](const Context& ctx) -> int {
            Client client(ctx.client_options());
            auto names = client.list_roles();
            if (!names.ok()) {
                return report(ctx, names.error());
            }
            emit(ctx, json{{"roles", names_json(*names)}},
                 fmt::format("{}\n", fmt::join(*names, "\n")));
            return kExitOk;
        };
    });
    cmd = roles->add_subcommand("get", "show a role's permissions");
    cmd->add_option("name", name, "role name")->required();
    cmd->callback([&run] {
        run = [](const Context& ctx) -> int {
            Client client(ctx.client_options());
            auto info = client.get_role(name);
            if (!info.ok()) {
                return report(ctx, info.error());
            }
            json rows = json::array();
            std::string text = fmt::format("role {}\n", info->name);
            for (const client::Permission& p : info->permissions) {
                rows.push_back(json{{"access", std::string(client::to_string(p.access))},
                                    {"space", std::string(client::to_string(p.space))},
                                    {"prefix", p.prefix}});
                text += fmt::format("  {} {} \"{}\"\n", client::to_string(p.access),
                                    client::to_string(p.space), p.prefix);
            }
            emit(ctx, json{{"role", info->name}, {"permissions", rows}}, text);
            return kExitOk;
        };
    });

    auto* auth = app.add_subcommand("auth", "turn authentication on or off, or show it");
    auth->require_subcommand(1);
    for (const bool enable : {true, false}) {
        cmd = auth->add_subcommand(enable ? "enable" : "disable",
                                   enable ? "check every request against users and roles (needs "
                                            "a user holding root)"
                                          : "stop checking (needs root)");
        cmd->callback([&run, enable] {
            run = [enable](const Context& ctx) -> int {
                Client client(ctx.client_options());
                return done_or_report(
                    ctx, client.set_auth_enabled(enable), json{{"auth_enabled", enable}},
                    fmt::format("authentication {}\n", enable ? "enabled" : "disabled"));
            };
        });
    }
    cmd = auth->add_subcommand("status", "whether authentication is on, and who you are");
    cmd->callback([&run] {
        run = [](const Context& ctx) -> int {
            Client client(ctx.client_options());
            auto status = client.auth_status();
            if (!status.ok()) {
                return report(ctx, status.error());
            }
            emit(ctx,
                 json{{"enabled", status->enabled}, {"user", status->user}, {"root", status->root}},
                 fmt::format("authentication {}; logged in as {}{}\n",
                             status->enabled ? "enabled" : "disabled",
                             status->user.empty() ? "nobody" : status->user,
                             status->root ? " (root)" : ""));
            return kExitOk;
        };
    });
}

}  // namespace raftlock::cli
