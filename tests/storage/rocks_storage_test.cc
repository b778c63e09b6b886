#include "storage/rocks_storage.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>

#include "tests/storage/test_util.h"

namespace raftlock::storage {
namespace {

using raft::Entry;
using raft::ErrorCode;
using raft::HardState;
using test::all_entries;
using test::make_entries;
using test::make_entry;
using test::open_store;

// Closes and reopens the store, which must come back exactly as it was.
void reopen(std::unique_ptr<RocksStorage>& store, RocksStorageOptions options = {}) {
    const std::string dir = store->dir();
    const raft::HardState hs = store->hard_state();
    const raft::Index first = store->first_index();
    const raft::Index last = store->last_index();
    const std::vector<Entry> entries = all_entries(*store);
    store.reset();
    store = open_store(dir, options);
    CHECK(store->hard_state() == hs);
    CHECK(store->first_index() == first);
    CHECK(store->last_index() == last);
    CHECK(all_entries(*store) == entries);
}

raft::Snapshot make_snapshot(raft::Index index, raft::Term term, std::string data) {
    raft::Snapshot snap;
    snap.metadata.index = index;
    snap.metadata.term = term;
    snap.metadata.conf_state.voters = {1, 2, 3};
    snap.metadata.conf_state.learners = {4};
    snap.data = std::move(data);
    return snap;
}

TEST_CASE("a new store is empty and stays empty across a reopen", "[storage]") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    for (int round = 0; round < 2; round++) {
        CHECK(store->first_index() == 1);
        CHECK(store->last_index() == 0);
        CHECK(store->term(0).value() == 0);
        CHECK(store->term(1).error().code == ErrorCode::kUnavailable);
        CHECK(store->initial_state().hard_state.empty());
        CHECK(store->initial_state().snapshot_meta.index == 0);
        CHECK(store->snapshot().error().code == ErrorCode::kSnapshotTemporarilyUnavailable);
        CHECK(store->entries(1, 1, 100).value().empty());
        reopen(store);
    }
}

TEST_CASE("RocksDB logs into the server's log, never into a file on the data disk", "[storage]") {
    // A LOG file on a full disk made RocksDB trip its own assertion (docs/storage.md).
    test::TempDir dir;
    auto store = open_store(dir.path());
    store->append(make_entries(1, 100, 1));
    reopen(store);
    for (const auto& file : std::filesystem::directory_iterator(store->db_dir())) {
        INFO(file.path());
        CHECK(file.path().filename().string().rfind("LOG", 0) != 0);
    }
}

TEST_CASE("appended entries and the hard state survive a reopen", "[storage]") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    store->append(make_entries(1, 11, 1));
    reopen(store);
    store->set_hard_state(HardState{2, 3, 7});
    reopen(store);
    store->append(make_entries(11, 21, 2));
    reopen(store);
    CHECK(store->hard_state() == HardState{2, 3, 7});
    CHECK(store->last_index() == 20);
    CHECK(store->term(10).value() == 1);
    CHECK(store->term(11).value() == 2);
    CHECK(store->entries(5, 6, 0).value() == std::vector<Entry>{make_entry(5, 1)});
}

TEST_CASE("persist writes the hard state and entries of a Ready together", "[storage]") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    raft::Ready ready;
    ready.hard_state = HardState{1, 1, 0};
    ready.entries = make_entries(1, 4, 1);
    ready.must_sync = true;
    store->persist(ready);
    reopen(store);
    CHECK(store->hard_state() == HardState{1, 1, 0});
    CHECK(store->last_index() == 3);
    raft::Ready commit_only;
    commit_only.hard_state = HardState{1, 1, 3};
    commit_only.must_sync = false;
    store->persist(commit_only);
    reopen(store);
    CHECK(store->hard_state().commit == 3);
    store->persist(raft::Ready{});  // nothing to write
    reopen(store);
}

TEST_CASE("entries at or below the last index replace the stored suffix", "[storage]") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    store->append(make_entries(1, 11, 1));
    std::vector<Entry> replacement = make_entries(5, 8, 2);
    store->append(replacement);
    CHECK(store->last_index() == 7);
    reopen(store);
    CHECK(store->last_index() == 7);
    CHECK(store->term(4).value() == 1);
    CHECK(store->term(5).value() == 2);
    CHECK(store->term(8).error().code == ErrorCode::kUnavailable);
    std::vector<Entry> expected = make_entries(1, 5, 1);
    expected.insert(expected.end(), replacement.begin(), replacement.end());
    CHECK(all_entries(*store) == expected);
    // Appending after the truncation continues from the new end.
    store->append(make_entries(8, 9, 2));
    reopen(store);
    CHECK(store->last_index() == 8);
}

TEST_CASE("entries returns at least one entry and stops at the byte limit", "[storage]") {
    test::TempDir dir;
    RocksStorageOptions options;
    // A cache of a few entries, so that reads cross from RocksDB into the cache.
    options.entry_cache_bytes_max = 3 * raft::entry_size_bytes(make_entry(1, 1));
    auto store = open_store(dir.path(), options);
    store->append(make_entries(1, 21, 1));
    const uint64_t size = raft::entry_size_bytes(make_entry(1, 1));
    for (int round = 0; round < 2; round++) {
        CHECK(store->entries(1, 21, 0).value().size() == 1);
        CHECK(store->entries(1, 21, size * 5).value().size() == 5);
        CHECK(store->entries(1, 21, size * 5 + 1).value().size() == 5);
        CHECK(store->entries(15, 21, size * 4).value().size() == 4);
        CHECK(store->entries(19, 21, 0).value() == std::vector<Entry>{make_entry(19, 1)});
        CHECK(store->entries(1, 21, UINT64_MAX).value() == make_entries(1, 21, 1));
        CHECK(store->entries(0, 5, 100).error().code == ErrorCode::kCompacted);
        CHECK(store->entries(1, 22, 100).error().code == ErrorCode::kUnavailable);
        reopen(store, options);
    }
}

TEST_CASE("compaction discards entries up to its index and keeps that index's term", "[storage]") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    store->append(make_entries(1, 6, 1));
    store->append(make_entries(6, 11, 2));
    store->compact(6);
    for (int round = 0; round < 2; round++) {
        CHECK(store->first_index() == 7);
        CHECK(store->last_index() == 10);
        CHECK(store->term(6).value() == 2);
        CHECK(store->term(5).error().code == ErrorCode::kCompacted);
        CHECK(store->entries(6, 8, 100).error().code == ErrorCode::kCompacted);
        CHECK(store->entries(7, 11, UINT64_MAX).value() == make_entries(7, 11, 2));
        reopen(store);
    }
    store->compact(3);  // already compacted: nothing happens
    store->compact(10);
    reopen(store);
    CHECK(store->first_index() == 11);
    CHECK(store->last_index() == 10);
    CHECK(store->term(10).value() == 2);
    // Entries at or below the log start are skipped; the rest are appended.
    store->append(make_entries(9, 13, 2));
    reopen(store);
    CHECK(all_entries(*store) == make_entries(11, 13, 2));
}

TEST_CASE("a created snapshot is durable and keeps the log", "[storage]") {
    test::TempDir dir;
    RocksStorageOptions options;
    options.snapshot_chunk_bytes = 7;  // many chunks
    auto store = open_store(dir.path(), options);
    store->append(make_entries(1, 11, 3));
    raft::ConfState conf;
    conf.voters = {1, 2};
    store->create_snapshot(8, conf, "state machine at 8");
    reopen(store, options);
    CHECK(store->first_index() == 1);
    CHECK(store->initial_state().snapshot_meta.index == 8);
    CHECK(store->initial_state().snapshot_meta.term == 3);
    CHECK(store->initial_state().snapshot_meta.conf_state == conf);
    CHECK(store->snapshot().value().data == "state machine at 8");
    store->create_snapshot(10, conf, "at 10");
    store->compact(10);
    reopen(store, options);
    CHECK(store->snapshot().value().data == "at 10");
    CHECK(store->first_index() == 11);
    CHECK(test::files_with_suffix(store->snapshot_dir(), ".snap").size() == 1);
}

TEST_CASE("applying a snapshot replaces the log; an older one is refused", "[storage]") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    store->append(make_entries(1, 11, 1));
    CHECK(store->apply_snapshot(make_snapshot(20, 4, "twenty")));
    reopen(store);
    CHECK(store->first_index() == 21);
    CHECK(store->last_index() == 20);
    CHECK(store->term(20).value() == 4);
    CHECK(store->snapshot().value().data == "twenty");
    CHECK(store->snapshot().value().metadata == make_snapshot(20, 4, "").metadata);
    CHECK_FALSE(store->apply_snapshot(make_snapshot(20, 4, "again")));
    CHECK_FALSE(store->apply_snapshot(make_snapshot(15, 4, "older")));
    store->append(make_entries(21, 25, 4));
    CHECK(store->apply_snapshot(make_snapshot(22, 4, "twenty-two")));
    reopen(store);
    CHECK(store->last_index() == 22);
    CHECK(store->snapshot().value().data == "twenty-two");
    CHECK(test::files_with_suffix(store->snapshot_dir(), ".snap").size() == 1);
}

TEST_CASE("persist writes a snapshot, hard state and entries of one Ready", "[storage]") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    store->append(make_entries(1, 4, 1));
    raft::Ready ready;
    ready.snapshot = make_snapshot(50, 5, "fifty");
    ready.hard_state = HardState{5, 2, 50};
    ready.entries = make_entries(51, 53, 5);
    store->persist(ready);
    reopen(store);
    CHECK(store->first_index() == 51);
    CHECK(store->last_index() == 52);
    CHECK(store->hard_state() == HardState{5, 2, 50});
    CHECK(store->snapshot().value().data == "fifty");
}

TEST_CASE("opening removes stray snapshot files a crash left behind", "[storage]") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    store->append(make_entries(1, 4, 1));
    store->create_snapshot(2, raft::ConfState{{1}, {}}, "two");
    const std::string snap_dir = store->snapshot_dir();
    store.reset();
    std::ofstream(snap_dir + "/snap-00000000000000000003-00000000000000000001.snap.tmp") << "x";
    std::ofstream(snap_dir + "/snap-00000000000000000001-00000000000000000001.snap") << "old";
    store = open_store(dir.path());
    CHECK(test::files_with_suffix(snap_dir, "").size() == 1);
    CHECK(store->snapshot().value().data == "two");
}

TEST_CASE("a read-only open writes nothing and needs an existing store", "[storage]") {
    test::TempDir dir;
    RocksStorageOptions read_only;
    read_only.read_only = true;
    auto missing = RocksStorage::open(dir.sub("none"), read_only);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().code == StorageErrorCode::kInvalidArgument);
    CHECK_FALSE(std::filesystem::exists(dir.sub("none")));
    {
        auto store = open_store(dir.path());
        store->append(make_entries(1, 4, 1));
        store->set_hard_state(HardState{1, 0, 3});
    }
    auto store = open_store(dir.path(), read_only);
    CHECK(store->last_index() == 3);
    CHECK(store->hard_state().commit == 3);
}

}  // namespace
}  // namespace raftlock::storage

namespace raftlock::storage {
namespace {

TEST_CASE("a reader thread sees a consistent log while the writer appends and compacts",
          "[storage][threads]") {
    test::TempDir dir;
    RocksStorageOptions options;
    options.entry_cache_bytes_max = 2000;  // readers also go to RocksDB
    auto store = test::open_store(dir.path(), options);
    std::atomic<bool> done{false};
    std::atomic<uint64_t> reads{0};
    std::atomic<uint64_t> bad_reads{0};
    std::thread reader([&] {
        // Bounded by the writer's 400 rounds; each read checks what it got.
        while (!done.load()) {
            const raft::Index first = store->first_index();
            const raft::Index last = store->last_index();
            if (first > last) {
                continue;
            }
            auto entries = store->entries(first, last + 1, 4096);
            if (!entries.ok()) {
                continue;  // compacted or truncated between the calls: allowed
            }
            // Catch2 assertions are not thread-safe: count, and check after the join.
            for (const raft::Entry& e : *entries) {
                if (e.data != test::entry_data(e.index, e.term)) {
                    bad_reads++;
                }
            }
            reads++;
        }
    });
    raft::Term term = 1;
    for (int round = 0; round < 400; round++) {
        const raft::Index last = store->last_index();
        if (round % 7 == 6 && last > store->first_index() + 5) {
            term++;
            store->append(make_entries(last - 2, last + 3, term));  // truncates two
        } else {
            store->append(make_entries(last + 1, last + 6, term));
        }
        if (round % 50 == 49) {
            store->compact(store->last_index() - 20);
        }
    }
    done = true;
    reader.join();
    CHECK(reads.load() > 0);
    CHECK(bad_reads.load() == 0);
}

}  // namespace
}  // namespace raftlock::storage

namespace raftlock::storage {
namespace {

TEST_CASE("opening in a directory that cannot be created reports an I/O error", "[storage]") {
    test::TempDir dir;
    auto store = RocksStorage::open(dir.sub("missing-parent/store"));
    REQUIRE_FALSE(store.ok());
    CHECK(store.error().code == StorageErrorCode::kIo);
    CHECK_THAT(store.error().message, Catch::Contains("missing-parent/store"));
}

}  // namespace
}  // namespace raftlock::storage
