// storage_bench: how close synced appends through the store come to the disk's own limit.
//
// 1. The raw synced-write rate: a loop of 4 KiB append + fdatasync on a new file, and for context
//    the same into blocks reserved ahead (as RocksDB's WAL is) and 4 KiB overwrite of one block +
//    fdatasync, which needs no metadata update at all.
// 2. In the same run, synced appends through each store's persist (RocksStorage, and
//    JournalStorage: preallocated segments, docs/decisions/0021-journal-segments.md) at batch
//    sizes 1, 8, 64 and 512 entries of 128 bytes, each batch one Ready with a hard state and
//    must_sync = true.
//
//   storage_bench [--dir DIR] [--seconds S] [--rounds R]
//
// DIR must be on the disk to measure (default .). Each figure gets S seconds in all, split into R
// interleaved rounds.
//
// Goals (issue 3): batch 1 >= 80% of the raw append rate; batch >= 64 >= 200,000 entries/s.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include "base/assert.h"
#include "storage/journal_storage.h"
#include "storage/rocks_storage.h"

namespace {

using Clock = std::chrono::steady_clock;
using raftlock::storage::JournalStorage;
using raftlock::storage::RocksStorage;

constexpr size_t kRawWriteBytes = 4096;
constexpr size_t kEntryBytes = 128;
constexpr size_t kSamplesMax = 1'000'000;
// Blocks reserved for the preallocated raw run: 40,000 syncs/s for 6 s; beyond, the file grows.
constexpr off_t kPreallocateBytes = off_t{1} << 30;

struct Figures {
    uint64_t ops = 0;
    double seconds = 0;
    std::vector<double> latency_us;  // at most kSamplesMax samples

    double ops_per_s() const { return static_cast<double>(ops) / seconds; }
    double percentile_us(double p) {
        if (latency_us.empty()) {
            return 0;
        }
        std::sort(latency_us.begin(), latency_us.end());
        return latency_us[static_cast<size_t>(p * static_cast<double>(latency_us.size() - 1))];
    }
};

void merge(Figures& into, const Figures& from) {
    into.ops += from.ops;
    into.seconds += from.seconds;
    for (double us : from.latency_us) {
        if (into.latency_us.size() < kSamplesMax) {
            into.latency_us.push_back(us);
        }
    }
}

// Calls `op` until `seconds` have passed, timing each call.
template <typename Op>
Figures time_loop(double seconds, Op op) {
    Figures f;
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    // Bounded by the time budget; a sample is kept only while there is room.
    for (auto now = start; now < end;) {
        op();
        const auto after = Clock::now();
        if (f.latency_us.size() < kSamplesMax) {
            f.latency_us.push_back(std::chrono::duration<double, std::micro>(after - now).count());
        }
        f.ops++;
        now = after;
    }
    f.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return f;
}

enum class RawMode {
    kAppend,              // a growing file: every sync also commits a new size and new blocks
    kAppendPreallocated,  // blocks reserved ahead (fallocate KEEP_SIZE, as RocksDB's WAL does)
    kOverwrite,           // one block rewritten in place: data only, the disk's own limit
};

// Writes 4 KiB blocks, each followed by fdatasync.
class RawWriter {
public:
    RawWriter(std::string path, RawMode mode)
        : path_(std::move(path)), append_(mode != RawMode::kOverwrite) {
        fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        RL_ASSERT_MSG(fd_ >= 0, std::strerror(errno));
        if (mode == RawMode::kAppendPreallocated) {
            RL_ASSERT(::fallocate(fd_, FALLOC_FL_KEEP_SIZE, 0, kPreallocateBytes) == 0);
            RL_ASSERT(::fsync(fd_) == 0);
        }
    }
    ~RawWriter() {
        ::close(fd_);
        std::filesystem::remove(path_);
    }
    void write_one() {
        const ssize_t n = append_ ? ::write(fd_, block_.data(), block_.size())
                                  : ::pwrite(fd_, block_.data(), block_.size(), 0);
        RL_ASSERT(n == static_cast<ssize_t>(block_.size()));
        RL_ASSERT(::fdatasync(fd_) == 0);
    }

private:
    std::string path_;
    bool append_;
    int fd_ = -1;
    std::string block_ = std::string(kRawWriteBytes, 'r');
};

// Persists Readies of `batch` entries of 128 B with a hard state, must_sync = true.
class Writer {
public:
    virtual ~Writer() = default;
    virtual void write_one() = 0;
};

template <typename Store>
class StoreWriter final : public Writer {
public:
    StoreWriter(const std::string& dir, size_t batch) : dir_(dir) {
        std::filesystem::remove_all(dir_);
        auto store = Store::open(dir_);
        RL_ASSERT_MSG(store.ok(), store.ok() ? "" : store.error().message.c_str());
        store_ = std::move(*store);
        ready_.must_sync = true;
        ready_.entries.resize(batch);
    }
    ~StoreWriter() override {
        store_.reset();
        std::filesystem::remove_all(dir_);
    }
    void write_one() override {
        const raftlock::raft::Index first = store_->last_index() + 1;
        for (size_t i = 0; i < ready_.entries.size(); i++) {
            ready_.entries[i] =
                raftlock::raft::Entry{1, first + i, raftlock::raft::EntryType::kNormal, data_};
        }
        ready_.hard_state = raftlock::raft::HardState{1, 1, first - 1};
        store_->persist(ready_);
    }

private:
    std::string dir_;
    std::unique_ptr<Store> store_;
    raftlock::raft::Ready ready_;
    std::string data_ = std::string(kEntryBytes, 'e');
};

void print_row(const std::string& name, Figures& f, size_t entries_per_op) {
    fmt::print("{:<30} {:>8.0f} syncs/s {:>10.0f} entries/s   p50 {:>7.1f} us   p99 {:>7.1f} us\n",
               name, f.ops_per_s(), f.ops_per_s() * static_cast<double>(entries_per_op),
               f.percentile_us(0.50), f.percentile_us(0.99));
}

}  // namespace

int main(int argc, char** argv) {
    std::string base = ".";
    double seconds = 6;
    int rounds = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--dir") == 0) {
            base = argv[i + 1];
        } else if (std::strcmp(argv[i], "--seconds") == 0) {
            seconds = std::atof(argv[i + 1]);
        } else if (std::strcmp(argv[i], "--rounds") == 0) {
            rounds = std::max(1, std::atoi(argv[i + 1]));
        }
    }
    const std::string dir = base + "/storage_bench.tmp";
    std::filesystem::create_directories(dir);
    fmt::print("storage_bench in {}: {} s per measurement, interleaved in {} rounds\n", dir,
               seconds, rounds);

    // The disk's speed drifts (other tenants, throttling), so the measurements take turns in short
    // rounds: every figure sees the same conditions.
    RawWriter raw_append(dir + "/raw-append", RawMode::kAppend);
    RawWriter raw_prealloc(dir + "/raw-prealloc", RawMode::kAppendPreallocated);
    RawWriter raw_overwrite(dir + "/raw-overwrite", RawMode::kOverwrite);
    constexpr size_t kBatches[] = {1, 8, 64, 512};
    constexpr const char* kStoreNames[] = {"rocksdb", "journal"};
    std::vector<std::unique_ptr<Writer>> stores;
    for (size_t batch : kBatches) {
        stores.push_back(std::make_unique<StoreWriter<RocksStorage>>(
            fmt::format("{}/rocksdb-{}", dir, batch), batch));
        stores.push_back(std::make_unique<StoreWriter<JournalStorage>>(
            fmt::format("{}/journal-{}", dir, batch), batch));
    }
    constexpr size_t kRaw = 3;
    std::vector<Figures> figures(kRaw + stores.size());
    const double round_s = seconds / rounds;
    for (int round = 0; round < rounds; round++) {
        merge(figures[0], time_loop(round_s, [&] { raw_append.write_one(); }));
        merge(figures[1], time_loop(round_s, [&] { raw_prealloc.write_one(); }));
        merge(figures[2], time_loop(round_s, [&] { raw_overwrite.write_one(); }));
        for (size_t i = 0; i < stores.size(); i++) {
            merge(figures[kRaw + i], time_loop(round_s, [&] { stores[i]->write_one(); }));
        }
    }

    print_row("raw 4 KiB append+fdatasync", figures[0], 1);
    print_row("raw 4 KiB prealloc+fdatasync", figures[1], 1);
    print_row("raw 4 KiB overwrite+fdatasync", figures[2], 1);
    bool goals_met = true;
    for (size_t i = 0; i < stores.size(); i++) {
        Figures& f = figures[kRaw + i];
        const size_t batch = kBatches[i / 2];
        print_row(fmt::format("{} batch {:>3} x {} B", kStoreNames[i % 2], batch, kEntryBytes), f,
                  batch);
        const double entries_per_s = f.ops_per_s() * static_cast<double>(batch);
        if (batch == 1) {
            const double ratio = f.ops_per_s() / figures[0].ops_per_s();
            fmt::print(
                "  batch 1: {:.0f}% of the raw append rate (goal >= 80%); {:.0f}% of "
                "preallocated append, {:.0f}% of overwrite\n",
                100 * ratio, 100 * f.ops_per_s() / figures[1].ops_per_s(),
                100 * f.ops_per_s() / figures[2].ops_per_s());
            goals_met = goals_met && ratio >= 0.8;
        } else if (batch >= 64) {
            goals_met = goals_met && entries_per_s >= 200'000;
        }
    }
    stores.clear();
    fmt::print("goals {}\n", goals_met ? "met" : "NOT met");
    return 0;
}
