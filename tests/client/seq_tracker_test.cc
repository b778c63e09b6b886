#include "client/seq_tracker.h"

#include <catch2/catch.hpp>

namespace raftlock::client {

TEST_CASE("seqs start at 1 and ack_seq follows the answered prefix", "[client][seq]") {
    SeqTracker seqs;
    CHECK(seqs.ack_seq() == 0);
    const uint64_t a = seqs.allocate();
    const uint64_t b = seqs.allocate();
    const uint64_t c = seqs.allocate();
    CHECK(a == 1);
    CHECK(b == 2);
    CHECK(c == 3);
    // Answers out of order: the prefix only grows when the gap closes.
    seqs.settle(2);
    CHECK(seqs.ack_seq() == 0);
    seqs.settle(3);
    CHECK(seqs.ack_seq() == 0);
    seqs.settle(1);
    CHECK(seqs.ack_seq() == 3);
    // Settling twice (an answer after the caller gave up) changes nothing.
    seqs.settle(2);
    CHECK(seqs.ack_seq() == 3);
    CHECK(seqs.window() == 0);
}

TEST_CASE("the window of unacknowledged seqs is bounded by the server's saved replies",
          "[client][seq]") {
    SeqTracker seqs;
    for (uint64_t i = 0; i < kSeqWindowMax; i++) {
        REQUIRE(seqs.can_allocate());
        seqs.allocate();
    }
    CHECK(!seqs.can_allocate());
    // Later answers do not open the window while the oldest is outstanding...
    for (uint64_t s = 2; s <= kSeqWindowMax; s++) {
        seqs.settle(s);
    }
    CHECK(!seqs.can_allocate());
    // ...the oldest does.
    seqs.settle(1);
    CHECK(seqs.ack_seq() == kSeqWindowMax);
    CHECK(seqs.can_allocate());
}

TEST_CASE("an attached session starts above every earlier seq", "[client][seq]") {
    SeqTracker seqs(1'700'000'000'000'000);
    CHECK(seqs.ack_seq() == 1'699'999'999'999'999);
    CHECK(seqs.allocate() == 1'700'000'000'000'000);
    CHECK(seqs.ack_seq() < seqs.next_seq());
}

}  // namespace raftlock::client
