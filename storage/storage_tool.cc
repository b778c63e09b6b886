// raftlock-storage: inspects a store without changing it (RocksDB opened read-only).
//
//   raftlock-storage verify DIR            check every checksum; exit 1 on corruption
//   raftlock-storage hard-state DIR        term, vote, commit
//   raftlock-storage log DIR [LO [HI]]     entries in [LO, HI), default the whole log
//   raftlock-storage snapshot DIR          snapshot metadata and file

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "raft/text.h"
#include "storage/rocks_storage.h"

namespace {

using raftlock::storage::RocksStorage;

int usage() {
    std::fputs(
        "usage: raftlock-storage verify|hard-state|snapshot DIR\n"
        "       raftlock-storage log DIR [LO [HI]]\n",
        stderr);
    return 2;
}

void print_summary(const RocksStorage& store) {
    fmt::print("ok: {}\n", store.dir());
    fmt::print("hard state: {}\n", raftlock::raft::to_string(store.hard_state()));
    fmt::print("log: first index {}, last index {}, {} entries\n", store.first_index(),
               store.last_index(), store.last_index() + 1 - store.first_index());
    if (store.snapshot_record()) {
        fmt::print("snapshot: index {}, {} bytes, checksums verified\n",
                   store.snapshot_record()->meta.index, store.snapshot_record()->size_bytes);
    } else {
        fmt::print("snapshot: none\n");
    }
}

void print_snapshot(const RocksStorage& store) {
    const auto& record = store.snapshot_record();
    if (!record) {
        fmt::print("no snapshot\n");
        return;
    }
    fmt::print("metadata: {}\n", raftlock::raft::to_string(record->meta));
    fmt::print("file: {}/{}\n", store.snapshot_dir(), record->file_name);
    fmt::print("size: {} bytes, crc32c {:08x}\n", record->size_bytes, record->data_crc);
}

// Prints [lo, hi) a few MiB at a time; every pass prints at least one entry.
void print_log(const RocksStorage& store, raftlock::raft::Index lo, raftlock::raft::Index hi) {
    constexpr uint64_t kBatchBytes = 4u << 20;
    lo = std::max(lo, store.first_index());
    hi = std::min(hi, store.last_index() + 1);
    fmt::print("log start: {}/{}\n", store.log_start().term, store.log_start().index);
    while (lo < hi) {
        auto batch = store.entries(lo, hi, kBatchBytes);
        RL_ASSERT(batch.ok());
        for (const auto& entry : *batch) {
            fmt::print("{}\n", raftlock::raft::to_string(entry));
        }
        lo += batch->size();
    }
}

int run(const std::vector<std::string>& args) {
    if (args.size() < 2) {
        return usage();
    }
    const std::string& command = args[0];
    raftlock::storage::RocksStorageOptions options;
    options.read_only = true;
    options.entry_cache_bytes_max = 0;
    auto store = RocksStorage::open(args[1], options);
    if (!store.ok()) {
        fmt::print(stderr, "raftlock-storage: {}\n", store.error().message);
        return 1;
    }
    if (command == "verify") {
        print_summary(**store);
    } else if (command == "hard-state") {
        fmt::print("{}\n", raftlock::raft::to_string((*store)->hard_state()));
    } else if (command == "snapshot") {
        print_snapshot(**store);
    } else if (command == "log") {
        const uint64_t lo = args.size() > 2 ? std::stoull(args[2]) : 0;
        const uint64_t hi = args.size() > 3 ? std::stoull(args[3]) : UINT64_MAX;
        print_log(**store, lo, hi);
    } else {
        return usage();
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // Standard output carries the dump; RocksDB's messages (through spdlog) go to standard error.
    spdlog::set_default_logger(spdlog::stderr_logger_mt("raftlock-storage"));
    try {
        return run(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const std::exception& e) {
        fmt::print(stderr, "raftlock-storage: {}\n", e.what());
        return 2;
    }
}
