// The context, output and signals every `raftlock` command shares (common.h).

#include "cli/common.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <termios.h>
#include <unistd.h>

#include "client/duration.h"
#include "client/endpoints.h"

namespace raftlock::cli {

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

namespace {
std::optional<std::vector<std::string>> lock_command;  // set once by main, before commands run
}  // namespace

const std::optional<std::vector<std::string>>& command_after_dashes() {
    return lock_command;
}

void set_command_after_dashes(std::vector<std::string> words) {
    lock_command = std::move(words);
}

milliseconds duration_arg(const std::string& flag, const std::string& text) {
    auto parsed = client::parse_duration(text);
    if (!parsed.ok()) {
        throw UsageError{fmt::format("{}: {}", flag, parsed.error())};
    }
    return parsed.value();
}

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

void block_signals() {
    const sigset_t set = handled_signals();
    pthread_sigmask(SIG_BLOCK, &set, &g_original_mask);
}

const sigset_t& original_signal_mask() {
    return g_original_mask;
}

bool is_interrupt(int sig) {
    return sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
}

int take_signal(milliseconds wait) {
    const sigset_t set = handled_signals();
    const timespec ts{static_cast<time_t>(wait.count() / 1000),
                      static_cast<long>((wait.count() % 1000) * 1'000'000)};
    const int sig = sigtimedwait(&set, nullptr, &ts);
    return sig > 0 ? sig : 0;
}

void wait_for_interrupt(const std::function<bool()>& done) {
    while (!done()) {
        if (is_interrupt(take_signal(milliseconds(50)))) {
            return;
        }
    }
}

}  // namespace raftlock::cli
