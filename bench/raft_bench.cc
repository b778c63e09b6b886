// raft_bench: throughput of the Raft core alone. Three RawNodes in one thread with an instant
// network and in-memory storage (no disk, no sockets), so the figure is what the core itself
// costs per entry. Prints committed entries/s and CPU time per entry.
//
//   raft_bench [--entries N] [--batch B] [--size BYTES]

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "raft/conf_change.h"
#include "raft/memory_storage.h"
#include "raft/raw_node.h"

namespace {

using namespace raftlock::raft;

struct BenchNode {
    MemoryStorage storage;
    std::unique_ptr<RawNode> node;
    Index applied = 0;
    uint64_t applied_entries = 0;
};

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double wall_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

class Cluster {
public:
    explicit Cluster(size_t size) {
        ConfState conf;
        for (NodeId id = 1; id <= size; ++id) {
            conf.voters.push_back(id);
        }
        const Bootstrap boot = make_bootstrap(conf);
        for (NodeId id = 1; id <= size; ++id) {
            auto n = std::make_unique<BenchNode>();
            n->storage.append({boot.entry});
            n->storage.set_hard_state(boot.hard_state);
            Config c;
            c.id = id;
            c.seed = id;
            c.applied = 1;
            c.max_inflight_msgs = 4096;
            n->node = std::make_unique<RawNode>(c, n->storage);
            nodes_.push_back(std::move(n));
        }
    }

    BenchNode& node(NodeId id) { return *nodes_[id - 1]; }

    // Processes Readies and delivers messages until the cluster is quiet.
    void pump() {
        for (;;) {
            bool progress = false;
            for (auto& n : nodes_) {
                while (n->node->has_ready()) {
                    progress = true;
                    handle_ready(*n);
                }
            }
            if (queue_.empty() && !progress) {
                return;
            }
            while (!queue_.empty()) {
                Message m = std::move(queue_.front());
                queue_.pop_front();
                nodes_[m.to - 1]->node->step(std::move(m));
            }
        }
    }

    // Keeps memory flat in long runs: snapshot what is applied everywhere, then compact.
    void compact(Index index) {
        for (auto& n : nodes_) {
            n->storage.create_snapshot(index, ConfState{{1, 2, 3}, {}}, "");
            n->storage.compact(index);
        }
    }

private:
    void handle_ready(BenchNode& n) {
        Ready rd = n.node->ready();
        for (Message& m : rd.early_messages) {
            queue_.push_back(std::move(m));
        }
        n.storage.append(rd.entries);
        if (rd.hard_state) {
            n.storage.set_hard_state(*rd.hard_state);
        }
        for (Message& m : rd.messages) {
            queue_.push_back(std::move(m));
        }
        n.applied_entries += rd.committed_entries.size();
        if (!rd.committed_entries.empty()) {
            n.applied = rd.committed_entries.back().index;
        }
        n.node->advance(rd);
    }

    std::vector<std::unique_ptr<BenchNode>> nodes_;
    std::deque<Message> queue_;
};

struct Options {
    uint64_t entries = 2'000'000;
    uint64_t batch = 256;
    size_t size_bytes = 64;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const uint64_t v = std::strtoull(argv[i + 1], nullptr, 10);
        if (std::strcmp(argv[i], "--entries") == 0) {
            o.entries = v;
        } else if (std::strcmp(argv[i], "--batch") == 0) {
            o.batch = v;
        } else if (std::strcmp(argv[i], "--size") == 0) {
            o.size_bytes = v;
        } else {
            fmt::print(stderr, "usage: raft_bench [--entries N] [--batch B] [--size BYTES]\n");
            std::exit(2);
        }
    }
    if (o.batch == 0 || o.entries == 0) {
        fmt::print(stderr, "raft_bench: --entries and --batch must be positive\n");
        std::exit(2);
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse(argc, argv);
    Cluster cluster(3);
    cluster.node(1).node->campaign();
    cluster.pump();
    const std::string payload(opt.size_bytes, 'x');
    const Index start_applied = cluster.node(3).applied;
    const double cpu0 = cpu_seconds();
    const double wall0 = wall_seconds();
    uint64_t proposed = 0;
    Index last_compacted = 0;
    while (proposed < opt.entries) {
        for (uint64_t i = 0; i < opt.batch && proposed < opt.entries; ++i, ++proposed) {
            if (!cluster.node(1).node->propose(payload).ok()) {
                fmt::print(stderr, "raft_bench: proposal dropped\n");
                return 1;
            }
        }
        cluster.pump();
        const Index applied = cluster.node(3).applied;
        if (applied - last_compacted > 100'000) {
            cluster.compact(applied);
            last_compacted = applied;
        }
    }
    const double cpu = cpu_seconds() - cpu0;
    const double wall = wall_seconds() - wall0;
    const uint64_t committed = cluster.node(3).applied - start_applied;
    if (committed < opt.entries) {
        fmt::print(stderr, "raft_bench: only {} of {} entries applied\n", committed, opt.entries);
        return 1;
    }
    fmt::print("raft_bench: 3 nodes, in-process, instant network, no disk\n");
    fmt::print("  entries        {} x {} B, proposed in batches of {}\n", committed, opt.size_bytes,
               opt.batch);
    fmt::print("  committed      {:.0f} entries/s (wall {:.3f} s)\n", committed / wall, wall);
    fmt::print("  cpu per entry  {:.0f} ns (all three nodes, one core)\n", cpu * 1e9 / committed);
    return 0;
}
