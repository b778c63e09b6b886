#include "storage/fault_injecting_storage.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

namespace raftlock::storage {
namespace {

raft::Entry entry(raft::Term term, raft::Index index, std::string data = "x") {
    return raft::Entry{.term = term, .index = index, .data = std::move(data)};
}

raft::Bootstrap boot() {
    return raft::make_bootstrap(raft::ConfState{.voters = {1, 2, 3}});
}

// A bootstrapped, open store.
void start(FaultInjectingStorage& disk) {
    disk.bootstrap(boot());
    REQUIRE_FALSE(disk.open().has_value());
}

void reopen(FaultInjectingStorage& disk, Rng& rng) {
    (void)disk.crash(rng);
    const std::optional<StorageError> error = disk.open();
    REQUIRE_FALSE(error.has_value());
}

// Everything the core can read, compared.
void require_same(const raft::Storage& got, const raft::Storage& want) {
    REQUIRE(got.first_index() == want.first_index());
    REQUIRE(got.last_index() == want.last_index());
    REQUIRE(got.initial_state().hard_state == want.initial_state().hard_state);
    REQUIRE(got.initial_state().snapshot_meta == want.initial_state().snapshot_meta);
    REQUIRE(*got.term(got.first_index() - 1) == *want.term(want.first_index() - 1));
    if (got.last_index() >= got.first_index()) {
        const raft::Index hi = got.last_index() + 1;
        REQUIRE(*got.entries(got.first_index(), hi, UINT64_MAX) ==
                *want.entries(want.first_index(), hi, UINT64_MAX));
    }
    const raft::StorageResult<raft::Snapshot> got_snap = got.snapshot();
    const raft::StorageResult<raft::Snapshot> want_snap = want.snapshot();
    REQUIRE(got_snap.ok() == want_snap.ok());
    if (got_snap.ok()) {
        REQUIRE(got_snap->data == want_snap->data);
    }
}

TEST_CASE("a new store opens empty and has nothing to corrupt", "[storage][fault]") {
    FaultInjectingStorage disk;
    CHECK_FALSE(disk.is_open());
    Rng rng(1);
    CHECK_FALSE(disk.corrupt_record(rng).has_value());
    REQUIRE_FALSE(disk.open().has_value());
    CHECK(disk.last_index() == 0);
    CHECK(disk.initial_state().hard_state.empty());
}

TEST_CASE("a synced write survives a crash", "[storage][fault]") {
    FaultInjectingStorage disk;
    start(disk);
    REQUIRE(disk.write_entries({entry(2, 2), entry(2, 3)}) == WriteStatus::kOk);
    REQUIRE(disk.write_hard_state(raft::HardState{2, 1, 3}) == WriteStatus::kOk);
    REQUIRE(disk.sync() == WriteStatus::kOk);
    Rng rng(1);
    const CrashLoss loss = disk.crash(rng);
    CHECK(loss.unsynced_writes == 0);
    CHECK_FALSE(disk.is_open());
    REQUIRE_FALSE(disk.open().has_value());
    CHECK(disk.last_index() == 3);
    CHECK(disk.initial_state().hard_state.commit == 3);
}

TEST_CASE("a crash keeps only a prefix of the unsynced writes", "[storage][fault]") {
    for (uint64_t seed = 1; seed <= 50; ++seed) {
        FaultInjectingStorage disk;
        start(disk);
        REQUIRE(disk.write_entries({entry(2, 2), entry(2, 3), entry(2, 4)}) == WriteStatus::kOk);
        REQUIRE(disk.write_hard_state(raft::HardState{2, 1, 4}) == WriteStatus::kOk);
        CHECK(disk.last_index() == 4);  // the node reads its own writes
        Rng rng(seed);
        const CrashLoss loss = disk.crash(rng);
        REQUIRE(loss.unsynced_writes == 4);
        REQUIRE_FALSE(disk.open().has_value());
        // Entries first, hard state last: a kept hard state implies every entry was kept.
        const raft::Index last = disk.last_index();
        CHECK(last == 1 + std::min<uint32_t>(loss.kept_writes, 3));
        const raft::HardState hs = disk.initial_state().hard_state;
        CHECK(hs.commit == (loss.kept_writes == 4 ? 4 : 1));
        CHECK(hs.commit <= last);
    }
}

TEST_CASE("unsynced commit-only hard states replace each other", "[storage][fault]") {
    FaultInjectingStorage disk;
    start(disk);
    REQUIRE(disk.write_entries({entry(2, 2)}) == WriteStatus::kOk);
    REQUIRE(disk.sync() == WriteStatus::kOk);
    REQUIRE(disk.write_hard_state(raft::HardState{2, 1, 2}) == WriteStatus::kOk);
    REQUIRE(disk.write_hard_state(raft::HardState{2, 1, 2}) == WriteStatus::kOk);
    CHECK(disk.unsynced_writes() == 1);
}

TEST_CASE("an application snapshot is durable and compacts the log", "[storage][fault]") {
    FaultInjectingStorage disk;
    start(disk);
    REQUIRE(disk.write_entries({entry(2, 2), entry(2, 3), entry(2, 4)}) == WriteStatus::kOk);
    REQUIRE(disk.write_hard_state(raft::HardState{2, 1, 4}) == WriteStatus::kOk);
    REQUIRE(disk.save_snapshot(4, raft::ConfState{.voters = {1, 2, 3}}, "state", 3) ==
            WriteStatus::kOk);
    Rng rng(7);
    reopen(disk, rng);
    CHECK(disk.first_index() == 4);
    CHECK(disk.last_index() == 4);
    CHECK(disk.snapshot()->data == "state");
    CHECK(disk.snapshot()->metadata.index == 4);
    CHECK(*disk.term(3) == 2);
}

TEST_CASE("a conflicting entry replaces the log from its index", "[storage][fault]") {
    FaultInjectingStorage disk;
    start(disk);
    REQUIRE(disk.write_entries({entry(2, 2), entry(2, 3), entry(2, 4)}) == WriteStatus::kOk);
    REQUIRE(disk.write_entries({entry(3, 3)}) == WriteStatus::kOk);
    REQUIRE(disk.sync() == WriteStatus::kOk);
    Rng rng(3);
    reopen(disk, rng);
    CHECK(disk.last_index() == 3);
    CHECK(*disk.term(3) == 3);
}

TEST_CASE("a snapshot from the leader replaces the whole log", "[storage][fault]") {
    FaultInjectingStorage disk;
    start(disk);
    REQUIRE(disk.write_entries({entry(2, 2)}) == WriteStatus::kOk);
    const raft::Snapshot snap{raft::SnapshotMetadata{9, 4, raft::ConfState{.voters = {1, 2}}},
                              "data"};
    REQUIRE(disk.write_snapshot(snap) == WriteStatus::kOk);
    REQUIRE(disk.write_entries({entry(4, 10)}) == WriteStatus::kOk);
    REQUIRE(disk.sync() == WriteStatus::kOk);
    Rng rng(3);
    reopen(disk, rng);
    CHECK(disk.first_index() == 10);
    CHECK(disk.last_index() == 10);
    CHECK(disk.snapshot()->metadata == snap.metadata);
    CHECK(disk.snapshot()->data == "data");
}

TEST_CASE("a failed write stops the store until a crash", "[storage][fault]") {
    FaultInjectingStorage disk;
    start(disk);
    disk.fail_next_write(WriteStatus::kNoSpace);
    CHECK(disk.write_entries({entry(2, 2)}) == WriteStatus::kNoSpace);
    CHECK(disk.failed());
    Rng rng(5);
    (void)disk.crash(rng);
    CHECK_FALSE(disk.failed());
    REQUIRE_FALSE(disk.open().has_value());
    // Only the next write fails; the restarted store writes again.
    REQUIRE(disk.write_entries({entry(2, 2)}) == WriteStatus::kOk);
    REQUIRE(disk.sync() == WriteStatus::kOk);
}

TEST_CASE("a failed write makes nothing durable beyond what a crash keeps", "[storage][fault]") {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        for (WriteStatus error : {WriteStatus::kIoError, WriteStatus::kNoSpace}) {
            FaultInjectingStorage disk;
            start(disk);
            REQUIRE(disk.write_entries({entry(2, 2)}) == WriteStatus::kOk);
            const bool fail_sync = seed % 2 == 0;
            if (fail_sync) {
                REQUIRE(disk.write_hard_state(raft::HardState{2, 1, 2}) == WriteStatus::kOk);
                disk.fail_next_write(error);
                CHECK(disk.sync() == error);
            } else {
                disk.fail_next_write(error);
                CHECK(disk.write_hard_state(raft::HardState{2, 1, 2}) == error);
            }
            Rng rng(seed);
            const CrashLoss loss = disk.crash(rng);
            CHECK(loss.unsynced_writes == 2);
            REQUIRE_FALSE(disk.open().has_value());
            CHECK(disk.last_index() == (loss.kept_writes >= 1 ? 2 : 1));
            CHECK(disk.initial_state().hard_state.commit == (loss.kept_writes == 2 ? 2 : 1));
        }
    }
}

TEST_CASE("a failed snapshot save changes nothing", "[storage][fault]") {
    FaultInjectingStorage disk;
    start(disk);
    REQUIRE(disk.write_entries({entry(2, 2), entry(2, 3)}) == WriteStatus::kOk);
    REQUIRE(disk.sync() == WriteStatus::kOk);
    disk.fail_next_write(WriteStatus::kIoError);
    CHECK(disk.save_snapshot(3, raft::ConfState{.voters = {1, 2, 3}}, "s", 3) ==
          WriteStatus::kIoError);
    Rng rng(2);
    reopen(disk, rng);
    CHECK(disk.first_index() == 1);
    CHECK(disk.last_index() == 3);
    CHECK_FALSE(disk.snapshot().ok());
}

// A store with every kind of record at rest: hard state, log start, snapshot metadata and data,
// and log entries behind and after the snapshot.
void fill(FaultInjectingStorage& disk) {
    start(disk);
    REQUIRE(disk.write_entries({entry(2, 2, "a"), entry(2, 3, "bb"), entry(3, 4, "ccc")}) ==
            WriteStatus::kOk);
    REQUIRE(disk.write_hard_state(raft::HardState{3, 2, 4}) == WriteStatus::kOk);
    REQUIRE(disk.save_snapshot(3, raft::ConfState{.voters = {1, 2, 3}}, "snapshot state", 2) ==
            WriteStatus::kOk);
    REQUIRE(disk.write_entries({entry(3, 5, "dddd")}) == WriteStatus::kOk);
    REQUIRE(disk.sync() == WriteStatus::kOk);
}

TEST_CASE("every flipped bit at rest is detected on open", "[storage][fault]") {
    std::vector<std::string> hit;
    for (uint64_t seed = 1; seed <= 400; ++seed) {
        FaultInjectingStorage disk;
        fill(disk);
        Rng rng(seed);
        (void)disk.crash(rng);
        const std::optional<Corruption> c = disk.corrupt_record(rng);
        REQUIRE(c.has_value());
        CAPTURE(c->describe());
        CHECK_FALSE(disk.read_durable().ok());
        const std::optional<StorageError> error = disk.open();
        REQUIRE(error.has_value());
        CHECK(error->code == StorageErrorCode::kCorruption);
        CHECK_FALSE(disk.is_open());
        // The message names the damaged record, so an operator knows where to look.
        const std::string& message = error->message;
        if (c->record.starts_with("log entry record at index ")) {
            const std::string index = c->record.substr(c->record.rfind(' ') + 1);
            CHECK(message.find("index " + index) != std::string::npos);
        } else if (c->record == "snapshot data") {
            CHECK(message.find("snapshot data") != std::string::npos);
        } else {
            const std::string kind = c->record.substr(0, c->record.find(" record"));
            CHECK(message.find(kind) != std::string::npos);
        }
        hit.push_back(c->record);
    }
    // Every record kind was hit at least once.
    for (std::string_view kind :
         {"hard state", "log start", "snapshot metadata", "snapshot data", "log entry"}) {
        CHECK(std::any_of(hit.begin(), hit.end(),
                          [&](const std::string& r) { return r.starts_with(kind); }));
    }
}

TEST_CASE("a corrupt store stays closed and refuses every open", "[storage][fault]") {
    FaultInjectingStorage disk;
    fill(disk);
    Rng rng(11);
    (void)disk.crash(rng);
    REQUIRE(disk.corrupt_record(rng).has_value());
    REQUIRE(disk.open().has_value());
    REQUIRE(disk.open().has_value());
    CHECK_FALSE(disk.is_open());
}

// The reference: raft::MemoryStorage as the durable disk, with the unsynced writes applied on
// sync or, for the prefix a crash keeps, at the crash.
struct Reference {
    struct Write {
        std::optional<raft::Snapshot> snapshot;
        std::optional<raft::Entry> entry;
        std::optional<raft::HardState> hard_state;
    };
    raft::MemoryStorage durable;
    std::vector<Write> unsynced;

    void apply(const Write& w) {
        if (w.snapshot) {
            (void)durable.apply_snapshot(*w.snapshot);
        }
        if (w.entry) {
            durable.append({*w.entry});
        }
        if (w.hard_state) {
            durable.set_hard_state(*w.hard_state);
        }
    }
    void sync() {
        for (const Write& w : unsynced) {
            apply(w);
        }
        unsynced.clear();
    }
};

// One random write on both stores; `term` only grows, like a node's current term.
void random_write(FaultInjectingStorage& disk, Reference& ref, Rng& rng, raft::Term& term) {
    term += rng.chance(1, 5) ? 1 : 0;
    const raft::Index last = disk.last_index();
    const raft::Index snap = disk.initial_state().snapshot_meta.index;
    switch (rng.uniform(5)) {
        case 0: {  // a Ready's entries, possibly replacing a suffix
            // Never at or below the snapshot: a node only replaces uncommitted entries.
            const raft::Index lo = std::max(disk.first_index(), snap + 1);
            const raft::Index from = lo + rng.uniform(last + 2 - lo);
            std::vector<raft::Entry> entries;
            for (raft::Index i = from; i < from + 1 + rng.uniform(4); ++i) {
                entries.push_back(entry(term, i, std::string(rng.uniform(6), 'e')));
                ref.unsynced.push_back({.entry = entries.back()});
            }
            REQUIRE(disk.write_entries(entries) == WriteStatus::kOk);
            break;
        }
        case 1: {
            const raft::HardState hs{term, rng.uniform(4), rng.uniform(last + 1)};
            REQUIRE(disk.write_hard_state(hs) == WriteStatus::kOk);
            // The store coalesces commit-only hard states; a crash then keeps none or the newer,
            // so the reference does the same.
            if (!ref.unsynced.empty() && ref.unsynced.back().hard_state &&
                !ref.unsynced.back().entry && !ref.unsynced.back().snapshot) {
                ref.unsynced.back() = {.hard_state = hs};
            } else {
                ref.unsynced.push_back({.hard_state = hs});
            }
            break;
        }
        case 2: {  // a leader's snapshot, inside or beyond the log
            const raft::Index index = snap + 1 + rng.uniform(last - snap + 3);
            const raft::Term t = index <= last ? *disk.term(index) : term;
            const raft::Snapshot s{raft::SnapshotMetadata{index, t, {.voters = {1, 2}}}, "leader"};
            REQUIRE(disk.write_snapshot(s) == WriteStatus::kOk);
            ref.unsynced.push_back({.snapshot = s});
            break;
        }
        case 3:
            REQUIRE(disk.sync() == WriteStatus::kOk);
            ref.sync();
            break;
        default:
            if (last > snap && last >= disk.first_index()) {
                const raft::Index index = snap + 1 + rng.uniform(last - snap);
                const raft::Index compact = index - rng.uniform(index - disk.first_index() + 2);
                const std::string data = fmt::format("app {}", index);
                REQUIRE(disk.save_snapshot(index, {.voters = {1, 2, 3}}, data, compact) ==
                        WriteStatus::kOk);
                ref.sync();
                ref.durable.create_snapshot(index, {.voters = {1, 2, 3}}, data);
                ref.durable.compact(compact);
            }
            break;
    }
}

TEST_CASE("after every crash the store reads like the reference disk", "[storage][fault]") {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        FaultInjectingStorage disk;
        Reference ref;
        start(disk);
        ref.durable.append({boot().entry});
        ref.durable.set_hard_state(boot().hard_state);
        Rng rng(seed);
        raft::Term term = 1;
        for (int step = 0; step < 300; ++step) {
            random_write(disk, ref, rng, term);
            if (rng.chance(1, 10)) {
                const CrashLoss loss = disk.crash(rng);
                REQUIRE(loss.unsynced_writes == ref.unsynced.size());
                ref.unsynced.resize(loss.kept_writes);
                ref.sync();
                REQUIRE_FALSE(disk.open().has_value());
                require_same(disk, ref.durable);
            }
        }
        REQUIRE(disk.sync() == WriteStatus::kOk);
        ref.sync();
        const Result<raft::MemoryStorage, StorageError> durable = disk.read_durable();
        REQUIRE(durable.ok());
        require_same(*durable, ref.durable);
        require_same(disk, ref.durable);
    }
}

}  // namespace
}  // namespace raftlock::storage
