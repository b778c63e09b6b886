// raftlock-storage: inspects a store without changing it (opened read-only, with the engine that
// wrote it: storage/durable_store.h), and makes a new cluster's stores from a copy of one.
//
//   raftlock-storage verify DIR            check every checksum; exit 1 on corruption
//   raftlock-storage hard-state DIR        term, vote, commit
//   raftlock-storage log DIR [LO [HI]]     entries in [LO, HI), default the whole log
//   raftlock-storage snapshot DIR          snapshot metadata and file
//   raftlock-storage restore COPY NEWDIR --member ID=HOST:PORT...
//                                          a new cluster's store from a copy (restore_copy.h)

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "raft/text.h"
#include "storage/durable_store.h"
#include "storage/restore_copy.h"

namespace {

using raftlock::storage::StoreCore;

int usage() {
    std::fputs(
        "usage: raftlock-storage verify|hard-state|snapshot DIR\n"
        "       raftlock-storage log DIR [LO [HI]]\n"
        "       raftlock-storage restore COPY NEWDIR --member ID=HOST:PORT... \\\n"
        "           [--session-timeout-min MS] [--session-timeout-max MS]\n"
        "           (every member of the new cluster, with its Raft address; the two bounds as\n"
        "           the old cluster's raftlockd had them)\n",
        stderr);
    return 2;
}

void print_summary(const StoreCore& store) {
    fmt::print("ok: {} ({})\n", store.dir(), store.engine());
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

void print_snapshot(const StoreCore& store) {
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
void print_log(const StoreCore& store, raftlock::raft::Index lo, raftlock::raft::Index hi) {
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

// std::stoull and friends, with the flag named when the value is not a number.
template <typename Parse>
auto number(const std::string& flag, const std::string& text, Parse parse) {
    try {
        size_t used = 0;
        auto value = parse(text, &used);
        if (used == text.size()) {
            return value;
        }
    } catch (const std::exception&) {
    }
    throw std::invalid_argument(fmt::format("{} wants a number, not '{}'", flag, text));
}

// `restore COPY NEWDIR --member ID=HOST:PORT... [--session-timeout-min MS] [...-max MS]`.
int restore(const std::vector<std::string>& args) {
    if (args.size() < 3) {
        return usage();
    }
    raftlock::storage::RestoreOptions options;
    options.from_dir = args[1];
    options.to_dir = args[2];
    for (size_t i = 3; i < args.size(); i += 2) {
        if (i + 1 >= args.size()) {
            return usage();
        }
        const std::string& flag = args[i];
        const std::string& value = args[i + 1];
        if (flag == "--member") {
            const size_t eq = value.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
                fmt::print(stderr, "raftlock-storage: --member wants ID=HOST:PORT, not '{}'\n",
                           value);
                return 2;
            }
            const uint64_t id =
                number("--member", value.substr(0, eq),
                       [](const std::string& t, size_t* n) { return std::stoull(t, n); });
            options.members.voters.push_back(id);
            options.members.addresses[id] = value.substr(eq + 1);
        } else if (flag == "--session-timeout-min") {
            options.state_machine.session_timeout_ms_min = number(
                flag, value, [](const std::string& t, size_t* n) { return std::stoll(t, n); });
        } else if (flag == "--session-timeout-max") {
            options.state_machine.session_timeout_ms_max = number(
                flag, value, [](const std::string& t, size_t* n) { return std::stoll(t, n); });
        } else {
            return usage();
        }
    }
    std::sort(options.members.voters.begin(), options.members.voters.end());
    if (std::adjacent_find(options.members.voters.begin(), options.members.voters.end()) !=
        options.members.voters.end()) {
        fmt::print(stderr, "raftlock-storage: a member id is given twice\n");
        return 2;
    }
    auto done = raftlock::storage::restore_copy(options);
    if (!done.ok()) {
        fmt::print(stderr, "raftlock-storage: {}\n", done.error());
        return 1;
    }
    fmt::print(
        "restored {} into {}: the copy's state at index {} (term {}; its snapshot at {}, then {} "
        "entries of its log), {} bytes, as a snapshot with members {}\n",
        options.from_dir, options.to_dir, done->index, done->term, done->copy_snapshot_index,
        done->entries_applied, done->snapshot_bytes, fmt::join(options.members.voters, ","));
    return 0;
}

int run(const std::vector<std::string>& args) {
    if (args.size() < 2) {
        return usage();
    }
    if (args[0] == "restore") {
        return restore(args);
    }
    const std::string& command = args[0];
    raftlock::storage::DurableStoreOptions options;
    options.read_only = true;
    options.entry_cache_bytes_max = 0;
    auto store = raftlock::storage::open_durable_store(args[1], options);
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
