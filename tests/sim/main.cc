// raftlock-sim: runs the deterministic cluster simulator for one seed or a range of seeds.
//
//   raftlock-sim --seed 42 [--trace]          replay one run exactly (trace: every event)
//   raftlock-sim --seeds 1..10000             sweep; progress every 1000 seeds
//   raftlock-sim --regressions tests/sim/regressions.txt   replay every listed seed
//   raftlock-sim --seed 42 --history h.jsonl   also write the clients' history (DESIGN §6)
//   raftlock-sim --seed 42 --lock-history l.jsonl   the lock clients' history (mutex model)
//   options: --nodes 3|5  --steps N  --keep-going  --expect-violation  --check-determinism
//   raftlock-sim-unsafe --break vote-before-persist|commit-earlier-terms|no-log-check|
//                               lock-double-grant ...
//
// Exit status 0 only when every seed passed (with --expect-violation: only when one failed).

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "tests/sim/sim.h"

namespace raftlock::sim {
namespace {

struct Cli {
    uint64_t first_seed = 1;
    uint64_t last_seed = 1;
    bool sweep = false;
    SimOptions options;
    bool keep_going = false;
    bool expect_violation = false;
    bool check_determinism = false;
    std::string regressions_file;
    std::string history_file;
    std::string lock_history_file;
    std::string program;
    std::string break_name;
};

// Filled before each seed runs, so a core assertion (abort) still names the seed to replay.
char g_abort_note[512];

void on_abort(int) {
    const ssize_t n = write(STDERR_FILENO, g_abort_note, std::strlen(g_abort_note));
    (void)n;
}

bool parse_u64(std::string_view text, uint64_t* out) {
    if (text.empty()) {
        return false;
    }
    uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) {
            return false;
        }
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    *out = v;
    return true;
}

#ifdef RAFTLOCK_NEGATIVE_CONTROLS
std::optional<BreakControl> parse_break(std::string_view name) {
    if (name == "vote-before-persist") {
        return BreakControl::kVoteBeforePersist;
    }
    if (name == "commit-earlier-terms") {
        return BreakControl::kCommitEarlierTerms;
    }
    if (name == "no-log-check") {
        return BreakControl::kNoLogCheck;
    }
    if (name == "lock-double-grant") {
        return BreakControl::kLockDoubleGrant;
    }
    return std::nullopt;
}
#endif

// Parses one option at argv[*i]; false (with a message) on a bad one.
bool parse_option(int argc, char** argv, int* i, Cli* cli) {
    const std::string_view arg = argv[*i];
    auto value = [&]() -> std::string_view { return *i + 1 < argc ? argv[++*i] : ""; };
    uint64_t n = 0;
    if (arg == "--seed" && parse_u64(value(), &n)) {
        cli->first_seed = cli->last_seed = n;
    } else if (arg == "--seeds") {
        const std::string_view range = value();
        const size_t dots = range.find("..");
        if (dots == std::string_view::npos || !parse_u64(range.substr(0, dots), &cli->first_seed) ||
            !parse_u64(range.substr(dots + 2), &cli->last_seed) ||
            cli->first_seed > cli->last_seed) {
            fmt::print(stderr, "--seeds wants A..B with A <= B\n");
            return false;
        }
        cli->sweep = true;
    } else if (arg == "--nodes" && parse_u64(value(), &n) && (n == 3 || n == 5)) {
        cli->options.nodes = static_cast<uint32_t>(n);
    } else if (arg == "--steps" && parse_u64(value(), &n) && n > 0 && n <= 1'000'000) {
        cli->options.steps = n;
    } else if (arg == "--trace") {
        cli->options.trace = true;
    } else if (arg == "--keep-going") {
        cli->keep_going = true;
    } else if (arg == "--expect-violation") {
        cli->expect_violation = true;
    } else if (arg == "--check-determinism") {
        cli->check_determinism = true;
    } else if (arg == "--history") {
        cli->history_file = value();
    } else if (arg == "--lock-history") {
        cli->lock_history_file = value();
    } else if (arg == "--regressions") {
        cli->regressions_file = value();
    } else if (arg == "--break") {
#ifdef RAFTLOCK_NEGATIVE_CONTROLS
        cli->break_name = value();
        std::optional<BreakControl> control = parse_break(cli->break_name);
        if (!control) {
            fmt::print(stderr,
                       "--break wants vote-before-persist, commit-earlier-terms, "
                       "no-log-check or lock-double-grant\n");
            return false;
        }
        cli->options.break_control = *control;
#else
        fmt::print(stderr, "--break needs raftlock-sim-unsafe (the negative-control build)\n");
        return false;
#endif
    } else {
        fmt::print(stderr, "bad option {} (see the comment at the top of tests/sim/main.cc)\n",
                   arg);
        return false;
    }
    return true;
}

std::string replay_command(const Cli& cli, uint64_t seed) {
    std::string cmd = fmt::format("{}", cli.program);
    if (!cli.break_name.empty()) {
        cmd += fmt::format(" --break {}", cli.break_name);
    }
    cmd += fmt::format(" --seed {}", seed);
    if (cli.options.nodes != 0) {
        cmd += fmt::format(" --nodes {}", cli.options.nodes);
    }
    if (cli.options.steps != 0) {
        cmd += fmt::format(" --steps {}", cli.options.steps);
    }
    return cmd + " --trace";
}

std::string summary(const SimResult& r) {
    return fmt::format(
        "nodes={} steps={} events={} sim_time={}ms crashes={} leader_terms={} committed={} "
        "conf_changes={} snapshots_installed={} ops ok={} fail={} info={} lock ops ok={} fail={} "
        "info={} grants={} hand_offs={} expiries={} heal_to_commit={} ticks",
        r.nodes, r.steps, r.events, r.sim_time_us / 1000, r.crashes, r.leader_terms, r.committed,
        r.conf_changes, r.snapshots_installed, r.ops_ok, r.ops_fail, r.ops_info, r.lock_ops_ok,
        r.lock_ops_fail, r.lock_ops_info, r.lock_grants, r.lock_hand_offs, r.session_expiries,
        r.liveness_ticks);
}

// What a sweep exercised, summed over its seeds (is the fault mix doing anything?).
struct Totals {
    uint64_t five_node_runs = 0;
    uint64_t crashes = 0;
    uint64_t leader_terms = 0;
    uint64_t committed = 0;
    uint64_t conf_changes = 0;
    uint64_t snapshots_installed = 0;
    uint64_t ops_ok = 0;
    uint64_t lock_grants = 0;
    uint64_t lock_hand_offs = 0;
    uint64_t session_expiries = 0;
    uint64_t hostile_dropped = 0;
    uint64_t heal_ticks_max = 0;
    uint64_t heal_ticks_max_seed = 0;

    void add(uint64_t seed, const SimResult& r) {
        five_node_runs += r.nodes == 5 ? 1 : 0;
        crashes += r.crashes;
        leader_terms += r.leader_terms;
        committed += r.committed;
        conf_changes += r.conf_changes;
        snapshots_installed += r.snapshots_installed;
        ops_ok += r.ops_ok;
        lock_grants += r.lock_grants;
        lock_hand_offs += r.lock_hand_offs;
        session_expiries += r.session_expiries;
        hostile_dropped += r.hostile_dropped;
        if (r.liveness_ticks > heal_ticks_max) {
            heal_ticks_max = r.liveness_ticks;
            heal_ticks_max_seed = seed;
        }
    }
    std::string describe() const {
        return fmt::format(
            "totals: 5-node runs={} crashes={} leader terms={} committed entries={} conf "
            "changes={} snapshots installed={} ops ok={} lock grants={} hand-offs={} session "
            "expiries={} broken-peer messages dropped={}; slowest heal-to-commit {} ticks (seed "
            "{})",
            five_node_runs, crashes, leader_terms, committed, conf_changes, snapshots_installed,
            ops_ok, lock_grants, lock_hand_offs, session_expiries, hostile_dropped, heal_ticks_max,
            heal_ticks_max_seed);
    }
};

SimResult run_one(const Cli& cli, uint64_t seed) {
    std::snprintf(g_abort_note, sizeof(g_abort_note),
                  "\nraftlock-sim: seed %llu aborted (an assertion failed); replay with:\n  %s\n",
                  static_cast<unsigned long long>(seed), replay_command(cli, seed).c_str());
    SimOptions options = cli.options;
    options.seed = seed;
    if (!cli.check_determinism) {
        return run_simulation(options);
    }
    // Twice, with the full trace captured: a replay must be identical to the byte.
    std::string first;
    std::string second;
    options.trace = true;
    options.trace_capture = &first;
    SimResult r = run_simulation(options);
    options.trace_capture = &second;
    (void)run_simulation(options);
    if (r.ok && first != second) {
        size_t line = 1;
        for (size_t i = 0; i < std::min(first.size(), second.size()) && first[i] == second[i];
             ++i) {
            line += first[i] == '\n' ? 1 : 0;
        }
        r.ok = false;
        r.violation =
            fmt::format("determinism: two runs of the seed differ from trace line {}", line);
    }
    return r;
}

bool write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) {
        fmt::print(stderr, "cannot write {}\n", path);
        return false;
    }
    return true;
}

int run_single(const Cli& cli) {
    std::string history;
    std::string lock_history;
    Cli with_history = cli;
    if (!cli.history_file.empty()) {
        with_history.options.history_capture = &history;
    }
    if (!cli.lock_history_file.empty()) {
        with_history.options.lock_history_capture = &lock_history;
    }
    const SimResult r = run_one(with_history, cli.first_seed);
    if (!cli.history_file.empty() && !write_file(cli.history_file, history)) {
        return 2;
    }
    if (!cli.lock_history_file.empty() && !write_file(cli.lock_history_file, lock_history)) {
        return 2;
    }
    if (r.ok) {
        fmt::print("seed {}: ok ({})\n", cli.first_seed, summary(r));
        return cli.expect_violation ? 1 : 0;
    }
    fmt::print("seed {}: VIOLATION: {}\n  {}\n  replay: {}\n", cli.first_seed, r.violation,
               summary(r), replay_command(cli, cli.first_seed));
    return cli.expect_violation ? 0 : 1;
}

// Each line: a seed and the options it failed with, then "# why" (blank lines and comments
// allowed), e.g. "673 --steps 1000  # removed node disrupted elections forever".
int run_regressions(const Cli& cli) {
    std::ifstream in(cli.regressions_file);
    if (!in) {
        fmt::print(stderr, "cannot read {}\n", cli.regressions_file);
        return 2;
    }
    int failed = 0;
    int replayed = 0;
    std::string line;
    for (int line_no = 1; std::getline(in, line); ++line_no) {
        line = line.substr(0, line.find('#'));
        std::istringstream words(line);
        std::vector<std::string> args{cli.program};
        for (std::string w; words >> w;) {
            args.push_back(w);
        }
        if (args.size() == 1) {
            continue;
        }
        std::vector<char*> argv;
        for (std::string& a : args) {
            argv.push_back(a.data());
        }
        Cli one = cli;
        one.regressions_file.clear();
        uint64_t seed = 0;
        bool good = parse_u64(args[1], &seed);
        for (int i = 2; good && i < static_cast<int>(argv.size()); ++i) {
            good = parse_option(static_cast<int>(argv.size()), argv.data(), &i, &one);
        }
        if (!good) {
            fmt::print(stderr, "{}:{}: want a seed and options\n", cli.regressions_file, line_no);
            return 2;
        }
        const SimResult r = run_one(one, seed);
        ++replayed;
        if (!r.ok) {
            ++failed;
            fmt::print("seed {}: VIOLATION: {}\n  replay: {}\n", seed, r.violation,
                       replay_command(one, seed));
        }
    }
    fmt::print("replayed {} regression seeds, {} failed\n", replayed, failed);
    return failed == 0 ? 0 : 1;
}

int run_sweep(const Cli& cli) {
    using Clock = std::chrono::steady_clock;  // for the seeds/s report only
    const Clock::time_point start = Clock::now();
    auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    uint64_t done = 0;
    uint64_t failed = 0;
    uint64_t events = 0;
    Totals totals;
    for (uint64_t seed = cli.first_seed; seed <= cli.last_seed; ++seed) {
        const SimResult r = run_one(cli, seed);
        ++done;
        events += r.events;
        totals.add(seed, r);
        if (!r.ok) {
            ++failed;
            fmt::print("seed {}: VIOLATION: {}\n  replay: {}\n", seed, r.violation,
                       replay_command(cli, seed));
            std::fflush(stdout);
            if (cli.expect_violation || !cli.keep_going) {
                break;
            }
        }
        if (done % 1000 == 0) {
            fmt::print("{} seeds ({}..{}), {} failed, {:.1f} seeds/s\n", done, cli.first_seed, seed,
                       failed, done / elapsed_s());
            std::fflush(stdout);
        }
    }
    const double secs = elapsed_s();
    fmt::print("swept {} seeds ({}..{}) in {:.1f} s: {:.1f} seeds/s, {:.0f} events/s, {} failed\n",
               done, cli.first_seed, cli.first_seed + done - 1, secs, done / secs, events / secs,
               failed);
    fmt::print("{}\n", totals.describe());
    if (cli.expect_violation) {
        if (failed > 0) {
            fmt::print("negative control caught after {} seeds\n", done);
            return 0;
        }
        fmt::print("negative control NOT caught in {} seeds: the simulator has no teeth here\n",
                   done);
        return 1;
    }
    return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace raftlock::sim

int main(int argc, char** argv) {
    using namespace raftlock::sim;
    Cli cli;
    cli.program = argv[0];
    for (int i = 1; i < argc; ++i) {
        if (!parse_option(argc, argv, &i, &cli)) {
            return 2;
        }
    }
    std::signal(SIGABRT, on_abort);
    if (!cli.regressions_file.empty()) {
        return run_regressions(cli);
    }
    return cli.sweep ? run_sweep(cli) : run_single(cli);
}
