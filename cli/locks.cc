// `raftlock acquire | renew | release | lock`: locks, and a command run while holding one.

#include <algorithm>
#include <atomic>
#include <optional>

#include <sys/wait.h>
#include <unistd.h>

#include "cli/common.h"
#include "client/duration.h"

extern char** environ;

namespace raftlock::cli {

namespace {

// --- locks --------------------------------------------------------------------------------------

struct LockArgs {
    std::vector<std::string> names;  // one lock, or a multi-lock (all or none)
    std::string ttl = "30s";
    std::string wait = "10s";
    bool no_wait = false;
    bool shared = false;
    uint32_t permits = 0;
    std::string owner;
    std::string lock_delay = "0";
    std::string grace;                 // lock only
    std::vector<std::string> command;  // lock only
};

client::AcquireOptions acquire_options(const Context& ctx, const LockArgs& args) {
    client::AcquireOptions options;
    options.wait = args.no_wait ? milliseconds(0) : duration_arg("--wait", args.wait);
    options.timeout = options.wait + ctx.timeout;
    options.shared = args.shared;
    options.permits = args.permits;
    options.owner_tag = args.owner;
    options.lock_delay = duration_arg("--lock-delay", args.lock_delay);
    return options;
}

using Leases = std::vector<client::Lease>;

// One lock with acquire, several with acquire_many: all of them or none, with one token.
client::ClientResult<Leases> acquire_all(Client& client,
                                         const std::vector<std::string>& names,
                                         const client::AcquireOptions& options) {
    if (names.size() > 1) {
        return client.acquire_many(names, options);
    }
    auto lease = client.acquire(names.front(), options);
    if (!lease.ok()) {
        return lease.error();
    }
    return Leases{*lease};
}

// Opens a session and acquires under it. An interrupt closes the session, which ends the wait
// (or gives back a grant), so an interrupted CLI leaves nothing behind. On failure the session is
// closed too. `interrupted` tells the caller to exit 130.
client::ClientResult<Leases> open_and_acquire(Client& client,
                                              const Context& ctx,
                                              const LockArgs& args,
                                              bool& interrupted) {
    const milliseconds ttl = duration_arg("--ttl", args.ttl);
    const client::AcquireOptions options = acquire_options(ctx, args);
    auto session = client.open_session(ttl);
    if (!session.ok()) {
        return session.error();
    }
    auto leases = interruptible<client::ClientResult<Leases>>(
        [&] { return acquire_all(client, args.names, options); },
        [&] { (void)client.close_session(); }, interrupted);
    if (!leases.ok() && !interrupted) {
        (void)client.close_session();
    }
    return leases;
}

std::string joined_names(const Leases& leases, std::string_view separator) {
    std::string out;
    for (const client::Lease& lease : leases) {
        out += (out.empty() ? "" : std::string(separator)) + lease.name;
    }
    return out;
}

int cmd_acquire(const Context& ctx, const LockArgs& args) {
    block_signals();
    Client client(ctx.client_options());
    bool interrupted = false;
    auto leases = open_and_acquire(client, ctx, args, interrupted);
    if (interrupted) {
        fmt::print(stderr, "raftlock: interrupted; the session was closed, nothing is held\n");
        return 128 + SIGINT;
    }
    if (!leases.ok()) {
        return report(ctx, leases.error());
    }
    const milliseconds ttl = duration_arg("--ttl", args.ttl);
    const client::Lease& lease = leases->front();  // a multi-lock's share session and token
    json out{{"session", lease.session},
             {"token", lease.token},
             {"owner", lease.owner_tag},
             {"ttl_ms", ttl.count()}};
    if (leases->size() == 1) {
        out["lock"] = lease.name;
    } else {
        out["locks"] = args.names;
    }
    // The client is destroyed without closing the session: the locks stay until release or TTL.
    emit(ctx, out,
         fmt::format("{:<9}{}\nsession  {}\ntoken    {}\nheld until released or {} without "
                     "`raftlock renew --session {}`\n",
                     leases->size() == 1 ? "lock" : "locks", joined_names(*leases, ", "),
                     lease.session, lease.token, client::format_duration(ttl), lease.session));
    return kExitOk;
}

int cmd_renew(const Context& ctx, uint64_t session) {
    Client client(ctx.client_options());
    if (auto attached = client.attach_session(session); !attached.ok()) {
        return report(ctx, attached.error());
    }
    if (auto renewed = client.keep_alive(); !renewed.ok()) {
        return report(ctx, renewed.error());
    }
    emit(ctx, json{{"session", session}, {"renewed", true}},
         fmt::format("session {} renewed: its timeout starts again now\n", session));
    return kExitOk;
}

struct ReleaseArgs {
    std::string name;
    uint64_t session = 0;
    std::optional<uint64_t> token;
    std::optional<std::string> owner;
    bool force = false;
};

// The session's hold of the lock, looked up when --token is not given.
client::ClientResult<client::Lease> find_hold(Client& client, const ReleaseArgs& args) {
    auto info = client.describe(args.name);
    if (!info.ok()) {
        return info.error();
    }
    for (const client::LockHolder& holder : info->holders) {
        if (holder.session == args.session && (!args.owner || holder.owner_tag == *args.owner)) {
            return client::Lease{args.name, holder.owner_tag, holder.token, args.session,
                                 holder.count};
        }
    }
    return Error{ErrorCode::kNotLockHolder,
                 fmt::format("session {} holds no hold of '{}' (see `raftlock describe {}`)",
                             args.session, args.name, args.name)};
}

// --force: the hold is taken away without attaching to its session (an administrator's act on a
// holder that is stuck), every count at once.
int force_release(const Context& ctx, Client& client, const client::Lease& lease) {
    if (auto released = client.force_release(lease.name, lease.session, lease.token);
        !released.ok()) {
        return report(ctx, released.error());
    }
    emit(ctx,
         json{{"lock", lease.name},
              {"session", lease.session},
              {"token", lease.token},
              {"hold_count", 0},
              {"forced", true}},
         fmt::format("released {} from session {} (token {}), forced: the holder was told, and "
                     "the lock's lock-delay, if it has one, runs before the next grant\n",
                     lease.name, lease.session, lease.token));
    return kExitOk;
}

int cmd_release(const Context& ctx, const ReleaseArgs& args) {
    Client client(ctx.client_options());
    client::Lease lease{args.name, args.owner.value_or(""), args.token.value_or(0), args.session};
    if (!args.token) {
        auto found = find_hold(client, args);
        if (!found.ok()) {
            return report(ctx, found.error());
        }
        lease = std::move(found).value();
    }
    if (args.force) {
        return force_release(ctx, client, lease);
    }
    if (auto attached = client.attach_session(args.session); !attached.ok()) {
        return report(ctx, attached.error());
    }
    auto left = client.release(lease);
    if (!left.ok()) {
        return report(ctx, left.error());
    }
    emit(ctx,
         json{{"lock", lease.name},
              {"session", lease.session},
              {"token", lease.token},
              {"hold_count", *left}},
         *left == 0 ? fmt::format("released {} (session {}, token {})\n", lease.name, lease.session,
                                  lease.token)
                    : fmt::format("released one hold of {}; {} left (session {}, token {})\n",
                                  lease.name, *left, lease.session, lease.token));
    return kExitOk;
}

// --- lock: run a command while holding the lock -------------------------------------------------

// argv and the environment for the command, built before fork() so the child only calls
// async-signal-safe functions.
struct Spawn {
    std::vector<std::string> strings;
    std::vector<char*> argv;
    std::vector<char*> envp;
};

// RAFTLOCK_LOCK names the lock, or a multi-lock's locks joined by commas (one token for all).
Spawn prepare_spawn(const std::vector<std::string>& command, const Leases& leases) {
    Spawn spawn;
    const std::vector<std::string> ours = {
        fmt::format("RAFTLOCK_TOKEN={}", leases.front().token),
        fmt::format("RAFTLOCK_LOCK={}", joined_names(leases, ",")),
        fmt::format("RAFTLOCK_SESSION={}", leases.front().session),
    };
    spawn.strings = command;
    const size_t env_begin = spawn.strings.size();
    for (char** e = environ; *e != nullptr; e++) {
        const std::string_view entry(*e);
        if (!entry.starts_with("RAFTLOCK_TOKEN=") && !entry.starts_with("RAFTLOCK_LOCK=") &&
            !entry.starts_with("RAFTLOCK_SESSION=")) {
            spawn.strings.emplace_back(entry);
        }
    }
    spawn.strings.insert(spawn.strings.end(), ours.begin(), ours.end());
    for (size_t i = 0; i < spawn.strings.size(); i++) {
        (i < env_begin ? spawn.argv : spawn.envp).push_back(spawn.strings[i].data());
    }
    spawn.argv.push_back(nullptr);
    spawn.envp.push_back(nullptr);
    return spawn;
}

// Starts the command; -1 when fork failed. An exec failure shows as exit code 127, as in shells.
pid_t start_command(Spawn& spawn) {
    const pid_t pid = fork();
    if (pid != 0) {
        return pid;
    }
    pthread_sigmask(SIG_SETMASK, &original_signal_mask(), nullptr);
    execvpe(spawn.argv[0], spawn.argv.data(), spawn.envp.data());
    const char message[] = "raftlock: cannot run the command\n";
    (void)!write(STDERR_FILENO, message, sizeof(message) - 1);
    _exit(127);
}

int exit_status_code(int status) {
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return kExitFailed;
}

struct Supervision {
    int exit_code = 0;
    bool lock_lost = false;
};

// Waits for the command. When the lock is lost (the session callback, or safe-until passed
// without a newer acknowledged keepalive) it sends SIGTERM at once and SIGKILL `grace` later:
// both before safe-until + margin, the earliest moment the cluster could expire the session and
// grant the lock to someone else. Interrupts are forwarded to the command.
Supervision supervise(pid_t child,
                      const Client& client,
                      const std::atomic<bool>& lost,
                      milliseconds grace) {
    std::optional<client::SteadyTime> term_sent;
    bool kill_sent = false;
    for (;;) {
        int status = 0;
        if (waitpid(child, &status, WNOHANG) == child) {
            return Supervision{exit_status_code(status), term_sent.has_value()};
        }
        const auto now = SteadyClock::now();
        const auto safe_until = client.safe_until();
        if (!term_sent && (lost || !safe_until || now >= *safe_until)) {
            kill(child, SIGTERM);
            term_sent = now;
        } else if (term_sent && !kill_sent && now >= *term_sent + grace) {
            kill(child, SIGKILL);
            kill_sent = true;
        }
        const int sig = take_signal(milliseconds(5));
        if (is_interrupt(sig)) {
            kill(child, sig);  // the command decides; we keep holding the lock until it exits
        }
    }
}

// `lock NAME... -- CMD ARGS`: main() keeps the words after `--` out of the parse. Without `--`,
// the first word is the one lock and the rest the command (`lock NAME CMD ARGS`).
LockArgs split_lock_command(LockArgs args) {
    if (command_after_dashes()) {
        args.command = *command_after_dashes();
    } else if (!args.names.empty()) {
        args.command.assign(args.names.begin() + 1, args.names.end());
        args.names.resize(1);
    }
    if (args.names.empty() || args.command.empty()) {
        throw UsageError{
            "lock needs the lock names, then `--` and the command: raftlock lock "
            "NAME... -- CMD ARGS..."};
    }
    return args;
}

int cmd_lock(const Context& ctx, const LockArgs& parsed) {
    const LockArgs args = split_lock_command(parsed);
    const milliseconds ttl = duration_arg("--ttl", args.ttl);
    ClientOptions options = ctx.client_options();
    options.safety_margin = client::default_safety_margin(ttl);
    const milliseconds grace = args.grace.empty()
                                   ? std::max(*options.safety_margin / 4, milliseconds(1))
                                   : duration_arg("--grace", args.grace);
    block_signals();
    std::atomic<bool> lost{false};     // before the client, whose callbacks set them
    std::atomic<bool> revoked{false};  // taken by an administrator (release --force)
    Client client(options);
    client.set_session_callback([&lost](client::SessionLoss) { lost = true; });
    // The session holds these locks only, so any hold of them taken away is ours.
    client.set_lock_revoked_callback([&](const std::string& name, uint64_t) {
        if (std::find(args.names.begin(), args.names.end(), name) != args.names.end()) {
            revoked = true;
            lost = true;
        }
    });
    bool interrupted = false;
    auto leases = open_and_acquire(client, ctx, args, interrupted);
    if (interrupted) {
        return 128 + SIGINT;
    }
    if (!leases.ok()) {
        return report(ctx, leases.error());
    }
    Spawn spawn = prepare_spawn(args.command, *leases);
    const pid_t child = start_command(spawn);
    if (child < 0) {
        (void)client.close_session();
        return report(ctx, Error{ErrorCode::kInvalidArgument,
                                 fmt::format("cannot start '{}': fork failed", args.command[0])});
    }
    const Supervision result = supervise(child, client, lost, grace);
    if (result.lock_lost) {
        (void)client.close_session();  // best effort: the session is probably gone already
        fmt::print(stderr,
                   "raftlock: lock '{}' lost (session {}{}): the command was stopped; its exit "
                   "code was {}\n",
                   joined_names(*leases, "', '"), leases->front().session,
                   revoked ? ", taken away by an administrator" : "", result.exit_code);
        return kExitLockLost;
    }
    for (const client::Lease& lease : *leases) {
        (void)client.release(lease);
    }
    (void)client.close_session();
    return result.exit_code;
}

void add_lock_flags(CLI::App& cmd, LockArgs& args) {
    cmd.add_option("names", args.names,
                   "lock name; several: all of them or none, one token (a multi-lock)")
        ->required();
    cmd.add_option("--ttl", args.ttl, "session timeout: the lock's lifetime without keepalives")
        ->capture_default_str();
    auto* wait = cmd.add_option("--wait", args.wait, "how long to queue for the lock")
                     ->capture_default_str();
    cmd.add_flag("--no-wait", args.no_wait, "fail at once if the lock is busy")->excludes(wait);
    cmd.add_flag("--shared", args.shared, "shared (read) mode");
    cmd.add_option("--permits", args.permits, "a semaphore of N permits");
    cmd.add_option("--owner", args.owner, "owner tag (holders of one session told apart)");
    cmd.add_option("--lock-delay", args.lock_delay,
                   "after the holder's session expires, grant nobody for this long");
}

}  // namespace

void add_lock_commands(CLI::App& app, Command& run) {
    static LockArgs acquire;
    auto* cmd = app.add_subcommand(
        "acquire",
        "acquire a lock (or several, all or none) under a new session and print the session id "
        "and token; the locks stay after exit until released or the TTL passes");
    add_lock_flags(*cmd, acquire);
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_acquire(ctx, acquire); }; });

    static LockArgs lock;
    cmd = app.add_subcommand(
        "lock",
        "run a command while holding the lock (`raftlock lock NAME... -- CMD ARGS...`); "
        "exports RAFTLOCK_TOKEN, RAFTLOCK_LOCK (several: joined by commas), RAFTLOCK_SESSION; "
        "stops the command (SIGTERM, then SIGKILL) if a lock is lost");
    add_lock_flags(*cmd, lock);
    cmd->add_option("--grace", lock.grace,
                    "SIGTERM to SIGKILL when the lock is lost (default: a quarter of the margin)");
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_lock(ctx, lock); }; });

    static uint64_t renew_session = 0;
    cmd = app.add_subcommand("renew", "send one keepalive for a session (restarts its TTL)");
    cmd->add_option("--session", renew_session, "session id")->required();
    cmd->callback(
        [&run] { run = [](const Context& ctx) { return cmd_renew(ctx, renew_session); }; });

    static ReleaseArgs release;
    cmd = app.add_subcommand("release", "release a lock held by a session");
    cmd->add_option("name", release.name, "lock name")->required();
    cmd->add_option("--session", release.session, "the holder's session id")->required();
    cmd->add_option("--token", release.token, "the grant's token (default: looked up)");
    cmd->add_option("--owner", release.owner, "owner tag (default: the session's hold's)");
    cmd->add_flag("--force", release.force,
                  "take the hold away without its session, every count at once (needs admin "
                  "on the lock; its lock-delay applies)");
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_release(ctx, release); }; });
}

}  // namespace raftlock::cli
