// Progress (per-peer replication state), its Inflights window, and the ProgressTracker's quorum
// questions over a configuration.

#include "raft/progress.h"

#include <deque>
#include <memory>

#include <catch2/catch.hpp>

#include "raft/text.h"
#include "raft/tracker.h"

namespace raftlock::raft {
namespace {

std::shared_ptr<const Snapshot> snapshot_at(Index index) {
    return std::make_shared<const Snapshot>(
        Snapshot{SnapshotMetadata{index, 1, ConfState{{1}, {}}}, "snap"});
}

TEST_CASE("an Inflights window fills to its capacity and frees acknowledged messages in order",
          "[raft][progress]") {
    Inflights in(10);
    CHECK(in.count() == 0);
    CHECK_FALSE(in.full());
    for (Index i = 0; i < 5; ++i) {
        in.add(i);
    }
    CHECK(in.count() == 5);
    for (Index i = 5; i < 10; ++i) {
        in.add(i);
    }
    CHECK(in.full());
    in.free_le(4);
    CHECK(in.count() == 5);
    CHECK_FALSE(in.full());
    // The ring wraps: slots 0..4 are reused.
    for (Index i = 10; i < 15; ++i) {
        in.add(i);
    }
    CHECK(in.full());
    in.free_le(8);
    CHECK(in.count() == 6);
    in.free_le(7);  // already freed: nothing changes
    CHECK(in.count() == 6);
    in.free_le(12);
    CHECK(in.count() == 2);
    in.free_first_one();
    CHECK(in.count() == 1);
    in.free_le(100);
    CHECK(in.count() == 0);
    in.free_le(100);
    in.free_first_one();
    CHECK(in.count() == 0);
}

TEST_CASE("Inflights keeps its order across many wrap-arounds", "[raft][progress]") {
    for (uint32_t capacity : {1u, 2u, 3u, 7u}) {
        Inflights in(capacity);
        std::deque<Index> model;  // what should be in flight, oldest first
        Index next = 1;
        for (int round = 0; round < 60; ++round) {
            while (!in.full()) {
                in.add(next);
                model.push_back(next++);
            }
            INFO("capacity=" << capacity << " round=" << round);
            REQUIRE(model.size() == capacity);
            const size_t drop = 1 + static_cast<size_t>(round) % capacity;
            if (round % 2 == 0) {
                const Index upto = model[drop - 1];
                in.free_le(upto);
                while (!model.empty() && model.front() <= upto) {
                    model.pop_front();
                }
            } else {
                for (size_t i = 0; i < drop; ++i) {
                    in.free_first_one();
                    model.pop_front();
                }
            }
            CHECK(in.count() == model.size());
            // Freeing below the oldest must free nothing, wherever the ring starts.
            if (!model.empty()) {
                in.free_le(model.front() - 1);
                CHECK(in.count() == model.size());
            }
        }
    }
}

TEST_CASE("Inflights::free_first_one frees exactly the oldest message", "[raft][progress]") {
    Inflights in(4);
    in.add(10);
    in.add(20);
    in.add(30);
    in.free_first_one();
    CHECK(in.count() == 2);
    in.free_le(19);  // 20 is now the oldest and is above 19
    CHECK(in.count() == 2);
    in.free_le(20);
    CHECK(in.count() == 1);
    in.reset();
    CHECK(in.count() == 0);
    for (Index i = 1; i <= 4; ++i) {
        in.add(i);
    }
    CHECK(in.full());
}

TEST_CASE("a probing peer gets one append at a time until it answers", "[raft][progress]") {
    Progress pr(8);
    pr.match = 3;
    pr.next = 4;
    REQUIRE(pr.state == ProgressState::kProbe);
    CHECK_FALSE(pr.is_paused());
    pr.sent_entries(6, true);
    CHECK(pr.is_paused());
    CHECK(pr.next == 4);  // a probe does not move next optimistically
    CHECK(pr.inflights.count() == 0);
    CHECK(pr.maybe_update(6));
    CHECK_FALSE(pr.is_paused());
    CHECK(pr.match == 6);
    CHECK(pr.next == 7);
    pr.sent_entries(6, false);  // an empty probe pauses too
    CHECK(pr.is_paused());
}

TEST_CASE("a replicating peer gets pipelined appends up to the in-flight window",
          "[raft][progress]") {
    Progress pr(3);
    pr.match = 5;
    pr.next = 9;
    pr.become_replicate();
    CHECK(pr.next == 6);
    CHECK(pr.state == ProgressState::kReplicate);
    pr.sent_entries(7, true);
    pr.sent_entries(9, true);
    CHECK_FALSE(pr.is_paused());
    CHECK(pr.next == 10);
    pr.sent_entries(9, false);  // empty appends take no slot
    CHECK(pr.inflights.count() == 2);
    pr.sent_entries(12, true);
    CHECK(pr.is_paused());
    CHECK(pr.next == 13);
    CHECK(pr.maybe_update(9));
    pr.inflights.free_le(9);
    CHECK_FALSE(pr.is_paused());
    CHECK(pr.inflights.count() == 1);
}

TEST_CASE("a peer in snapshot state gets no appends and probes after the snapshot",
          "[raft][progress]") {
    Progress pr(4);
    pr.match = 2;
    pr.next = 3;
    pr.become_replicate();
    pr.sent_entries(4, true);
    pr.become_snapshot(snapshot_at(10));
    CHECK(pr.state == ProgressState::kSnapshot);
    CHECK(pr.pending_snapshot == 10);
    CHECK(pr.is_paused());
    CHECK(pr.inflights.count() == 0);
    CHECK(pr.snapshot_acked_bytes == 0);
    pr.become_probe();
    CHECK(pr.state == ProgressState::kProbe);
    CHECK(pr.next == 11);  // it has the snapshot at least
    CHECK(pr.pending_snapshot == 0);
    CHECK(pr.snapshot == nullptr);
    CHECK_FALSE(pr.is_paused());

    SECTION("a match beyond the snapshot wins") {
        Progress p2(4);
        p2.become_snapshot(snapshot_at(10));
        p2.match = 15;
        p2.become_probe();
        CHECK(p2.next == 16);
    }
}

TEST_CASE("maybe_update accepts only acknowledgements above the match index", "[raft][progress]") {
    struct Case {
        Index ack;
        bool updated;
        Index match;
        Index next;
    };
    // Start: match 3, next 5.
    const Case cases[] = {
        {2, false, 3, 5}, {3, false, 3, 5}, {4, true, 4, 5}, {5, true, 5, 6}, {10, true, 10, 11},
    };
    for (const Case& c : cases) {
        Progress pr(4);
        pr.match = 3;
        pr.next = 5;
        pr.probe_sent = true;
        INFO("ack " << c.ack);
        CHECK(pr.maybe_update(c.ack) == c.updated);
        CHECK(pr.match == c.match);
        CHECK(pr.next == c.next);
        CHECK(pr.probe_sent == !c.updated);
    }
}

TEST_CASE("maybe_decrease_to ignores stale rejections and backs off on fresh ones",
          "[raft][progress]") {
    struct Case {
        ProgressState state;
        Index match;
        Index next;
        Index rejected;
        Index hint;
        bool changed;
        Index want_next;
    };
    const Case cases[] = {
        // Replicate: a rejection at or below match answers an older append.
        {ProgressState::kReplicate, 5, 10, 5, 5, false, 10},
        {ProgressState::kReplicate, 5, 10, 3, 2, false, 10},
        // A fresh one: back to just after match.
        {ProgressState::kReplicate, 5, 10, 7, 6, true, 6},
        {ProgressState::kReplicate, 5, 10, 9, 0, true, 6},
        // Probe: only the rejection of the latest probe (at next - 1) counts.
        {ProgressState::kProbe, 2, 8, 6, 3, false, 8},
        {ProgressState::kProbe, 2, 8, 8, 3, false, 8},
        {ProgressState::kProbe, 2, 8, 7, 4, true, 5},   // follow the hint
        {ProgressState::kProbe, 2, 8, 7, 20, true, 7},  // never beyond the rejected index
        {ProgressState::kProbe, 2, 8, 7, 0, true, 3},   // never at or below match
        {ProgressState::kProbe, 0, 1, 0, 0, true, 1},
    };
    for (const Case& c : cases) {
        Progress pr(4);
        pr.match = c.match;
        pr.next = c.next;
        pr.state = c.state;
        pr.probe_sent = true;
        INFO(to_string(c.state) << " match=" << c.match << " next=" << c.next
                                << " rejected=" << c.rejected << " hint=" << c.hint);
        CHECK(pr.maybe_decrease_to(c.rejected, c.hint) == c.changed);
        CHECK(pr.next == c.want_next);
        CHECK(pr.next > pr.match);
        if (c.changed && c.state == ProgressState::kProbe) {
            CHECK_FALSE(pr.probe_sent);  // a fresh probe may go out
        }
    }
}

TEST_CASE("state transitions reset the flow-control state", "[raft][progress]") {
    Progress pr(2);
    pr.match = 4;
    pr.next = 5;
    pr.sent_entries(6, true);
    REQUIRE(pr.probe_sent);
    pr.become_replicate();
    CHECK_FALSE(pr.probe_sent);
    CHECK(pr.next == 5);
    pr.sent_entries(6, true);
    pr.sent_entries(7, true);
    REQUIRE(pr.is_paused());
    pr.become_probe();
    CHECK_FALSE(pr.is_paused());
    CHECK(pr.inflights.count() == 0);
    CHECK(pr.next == 5);
    pr.become_replicate();
    CHECK_FALSE(pr.is_paused());
}

TEST_CASE("the tracker follows configuration changes, keeping the progress of staying members",
          "[raft][progress]") {
    ProgressTracker t(4);
    t.set_conf(ConfState{{1, 2, 3}, {}}, 10);
    REQUIRE(t.all().size() == 3);
    CHECK(t.progress(2)->next == 10);
    CHECK(t.progress(2)->recent_active);
    t.progress(2)->match = 7;
    t.set_conf(ConfState{{1, 2}, {4}}, 20);
    CHECK(t.all().size() == 3);
    CHECK(t.progress(3) == nullptr);
    CHECK(t.progress(2)->match == 7);
    CHECK(t.progress(4)->next == 20);
    CHECK(t.progress(4)->learner);
    CHECK_FALSE(t.is_voter(4));
    CHECK(t.is_member(4));
    // Promotion keeps the progress and clears the learner flag.
    t.progress(4)->match = 12;
    t.set_conf(ConfState{{1, 2, 4}, {}}, 30);
    CHECK(t.progress(4)->match == 12);
    CHECK_FALSE(t.progress(4)->learner);
    CHECK(t.is_voter(4));
}

TEST_CASE("the tracker's commit index is what a majority of voters holds, learners aside",
          "[raft][progress]") {
    ProgressTracker t(4);
    t.set_conf(ConfState{{1, 2, 3}, {4, 5}}, 1);
    t.progress(1)->match = 9;
    t.progress(2)->match = 5;
    t.progress(3)->match = 2;
    t.progress(4)->match = 100;
    t.progress(5)->match = 100;
    CHECK(t.committed() == 5);
    t.progress(3)->match = 7;
    CHECK(t.committed() == 7);
}

TEST_CASE("the tracker counts the first vote of each voter and ignores learners",
          "[raft][progress]") {
    ProgressTracker t(4);
    t.set_conf(ConfState{{1, 2, 3, 4, 5}, {6}}, 1);
    t.record_vote(1, true);
    t.record_vote(6, true);  // a learner's vote does not count
    t.record_vote(6, true);
    CHECK(t.tally_votes() == VoteResult::kPending);
    t.record_vote(2, false);
    t.record_vote(2, true);  // a voter cannot change its answer
    CHECK(t.tally_votes() == VoteResult::kPending);
    t.record_vote(3, true);
    CHECK(t.tally_votes() == VoteResult::kPending);
    t.record_vote(4, true);
    CHECK(t.tally_votes() == VoteResult::kWon);
    t.reset_votes();
    CHECK(t.tally_votes() == VoteResult::kPending);
    t.record_vote(2, false);
    t.record_vote(3, false);
    t.record_vote(4, false);
    CHECK(t.tally_votes() == VoteResult::kLost);
}

TEST_CASE("the tracker answers CheckQuorum and ReadIndex quorum questions over voters only",
          "[raft][progress]") {
    ProgressTracker t(4);
    t.set_conf(ConfState{{1, 2, 3, 4, 5}, {6}}, 1);
    for (auto& [id, pr] : t.all()) {
        pr.recent_active = false;
    }
    t.progress(6)->recent_active = true;
    t.progress(2)->recent_active = true;
    CHECK_FALSE(t.quorum_active(1));
    t.progress(3)->recent_active = true;
    CHECK(t.quorum_active(1));

    t.progress(6)->read_round_acked = 9;
    t.progress(2)->read_round_acked = 9;
    t.progress(3)->read_round_acked = 8;
    CHECK_FALSE(t.quorum_acked_round(1, 9));
    CHECK(t.quorum_acked_round(1, 8));
    t.progress(4)->read_round_acked = 10;
    CHECK(t.quorum_acked_round(1, 9));
}

}  // namespace
}  // namespace raftlock::raft
