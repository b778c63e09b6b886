// lock_load: a small closed-loop load program for a running cluster (issue 5's closing figures;
// the full benchmark with peers is issue 7's raftlock-bench).
//
//   lock_load [--endpoints LIST] [--clients N] [--seconds S] [--warmup S] [--shared-lock]
//
// Each client is its own raftlock::client::Client with its own session and its own lock
// ("load-<i>"), and runs acquire + release cycles back to back for S seconds after a warm-up.
// Prints cycles/s and the latency of one cycle (acquire + release: two replicated writes) at
// p50 / p99 / p99.9 / max, and the same for the acquire alone.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "client/client.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
namespace rc = raftlock::client;

struct Args {
    std::string endpoints = "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103";
    int clients = 1;
    double seconds = 10;
    double warmup = 2;
};

Args parse(int argc, char** argv) {
    Args a;
    if (const char* env = std::getenv("RAFTLOCK_ENDPOINTS")) {
        a.endpoints = env;
    }
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (i + 1 >= argc) {
            fmt::print(stderr, "lock_load: {} needs a value\n", flag);
            std::exit(2);
        }
        const char* value = argv[++i];
        if (flag == "--endpoints") {
            a.endpoints = value;
        } else if (flag == "--clients") {
            a.clients = std::max(1, std::atoi(value));
        } else if (flag == "--seconds") {
            a.seconds = std::atof(value);
        } else if (flag == "--warmup") {
            a.warmup = std::atof(value);
        } else {
            fmt::print(stderr, "lock_load: unknown flag {}\n", flag);
            std::exit(2);
        }
    }
    return a;
}

struct Samples {
    std::vector<uint32_t> cycle_us;
    std::vector<uint32_t> acquire_us;
    uint64_t errors = 0;
};

double percentile(std::vector<uint32_t>& v, double q) {
    if (v.empty()) {
        return 0;
    }
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
    std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(i), v.end());
    return v[i] / 1000.0;
}

void run_client(const Args& args,
                int index,
                Clock::time_point measure_from,
                Clock::time_point end,
                Samples& out) {
    rc::ClientOptions o;
    o.endpoints = *rc::parse_endpoints(args.endpoints);
    o.seed = static_cast<uint64_t>(index) + 1;  // spread the clients over the nodes
    rc::Client client(o);
    if (!client.open_session(30s).ok()) {
        ++out.errors;
        return;
    }
    const std::string name = fmt::format("load-{}", index);
    while (Clock::now() < end) {
        const auto start = Clock::now();
        auto lease = client.acquire(name);
        const auto acquired = Clock::now();
        if (!lease.ok() || !client.release(*lease).ok()) {
            ++out.errors;
            continue;
        }
        const auto done = Clock::now();
        if (start >= measure_from) {
            out.cycle_us.push_back(static_cast<uint32_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(done - start).count()));
            out.acquire_us.push_back(static_cast<uint32_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(acquired - start).count()));
        }
    }
    (void)client.close_session();
}

}  // namespace

int main(int argc, char** argv) {
    const Args args = parse(argc, argv);
    const auto start = Clock::now();
    const auto measure_from = start + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(args.warmup));
    const auto end = measure_from + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(args.seconds));
    std::vector<Samples> samples(static_cast<size_t>(args.clients));
    std::vector<std::thread> threads;
    for (int i = 0; i < args.clients; ++i) {
        threads.emplace_back(run_client, std::cref(args), i, measure_from, end,
                             std::ref(samples[static_cast<size_t>(i)]));
    }
    for (std::thread& t : threads) {
        t.join();
    }
    Samples all;
    for (Samples& s : samples) {
        all.cycle_us.insert(all.cycle_us.end(), s.cycle_us.begin(), s.cycle_us.end());
        all.acquire_us.insert(all.acquire_us.end(), s.acquire_us.begin(), s.acquire_us.end());
        all.errors += s.errors;
    }
    const double cycles_per_s = static_cast<double>(all.cycle_us.size()) / args.seconds;
    fmt::print("clients {}  measured {:.0f} s  cycles {}  errors {}\n", args.clients, args.seconds,
               all.cycle_us.size(), all.errors);
    fmt::print("acquire+release cycles/s {:.0f}\n", cycles_per_s);
    for (auto [label, v] :
         {std::pair{"cycle  ", &all.cycle_us}, std::pair{"acquire", &all.acquire_us}}) {
        const double p50 = percentile(*v, 0.50);
        const double p99 = percentile(*v, 0.99);
        const double p999 = percentile(*v, 0.999);
        const double max = v->empty() ? 0 : *std::max_element(v->begin(), v->end()) / 1000.0;
        fmt::print("{} latency ms  p50 {:.3f}  p99 {:.3f}  p99.9 {:.3f}  max {:.3f}\n", label, p50,
                   p99, p999, max);
    }
    return all.errors == 0 ? 0 : 1;
}
