#pragma once

// What every `raftlock` command shares (cli/raftlock.cc has the program's overview): the global
// flags and the context built from them, output in text or JSON, errors as exit codes, and the
// signal handling of the commands that run for long.

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "client/client.h"
#include "net/tls.h"

namespace raftlock::cli {

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

// A command, chosen by the command line, run once the context is built.
using Command = std::function<int(const Context&)>;

// A password: the first line of `file` (without its newline), else asked for on the terminal
// without echo, else the first line of stdin. `what` names it in messages and the prompt.
std::string read_password(const std::string& file, const std::string& what);
milliseconds duration_arg(const std::string& flag, const std::string& text);
Context make_context(const Globals& globals);

// --- output -------------------------------------------------------------------------------------

void emit(const Context& ctx, const json& value, const std::string& text);
int exit_code_for(ErrorCode code);
// Errors go to stderr as text; with --output json, to stdout as {"error": ..., "message": ...}
// so a script reading stdout sees them too.
int report(const Context& ctx, const Error& error);
json stat_json(const client::Stat& s);
std::string stat_text(const client::Stat& s);

// --- signals ------------------------------------------------------------------------------------

// Commands that run for long (acquire, lock, watch, create --hold) block SIGINT, SIGTERM, SIGHUP
// and SIGCHLD before any thread starts (the client's network thread inherits the mask) and take
// them synchronously with sigtimedwait, which also paces their polling loops. Other commands keep
// the default dispositions, so Ctrl-C simply ends them.
void block_signals();
// The mask block_signals() replaced: what a spawned command starts with.
const sigset_t& original_signal_mask();
bool is_interrupt(int sig);
// The signal taken within `wait`, or 0. Precondition: block_signals().
int take_signal(milliseconds wait);
// Returns at SIGINT/SIGTERM/SIGHUP, or as soon as `done` holds (checked every 50 ms).
// Precondition: block_signals().
void wait_for_interrupt(const std::function<bool()>& done);

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

// The words after `raftlock lock NAME... --`: the command to run while holding the locks.
// Empty without `--`; a `--` with nothing after it is an empty list.
const std::optional<std::vector<std::string>>& command_after_dashes();
void set_command_after_dashes(std::vector<std::string> words);

// --- the commands, by family (each file registers its own) --------------------------------------

void add_lock_commands(CLI::App& app, Command& run);     // cli/locks.cc
void add_inspect_commands(CLI::App& app, Command& run);  // cli/inspect.cc
void add_node_commands(CLI::App& app, Command& run);     // cli/nodes.cc
void add_member_commands(CLI::App& app, Command& run);   // cli/members.cc
void add_user_commands(CLI::App& app, Command& run);     // cli/users.cc

}  // namespace raftlock::cli
