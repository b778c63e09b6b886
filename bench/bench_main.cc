// raftlock-bench: one load generator for raftlock and for the systems it is compared with (etcd,
// ZooKeeper, Redis, PostgreSQL), so every system is driven by the same scenario code
// (bench/scenario.h) from the same kind of C++ client. bench/compare.sh runs it against each
// system in turn. `postgres` speaks PostgreSQL's protocol: to raftlock's SQL mode (the nodes' pg
// ports, the default endpoints) or to a real PostgreSQL; it has no watches, so watch.latency is
// reported as not applicable for it.
//
//   raftlock-bench --system raftlock|etcd|zookeeper|redis|postgres|floor --scenario NAME[,...]
//                  [--endpoints LIST] [--clients N[,N...]] [--watchers N[,N...]]
//                  [--duration S] [--warmup S] [--rate OPS_PER_S] [--value-bytes B]
//                  [--lock-wait-ms MS] [--fifo-slack-us US] [--dir DIR]
//                  [--json FILE] [--label NAME]
//                  [--peers SCRIPT --peer-system NAME]           lock.failover, session.keepalive
//                  [--session-timeout-ms MS] [--failover-repeats N] [--restart-after S]
//                  [--idle-sessions N[,N...]] [--idle-timeout-ms MS]
//                  [--raftlock-leader-routing on|off] [--raftlock-cacert FILE]   raftlock only
// A raftlock cluster with authentication on: $RAFTLOCK_USER and $RAFTLOCK_PASSWORD_FILE, as the
// CLI takes them; every client logs in once per connection.
//
// lock.failover and session.keepalive need to reach the system's processes: --peers names
// bench/peers.sh and --peer-system its SYSTEM argument (leader / kill-node / start-node / pids).
// `--hold NAME` is lock.failover's holder process (this program started by itself): it takes the
// lock, prints "held" and keeps its session alive until it is killed. `--idle-hold N` likewise
// holds N idle sessions for session.keepalive (bench/idle_children.cc).
//
// Every (scenario, clients) pair is one run: a line for people on stdout and, with --json, one
// JSON object appended to FILE (JSON Lines). --label names the system in the JSON (e.g.
// "redis-nofsync"). Exit status 1 when a run had errors, 2 for bad arguments.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/driver.h"
#include "bench/idle_sessions.h"
#include "bench/report.h"
#include "bench/scenario.h"

namespace {

using namespace raftlock::bench;

struct Args {
    std::string system = "raftlock";
    std::string endpoints;
    std::vector<std::string> scenarios;
    std::vector<int> clients = {1};
    std::vector<int> watchers = {1};
    RunOptions run;
    std::string json_path;
    std::string label;
    std::string hold;      // --hold NAME: lock.failover's holder process
    size_t idle_hold = 0;  // --idle-hold N: a process holding N idle sessions
    // --raftlock-leader-routing: raftlock's clients keep their connection on the leader
    // (ClientOptions::prefer_leader, the default) or stay on the node they reached first.
    bool raftlock_leader_routing = true;
    // --raftlock-cacert: raftlock's clients speak TLS, trusting this CA (the cost of TLS).
    std::string raftlock_cacert;
};

[[noreturn]] void usage_error(const std::string& message) {
    fmt::print(stderr, "raftlock-bench: {}\n(see the comment at the top of bench/bench_main.cc)\n",
               message);
    std::exit(2);
}

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find(',', start);
        if (end == std::string::npos) {
            end = text.size();
        }
        if (end > start) {
            out.push_back(text.substr(start, end - start));
        }
        start = end + 1;
    }
    return out;
}

std::vector<int> int_list(const std::string& flag, const std::string& text) {
    std::vector<int> out;
    for (const std::string& item : split(text)) {
        const int v = std::atoi(item.c_str());
        if (v < 1 || v > 100'000) {
            usage_error(fmt::format("{} wants numbers from 1 to 100000, got '{}'", flag, item));
        }
        out.push_back(v);
    }
    if (out.empty()) {
        usage_error(flag + " needs a value");
    }
    return out;
}

double positive(const std::string& flag, const char* text, bool zero_ok) {
    const double v = std::atof(text);
    if (v < 0 || (v == 0 && !zero_ok)) {
        usage_error(fmt::format("{} wants a positive number, got '{}'", flag, text));
    }
    return v;
}

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "-h" || flag == "--help") {
            usage_error("usage");
        }
        if (i + 1 >= argc) {
            usage_error(flag + " needs a value");
        }
        const char* value = argv[++i];
        if (flag == "--system") {
            a.system = value;
        } else if (flag == "--endpoints") {
            a.endpoints = value;
        } else if (flag == "--scenario") {
            for (const std::string& s : split(value)) {
                a.scenarios.push_back(s);
            }
        } else if (flag == "--clients") {
            a.clients = int_list(flag, value);
        } else if (flag == "--watchers") {
            a.watchers = int_list(flag, value);
        } else if (flag == "--duration") {
            a.run.duration_s = positive(flag, value, false);
        } else if (flag == "--warmup") {
            a.run.warmup_s = positive(flag, value, true);
        } else if (flag == "--rate") {
            a.run.rate_per_s = positive(flag, value, true);
        } else if (flag == "--value-bytes") {
            a.run.value_bytes = static_cast<size_t>(positive(flag, value, false));
        } else if (flag == "--lock-wait-ms") {
            a.run.lock_wait =
                std::chrono::milliseconds(static_cast<int64_t>(positive(flag, value, false)));
        } else if (flag == "--fifo-slack-us") {
            a.run.fifo_slack =
                std::chrono::microseconds(static_cast<int64_t>(positive(flag, value, true)));
        } else if (flag == "--dir") {
            a.run.dir = value;
        } else if (flag == "--json") {
            a.json_path = value;
        } else if (flag == "--label") {
            a.label = value;
        } else if (flag == "--peers") {
            a.run.peers_script = value;
        } else if (flag == "--peer-system") {
            a.run.peer_system = value;
        } else if (flag == "--session-timeout-ms") {
            a.run.session_timeout =
                std::chrono::milliseconds(static_cast<int64_t>(positive(flag, value, false)));
        } else if (flag == "--failover-repeats") {
            a.run.failover_repeats = static_cast<int>(positive(flag, value, false));
        } else if (flag == "--restart-after") {
            a.run.restart_after_s = positive(flag, value, false);
        } else if (flag == "--idle-sessions") {
            a.run.idle_sessions = int_list(flag, value);
        } else if (flag == "--idle-timeout-ms") {
            a.run.idle_timeout =
                std::chrono::milliseconds(static_cast<int64_t>(positive(flag, value, false)));
        } else if (flag == "--hold") {
            a.hold = value;
        } else if (flag == "--raftlock-leader-routing") {
            const std::string routing = value;
            if (routing != "on" && routing != "off") {
                usage_error("--raftlock-leader-routing takes on or off");
            }
            a.raftlock_leader_routing = routing == "on";
        } else if (flag == "--raftlock-cacert") {
            a.raftlock_cacert = value;
        } else if (flag == "--idle-hold") {
            a.idle_hold = static_cast<size_t>(positive(flag, value, false));
        } else {
            usage_error("unknown flag " + flag);
        }
    }
    if (a.scenarios.empty() && a.hold.empty() && a.idle_hold == 0) {
        usage_error("--scenario is required");
    }
    for (const std::string& s : a.scenarios) {
        bool known = false;
        for (const std::string& name : scenario_names()) {
            known = known || name == s;
        }
        if (!known) {
            usage_error("unknown scenario " + s);
        }
    }
    a.run.system = a.system;
    if (a.run.peer_system.empty()) {
        a.run.peer_system = a.label.empty() ? a.system : a.label;
    }
    return a;
}

// session.keepalive holds three descriptors per ZooKeeper session (its socket and the C client's
// wake-up pipe): as many as allowed, 1 Mi where the process may raise its hard limit (root).
void raise_open_files_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
        return;
    }
    rlimit wanted = limit;
    wanted.rlim_cur = wanted.rlim_max = std::max<rlim_t>(limit.rlim_max, 1 << 20);
    if (::setrlimit(RLIMIT_NOFILE, &wanted) != 0) {
        limit.rlim_cur = limit.rlim_max;
        (void)::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

std::string default_endpoints(const std::string& system) {
    if (system == "raftlock") {
        return "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103";
    }
    if (system == "etcd") {
        return "127.0.0.1:2379";
    }
    if (system == "zookeeper") {
        return "127.0.0.1:2181";
    }
    if (system == "postgres") {
        return "127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403";
    }
    return "127.0.0.1:6379";
}

std::unique_ptr<Driver> make_driver(Args& a) {
    const std::string endpoints = a.endpoints.empty() ? default_endpoints(a.system) : a.endpoints;
    a.run.endpoints = endpoints;
    if (!parse_host_ports(endpoints).ok()) {
        usage_error(parse_host_ports(endpoints).error());
    }
    std::unique_ptr<Driver> driver;
    if (a.system == "raftlock") {
        std::string error;
        driver =
            make_raftlock_driver(endpoints, a.raftlock_leader_routing, a.raftlock_cacert, &error);
        if (driver == nullptr) {
            usage_error(error);
        }
    } else if (a.system == "redis") {
        driver = make_redis_driver(endpoints);
    } else if (a.system == "etcd") {
        driver = make_etcd_driver(endpoints);
    } else if (a.system == "zookeeper") {
        driver = make_zookeeper_driver(endpoints);
        if (!driver) {
            usage_error(
                "this build has no ZooKeeper driver (install libzookeeper-mt-dev and "
                "configure again)");
        }
    } else if (a.system == "postgres") {
        driver = make_postgres_driver(endpoints);
        if (!driver) {
            usage_error(
                "this build has no PostgreSQL driver (install libpq-dev and configure again)");
        }
    } else {
        usage_error("unknown system " + a.system);
    }
    if (!driver) {
        usage_error("bad --endpoints " + endpoints);
    }
    return driver;
}

}  // namespace

int main(int argc, char** argv) {
    Args args = parse(argc, argv);
    std::unique_ptr<Driver> driver;
    if (args.system != "floor") {
        driver = make_driver(args);
    }
    if (!args.hold.empty()) {
        if (!driver) {
            usage_error("--hold needs a --system with locks");
        }
        return run_hold(*driver, args.hold, args.run);
    }
    raise_open_files_limit();
    if (args.idle_hold > 0) {
        if (!driver) {
            usage_error("--idle-hold needs a --system with sessions");
        }
        return run_idle_hold(*driver, args.idle_hold, args.run.idle_timeout);
    }
    std::FILE* json = nullptr;
    if (!args.json_path.empty()) {
        json = std::fopen(args.json_path.c_str(), "a");
        if (json == nullptr) {
            usage_error("cannot open " + args.json_path + " for appending");
        }
    }
    bool any_errors = false;
    int run_number = 0;
    for (const std::string& scenario : args.scenarios) {
        if (scenario_needs_driver(scenario) != (driver != nullptr)) {
            usage_error(
                fmt::format("scenario {} does not go with --system {}", scenario, args.system));
        }
        const bool watch = scenario == "watch.latency";
        if (watch && args.system == "postgres") {
            // Neither the SQL mode nor this driver has watches: a note, not a failed run.
            RunResult r;
            r.system = driver->name();
            r.scenario = scenario;
            r.mode = "closed";
            r.note = "not applicable: the SQL mode has no watches (no LISTEN/NOTIFY)";
            fmt::print("{}\n", to_text(r, args.label));
            if (json != nullptr) {
                fmt::print(json, "{}\n", to_json(r, args.label));
            }
            continue;
        }
        // session.keepalive has one writer; its sizes are --idle-sessions.
        const std::vector<int> once = {1};
        const bool single = scenario == "session.keepalive";
        for (int n : single ? once : watch ? args.watchers : args.clients) {
            RunOptions o = args.run;
            o.scenario = scenario;
            o.clients = n;
            o.watchers = n;
            // Unique names per run: a system keeps what earlier runs left behind.
            o.prefix = fmt::format("b{}-{}-{}", ::getpid(), std::time(nullptr), ++run_number);
            run_scenario(driver.get(), o, [&](const RunResult& result) {
                fmt::print("{}\n", to_text(result, args.label));
                std::fflush(stdout);
                if (json != nullptr) {
                    fmt::print(json, "{}\n", to_json(result, args.label));
                    std::fflush(json);
                }
                any_errors = any_errors || result.errors > 0;
            });
        }
    }
    if (json != nullptr) {
        std::fclose(json);
    }
    return any_errors ? 1 : 0;
}
