// Benchmark of the lock state machine, single thread:
//   1. apply rate of acquire+release pairs (each pair is two entries), from entry bytes (decode
//      included) and from decoded commands;
//   2. apply rate of create+delete pairs, the same two ways;
//   3. resident memory of 1,000,000 sessions each holding one lock.
// Goals (issue 4): >= 500,000 ops/s; <= 1 GiB for the million sessions.
//
// Usage: statemachine_bench [pairs=500000] [sessions=1000000]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "statemachine/codec.h"
#include "statemachine/state_machine.h"

namespace sm = raftlock::statemachine;

namespace {

constexpr size_t kClients = 1000;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Resident set size in bytes, from /proc/self/statm (pages).
size_t rss_bytes() {
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) {
        return 0;
    }
    unsigned long size_pages = 0;
    unsigned long resident_pages = 0;
    int n = std::fscanf(f, "%lu %lu", &size_pages, &resident_pages);
    std::fclose(f);
    return n == 2 ? resident_pages * 4096 : 0;
}

struct Driver {
    sm::StateMachine machine;
    sm::Index index = 0;
    std::vector<sm::SessionId> sessions;
    std::vector<uint64_t> seqs;

    void open_sessions(size_t n) {
        for (size_t i = 0; i < n; i++) {
            sm::Command c;
            c.op = sm::OpenSession{10000};
            sessions.push_back(machine.apply_command(++index, c).response.session);
            seqs.push_back(0);
        }
    }

    sm::Command request(size_t client, sm::Op op) {
        sm::Command c;
        c.client_id = sessions[client];
        c.seq = ++seqs[client];
        c.ack_seq = c.seq - 1;  // a client that acknowledges as it goes
        c.time_ms = 1000;
        c.op = std::move(op);
        return c;
    }
};

// Builds `pairs` (first, second) command pairs; `second` may depend on the index of `first`.
template <typename MakePair>
std::vector<sm::Command> build(Driver& d, size_t pairs, MakePair make_pair) {
    std::vector<sm::Command> commands;
    commands.reserve(2 * pairs);
    sm::Index next = d.index;
    for (size_t i = 0; i < pairs; i++) {
        size_t client = i % kClients;
        auto [first, second] = make_pair(client, next + 1);
        commands.push_back(d.request(client, std::move(first)));
        commands.push_back(d.request(client, std::move(second)));
        next += 2;
    }
    return commands;
}

void run(const char* name, Driver& d, const std::vector<sm::Command>& commands, bool from_bytes) {
    std::vector<std::string> encoded;
    if (from_bytes) {
        encoded.reserve(commands.size());
        for (const sm::Command& c : commands) {
            encoded.push_back(sm::encode_command(c).value());
        }
    }
    size_t failures = 0;
    auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < commands.size(); i++) {
        sm::ApplyResult out = from_bytes ? d.machine.apply(++d.index, encoded[i])
                                         : d.machine.apply_command(++d.index, commands[i]);
        failures += out.response.code == sm::ErrorCode::kOk ? 0 : 1;
    }
    double s = seconds_since(start);
    std::printf("%-44s %9zu ops  %7.3f s  %10.0f ops/s  failures=%zu\n", name, commands.size(), s,
                static_cast<double>(commands.size()) / s, failures);
}

void bench_locks(size_t pairs, bool from_bytes) {
    Driver d;
    d.open_sessions(kClients);
    auto commands = build(d, pairs, [](size_t client, sm::Index acquire_index) {
        std::string name = "lock-" + std::to_string(client);
        return std::pair<sm::Op, sm::Op>{
            sm::Acquire{name, "", sm::LockMode::kExclusive, 1, 0, 0},
            sm::Release{name, "", acquire_index}};  // token = index of the granting entry
    });
    run(from_bytes ? "acquire+release (entry bytes)" : "acquire+release (decoded)", d, commands,
        from_bytes);
}

void bench_tree(size_t pairs, bool from_bytes) {
    Driver d;
    d.open_sessions(kClients);
    d.machine.apply_command(++d.index,
                            d.request(0, sm::Create{"/bench", "", sm::NodeKind::kPersistent, 0}));
    auto commands = build(d, pairs, [](size_t client, sm::Index) {
        std::string path = "/bench/n" + std::to_string(client);
        return std::pair<sm::Op, sm::Op>{sm::Create{path, "payload", sm::NodeKind::kPersistent, 0},
                                         sm::Delete{path, -1}};
    });
    run(from_bytes ? "create+delete (entry bytes)" : "create+delete (decoded)", d, commands,
        from_bytes);
}

void bench_memory(size_t sessions) {
    size_t before = rss_bytes();
    auto start = std::chrono::steady_clock::now();
    {
        Driver d;
        d.open_sessions(sessions);
        for (size_t i = 0; i < sessions; i++) {
            sm::Command c;
            c.client_id = d.sessions[i];
            c.seq = 1;
            c.time_ms = 1000;
            c.op = sm::Acquire{"lock-" + std::to_string(i), "", sm::LockMode::kExclusive, 1, 0, 0};
            d.machine.apply_command(++d.index, c);
        }
        size_t after = rss_bytes();
        double s = seconds_since(start);
        std::printf(
            "%zu sessions each holding one lock: RSS +%.1f MiB (%.0f bytes/session), "
            "built in %.2f s, locks=%zu\n",
            sessions, static_cast<double>(after - before) / (1 << 20),
            static_cast<double>(after - before) / static_cast<double>(sessions), s,
            d.machine.lock_count());
        auto snap_start = std::chrono::steady_clock::now();
        std::string snapshot = d.machine.snapshot();
        std::printf("snapshot of that state: %.1f MiB in %.2f s\n",
                    static_cast<double>(snapshot.size()) / (1 << 20), seconds_since(snap_start));
    }
}

}  // namespace

int main(int argc, char** argv) {
    size_t pairs = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 500000;
    size_t sessions = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
    bench_locks(pairs, true);
    bench_locks(pairs, false);
    bench_tree(pairs, true);
    bench_tree(pairs, false);
    bench_memory(sessions);
    return 0;
}
