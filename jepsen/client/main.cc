// raftlock-jepsen-client: the client side of a jepsen/run harness run. Runs one workload against a
// cluster with N worker threads for a while and writes the history (DESIGN.md §6).
//
//   raftlock-jepsen-client --endpoints LIST --workload register|lock|sequential|sessions|watch
//   --out history.jsonl
//       [--processes 5] [--time 30] [--rate 100] [--keys 3] [--seed 1] [--origin-ns NS]
//       [--session-timeout-ms 3000] [--unfenced]
//
// Exit status: 0 the history was written, 1 the cluster could not be prepared or the file not
// written, 2 usage.

#include <fstream>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "client/endpoints.h"
#include "jepsen/client/workloads.h"

int main(int argc, char** argv) {
    using namespace raftlock::jepsen;
    CLI::App app{"raftlock-jepsen-client: run one harness workload and record its history"};
    WorkloadOptions options;
    std::string endpoints;
    std::string out;
    double seconds = 30;
    int64_t origin_ns = 0;
    app.add_option("--endpoints", endpoints, "host:port,... of the cluster")->required();
    app.add_option("--workload", options.workload, "register, lock, sequential, sessions or watch")
        ->required()
        ->check(CLI::IsMember({"register", "lock", "sequential", "sessions", "watch"}));
    app.add_option("--out", out, "history.jsonl to write")->required();
    app.add_option("--processes", options.processes, "worker threads")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    app.add_option("--time", seconds, "seconds of operations")
        ->check(CLI::Range(1.0, 86400.0))
        ->capture_default_str();
    app.add_option("--rate", options.rate, "operations per second, all workers together")
        ->check(CLI::Range(0.1, 100000.0))
        ->capture_default_str();
    app.add_option("--keys", options.keys, "registers (register workload)")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    app.add_option("--seed", options.seed, "seed of the operation mix")->capture_default_str();
    app.add_option("--origin-ns", origin_ns, "CLOCK_MONOTONIC time 0 of the history (default now)");
    app.add_option("--session-timeout-ms", options.session_timeout_ms, "each worker's session")
        ->check(CLI::Range(1000, 600000))
        ->capture_default_str();
    app.add_option("--leader-routing", options.leader_routing,
                   "which clients keep their connection on the leader: on, off or mixed; or "
                   "pinned: worker i uses only endpoint i mod N")
        ->check(CLI::IsMember({"on", "off", "mixed", "pinned"}))
        ->capture_default_str();
    std::string cacert;
    app.add_option("--cacert", cacert, "the cluster speaks TLS: trust this CA file");
    std::string password_file;
    app.add_option("--user", options.user, "log in as this user (authentication on)");
    app.add_option("--password-file", password_file, "the file holding --user's password");
    app.add_flag("--unfenced", options.unfenced,
                 "negative control: write without a fence and ignore safe-until");
    CLI11_PARSE(app, argc, argv);

    auto parsed = raftlock::client::parse_endpoints(endpoints);
    if (!parsed.ok()) {
        fmt::print(stderr, "raftlock-jepsen-client: --endpoints: {}\n", parsed.error());
        return 2;
    }
    options.endpoints = *parsed;
    if (!cacert.empty()) {
        auto tls = raftlock::net::TlsContext::make(
            {.role = raftlock::net::TlsRole::kClient, .ca_file = cacert});
        if (!tls.ok()) {
            fmt::print(stderr, "raftlock-jepsen-client: --cacert: {}\n", tls.error());
            return 2;
        }
        options.tls = std::move(tls).value();
    }
    if (!password_file.empty()) {
        std::ifstream in(password_file);
        if (!in || !std::getline(in, options.password) || options.password.empty()) {
            fmt::print(stderr, "raftlock-jepsen-client: --password-file {}: no password\n",
                       password_file);
            return 2;
        }
    }
    std::string error;
    if (!prepare_workload(options, error)) {
        fmt::print(stderr, "raftlock-jepsen-client: cannot prepare the workload: {}\n", error);
        return 1;
    }
    const int64_t start = monotonic_ns();
    options.deadline_ns = start + static_cast<int64_t>(seconds * 1e9);
    HistoryRecorder history(origin_ns > 0 ? origin_ns : start);
    WorkloadTotals totals;
    SharedRun shared;
    std::vector<std::thread> workers;
    for (uint32_t i = 0; i < options.processes; ++i) {
        workers.emplace_back([&, i] { run_worker(options, i, shared, history, totals); });
    }
    for (std::thread& t : workers) {
        t.join();
    }
    const size_t watch_events = finish_workload(shared, history);
    if (!history.write(out)) {
        fmt::print(stderr, "raftlock-jepsen-client: cannot write {}\n", out);
        return 1;
    }
    fmt::print("{} workload: {} events, ok {} fail {} info {}, watch events {} -> {}\n",
               options.workload, history.size(), totals.ok.load(), totals.fail.load(),
               totals.info.load(), watch_events, out);
    return 0;
}
