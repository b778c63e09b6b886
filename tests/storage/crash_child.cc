// The crash test's child: opens the store, then appends and syncs batches of entries forever,
// reporting each acknowledged batch on stdout, taking snapshots and compacting now and then, until
// the parent kills it with SIGKILL. Usage: storage_crash_child DIR SEED [fill] [journal]
//
// With "fill" it never snapshots, so the disk fills up; the store must then panic. With "journal"
// the store is JournalStorage (journal_storage.h) with 1 MiB segments (so a small disk holds
// several), else RocksStorage.

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "base/rng.h"
#include "storage/journal_storage.h"
#include "storage/rocks_storage.h"
#include "tests/storage/crash_protocol.h"

namespace {

using raftlock::raft::Entry;
using raftlock::storage::JournalStorage;
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
template <typename Store>
void maybe_snapshot(Store& store) {
    if (store.last_index() - store.first_index() < kLogEntriesMax) {
        return;
    }
    const raftlock::raft::Index at = store.last_index() - 100;
    store.create_snapshot(at, raftlock::raft::ConfState{{1, 2, 3}, {}}, crash::snapshot_data(at));
    store.compact(at);
}

template <typename Store>
void run(Store& store, raftlock::Rng& rng, bool fill) {
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

template <typename Store, typename Options>
int open_and_run(const char* dir, const Options& options, uint64_t seed, bool fill) {
    auto store = Store::open(dir, options);
    if (!store.ok()) {
        std::fprintf(stderr, "storage_crash_child: %s\n", store.error().message.c_str());
        return 1;
    }
    raftlock::Rng rng(seed);
    run(**store, rng, fill);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    bool fill = false;
    bool journal = false;
    bool usage = argc < 3;
    for (int i = 3; i < argc; i++) {
        const std::string flag = argv[i];
        fill = fill || flag == "fill";
        journal = journal || flag == "journal";
        usage = usage || (flag != "fill" && flag != "journal");
    }
    if (usage) {
        std::fputs("usage: storage_crash_child DIR SEED [fill] [journal]\n", stderr);
        return 2;
    }
    // Standard output is the ack pipe: RocksDB's messages (through spdlog) go to standard error.
    spdlog::set_default_logger(spdlog::stderr_logger_mt("storage_crash_child"));
    const uint64_t seed = std::strtoull(argv[2], nullptr, 10);
    if (journal) {
        raftlock::storage::JournalStorageOptions options;
        options.segment_bytes = 1 << 20;
        return open_and_run<JournalStorage>(argv[1], options, seed, fill);
    }
    return open_and_run<RocksStorage>(argv[1], raftlock::storage::RocksStorageOptions{}, seed,
                                      fill);
}
