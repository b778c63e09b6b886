#include "tests/sim/disk.h"

#include <catch2/catch.hpp>

namespace raftlock::sim {
namespace {

raft::Entry entry(raft::Term term, raft::Index index) {
    return raft::Entry{.term = term, .index = index, .data = "x"};
}

raft::Bootstrap boot() {
    return raft::make_bootstrap(raft::ConfState{.voters = {1, 2, 3}});
}

TEST_CASE("a synced write survives a crash", "[sim][disk]") {
    SimDisk disk;
    disk.bootstrap(boot());
    disk.write_entries({entry(2, 2), entry(2, 3)});
    disk.write_hard_state(raft::HardState{2, 1, 3});
    disk.sync();
    Rng rng(1);
    const CrashLoss loss = disk.crash(rng);
    CHECK(loss.unsynced_writes == 0);
    CHECK(disk.storage().last_index() == 3);
    CHECK(disk.storage().initial_state().hard_state.commit == 3);
}

TEST_CASE("a crash keeps only a prefix of the unsynced writes", "[sim][disk]") {
    for (uint64_t seed = 1; seed <= 50; ++seed) {
        SimDisk disk;
        disk.bootstrap(boot());
        disk.write_entries({entry(2, 2), entry(2, 3), entry(2, 4)});
        disk.write_hard_state(raft::HardState{2, 1, 4});
        CHECK(disk.storage().last_index() == 4);  // the node reads its own writes
        Rng rng(seed);
        const CrashLoss loss = disk.crash(rng);
        REQUIRE(loss.unsynced_writes == 4);
        // Entries first, hard state last: a kept hard state implies every entry was kept.
        const raft::Index last = disk.storage().last_index();
        CHECK(last == 1 + std::min<uint32_t>(loss.kept_writes, 3));
        const raft::HardState hs = disk.storage().initial_state().hard_state;
        CHECK(hs.commit == (loss.kept_writes == 4 ? 4 : 1));
        CHECK(hs.commit <= last);
    }
}

TEST_CASE("unsynced commit-only hard states replace each other", "[sim][disk]") {
    SimDisk disk;
    disk.bootstrap(boot());
    disk.write_entries({entry(2, 2)});
    disk.sync();
    disk.write_hard_state(raft::HardState{2, 1, 2});
    disk.write_hard_state(raft::HardState{2, 1, 2});
    CHECK(disk.unsynced_writes() == 1);
}

TEST_CASE("an application snapshot is durable and compacts the log", "[sim][disk]") {
    SimDisk disk;
    disk.bootstrap(boot());
    disk.write_entries({entry(2, 2), entry(2, 3), entry(2, 4)});
    disk.write_hard_state(raft::HardState{2, 1, 4});
    disk.save_app_snapshot(4, raft::ConfState{.voters = {1, 2, 3}}, "state", 3);
    Rng rng(7);
    disk.crash(rng);
    CHECK(disk.storage().first_index() == 4);
    CHECK(disk.storage().last_index() == 4);
    CHECK(disk.storage().snapshot()->data == "state");
}

}  // namespace
}  // namespace raftlock::sim
