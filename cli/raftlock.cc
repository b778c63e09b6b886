// raftlock: the command-line client of a raftlockd cluster (issue 5, "raftlock (CLI)").
//
// Exit codes (also in `raftlock --help`):
//   0  ok
//   1  the operation failed: lock busy, wait ended, not the holder, no such node, ...
//   2  usage error: unknown command or flag, bad duration, bad endpoint list
//   3  cluster unreachable: no node accepted a connection, or none knew a leader
//   4  `lock` only: the lock was lost while the command ran (the command was stopped)
//   otherwise, `lock` only: the command's exit code, or 128 + signal when a signal ended it
//
// Sessions that outlive one CLI process. `acquire` (and `create --ephemeral`) open a session and
// leave it open when they exit: the lock (or node) lives until `release` (`delete`), `session
// close`, or the session's TTL runs out; nothing keeps the session alive after the CLI exits but
// `renew`. Later commands on that session (`release`, `session close`) run in a new process that
// does not know which sequence numbers the session used, yet every write of a session needs a seq
// that no earlier write used (the server answers a repeated seq with the earlier reply, and drops
// a seq at or below an acknowledged one). The rule here:
//   - the process that opens a session numbers its writes from 1, as the library does: an acquire
//     is seq 1, and a cancel and release after a timeout are 2 and 3;
//   - every later process first attaches to the session (Client::attach_session, an
//     AttachSession entry): the cluster picks a first seq above every seq the session used, and
//     refuses from then on every earlier write of the session not applied yet. (Until 2026-11-29
//     such a process started at wall-clock microseconds; the state machine now refuses a seq that
//     far beyond the session's last, docs/statemachine.md.)
// Retries inside one process reuse their seq (exactly-once), as always.
// The simpler "acquire is 1, release is 2" breaks on a second release: after one with a wrong
// token, the server would replay that NOT_LOCK_HOLDER reply to the corrected command.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "client/client.h"
#include "client/duration.h"
#include "client/endpoints.h"
#include "net/tls.h"

extern char** environ;

namespace raftlock::cli {

namespace {

using client::Client;
using client::ClientOptions;
using client::Endpoint;
using client::Error;
using client::ErrorCode;
using client::SteadyClock;
using nlohmann::json;
using std::chrono::milliseconds;

enum ExitCode : int {
    kExitOk = 0,
    kExitFailed = 1,
    kExitUsage = 2,
    kExitUnreachable = 3,
    kExitLockLost = 4,
};

constexpr const char* kExitCodesHelp =
    "Exit codes: 0 ok; 1 operation failed (lock busy, not holder, no node, ...); 2 usage error; "
    "3 cluster unreachable; 4 lock lost while `lock` ran its command; otherwise (lock) the "
    "command's exit code, or 128+signal.\n"
    "Endpoints: --endpoints, else $RAFTLOCK_ENDPOINTS, else "
    "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103. TLS: --cacert (else $RAFTLOCK_CACERT), with "
    "--cert and --key for a client certificate ($RAFTLOCK_CERT, $RAFTLOCK_KEY). Login: --user "
    "(else $RAFTLOCK_USER) with --password-file (else $RAFTLOCK_PASSWORD_FILE, else "
    "$RAFTLOCK_PASSWORD, else a prompt). "
    "Durations: 500ms, 30s, 5m, 1h.";

// A bad flag value found after CLI11 parsed the command line; main() turns it into exit code 2.
struct UsageError {
    std::string message;
};

struct Globals {
    std::string endpoints;
    std::string cacert;  // TLS when given (or $RAFTLOCK_CACERT)
    std::string cert;
    std::string key;
    std::string output = "text";
    std::string timeout = "10s";
    std::string user;           // log in as (or $RAFTLOCK_USER)
    std::string password_file;  // its password's file (or $RAFTLOCK_PASSWORD_FILE, ...)
};

// What every command needs, built from Globals once the command line is parsed.
struct Context {
    std::vector<Endpoint> endpoints;
    milliseconds timeout{10000};
    bool json = false;
    std::shared_ptr<const net::TlsContext> tls;
    std::string user;
    std::string password;

    ClientOptions client_options() const {
        ClientOptions options;
        options.endpoints = endpoints;
        options.request_timeout = timeout;
        options.tls = tls;
        options.user = user;
        options.password = password;
        return options;
    }
};

// A password: the first line of `file` (without its newline), else asked for on the terminal
// without echo, else the first line of stdin. `what` names it in messages and the prompt.
std::string read_password(const std::string& file, const std::string& what) {
    std::string password;
    if (!file.empty()) {
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            throw UsageError{fmt::format("{}: cannot read {}", what, file)};
        }
        std::getline(in, password);
    } else if (isatty(STDIN_FILENO) != 0) {
        fmt::print(stderr, "{}: ", what);
        std::fflush(stderr);
        termios saved{};
        const bool tty = tcgetattr(STDIN_FILENO, &saved) == 0;
        if (tty) {
            termios quiet = saved;
            quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
            tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
        }
        std::getline(std::cin, password);
        if (tty) {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved);
        }
        fmt::print(stderr, "\n");
    } else {
        std::getline(std::cin, password);
    }
    if (!password.empty() && password.back() == '\r') {
        password.pop_back();
    }
    if (password.empty()) {
        throw UsageError{fmt::format("{}: empty", what)};
    }
    return password;
}

milliseconds duration_arg(const std::string& flag, const std::string& text) {
    auto parsed = client::parse_duration(text);
    if (!parsed.ok()) {
        throw UsageError{fmt::format("{}: {}", flag, parsed.error())};
    }
    return parsed.value();
}

// A flag, else its environment variable.
std::string flag_or_env(const std::string& flag, const char* variable) {
    if (!flag.empty()) {
        return flag;
    }
    const char* env = std::getenv(variable);
    return env != nullptr ? env : "";
}

// TLS when a CA file is named (a client certificate alone makes no sense without one).
std::shared_ptr<const net::TlsContext> tls_context(const Globals& globals) {
    const std::string cacert = flag_or_env(globals.cacert, "RAFTLOCK_CACERT");
    const std::string cert = flag_or_env(globals.cert, "RAFTLOCK_CERT");
    const std::string key = flag_or_env(globals.key, "RAFTLOCK_KEY");
    if (cacert.empty()) {
        if (!cert.empty() || !key.empty()) {
            throw UsageError{"--cert and --key need --cacert (the CA of the cluster's nodes)"};
        }
        return nullptr;
    }
    auto made = net::TlsContext::make(
        {.role = net::TlsRole::kClient, .cert_file = cert, .key_file = key, .ca_file = cacert});
    if (!made.ok()) {
        throw UsageError{"TLS: " + made.error()};
    }
    return std::move(made).value();
}

Context make_context(const Globals& globals) {
    Context ctx;
    std::string text = globals.endpoints;
    if (text.empty()) {
        const char* env = std::getenv("RAFTLOCK_ENDPOINTS");
        text = env != nullptr && *env != '\0' ? env : std::string(client::kDefaultEndpoints);
    }
    auto endpoints = client::parse_endpoints(text);
    if (!endpoints.ok()) {
        throw UsageError{fmt::format("--endpoints: {}", endpoints.error())};
    }
    ctx.endpoints = std::move(endpoints).value();
    ctx.timeout = duration_arg("--timeout", globals.timeout);
    if (ctx.timeout.count() == 0) {
        throw UsageError{"--timeout must be more than 0"};
    }
    ctx.json = globals.output == "json";
    ctx.tls = tls_context(globals);
    ctx.user = flag_or_env(globals.user, "RAFTLOCK_USER");
    const std::string password_file = flag_or_env(globals.password_file, "RAFTLOCK_PASSWORD_FILE");
    if (!ctx.user.empty()) {
        const char* env = std::getenv("RAFTLOCK_PASSWORD");
        ctx.password = password_file.empty() && env != nullptr && *env != '\0'
                           ? std::string(env)
                           : read_password(password_file, fmt::format("password of {}", ctx.user));
    } else if (!globals.password_file.empty()) {
        throw UsageError{"--password-file needs --user (or $RAFTLOCK_USER)"};
    }
    return ctx;
}

// --- output -------------------------------------------------------------------------------------

void emit(const Context& ctx, const json& value, const std::string& text) {
    if (ctx.json) {
        // Node data may be any bytes; JSON strings must be UTF-8.
        fmt::print("{}\n", value.dump(-1, ' ', false, json::error_handler_t::replace));
    } else if (!text.empty()) {
        fmt::print("{}", text);
    }
    std::fflush(stdout);
}

int exit_code_for(ErrorCode code) {
    switch (code) {
        case ErrorCode::kConnectFailed:
        case ErrorCode::kUnavailable:
        case ErrorCode::kShuttingDown:
            return kExitUnreachable;
        case ErrorCode::kInvalidArgument:
            return kExitUsage;
        default:
            return kExitFailed;
    }
}

// Errors go to stderr as text; with --output json, to stdout as {"error": ..., "message": ...}
// so a script reading stdout sees them too.
int report(const Context& ctx, const Error& error) {
    if (ctx.json) {
        fmt::print("{}\n", json{{"error", std::string(client::to_string(error.code))},
                                {"message", error.message}}
                               .dump());
    } else {
        fmt::print(stderr, "raftlock: {}\n", client::to_string(error));
    }
    return exit_code_for(error.code);
}

json stat_json(const client::Stat& s) {
    return json{{"czxid", s.czxid},
                {"mzxid", s.mzxid},
                {"pzxid", s.pzxid},
                {"ctime_ms", s.ctime_ms},
                {"mtime_ms", s.mtime_ms},
                {"version", s.version},
                {"cversion", s.cversion},
                {"ephemeral_owner", s.ephemeral_owner},
                {"num_children", s.num_children},
                {"data_length", s.data_length}};
}

std::string stat_text(const client::Stat& s) {
    return fmt::format(
        "czxid           {}\nmzxid           {}\npzxid           {}\nctime_ms        {}\n"
        "mtime_ms        {}\nversion         {}\ncversion        {}\nephemeral_owner {}\n"
        "num_children    {}\ndata_length     {}\n",
        s.czxid, s.mzxid, s.pzxid, s.ctime_ms, s.mtime_ms, s.version, s.cversion, s.ephemeral_owner,
        s.num_children, s.data_length);
}

// --- signals ------------------------------------------------------------------------------------

// Commands that run for long (acquire, lock, watch, create --hold) block SIGINT, SIGTERM, SIGHUP
// and SIGCHLD before any thread starts (the client's network thread inherits the mask) and take
// them synchronously with sigtimedwait, which also paces their polling loops. Other commands keep
// the default dispositions, so Ctrl-C simply ends them.
sigset_t g_original_mask;

sigset_t handled_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    return set;
}

void block_signals() {
    const sigset_t set = handled_signals();
    pthread_sigmask(SIG_BLOCK, &set, &g_original_mask);
}

bool is_interrupt(int sig) {
    return sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
}

// The signal taken within `wait`, or 0. Precondition: block_signals().
int take_signal(milliseconds wait) {
    const sigset_t set = handled_signals();
    const timespec ts{static_cast<time_t>(wait.count() / 1000),
                      static_cast<long>((wait.count() % 1000) * 1'000'000)};
    const int sig = sigtimedwait(&set, nullptr, &ts);
    return sig > 0 ? sig : 0;
}

// Returns at SIGINT/SIGTERM/SIGHUP, or as soon as `done` holds (checked every 50 ms).
// Precondition: block_signals().
void wait_for_interrupt(const std::function<bool()>& done) {
    while (!done()) {
        if (is_interrupt(take_signal(milliseconds(50)))) {
            return;
        }
    }
}

// Runs `work` on another thread. An interrupt meanwhile calls `interrupted` once (which must make
// `work` finish soon); the result of `work` is returned either way. Precondition: block_signals().
template <typename T>
T interruptible(const std::function<T()>& work,
                const std::function<void()>& interrupted,
                bool& was_interrupted) {
    auto future = std::async(std::launch::async, work);
    while (future.wait_for(milliseconds(0)) != std::future_status::ready) {
        if (is_interrupt(take_signal(milliseconds(10))) && !was_interrupted) {
            was_interrupted = true;
            interrupted();
        }
    }
    return future.get();
}

// --- locks --------------------------------------------------------------------------------------

struct LockArgs {
    std::string name;
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

// Opens a session and acquires under it. An interrupt closes the session, which ends the wait
// (or gives back a grant), so an interrupted CLI leaves nothing behind. On failure the session is
// closed too. `interrupted` tells the caller to exit 130.
client::ClientResult<client::Lease> open_and_acquire(Client& client,
                                                     const Context& ctx,
                                                     const LockArgs& args,
                                                     bool& interrupted) {
    const milliseconds ttl = duration_arg("--ttl", args.ttl);
    const client::AcquireOptions options = acquire_options(ctx, args);
    auto session = client.open_session(ttl);
    if (!session.ok()) {
        return session.error();
    }
    auto lease = interruptible<client::ClientResult<client::Lease>>(
        [&] { return client.acquire(args.name, options); }, [&] { (void)client.close_session(); },
        interrupted);
    if (!lease.ok() && !interrupted) {
        (void)client.close_session();
    }
    return lease;
}

int cmd_acquire(const Context& ctx, const LockArgs& args) {
    block_signals();
    Client client(ctx.client_options());
    bool interrupted = false;
    auto lease = open_and_acquire(client, ctx, args, interrupted);
    if (interrupted) {
        fmt::print(stderr, "raftlock: interrupted; the session was closed, nothing is held\n");
        return 128 + SIGINT;
    }
    if (!lease.ok()) {
        return report(ctx, lease.error());
    }
    const milliseconds ttl = duration_arg("--ttl", args.ttl);
    // The client is destroyed without closing the session: the lock stays until release or TTL.
    emit(ctx,
         json{{"lock", lease->name},
              {"session", lease->session},
              {"token", lease->token},
              {"owner", lease->owner_tag},
              {"ttl_ms", ttl.count()}},
         fmt::format("lock     {}\nsession  {}\ntoken    {}\nheld until released or {} without "
                     "`raftlock renew --session {}`\n",
                     lease->name, lease->session, lease->token, client::format_duration(ttl),
                     lease->session));
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

Spawn prepare_spawn(const std::vector<std::string>& command, const client::Lease& lease) {
    Spawn spawn;
    const std::vector<std::string> ours = {
        fmt::format("RAFTLOCK_TOKEN={}", lease.token),
        fmt::format("RAFTLOCK_LOCK={}", lease.name),
        fmt::format("RAFTLOCK_SESSION={}", lease.session),
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
    pthread_sigmask(SIG_SETMASK, &g_original_mask, nullptr);
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

int cmd_lock(const Context& ctx, const LockArgs& args) {
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
    // The session holds this one lock, so any hold of it taken away is ours.
    client.set_lock_revoked_callback([&](const std::string& name, uint64_t) {
        if (name == args.name) {
            revoked = true;
            lost = true;
        }
    });
    bool interrupted = false;
    auto lease = open_and_acquire(client, ctx, args, interrupted);
    if (interrupted) {
        return 128 + SIGINT;
    }
    if (!lease.ok()) {
        return report(ctx, lease.error());
    }
    Spawn spawn = prepare_spawn(args.command, *lease);
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
                   args.name, lease->session, revoked ? ", taken away by an administrator" : "",
                   result.exit_code);
        return kExitLockLost;
    }
    (void)client.release(*lease);
    (void)client.close_session();
    return result.exit_code;
}

// --- describe, locks ----------------------------------------------------------------------------

json lock_info_json(const client::LockInfo& info) {
    json holders = json::array();
    for (const client::LockHolder& h : info.holders) {
        holders.push_back(json{{"session", h.session},
                               {"owner", h.owner_tag},
                               {"token", h.token},
                               {"since_ms", h.since_ms},
                               {"count", h.count}});
    }
    json waiters = json::array();
    for (const client::LockWaiter& w : info.waiters) {
        waiters.push_back(json{{"session", w.session},
                               {"owner", w.owner_tag},
                               {"mode", client::to_string(w.mode)},
                               {"enqueued_ms", w.enqueued_ms},
                               {"deadline_ms", w.deadline_ms}});
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
    for (const client::LockHolder& h : info.holders) {
        out += fmt::format("  session {}  owner '{}'  token {}  count {}  held {}\n", h.session,
                           h.owner_tag, h.token, h.count,
                           client::format_duration(milliseconds(info.now_ms - h.since_ms)));
    }
    out += fmt::format("waiters  {}\n", info.waiters.size());
    for (const client::LockWaiter& w : info.waiters) {
        out += fmt::format("  session {}  owner '{}'  {}  waiting {}\n", w.session, w.owner_tag,
                           client::to_string(w.mode),
                           client::format_duration(milliseconds(info.now_ms - w.enqueued_ms)));
    }
    if (info.free_at_ms > info.now_ms) {
        out += fmt::format("delay    free in {}\n",
                           client::format_duration(milliseconds(info.free_at_ms - info.now_ms)));
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

// --- membership ---------------------------------------------------------------------------------

int print_members(const Context& ctx, const std::vector<client::Member>& members) {
    json rows = json::array();
    std::string text = fmt::format("{:<6} {:<8} {}\n", "ID", "ROLE", "RAFT ADDRESS");
    for (const client::Member& m : members) {
        const char* role = m.learner ? "learner" : "voter";
        rows.push_back(json{{"id", m.id}, {"role", role}, {"address", m.address}});
        text += fmt::format("{:<6} {:<8} {}\n", m.id, role, m.address);
    }
    emit(ctx, json{{"members", rows}}, text);
    return kExitOk;
}

int cmd_member_list(const Context& ctx) {
    Client client(ctx.client_options());
    auto members = client.members();
    if (!members.ok()) {
        return report(ctx, members.error());
    }
    return print_members(ctx, *members);
}

int cmd_member_change(const Context& ctx,
                      client::MemberChange change,
                      uint64_t node_id,
                      const std::string& address) {
    Client client(ctx.client_options());
    auto members = client.change_member(change, node_id, address);
    if (!members.ok()) {
        return report(ctx, members.error());
    }
    return print_members(ctx, *members);
}

// --- command line -------------------------------------------------------------------------------

using Command = std::function<int(const Context&)>;

void add_lock_flags(CLI::App& cmd, LockArgs& args) {
    cmd.add_option("name", args.name, "lock name")->required();
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

void add_lock_commands(CLI::App& app, Command& run) {
    static LockArgs acquire;
    auto* cmd = app.add_subcommand(
        "acquire",
        "acquire a lock under a new session and print the session id and token; the "
        "lock stays after exit until released or the TTL passes");
    add_lock_flags(*cmd, acquire);
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_acquire(ctx, acquire); }; });

    static LockArgs lock;
    cmd = app.add_subcommand(
        "lock",
        "run a command while holding the lock (`raftlock lock NAME -- CMD ARGS...`); "
        "exports RAFTLOCK_TOKEN, RAFTLOCK_LOCK, RAFTLOCK_SESSION; stops the command "
        "(SIGTERM, then SIGKILL) if the lock is lost");
    add_lock_flags(*cmd, lock);
    cmd->add_option("--grace", lock.grace,
                    "SIGTERM to SIGKILL when the lock is lost (default: a quarter of the margin)");
    cmd->add_option("command", lock.command, "the command and its arguments, after --")->required();
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

void add_member_commands(CLI::App& app, Command& run) {
    auto* member = app.add_subcommand(
        "member", "list or change the cluster's members (one change at a time, by the leader)");
    member->require_subcommand(1);
    auto* cmd = member->add_subcommand("list", "the committed configuration");
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_member_list(ctx); }; });

    static uint64_t node_id = 0;
    static std::string address;
    static bool learner = false;
    cmd =
        member->add_subcommand("add",
                               "add a node (start it first with --initial-cluster-state existing); "
                               "with --learner it does not vote");
    cmd->add_option("id", node_id, "the new node's id (never reuse a removed node's id)")
        ->required();
    cmd->add_option("address", address, "HOST:PORT of its Raft port")->required();
    cmd->add_flag("--learner", learner, "add it as a non-voting learner");
    cmd->callback([&run] {
        run = [](const Context& ctx) {
            return cmd_member_change(
                ctx, learner ? client::MemberChange::kAddLearner : client::MemberChange::kAddVoter,
                node_id, address);
        };
    });
    cmd = member->add_subcommand("promote", "make a learner a voter");
    cmd->add_option("id", node_id, "the learner's id")->required();
    cmd->callback([&run] {
        run = [](const Context& ctx) {
            return cmd_member_change(ctx, client::MemberChange::kAddVoter, node_id, "");
        };
    });
    cmd = member->add_subcommand("remove", "remove a node (a removed raftlockd stops by itself)");
    cmd->add_option("id", node_id, "the node's id")->required();
    cmd->callback([&run] {
        run = [](const Context& ctx) {
            return cmd_member_change(ctx, client::MemberChange::kRemove, node_id, "");
        };
    });
}

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

// CLI11 reports a misspelt command as a missing one ("A subcommand is required"); name the word
// it did not know instead, and where to find the right ones. False when that is not the error.
bool report_unknown_word(CLI::App& app) {
    CLI::App* deepest = &app;
    std::string path = "raftlock";
    while (!deepest->get_subcommands().empty()) {
        deepest = deepest->get_subcommands().front();
        path += " " + deepest->get_name();
    }
    if (deepest->get_require_subcommand_min() == 0 || deepest->remaining().empty()) {
        return false;
    }
    const std::string word = deepest->remaining().front();  // remaining() returns a copy
    fmt::print(stderr, "raftlock: unknown {} '{}' (see {} --help)\n",
               word.starts_with("-") ? "option" : "command", word, path);
    return true;
}

int run_main(int argc, char** argv) {
    CLI::App app{"raftlock: locks, sessions and nodes of a raftlockd cluster"};
    app.footer(kExitCodesHelp);
    app.require_subcommand(1);
    Globals globals;
    app.add_option("--endpoints", globals.endpoints,
                   "host:port,... of the cluster's client ports (default: $RAFTLOCK_ENDPOINTS)");
    app.add_option("--cacert", globals.cacert,
                   "PEM CA file: connect with TLS and check the nodes' certificates against it");
    app.add_option("--cert", globals.cert, "PEM client certificate (mutual TLS), with --key");
    app.add_option("--key", globals.key, "PEM key of --cert");
    app.add_option("--output", globals.output, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    app.add_option("--timeout", globals.timeout, "deadline of each request")->capture_default_str();
    app.add_option("--user", globals.user,
                   "log in as this user (SCRAM-SHA-256; default: $RAFTLOCK_USER)");
    app.add_option("--password-file", globals.password_file,
                   "the file holding --user's password (default: $RAFTLOCK_PASSWORD_FILE, else "
                   "$RAFTLOCK_PASSWORD, else a prompt)");
    Command run;
    add_lock_commands(app, run);
    add_inspect_commands(app, run);
    add_node_commands(app, run);
    add_member_commands(app, run);
    add_user_commands(app, run);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (report_unknown_word(app)) {
            return kExitUsage;
        }
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    }
    try {
        return run(make_context(globals));
    } catch (const UsageError& e) {
        fmt::print(stderr, "raftlock: {}\n", e.message);
        return kExitUsage;
    }
}

}  // namespace

}  // namespace raftlock::cli

int main(int argc, char** argv) {
    return raftlock::cli::run_main(argc, argv);
}
