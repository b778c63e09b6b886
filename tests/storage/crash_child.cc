// The crash test's child: opens the store, then appends and syncs batches of entries forever,
// reporting each acknowledged batch on stdout, taking snapshots and compacting now and then, until
// the parent kills it with SIGKILL. Usage: storage_crash_child DIR SEED [fill]
//
// With "fill" it never snapshots, so the disk fills up; the store must then panic.

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "base/rng.h"
#include "storage/rocks_storage.h"
#include "tests/storage/crash_protocol.h"

namespace {

using raftlock::raft::Entry;
using raftlock::storage::RocksStorage;
namespace crash = raftlock::storage::crash;

// The parent kills the child long before this many batches.
constexpr int kBatchesMax = 1'000'000;
constexpr uint64_t kLogEntriesMax = 3000;

void send_ack(const crash::Ack& ack) {
    const ssize_t n = ::write(STDOUT_FILENO, &ack, sizeof(ack));
    if (n != static_cast<ssize_t>(sizeof(ack))) {
        std::_Exit(3);  // the parent is gone
    }
}

// Keeps the log short so that a thousand restarts stay fast, exercising snapshots and compaction.
void maybe_snapshot(RocksStorage& store) {
    if (store.last_index() - store.first_index() < kLogEntriesMax) {
        return;
    }
    const raftlock::raft::Index at = store.last_index() - 100;
    store.create_snapshot(at, raftlock::raft::ConfState{{1, 2, 3}, {}}, crash::snapshot_data(at));
    store.compact(at);
}

void run(RocksStorage& store, raftlock::Rng& rng, bool fill) {
    // The first ack says the store is open: what it recovered is on disk already.
    send_ack(crash::Ack{store.last_index(), store.term(store.last_index()).value()});
    raftlock::raft::Term term = std::max<raftlock::raft::Term>(store.hard_state().term, 1);
    for (int batch = 0; batch < kBatchesMax; batch++) {
        raftlock::raft::Ready ready;
        if (rng.next() % 20 == 0 || store.hard_state().term == 0) {
            term++;
        }
        const raftlock::raft::Index first = store.last_index() + 1;
        const uint64_t count = rng.next() % 8 == 0 ? 64 : 1 + rng.next() % 16;
        for (raftlock::raft::Index i = first; i < first + count; i++) {
            ready.entries.push_back(
                Entry{term, i, raftlock::raft::EntryType::kNormal, crash::entry_data(i, term)});
        }
        ready.hard_state = raftlock::raft::HardState{term, 1, first - 1};
        ready.must_sync = true;
        store.persist(ready);
        send_ack(crash::Ack{store.last_index(), term});
        if (!fill) {
            maybe_snapshot(store);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3 && argc != 4) {
        std::fputs("usage: storage_crash_child DIR SEED [fill]\n", stderr);
        return 2;
    }
    // Standard output is the ack pipe: RocksDB's messages (through spdlog) go to standard error.
    spdlog::set_default_logger(spdlog::stderr_logger_mt("storage_crash_child"));
    auto store = RocksStorage::open(argv[1]);
    if (!store.ok()) {
        std::fprintf(stderr, "storage_crash_child: %s\n", store.error().message.c_str());
        return 1;
    }
    raftlock::Rng rng(std::strtoull(argv[2], nullptr, 10));
    run(**store, rng, argc == 4 && std::string(argv[3]) == "fill");
    return 0;
}
