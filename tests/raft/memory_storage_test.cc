// MemoryStorage: the reference Storage implementation the other tests stand on.

#include "raft/memory_storage.h"

#include <catch2/catch.hpp>

namespace raftlock::raft {
namespace {

std::vector<Entry> terms_entries(Index first, const std::vector<Term>& terms) {
    std::vector<Entry> out;
    for (size_t i = 0; i < terms.size(); ++i) {
        out.push_back(Entry{.term = terms[i], .index = first + i, .data = "xyz"});
    }
    return out;
}

std::vector<Index> index_list(const std::vector<Entry>& entries) {
    std::vector<Index> out;
    for (const Entry& e : entries) {
        out.push_back(e.index);
    }
    return out;
}

TEST_CASE("an empty MemoryStorage has no entries and no snapshot", "[raft][memory_storage]") {
    MemoryStorage s;
    CHECK(s.first_index() == 1);
    CHECK(s.last_index() == 0);
    CHECK(s.term(0).ok());
    CHECK(*s.term(0) == 0);
    CHECK(s.term(1).error().code == ErrorCode::kUnavailable);
    CHECK(s.entries(1, 2, 100).error().code == ErrorCode::kUnavailable);
    CHECK(s.snapshot().error().code == ErrorCode::kSnapshotTemporarilyUnavailable);
    CHECK(s.initial_state().hard_state.empty());
    CHECK(s.initial_state().snapshot_meta.index == 0);
}

TEST_CASE("MemoryStorage appends, replaces a conflicting suffix and skips compacted entries",
          "[raft][memory_storage]") {
    MemoryStorage s;
    s.append(terms_entries(1, {1, 1, 1, 1}));
    CHECK(s.last_index() == 4);
    s.append(terms_entries(3, {2}));  // replaces 3..4
    CHECK(s.last_index() == 3);
    CHECK(*s.term(3) == 2);
    s.append(terms_entries(4, {2, 2}));
    CHECK(s.last_index() == 5);
    s.append({});
    CHECK(s.last_index() == 5);
    s.create_snapshot(3, ConfState{{1}, {}}, "snap");
    s.compact(3);
    // Entries 2..5 of terms 1,2,2,3: 2..3 are compacted and skipped, 4 is rewritten with the same
    // term and 5 is replaced by term 3.
    s.append(terms_entries(2, {1, 2, 2, 3}));
    CHECK(s.first_index() == 4);
    CHECK(s.last_index() == 5);
    CHECK(*s.term(5) == 3);
    s.append(terms_entries(1, {1, 1}));  // entirely compacted: ignored
    CHECK(s.last_index() == 5);
}

TEST_CASE("MemoryStorage::entries honours its range and size limit", "[raft][memory_storage]") {
    MemoryStorage s;
    s.append(terms_entries(1, {1, 1, 2, 2, 3}));
    const uint64_t size = 16 + 3;
    CHECK(index_list(*s.entries(1, 6, UINT64_MAX)) == std::vector<Index>{1, 2, 3, 4, 5});
    CHECK(index_list(*s.entries(2, 5, 0)) == std::vector<Index>{2});
    CHECK(index_list(*s.entries(2, 5, 2 * size)) == std::vector<Index>{2, 3});
    CHECK(index_list(*s.entries(2, 5, 2 * size + 1)) == std::vector<Index>{2, 3});
    CHECK(index_list(*s.entries(3, 3, 0)).empty());
    CHECK(s.entries(1, 7, UINT64_MAX).error().code == ErrorCode::kUnavailable);
    s.create_snapshot(2, ConfState{{1}, {}}, "");
    s.compact(2);
    CHECK(s.entries(2, 4, UINT64_MAX).error().code == ErrorCode::kCompacted);
    CHECK(index_list(*s.entries(3, 4, UINT64_MAX)) == std::vector<Index>{3});
}

TEST_CASE("MemoryStorage compaction keeps the term of the last compacted entry",
          "[raft][memory_storage]") {
    MemoryStorage s;
    s.append(terms_entries(1, {1, 2, 3, 4, 5}));
    s.create_snapshot(3, ConfState{{1, 2}, {}}, "state@3");
    s.compact(3);
    CHECK(s.first_index() == 4);
    CHECK(s.last_index() == 5);
    CHECK(*s.term(3) == 3);
    CHECK(s.term(2).error().code == ErrorCode::kCompacted);
    s.compact(2);  // already compacted: no-op
    CHECK(s.first_index() == 4);
    auto snap = s.snapshot();
    REQUIRE(snap.ok());
    CHECK(snap->metadata.index == 3);
    CHECK(snap->metadata.term == 3);
    CHECK(snap->metadata.conf_state == ConfState{{1, 2}, {}});
    CHECK(snap->data == "state@3");
    CHECK(s.initial_state().snapshot_meta == snap->metadata);
    s.compact(5);
    CHECK(s.first_index() == 6);
    CHECK(s.last_index() == 5);
    CHECK(*s.term(5) == 5);
}

TEST_CASE("MemoryStorage applies only snapshots newer than its own", "[raft][memory_storage]") {
    MemoryStorage s;
    s.append(terms_entries(1, {1, 1, 1}));
    const Snapshot snap{SnapshotMetadata{10, 4, ConfState{{1, 2, 3}, {}}}, "s10"};
    REQUIRE(s.apply_snapshot(snap));
    CHECK(s.first_index() == 11);
    CHECK(s.last_index() == 10);
    CHECK(*s.term(10) == 4);
    CHECK_FALSE(s.apply_snapshot(Snapshot{SnapshotMetadata{10, 4, {}}, "again"}));
    CHECK_FALSE(s.apply_snapshot(Snapshot{SnapshotMetadata{5, 4, {}}, "older"}));
    CHECK(s.snapshot()->data == "s10");
    s.append(terms_entries(11, {4}));
    CHECK(s.last_index() == 11);
}

TEST_CASE("MemoryStorage keeps the hard state it is given", "[raft][memory_storage]") {
    MemoryStorage s;
    s.set_hard_state(HardState{5, 2, 0});
    CHECK(s.initial_state().hard_state == HardState{5, 2, 0});
}

}  // namespace
}  // namespace raftlock::raft
