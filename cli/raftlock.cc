// raftlock: the command-line client of a raftlockd cluster (issue 5, "raftlock (CLI)"): this file
// parses the command line; the commands live by family in locks.cc, inspect.cc, nodes.cc,
// members.cc and users.cc, and what they share in common.h.
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

#include <string>

#include <fmt/format.h>

#include "cli/common.h"

namespace raftlock::cli {

namespace {

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
    // `lock NAME... -- CMD ARGS`: CLI11 ends no list of positionals at `--`, so the words from
    // there on are the lock's command, kept out of the parse. Any other command parses them.
    int dashes = argc;
    for (int i = 1; i < argc; i++) {
        if (std::string_view(argv[i]) == "--") {
            dashes = i;
            break;
        }
    }
    bool lock_command = false;
    if (dashes < argc) {
        try {
            app.parse(dashes, argv);
            lock_command = app.got_subcommand("lock");
        } catch (const CLI::ParseError&) {
            // Not `lock NAME... --`: parsed again whole below (`set PATH -- -VALUE`, --help).
        }
    }
    try {
        if (lock_command) {
            set_command_after_dashes({argv + dashes + 1, argv + argc});
        } else {
            app.parse(argc, argv);
        }
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
