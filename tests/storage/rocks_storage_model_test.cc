// Each store (RocksStorage, JournalStorage) against the reference MemoryStorage: the same random
// operations, with reopens in between, must leave both answering every read the same way.

#include <type_traits>

#include <catch2/catch.hpp>

#include "base/rng.h"
#include "raft/memory_storage.h"
#include "storage/journal_storage.h"
#include "storage/rocks_storage.h"
#include "tests/storage/test_util.h"

namespace raftlock::storage {
namespace {

using raft::Index;
using raft::Term;

// Opens each store with options that send most reads to disk.
struct RocksOpener {
    static std::unique_ptr<RocksStorage> open(const std::string& dir) {
        RocksStorageOptions options;
        options.entry_cache_bytes_max = 300;  // most reads go to RocksDB
        options.snapshot_chunk_bytes = 16;
        return test::open_store(dir, options);
    }
};
struct JournalOpener {
    static std::unique_ptr<JournalStorage> open(const std::string& dir) {
        JournalStorageOptions options;
        options.entry_cache_bytes_max = 300;  // most reads go to the segments
        options.snapshot_chunk_bytes = 16;
        options.segment_bytes = 16 << 10;  // 16 KiB: segments fill, rotate and are released
        auto store = JournalStorage::open(dir, options);
        if (!store.ok()) {
            FAIL("open " << dir << ": " << store.error().message);
        }
        return std::move(*store);
    }
};

template <typename Store>
void check_same(const raft::MemoryStorage& model, const Store& store) {
    REQUIRE(store.first_index() == model.first_index());
    REQUIRE(store.last_index() == model.last_index());
    CHECK(store.initial_state().hard_state == model.initial_state().hard_state);
    CHECK(store.initial_state().snapshot_meta == model.initial_state().snapshot_meta);
    for (Index i = model.first_index() - 1; i <= model.last_index() + 1; i++) {
        auto want = model.term(i);
        auto got = store.term(i);
        REQUIRE(got.ok() == want.ok());
        if (want.ok()) {
            CHECK(*got == *want);
        }
    }
    const Index lo = model.first_index();
    const Index hi = model.last_index() + 1;
    for (uint64_t max_bytes : {uint64_t{0}, uint64_t{100}, uint64_t{1000}, UINT64_MAX}) {
        auto want = model.entries(lo, hi, max_bytes);
        auto got = store.entries(lo, hi, max_bytes);
        REQUIRE(got.ok() == want.ok());
        CHECK(*got == *want);
    }
    auto want_snap = model.snapshot();
    auto got_snap = store.snapshot();
    REQUIRE(got_snap.ok() == want_snap.ok());
    if (want_snap.ok()) {
        CHECK(got_snap->metadata == want_snap->metadata);
        CHECK(got_snap->data == want_snap->data);
    }
}

// Appends a few entries, sometimes overwriting an uncommitted suffix with a higher term (as Raft
// does: committed entries are never replaced).
std::vector<raft::Entry> random_append(Rng& rng, const raft::MemoryStorage& model, Term& term) {
    Index from = model.last_index() + 1;
    const Index lowest = std::max(model.first_index(), model.initial_state().hard_state.commit + 1);
    if (rng.next() % 3 == 0 && model.last_index() >= lowest) {
        from = lowest + rng.next() % (model.last_index() - lowest + 1);
        term++;
    }
    const Index count = 1 + rng.next() % 6;
    std::vector<raft::Entry> entries;
    for (Index i = from; i < from + count; i++) {
        entries.push_back(test::make_entry(i, term, rng.next() % 80));
    }
    return entries;
}

TEMPLATE_TEST_CASE("random operations agree with MemoryStorage across reopens",
                   "[storage][model]",
                   RocksOpener,
                   JournalOpener) {
    const uint64_t seed = GENERATE(1, 2, 3, 4, 5);
    Rng rng(seed);
    test::TempDir dir;
    auto store = TestType::open(dir.path());
    raft::MemoryStorage model;
    Term term = 1;
    // The journal's run is longer: enough to fill and release segments (and it is fast).
    const int steps = std::is_same_v<TestType, JournalOpener> ? 400 : 200;
    for (int step = 0; step < steps; step++) {
        const uint64_t op = rng.next() % 10;
        if (op < 5) {
            const std::vector<raft::Entry> entries = random_append(rng, model, term);
            model.append(entries);
            store->append(entries);
        } else if (op == 5) {
            const raft::HardState hs{term, rng.next() % 4, model.last_index()};
            model.set_hard_state(hs);
            store->set_hard_state(hs);
        } else if (op == 6 && model.last_index() >= model.first_index()) {
            const Index at =
                model.first_index() + rng.next() % (model.last_index() - model.first_index() + 1);
            model.compact(at);
            store->compact(at);
        } else if (op == 7) {
            const Index snap_index = model.initial_state().snapshot_meta.index;
            const Index at = std::max(snap_index, model.first_index() - 1) + 1;
            if (at <= model.last_index()) {
                const std::string data = test::entry_data(at, term, rng.next() % 100);
                model.create_snapshot(at, raft::ConfState{{1, 2}, {}}, data);
                store->create_snapshot(at, raft::ConfState{{1, 2}, {}}, data);
            }
        } else if (op == 8) {
            raft::Snapshot snap;
            snap.metadata = {model.last_index() + rng.next() % 5, term, raft::ConfState{{1}, {3}}};
            snap.data = test::entry_data(snap.metadata.index, term, 50);
            if (snap.metadata.index > 0) {
                CHECK(model.apply_snapshot(snap) == store->apply_snapshot(snap));
            }
        } else {
            store.reset();
            store = TestType::open(dir.path());
        }
        check_same(model, *store);
    }
    if constexpr (std::is_same_v<TestType, JournalOpener>) {
        // The run filled segments and released those that held only dead entries.
        CHECK(store->segments().front() > 1);
        INFO("segments " << store->segments().front() << ".." << store->segments().back());
        CHECK(store->segments().back() > 5);
    }
}

}  // namespace
}  // namespace raftlock::storage
