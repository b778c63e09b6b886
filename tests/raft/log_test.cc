// RaftLog and Unstable: the log as the core sees it, stable entries in Storage followed by an
// unstable tail, with the commit and apply positions.

#include "raft/log.h"

#include <optional>

#include <catch2/catch.hpp>

#include "raft/memory_storage.h"
#include "raft/text.h"

namespace raftlock::raft {
namespace {

constexpr uint64_t kNoLimit = UINT64_MAX;

// Entries first, first+1, ... of the given terms; data "dNN" (so every entry counts 16 + 3 bytes).
std::vector<Entry> ents(Index first, const std::vector<Term>& terms) {
    std::vector<Entry> out;
    for (size_t i = 0; i < terms.size(); ++i) {
        const Index index = first + i;
        out.push_back(
            Entry{.term = terms[i], .index = index, .data = fmt::format("d{:02}", index % 100)});
    }
    return out;
}

constexpr uint64_t kEntryBytes = 19;

std::vector<Term> terms_of(const RaftLog& log) {
    std::vector<Term> out;
    for (Index i = log.first_index(); i <= log.last_index(); ++i) {
        out.push_back(log.term(i).value_or(0));
    }
    return out;
}

std::vector<Index> indexes(const std::vector<Entry>& entries) {
    std::vector<Index> out;
    for (const Entry& e : entries) {
        out.push_back(e.index);
    }
    return out;
}

std::string text(const std::vector<Entry>& entries) {
    std::string out;
    for (const Entry& e : entries) {
        out += to_string(e) + "; ";
    }
    return out;
}

TEST_CASE("a log over storage starts after the stored entries, committed up to the snapshot",
          "[raft][log]") {
    MemoryStorage s;
    REQUIRE(s.apply_snapshot(Snapshot{SnapshotMetadata{5, 2, ConfState{{1}, {}}}, "snap"}));
    s.append(ents(6, {2, 3, 3}));
    RaftLog log(s, kNoLimit);
    CHECK(log.first_index() == 6);
    CHECK(log.last_index() == 8);
    CHECK(log.last_term() == 3);
    CHECK(log.committed() == 5);
    CHECK(log.applied() == 5);
    CHECK(log.term(5) == Term{2});  // the snapshot's entry keeps a known term
    CHECK(log.term(4) == std::nullopt);
    CHECK(log.term(9) == std::nullopt);
    CHECK(log.unstable().offset() == 9);
    CHECK(log.last_stable_index() == 8);
    CHECK_FALSE(log.has_next_committed_entries());
}

TEST_CASE("appended entries stay unstable until stable_to acknowledges them", "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1}));
    RaftLog log(s, kNoLimit);
    CHECK(log.append(ents(2, {1, 2})) == 3);
    CHECK(log.last_index() == 3);
    CHECK(log.last_stable_index() == 1);
    CHECK(log.unstable().entries() == ents(2, {1, 2}));
    CHECK(log.unstable().entries_to_persist() == ents(2, {1, 2}));
    log.accept_in_progress();  // a Ready carried them
    CHECK(log.unstable().entries_to_persist().empty());
    s.append(log.unstable().entries());
    log.stable_to(2, 1);
    CHECK(log.unstable().offset() == 3);
    CHECK(log.last_stable_index() == 2);
    log.stable_to(3, 1);  // wrong term: not what was handed out
    CHECK(log.last_stable_index() == 2);
    log.stable_to(3, 2);
    CHECK(log.unstable().entries().empty());
    CHECK(log.last_stable_index() == 3);
    CHECK(log.last_index() == 3);
    CHECK(log.append({}) == 3);
}

TEST_CASE("maybe_append follows the AppendEntries receiver rules", "[raft][log]") {
    struct Case {
        Index prev_index;
        Term prev_term;
        Index committed;
        std::vector<Entry> entries;
        std::optional<Index> last_new;  // nullopt: rejected
        std::optional<Index> first_written;
        Index want_commit;
        std::vector<Term> want_terms;
    };
    // Stored log 1/1 2/2 3/3, committed 1.
    const std::vector<Term> base{1, 2, 3};
    const std::vector<Case> cases{
        // Rejections: no entry at prev, or a different term there.
        {3, 2, 3, ents(4, {4}), std::nullopt, std::nullopt, 1, base},
        {4, 3, 3, ents(5, {4}), std::nullopt, std::nullopt, 1, base},
        {0, 1, 3, ents(1, {1}), std::nullopt, std::nullopt, 1, base},
        // Heartbeat-like: commit = min(leader commit, last new).
        {3, 3, 3, {}, 3, std::nullopt, 3, base},
        {3, 3, 4, {}, 3, std::nullopt, 3, base},
        {2, 2, 3, {}, 2, std::nullopt, 2, base},
        {3, 3, 0, {}, 3, std::nullopt, 1, base},
        // New entries.
        {3, 3, 4, ents(4, {4}), 4, 4, 4, {1, 2, 3, 4}},
        {3, 3, 9, ents(4, {4, 4}), 5, 4, 5, {1, 2, 3, 4, 4}},
        {0, 0, 0, ents(1, {1, 2, 3, 4}), 4, 4, 1, {1, 2, 3, 4}},
        // Matching entries: nothing written.
        {2, 2, 3, ents(3, {3}), 3, std::nullopt, 3, base},
        {0, 0, 3, ents(1, {1, 2}), 2, std::nullopt, 2, base},
        // Conflicts: the entry and everything after it are replaced.
        {2, 2, 3, ents(3, {4}), 3, 3, 3, {1, 2, 4}},
        {1, 1, 1, ents(2, {4}), 2, 2, 1, {1, 4}},
        {1, 1, 2, ents(2, {2, 4, 4}), 4, 3, 2, {1, 2, 4, 4}},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        MemoryStorage s;
        s.append(ents(1, base));
        RaftLog log(s, kNoLimit);
        log.commit_to(1);
        auto result =
            log.maybe_append(c.prev_index, c.prev_term, c.committed, std::vector<Entry>(c.entries));
        INFO("case " << i << ": prev=" << c.prev_term << "/" << c.prev_index
                     << " commit=" << c.committed << " entries=" << text(c.entries));
        REQUIRE(result.has_value() == c.last_new.has_value());
        if (result) {
            CHECK(result->last_new == *c.last_new);
            CHECK(result->first_written == c.first_written);
        }
        CHECK(log.committed() == c.want_commit);
        CHECK(terms_of(log) == c.want_terms);
    }
}

TEST_CASE("a conflict below the unstable offset replaces stored entries", "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1, 1, 1, 1, 1}));
    RaftLog log(s, kNoLimit);
    auto r = log.maybe_append(2, 1, 0, ents(3, {2}));
    REQUIRE(r.has_value());
    CHECK(r->first_written == Index{3});
    CHECK(log.last_index() == 3);
    CHECK(log.term(3) == Term{2});
    CHECK(log.term(4) == std::nullopt);  // still in storage, but no longer part of the log
    CHECK(log.last_stable_index() == 2);
    CHECK(log.unstable().offset() == 3);
    auto slice = log.slice(1, 4, kNoLimit);
    REQUIRE(slice.has_value());
    CHECK(*slice == std::vector<Entry>{ents(1, {1, 1})[0], ents(1, {1, 1})[1], ents(3, {2})[0]});
}

TEST_CASE("stable_to ignores acknowledgements of entries replaced since the Ready", "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1}));
    RaftLog log(s, kNoLimit);
    log.append(ents(2, {1, 1, 1, 1}));  // unstable 2..5 of term 1
    const std::vector<Entry> handed_out = log.unstable().entries_to_persist();
    log.accept_in_progress();
    SECTION("the tail was replaced") {
        REQUIRE(log.maybe_append(3, 1, 0, ents(4, {2})));
        CHECK(terms_of(log) == std::vector<Term>{1, 1, 1, 2});
        log.stable_to(5, 1);  // entry 5 no longer exists
        CHECK(log.unstable().offset() == 2);
        log.stable_to(4, 1);  // entry 4 now has term 2
        CHECK(log.unstable().offset() == 2);
        log.stable_to(3, 1);  // entries 2..3 are unchanged and were persisted
        CHECK(log.unstable().offset() == 4);
        CHECK(log.unstable().entries() == ents(4, {2}));
    }
    SECTION("everything was replaced") {
        REQUIRE(log.maybe_append(1, 1, 0, ents(2, {3})));
        log.stable_to(5, 1);
        log.stable_to(2, 1);
        CHECK(log.unstable().offset() == 2);
        CHECK(log.unstable().entries() == ents(2, {3}));
        CHECK(log.last_stable_index() == 1);
    }
    SECTION("nothing was replaced but more was appended") {
        log.append(ents(6, {1}));
        log.stable_to(handed_out.back().index, handed_out.back().term);
        CHECK(log.unstable().entries() == ents(6, {1}));
    }
}

TEST_CASE("a Ready carries only entries no Ready in flight carries", "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1}));
    RaftLog log(s, kNoLimit);
    log.append(ents(2, {1, 1}));
    CHECK(log.unstable().entries_to_persist() == ents(2, {1, 1}));
    log.accept_in_progress();  // Ready A: 2..3
    log.append(ents(4, {1, 1}));
    CHECK(log.unstable().has_entries_to_persist());
    CHECK(log.unstable().entries_to_persist() == ents(4, {1, 1}));
    log.accept_in_progress();  // Ready B: 4..5
    CHECK_FALSE(log.unstable().has_entries_to_persist());
    CHECK(log.last_stable_index() == 1);  // nothing counts as durable before its write completes
    SECTION("writes complete in order") {
        log.stable_to(3, 1);
        CHECK(log.last_stable_index() == 3);
        log.stable_to(5, 1);
        CHECK(log.last_stable_index() == 5);
        CHECK(log.unstable().entries().empty());
    }
    SECTION("a conflict replaces entries in flight: they are handed out again") {
        REQUIRE(log.maybe_append(2, 1, 0, ents(3, {2})));  // replaces 3..5 with 3 of term 2
        CHECK(log.unstable().entries_to_persist() == ents(3, {2}));
        log.stable_to(3, 1);  // A's write landed, but its entry 3 was replaced
        CHECK(log.last_stable_index() == 1);
        log.stable_to(5, 1);  // B's entries are gone
        CHECK(log.last_stable_index() == 1);
        log.accept_in_progress();  // Ready C: 3 of term 2, written after A and B
        log.stable_to(3, 2);
        CHECK(log.last_stable_index() == 3);
        CHECK(log.unstable().entries().empty());
    }
    SECTION("a conflict below every unstable entry rewinds what is in flight") {
        REQUIRE(log.maybe_append(1, 1, 0, ents(2, {3})));
        CHECK(log.unstable().entries_to_persist() == ents(2, {3}));
    }
}

TEST_CASE("committed entries are handed out once, then applied", "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1, 1, 1, 1}));
    RaftLog log(s, kNoLimit);
    log.commit_to(2);
    CHECK(log.next_committed_entries() == ents(1, {1, 1}));
    log.accept_applying(2);  // Ready A carries 1..2
    CHECK_FALSE(log.has_next_committed_entries());
    log.commit_to(4);
    CHECK(log.next_committed_entries() == ents(3, {1, 1}));  // Ready B: only what A did not
    log.accept_applying(4);
    CHECK(log.applied() == 0);
    log.applied_to(2);
    log.applied_to(4);
    CHECK(log.applied() == 4);
    CHECK(log.applying() == 4);
}

TEST_CASE("find_conflict_by_term returns the last index at or below whose term is not larger",
          "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1, 1, 1, 4, 4, 5, 5, 6, 6, 6}));
    RaftLog log(s, kNoLimit);
    struct Case {
        Index index;
        Term term;
        Index want_index;
        Term want_term;
    };
    const Case cases[] = {
        {10, 6, 10, 6}, {10, 7, 10, 6}, {10, 5, 7, 5}, {10, 4, 5, 4}, {10, 3, 3, 1},
        {10, 1, 3, 1},  {10, 0, 0, 0},  {5, 6, 5, 4},  {5, 3, 3, 1},  {0, 0, 0, 0},
    };
    for (const Case& c : cases) {
        INFO("index=" << c.index << " term=" << c.term);
        const LogPosition p = log.find_conflict_by_term(c.index, c.term);
        CHECK(p.index == c.want_index);
        CHECK(p.term == c.want_term);
    }
    SECTION("below the first index the term is unknown") {
        MemoryStorage cs;
        cs.append(ents(1, {1, 2, 2, 3, 3}));
        cs.create_snapshot(3, ConfState{{1}, {}}, "");
        cs.compact(3);
        RaftLog compacted(cs, kNoLimit);
        LogPosition p = compacted.find_conflict_by_term(5, 2);
        CHECK(p.index == 3);  // the snapshot's entry keeps its term
        CHECK(p.term == 2);
        p = compacted.find_conflict_by_term(5, 1);
        CHECK(p.index == 2);  // below it nothing is known
        CHECK(p.term == 0);
    }
}

TEST_CASE("slice reads across stable and unstable entries within a byte limit", "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1, 1, 1, 1, 1}));  // stable 1..5
    RaftLog log(s, kNoLimit);
    log.append(ents(6, {2, 2, 2}));  // unstable 6..8
    struct Case {
        Index lo;
        Index hi;
        uint64_t max_bytes;
        std::vector<Index> want;
    };
    const Case cases[] = {
        {1, 9, kNoLimit, {1, 2, 3, 4, 5, 6, 7, 8}},
        {2, 9, 0, {2}},                       // at least one entry
        {2, 9, 2 * kEntryBytes, {2, 3}},      // exactly two fit
        {2, 9, 2 * kEntryBytes + 1, {2, 3}},  // a third does not
        {4, 8, 3 * kEntryBytes, {4, 5, 6}},   // across the boundary
        {6, 9, kEntryBytes, {6}},             // unstable only
        {5, 7, kEntryBytes, {5}},             // the stable part used the budget
        {5, 7, kEntryBytes + 5, {5}},         // and what is left is too small for one more
        {5, 7, kNoLimit, {5, 6}},
        {3, 3, kNoLimit, {}},
        {9, 9, kNoLimit, {}},
        {8, 9, 0, {8}},
    };
    for (const Case& c : cases) {
        INFO("slice [" << c.lo << ", " << c.hi << ") max_bytes=" << c.max_bytes);
        auto got = log.slice(c.lo, c.hi, c.max_bytes);
        REQUIRE(got.has_value());
        CHECK(indexes(*got) == c.want);
        for (const Entry& e : *got) {
            CHECK(e.data == fmt::format("d{:02}", e.index));
        }
    }
    SECTION("a compacted start has no slice") {
        s.create_snapshot(3, ConfState{{1}, {}}, "");
        s.compact(3);
        CHECK_FALSE(log.slice(3, 6, kNoLimit).has_value());
        auto got = log.slice(4, 7, kNoLimit);
        REQUIRE(got.has_value());
        CHECK(indexes(*got) == std::vector<Index>{4, 5, 6});
    }
}

TEST_CASE("the entry limit per Ready splits committed entries by count", "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1, 1, 1, 1}));
    RaftLog log(s, kNoLimit, 3);
    log.append(ents(5, {2, 2, 2}));
    log.commit_to(7);
    // Stored and unstable entries alike; the byte limit still applies on top.
    CHECK(indexes(log.next_committed_entries()) == std::vector<Index>{1, 2, 3});
    log.applied_to(3);
    CHECK(indexes(log.next_committed_entries()) == std::vector<Index>{4, 5, 6});
    log.applied_to(6);
    CHECK(indexes(log.next_committed_entries()) == std::vector<Index>{7});
    RaftLog both(s, kEntryBytes, 3);
    both.commit_to(4);
    CHECK(indexes(both.next_committed_entries()) == std::vector<Index>{1});
}

TEST_CASE("the commit index never decreases and bounds what is handed out to apply",
          "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1, 1, 1}));
    RaftLog log(s, 2 * kEntryBytes);
    log.append(ents(4, {2, 2}));
    CHECK_FALSE(log.has_next_committed_entries());
    log.commit_to(4);
    log.commit_to(2);
    CHECK(log.committed() == 4);
    REQUIRE(log.has_next_committed_entries());
    // The Ready size limit splits the committed entries.
    CHECK(indexes(log.next_committed_entries()) == std::vector<Index>{1, 2});
    log.applied_to(2);
    CHECK(indexes(log.next_committed_entries()) == std::vector<Index>{3, 4});
    log.applied_to(4);
    CHECK_FALSE(log.has_next_committed_entries());
    CHECK(log.next_committed_entries().empty());
    log.applied_to(0);  // no-op
    CHECK(log.applied() == 4);
    log.commit_to(5);
    CHECK(indexes(log.next_committed_entries()) == std::vector<Index>{5});
}

TEST_CASE("restoring a snapshot replaces the log and commits up to it", "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1, 1, 1, 1, 1}));
    RaftLog log(s, kNoLimit);
    log.append(ents(6, {1, 1}));
    log.commit_to(3);
    log.applied_to(2);
    const Snapshot snap{SnapshotMetadata{10, 3, ConfState{{1, 2}, {}}}, "state"};
    log.restore(snap);
    CHECK(log.first_index() == 11);
    CHECK(log.last_index() == 10);
    CHECK(log.last_term() == 3);
    CHECK(log.committed() == 10);
    CHECK(log.term(10) == Term{3});
    CHECK(log.term(5) == std::nullopt);
    CHECK(log.unstable().entries().empty());
    REQUIRE(log.unstable().snapshot().has_value());
    CHECK(log.unstable().snapshot()->data == "state");
    // Nothing below the snapshot is applied from the log; nothing is durable until it is.
    CHECK_FALSE(log.has_next_committed_entries());
    CHECK(log.last_stable_index() == 0);
    CHECK(log.unstable().has_snapshot_to_persist());
    log.accept_in_progress();  // a Ready carried the snapshot
    CHECK_FALSE(log.unstable().has_snapshot_to_persist());
    // Entries after the snapshot may be appended before it is persisted.
    REQUIRE(log.maybe_append(10, 3, 11, ents(11, {3})));
    CHECK(log.last_index() == 11);
    CHECK(log.unstable().entries_to_persist() == ents(11, {3}));
    REQUIRE(s.apply_snapshot(snap));
    log.stable_snap_to(10);
    CHECK_FALSE(log.unstable().snapshot().has_value());
    CHECK(log.first_index() == 11);
    log.applied_to(10);
    CHECK(indexes(log.next_committed_entries()) == std::vector<Index>{11});
}

TEST_CASE("is_up_to_date compares last terms first, then lengths (§5.4.1)", "[raft][log]") {
    MemoryStorage s;
    s.append(ents(1, {1, 2, 2}));
    RaftLog log(s, kNoLimit);
    struct Case {
        Index index;
        Term term;
        bool want;
    };
    const Case cases[] = {
        {3, 2, true},  {4, 2, true},  {2, 2, false}, {1, 3, true},
        {9, 1, false}, {0, 0, false}, {3, 1, false},
    };
    for (const Case& c : cases) {
        INFO("candidate log " << c.term << "/" << c.index);
        CHECK(log.is_up_to_date(c.index, c.term) == c.want);
    }
}

TEST_CASE("Unstable reports positions only for what it holds", "[raft][log]") {
    Unstable u(5);
    CHECK(u.maybe_first_index() == std::nullopt);
    CHECK(u.maybe_last_index() == std::nullopt);
    CHECK(u.maybe_term(4) == std::nullopt);
    u.truncate_and_append(ents(5, {1, 1}));
    CHECK(u.maybe_first_index() == std::nullopt);  // only a snapshot sets the first index
    CHECK(u.maybe_last_index() == Index{6});
    CHECK(u.maybe_term(5) == Term{1});
    CHECK(u.maybe_term(7) == std::nullopt);
    CHECK(u.maybe_term(4) == std::nullopt);
    u.restore(Snapshot{SnapshotMetadata{9, 2, {}}, ""});
    CHECK(u.maybe_first_index() == Index{10});
    CHECK(u.maybe_last_index() == Index{9});
    CHECK(u.maybe_term(9) == Term{2});
    CHECK(u.maybe_term(8) == std::nullopt);
    CHECK(u.offset() == 10);
    u.accept_in_progress();
    u.stable_snap_to(8);  // not this snapshot
    CHECK(u.snapshot().has_value());
    u.stable_snap_to(9);
    CHECK_FALSE(u.snapshot().has_value());
}

TEST_CASE("Unstable::truncate_and_append appends, truncates within, or replaces everything",
          "[raft][log]") {
    struct Case {
        std::vector<Entry> append;
        Index want_offset;
        std::vector<Term> want_terms;
    };
    // Start: offset 5, entries 5/1 6/1 7/1.
    const std::vector<Case> cases{
        {ents(8, {1, 2}), 5, {1, 1, 1, 1, 2}},  // contiguous
        {ents(6, {2}), 5, {1, 2}},              // truncate within
        {ents(7, {2, 2}), 5, {1, 1, 2, 2}},
        {ents(5, {2}), 5, {2}},        // replace all at the offset
        {ents(3, {2, 2}), 3, {2, 2}},  // below the offset: stored entries are replaced too
    };
    for (const Case& c : cases) {
        Unstable u(5);
        u.truncate_and_append(ents(5, {1, 1, 1}));
        u.truncate_and_append(std::vector<Entry>(c.append));
        INFO("append " << text(c.append));
        CHECK(u.offset() == c.want_offset);
        std::vector<Term> terms;
        for (const Entry& e : u.entries()) {
            terms.push_back(e.term);
        }
        CHECK(terms == c.want_terms);
        for (size_t i = 0; i < u.entries().size(); ++i) {
            CHECK(u.entries()[i].index == c.want_offset + i);
        }
    }
}

TEST_CASE("Unstable::slice returns at least one entry and stops at the byte limit", "[raft][log]") {
    Unstable u(5);
    u.truncate_and_append(ents(5, {1, 1, 1, 1}));
    std::vector<Entry> out;
    u.slice(5, 9, 0, &out);
    CHECK(indexes(out) == std::vector<Index>{5});
    out.clear();
    u.slice(6, 9, 2 * kEntryBytes, &out);
    CHECK(indexes(out) == std::vector<Index>{6, 7});
    out.clear();
    u.slice(7, 7, 0, &out);
    CHECK(out.empty());
    // With entries already collected, the limit can stop it before the first one.
    out = ents(4, {1});
    u.slice(5, 9, kEntryBytes - 1, &out);
    CHECK(indexes(out) == std::vector<Index>{4});
}

}  // namespace
}  // namespace raftlock::raft
