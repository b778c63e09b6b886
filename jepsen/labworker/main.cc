// raftlock-lab-worker: one worker of the lock lab (docs/lock-lab.md) for the native families, the
// ZooKeeper recipe on raftlock's node API among them. It takes the lab's lock on a raftlock cluster
// again and again and, while it holds it, increments the lab's resource counter by
// read-modify-write, reporting every step to the resource server, which logs it for
// raftlock-lab-check.
//
//   raftlock-lab-worker
//       --family native-fenced|native-unfenced|native-zk-recipe|native-zk-recipe-fenced
//       --worker W --workers N --resource HOST:PORT --endpoints H:P,... --lock NAME
//       [--ttl-ms 2000] [--work-ms 50] [--time 30] [--seed 1]
//
// Exit status: 0 the run ended (its time passed, or SIGTERM/SIGINT), 1 setup failure (the resource
// server unreachable for 20 s), 2 usage.
//
// Threads: main (the worker loop), the stop watcher (below), the loss reporter
// (loss_reporter.h), and each raftlock Client's network thread.

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include "jepsen/labworker/loss_reporter.h"
#include "jepsen/labworker/recipe.h"
#include "jepsen/labworker/resource_client.h"
#include "jepsen/labworker/session.h"
#include "jepsen/labworker/wakeup.h"
#include "jepsen/labworker/worker_loop.h"

namespace {

using namespace std::chrono_literals;
using namespace raftlock::labworker;

constexpr int kExitSetup = 1;
constexpr int kExitUsage = 2;
constexpr auto kResourceWait = 20s;

const std::map<std::string, Family> kFamilies = {
    {"native-fenced", Family::kNativeFenced},
    {"native-unfenced", Family::kNativeUnfenced},
    {"native-zk-recipe", Family::kNativeZkRecipe},
    {"native-zk-recipe-fenced", Family::kNativeZkRecipeFenced},
};

sigset_t stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
}

// Turns SIGTERM / SIGINT into a stop request. The worker then releases what it holds; if it has
// not finished after a moment (blocked in an acquire), the session is closed under it; a second
// later the process exits regardless, so a stop is prompt whatever the cluster does. The signals
// must be blocked in every thread (block_stop_signals() before any thread starts), so that only
// this thread's sigwait() takes them.
class StopWatcher {
public:
    StopWatcher(Wakeup& wakeup, LabSession& session)
        : wakeup_(wakeup), session_(session), thread_([this] { run(); }) {}
    ~StopWatcher() {
        done_.store(true);
        pthread_kill(thread_.native_handle(), SIGTERM);  // ends the sigwait of a quiet run
        thread_.join();
    }
    StopWatcher(const StopWatcher&) = delete;
    StopWatcher& operator=(const StopWatcher&) = delete;

private:
    void run() {
        const sigset_t set = stop_signals();
        int signal = 0;
        if (sigwait(&set, &signal) != 0 || done_.load()) {
            return;
        }
        fmt::print(stderr, "stopping on signal {}\n", signal);
        wakeup_.request_stop();
        if (wakeup_.wait_finished_for(300ms)) {
            return;
        }
        session_.interrupt();
        if (wakeup_.wait_finished_for(700ms)) {
            return;
        }
        fmt::print(stderr, "the worker did not finish within 1 s of the signal: exiting\n");
        std::fflush(nullptr);
        std::_Exit(0);
    }

    Wakeup& wakeup_;
    LabSession& session_;
    std::atomic<bool> done_{false};
    std::thread thread_;
};

// Parses the command line into `options`; an exit status when the program should end now.
std::optional<int> parse_args(int argc, char** argv, WorkerOptions& options) {
    CLI::App app{"raftlock-lab-worker: one worker of the lock lab (docs/lock-lab.md)"};
    std::string family, resource, endpoints;
    int64_t ttl_ms = 2000, work_ms = 50;
    double seconds = 30;
    app.add_option("--family", family, "the lock family")
        ->required()
        ->check(CLI::IsMember(kFamilies));
    app.add_option("--worker", options.worker, "this worker's number, 1..workers")
        ->required()
        ->check(CLI::Range(1, 1000));
    app.add_option("--workers", options.workers, "how many workers the lab runs")
        ->required()
        ->check(CLI::Range(1, 1000));
    app.add_option("--resource", resource, "HOST:PORT of the resource server")->required();
    app.add_option("--endpoints", endpoints, "HOST:PORT,... of the raftlock cluster")->required();
    app.add_option("--lock", options.lock, "the lock's name")->required();
    app.add_option("--ttl-ms", ttl_ms, "session timeout")
        ->check(CLI::Range(int64_t{200}, int64_t{600000}))
        ->capture_default_str();
    app.add_option("--work-ms", work_ms, "pause between a section's read and its write")
        ->check(CLI::Range(int64_t{0}, int64_t{600000}))
        ->capture_default_str();
    app.add_option("--time", seconds, "seconds to run")
        ->check(CLI::Range(0.0, 86400.0))
        ->capture_default_str();
    app.add_option("--seed", options.seed, "seed of backoffs and endpoint choice")
        ->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : kExitUsage;  // --help is not a usage error
    }
    auto usage = [](const std::string& message) {
        fmt::print(stderr, "raftlock-lab-worker: {}\n", message);
        return kExitUsage;
    };
    if (options.worker > options.workers) {
        return usage("--worker must be at most --workers");
    }
    auto parsed_resource = raftlock::client::parse_endpoints(resource);
    if (!parsed_resource.ok() || parsed_resource->size() != 1) {
        return usage("--resource: expected one HOST:PORT");
    }
    auto parsed_endpoints = raftlock::client::parse_endpoints(endpoints);
    if (!parsed_endpoints.ok()) {
        return usage("--endpoints: " + parsed_endpoints.error());
    }
    options.family = kFamilies.at(family);
    options.resource = parsed_resource->front();
    options.endpoints = *parsed_endpoints;
    options.ttl = std::chrono::milliseconds(ttl_ms);
    options.work = std::chrono::milliseconds(work_ms);
    options.run_time = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
    WorkerOptions options;
    if (auto status = parse_args(argc, argv, options)) {
        return *status;
    }
    // Before any thread exists, so that every thread inherits the mask (see StopWatcher).
    const sigset_t signals = stop_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    ResourceClient resource(options.resource);
    if (!resource.connect(kResourceWait)) {
        fmt::print(stderr, "raftlock-lab-worker: the resource server at {} is unreachable\n",
                   to_string(options.resource));
        return kExitSetup;
    }
    Wakeup wakeup;
    LossReporter reporter(options.resource, options.worker);
    LabSession session(options, reporter, wakeup);
    std::unique_ptr<Recipe> recipe = make_recipe(options, wakeup);
    WorkerLoop loop(options, resource, session, *recipe, wakeup);
    {
        StopWatcher watcher(wakeup, session);
        loop.run();
        wakeup.mark_finished();
    }
    const WorkerTotals& t = loop.totals();
    fmt::print(
        "worker {}: {} grants, {} sections written, {} refused, {} fail, {} info, "
        "{} sessions, {} lost reported, {} resource errors\n",
        options.worker, t.grants, t.sections, t.refused, t.fails, t.infos,
        session.sessions_opened(), reporter.reported(), t.resource_errors);
    return 0;
}
