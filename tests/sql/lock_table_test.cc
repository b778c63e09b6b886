#include "statemachine/sql/lock_table.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

namespace raftlock::statemachine::sql {
namespace {

constexpr LockStrength S = LockStrength::kShared;
constexpr LockStrength X = LockStrength::kExclusive;
constexpr LockScope kSess = LockScope::kSession;
constexpr LockScope kTxn = LockScope::kTransaction;

const LockKey kA = advisory_key(1);
const LockKey kB = advisory_key(2);
const LockKey kC = advisory_key(3);
const LockKey kD = advisory_key(4);

LockRequest req(SessionId owner,
                const LockKey& key,
                LockStrength strength = X,
                LockScope scope = kSess,
                uint64_t ticket = 0,
                TimeMs deadline_ms = 0) {
    return LockRequest{owner, key, strength, scope, ticket, deadline_ms};
}

void require_invariants(const LockTable& table) {
    INFO(to_string(table));
    REQUIRE(table.check_invariants() == "");
}

// Acquires and checks the outcome and the invariants in one line.
void expect(LockTable& table,
            const LockRequest& request,
            AcquireOutcome outcome,
            bool wait = true) {
    INFO("s" << request.owner << " " << to_string(request.key) << " " << to_string(request.strength)
             << "/" << to_string(request.scope));
    CHECK(to_string(table.acquire(request, wait)) == to_string(outcome));
    require_invariants(table);
}

std::string snapshot(const LockTable& table) {
    std::string out;
    Writer w(&out);
    table.write(w);
    return out;
}

std::string events_of(const LockEvents& events) {
    return to_string(events);
}

TEST_CASE("keys print in their stable text form and the spaces are separate", "[sql][locks]") {
    CHECK(to_string(advisory_key(42)) == "advisory:42");
    CHECK(to_string(advisory_key(-7)) == "advisory:-7");
    CHECK(to_string(advisory_key(INT64_MIN)) == "advisory:-9223372036854775808");
    CHECK(to_string(advisory_pair_key(1, 2)) == "advisory-pair:1,2");
    CHECK(to_string(advisory_pair_key(-1, INT32_MAX)) == "advisory-pair:-1,2147483647");
    CHECK(to_string(LockKey{LockSpace::kNamed, "x"}) == "named:\"x\"");
    CHECK(to_string(LockKey{LockSpace::kRow, "accounts/17"}) == "row:\"accounts/17\"");
    CHECK(to_string(LockKey{LockSpace::kUniqueKey, "a\"b\\c\x01\xff"}) ==
          "unique-key:\"a\\\"b\\\\c\\x01\\xff\"");

    LockTable table;
    expect(table, req(1, advisory_key(1)), AcquireOutcome::kGranted);
    expect(table, req(2, advisory_pair_key(0, 1)), AcquireOutcome::kGranted);
    expect(table, req(3, LockKey{LockSpace::kNamed, "1"}), AcquireOutcome::kGranted);
    expect(table, req(4, LockKey{LockSpace::kRow, "1"}), AcquireOutcome::kGranted);
    expect(table, req(5, LockKey{LockSpace::kUniqueKey, "1"}), AcquireOutcome::kGranted);
    CHECK(table.key_count() == 5);
}

TEST_CASE("shared is compatible with shared and exclusive with nothing another owner holds",
          "[sql][locks]") {
    struct Row {
        LockStrength held;
        LockScope held_scope;
        bool same_owner;
        LockStrength requested;
        LockScope requested_scope;
        AcquireOutcome outcome;  // with wait = false
    };
    const std::vector<Row> rows = {
        // Another owner's hold.
        {S, kSess, false, S, kSess, AcquireOutcome::kGranted},
        {S, kTxn, false, S, kTxn, AcquireOutcome::kGranted},
        {S, kSess, false, X, kSess, AcquireOutcome::kBusy},
        {S, kTxn, false, X, kSess, AcquireOutcome::kBusy},
        {X, kSess, false, S, kSess, AcquireOutcome::kBusy},
        {X, kTxn, false, S, kTxn, AcquireOutcome::kBusy},
        {X, kSess, false, X, kSess, AcquireOutcome::kBusy},
        {X, kSess, false, X, kTxn, AcquireOutcome::kBusy},
        // The owner's own hold never conflicts, in any scope.
        {S, kSess, true, S, kSess, AcquireOutcome::kGranted},
        {S, kSess, true, X, kSess, AcquireOutcome::kGranted},
        {S, kTxn, true, X, kSess, AcquireOutcome::kGranted},
        {X, kSess, true, S, kTxn, AcquireOutcome::kGranted},
        {X, kTxn, true, X, kSess, AcquireOutcome::kGranted},
        {X, kSess, true, X, kSess, AcquireOutcome::kGranted},
    };
    for (const Row& row : rows) {
        INFO("held " << to_string(row.held) << "/" << to_string(row.held_scope)
                     << (row.same_owner ? " by self" : " by another") << ", requested "
                     << to_string(row.requested) << "/" << to_string(row.requested_scope));
        LockTable table;
        expect(table, req(1, kA, row.held, row.held_scope), AcquireOutcome::kGranted);
        const SessionId requester = row.same_owner ? 1 : 2;
        expect(table, req(requester, kA, row.requested, row.requested_scope), row.outcome, false);
        const uint32_t expected = row.outcome == AcquireOutcome::kGranted ? 1 : 0;
        const uint32_t base =
            row.same_owner && row.held == row.requested && row.held_scope == row.requested_scope
                ? 1
                : 0;
        CHECK(table.held_count(requester, kA, row.requested, row.requested_scope) ==
              base + expected);
        CHECK(table.waiters(kA).empty());
    }
}

TEST_CASE("session-level locks stack: two locks need two unlocks, a third unlock is refused",
          "[sql][locks]") {
    LockTable table;
    LockEvents events;
    expect(table, req(1, kA, X), AcquireOutcome::kGranted);
    expect(table, req(1, kA, X), AcquireOutcome::kGranted);
    CHECK(table.held_count(1, kA, X, kSess) == 2);
    expect(table, req(2, kA, X, kSess, 20), AcquireOutcome::kWaiting);

    CHECK(table.release(1, kA, X, events));
    CHECK(table.held_count(1, kA, X, kSess) == 1);
    CHECK(events.empty());
    CHECK(table.release(1, kA, X, events));
    CHECK(events_of(events) == "grant s2 #20 advisory:1 exclusive/session");
    CHECK(table.holders(kA) == std::vector<SessionId>{2});
    events = {};
    CHECK_FALSE(table.release(1, kA, X, events));
    CHECK(events.empty());
    // Releasing a strength or a scope the owner does not hold is refused too.
    CHECK_FALSE(table.release(2, kA, S, events));
    expect(table, req(2, kA, X, kTxn), AcquireOutcome::kGranted);
    CHECK(table.release(2, kA, X, events));
    CHECK_FALSE(table.release(2, kA, X, events));
    CHECK(table.held_count(2, kA, X, kTxn) == 1);
    CHECK_FALSE(table.release(3, kB, X, events));
    require_invariants(table);
}

TEST_CASE("release_all of one scope leaves the holds of the other scope", "[sql][locks]") {
    LockTable table;
    LockEvents events;
    expect(table, req(1, kA, X, kSess), AcquireOutcome::kGranted);
    expect(table, req(1, kA, X, kSess), AcquireOutcome::kGranted);
    expect(table, req(1, kA, S, kTxn), AcquireOutcome::kGranted);
    expect(table, req(1, kB, S, kTxn), AcquireOutcome::kGranted);
    expect(table, req(2, kA, S, kSess, 20), AcquireOutcome::kWaiting);

    CHECK(table.release_all(1, kTxn, kEveryLockSpace, events) == 2);
    CHECK(events.empty());
    CHECK(table.held_count(1, kA, X, kSess) == 2);
    CHECK(table.held_count(1, kA, S, kTxn) == 0);
    CHECK(table.is_free(kB));
    CHECK(table.release_all(1, kTxn, kEveryLockSpace, events) == 0);

    expect(table, req(1, kB, X, kTxn), AcquireOutcome::kGranted);
    CHECK(table.release_all(1, kSess, kEveryLockSpace, events) == 2);
    CHECK(events_of(events) == "grant s2 #20 advisory:1 shared/session");
    CHECK(table.held_count(1, kB, X, kTxn) == 1);
    require_invariants(table);
}

TEST_CASE("release_all releases only the listed spaces", "[sql][locks]") {
    LockTable table;
    LockEvents events;
    const LockKey named{LockSpace::kNamed, "job"};
    const LockKey row{LockSpace::kRow, "t/1"};
    expect(table, req(1, advisory_key(5)), AcquireOutcome::kGranted);
    expect(table, req(1, advisory_key(5)), AcquireOutcome::kGranted);
    expect(table, req(1, advisory_pair_key(5, 6), S), AcquireOutcome::kGranted);
    expect(table, req(1, named), AcquireOutcome::kGranted);
    expect(table, req(1, named), AcquireOutcome::kGranted);
    expect(table, req(1, row, X, kTxn), AcquireOutcome::kGranted);

    CHECK(table.release_all(1, kSess, {}, events) == 0);  // an empty list releases nothing
    // pg_advisory_unlock_all()
    CHECK(table.release_all(1, kSess, kAdvisoryLockSpaces, events) == 3);
    CHECK(table.is_free(advisory_key(5)));
    CHECK(table.is_free(advisory_pair_key(5, 6)));
    CHECK(table.held_count(1, named, X, kSess) == 2);
    // RELEASE_ALL_LOCKS()
    const std::array<LockSpace, 1> named_space = {LockSpace::kNamed};
    CHECK(table.release_all(1, kSess, named_space, events) == 2);
    CHECK(table.is_free(named));
    CHECK(table.held_count(1, row, X, kTxn) == 1);
    CHECK(table.key_count() == 1);
    CHECK(events.empty());
    require_invariants(table);
}

TEST_CASE("an exclusive release hands the lock to the next exclusive waiter in FIFO order",
          "[sql][locks]") {
    LockTable table;
    LockEvents events;
    expect(table, req(1, kA), AcquireOutcome::kGranted);
    expect(table, req(2, kA, X, kSess, 20), AcquireOutcome::kWaiting);
    expect(table, req(3, kA, X, kSess, 30), AcquireOutcome::kWaiting);
    CHECK(table.waiting_for(2) == kA);
    CHECK(table.release(1, kA, X, events));
    CHECK(events_of(events) == "grant s2 #20 advisory:1 exclusive/session");
    CHECK_FALSE(table.waiting_for(2).has_value());
    CHECK(table.waiting_for(3) == kA);
    events = {};
    CHECK(table.release(2, kA, X, events));
    CHECK(events_of(events) == "grant s3 #30 advisory:1 exclusive/session");
    events = {};
    CHECK(table.release(3, kA, X, events));
    CHECK(events.empty());
    CHECK(table.is_free(kA));
    CHECK(table.key_count() == 0);
    require_invariants(table);
}

TEST_CASE("an exclusive release grants the run of shared waiters at the head together",
          "[sql][locks]") {
    LockTable table;
    LockEvents events;
    expect(table, req(1, kA), AcquireOutcome::kGranted);
    expect(table, req(2, kA, S, kSess, 20), AcquireOutcome::kWaiting);
    expect(table, req(3, kA, S, kTxn, 30), AcquireOutcome::kWaiting);
    expect(table, req(4, kA, X, kSess, 40), AcquireOutcome::kWaiting);
    expect(table, req(5, kA, S, kSess, 50), AcquireOutcome::kWaiting);
    CHECK(table.release(1, kA, X, events));
    CHECK(events_of(events) ==
          "grant s2 #20 advisory:1 shared/session; grant s3 #30 advisory:1 shared/transaction");
    CHECK(table.holders(kA) == std::vector<SessionId>{2, 3});
    const std::vector<LockWait> queue = table.waiters(kA);
    REQUIRE(queue.size() == 2);
    CHECK(queue[0] == LockWait{4, 40, X, kSess, 0});
    CHECK(queue[1] == LockWait{5, 50, S, kSess, 0});
    require_invariants(table);
}

TEST_CASE("a queued exclusive waiter waits for every shared holder", "[sql][locks]") {
    LockTable table;
    LockEvents events;
    expect(table, req(1, kA, S), AcquireOutcome::kGranted);
    expect(table, req(2, kA, S, kTxn), AcquireOutcome::kGranted);
    expect(table, req(3, kA, X, kSess, 30), AcquireOutcome::kWaiting);
    CHECK(table.release(1, kA, S, events));
    CHECK(events.empty());
    CHECK(table.release_all(2, kTxn, kEveryLockSpace, events) == 1);
    CHECK(events_of(events) == "grant s3 #30 advisory:1 exclusive/session");
    CHECK(table.holders(kA) == std::vector<SessionId>{3});
    require_invariants(table);
}

TEST_CASE("a shared request does not barge past a queued exclusive waiter", "[sql][locks]") {
    LockTable table;
    LockEvents events;
    expect(table, req(1, kA, S), AcquireOutcome::kGranted);
    expect(table, req(2, kA, X, kSess, 20), AcquireOutcome::kWaiting);
    expect(table, req(3, kA, S, kSess, 30), AcquireOutcome::kBusy, false);
    expect(table, req(3, kA, S, kSess, 30), AcquireOutcome::kWaiting);
    CHECK(table.release(1, kA, S, events));
    CHECK(events_of(events) == "grant s2 #20 advisory:1 exclusive/session");
    events = {};
    CHECK(table.release(2, kA, X, events));
    CHECK(events_of(events) == "grant s3 #30 advisory:1 shared/session");
    require_invariants(table);
}

TEST_CASE("a holder's new request is granted at once even with waiters queued", "[sql][locks]") {
    LockTable table;
    expect(table, req(1, kA, S), AcquireOutcome::kGranted);
    expect(table, req(2, kA, S), AcquireOutcome::kGranted);
    expect(table, req(3, kA, X, kSess, 30), AcquireOutcome::kWaiting);
    expect(table, req(1, kA, S), AcquireOutcome::kGranted);
    expect(table, req(2, kA, S, kTxn), AcquireOutcome::kGranted);
    CHECK(table.held_count(1, kA, S, kSess) == 2);
    CHECK(table.held_count(2, kA, S, kTxn) == 1);

    expect(table, req(4, kB, X), AcquireOutcome::kGranted);
    expect(table, req(5, kB, S, kSess, 50), AcquireOutcome::kWaiting);
    expect(table, req(4, kB, X, kTxn), AcquireOutcome::kGranted);
    expect(table, req(4, kB, S), AcquireOutcome::kGranted);
    CHECK(table.held_count(4, kB, X, kTxn) == 1);
    CHECK(table.held_count(4, kB, S, kSess) == 1);
    CHECK(table.waiters(kB).size() == 1);
    // A sole shared holder upgrades at once, even past a queued waiter.
    LockEvents events;
    CHECK(table.release_all(2, kSess, kEveryLockSpace, events) == 1);
    CHECK(table.release_all(2, kTxn, kEveryLockSpace, events) == 1);
    CHECK(events.empty());
    expect(table, req(1, kA, X), AcquireOutcome::kGranted);
    CHECK(table.waiters(kA).size() == 1);
}

TEST_CASE("two sessions waiting for each other's lock is a deadlock for the second",
          "[sql][locks][deadlock]") {
    LockTable table;
    expect(table, req(1, kA), AcquireOutcome::kGranted);
    expect(table, req(2, kB), AcquireOutcome::kGranted);
    expect(table, req(1, kB, X, kSess, 10), AcquireOutcome::kWaiting);
    const std::string before = snapshot(table);
    expect(table, req(2, kA, S, kSess, 20), AcquireOutcome::kDeadlock);
    CHECK(snapshot(table) == before);
    CHECK_FALSE(table.waiting_for(2).has_value());
    // The engine aborts the victim's transaction; its release lets the other one go on.
    LockEvents events;
    table.end_owner(2, events);
    CHECK(events_of(events) == "grant s1 #10 advisory:2 exclusive/session");
}

TEST_CASE("a cycle through three sessions is a deadlock", "[sql][locks][deadlock]") {
    LockTable table;
    expect(table, req(1, kA), AcquireOutcome::kGranted);
    expect(table, req(2, kB, S, kTxn), AcquireOutcome::kGranted);
    expect(table, req(3, kC), AcquireOutcome::kGranted);
    expect(table, req(1, kB, X, kSess, 10), AcquireOutcome::kWaiting);
    expect(table, req(2, kC, S, kSess, 20), AcquireOutcome::kWaiting);
    expect(table, req(3, kA, S, kTxn, 30), AcquireOutcome::kDeadlock);
    expect(table, req(3, kD, X, kSess, 30), AcquireOutcome::kGranted);
}

TEST_CASE("a cycle through a waiter queued ahead is a deadlock", "[sql][locks][deadlock]") {
    // 3 waits behind 2 (no barging), 2 waits for 1's shared hold, 1 would wait for 3.
    LockTable table;
    expect(table, req(1, kA, S), AcquireOutcome::kGranted);
    expect(table, req(2, kA, X, kSess, 20), AcquireOutcome::kWaiting);
    expect(table, req(3, kB), AcquireOutcome::kGranted);
    expect(table, req(3, kA, S, kSess, 30), AcquireOutcome::kWaiting);
    expect(table, req(1, kB, X, kSess, 10), AcquireOutcome::kDeadlock);
    expect(table, req(1, kB, X, kSess, 10), AcquireOutcome::kBusy, false);
}

TEST_CASE("two shared holders that both upgrade deadlock, and one upgrade goes ahead of waiters",
          "[sql][locks][deadlock]") {
    LockTable table;
    LockEvents events;
    expect(table, req(1, kA, S), AcquireOutcome::kGranted);
    expect(table, req(2, kA, S), AcquireOutcome::kGranted);
    expect(table, req(3, kA, X, kSess, 30), AcquireOutcome::kWaiting);
    // Queued behind 3, the upgrade would wait for 3, which waits for 1's shared hold: it goes to
    // the head instead, and is no deadlock.
    expect(table, req(1, kA, X, kTxn, 10), AcquireOutcome::kWaiting);
    const std::vector<LockWait> queue = table.waiters(kA);
    REQUIRE(queue.size() == 2);
    CHECK(queue[0].owner == 1);
    CHECK(queue[1].owner == 3);
    expect(table, req(2, kA, X, kSess, 20), AcquireOutcome::kDeadlock);
    CHECK(table.release(2, kA, S, events));
    CHECK(events_of(events) == "grant s1 #10 advisory:1 exclusive/transaction");
    CHECK(table.held_count(1, kA, S, kSess) == 1);
    events = {};
    table.end_owner(1, events);
    CHECK(events_of(events) == "grant s3 #30 advisory:1 exclusive/session");
    require_invariants(table);
}

TEST_CASE("waits that form a chain or a diamond without a cycle are not deadlocks",
          "[sql][locks][deadlock]") {
    LockTable table;
    // Chain: 4 -> 1 -> 2 -> 3, and 3 waits for nothing.
    expect(table, req(1, kA), AcquireOutcome::kGranted);
    expect(table, req(2, kB), AcquireOutcome::kGranted);
    expect(table, req(3, kC), AcquireOutcome::kGranted);
    expect(table, req(1, kB, X, kSess, 10), AcquireOutcome::kWaiting);
    expect(table, req(2, kC, X, kSess, 20), AcquireOutcome::kWaiting);
    expect(table, req(4, kD), AcquireOutcome::kGranted);
    expect(table, req(4, kA, X, kSess, 40), AcquireOutcome::kWaiting);
    // More waits into the chain: 5 -> 4, 6 -> 5, 10 -> 9, and 9 (which holds G, so the search
    // runs) -> 6. Then 12, holding H, reaches 5 along two paths (directly as a holder of E, and
    // through 6 and 11 queued ahead): a diamond, still without a cycle.
    const LockKey kE = advisory_key(5);
    const LockKey kF = advisory_key(6);
    const LockKey kG = advisory_key(7);
    const LockKey kH = advisory_key(8);
    expect(table, req(5, kE, S), AcquireOutcome::kGranted);
    expect(table, req(5, kD, S, kSess, 50), AcquireOutcome::kWaiting);
    expect(table, req(6, kF), AcquireOutcome::kGranted);
    expect(table, req(6, kE, X, kSess, 60), AcquireOutcome::kWaiting);
    expect(table, req(9, kG), AcquireOutcome::kGranted);
    expect(table, req(10, kG, S, kSess, 100), AcquireOutcome::kWaiting);
    expect(table, req(9, kF, X, kSess, 90), AcquireOutcome::kWaiting);
    expect(table, req(11, kE, S, kSess, 110), AcquireOutcome::kWaiting);
    expect(table, req(12, kH), AcquireOutcome::kGranted);
    expect(table, req(12, kE, X, kSess, 120), AcquireOutcome::kWaiting);
    CHECK(table.waiters(kE).size() == 3);
    // But 3 closing the chain is one.
    expect(table, req(3, kA, S), AcquireOutcome::kDeadlock);
}

TEST_CASE("a deadlock search over thousands of sessions stays cheap", "[sql][locks][deadlock]") {
    // n sessions each hold their own key and wait in one queue on `hub` (every waiter has an edge
    // to every waiter ahead: n^2/2 edges). A search that followed every edge would take minutes.
    constexpr SessionId kSessions = 2000;
    const LockKey hub{LockSpace::kNamed, "hub"};
    LockTable table;
    expect(table, req(kSessions + 1, hub), AcquireOutcome::kGranted);
    for (SessionId s = 1; s <= kSessions; s++) {
        REQUIRE(table.acquire(req(s, LockKey{LockSpace::kRow, std::to_string(s)}), true) ==
                AcquireOutcome::kGranted);
        REQUIRE(table.acquire(req(s, hub, X, kTxn, s), true) == AcquireOutcome::kWaiting);
    }
    require_invariants(table);
    // The hub's holder would wait for the last waiter's row: a cycle.
    expect(table, req(kSessions + 1, LockKey{LockSpace::kRow, std::to_string(kSessions)}),
           AcquireOutcome::kDeadlock);
    const LockKey other{LockSpace::kRow, "other"};
    expect(table, req(kSessions + 2, other), AcquireOutcome::kGranted);
    expect(table, req(kSessions + 1, other), AcquireOutcome::kWaiting);
}

TEST_CASE("waits end at their deadline, in deadline then owner order", "[sql][locks][deadline]") {
    LockTable table;
    LockEvents events;
    expect(table, req(1, kA), AcquireOutcome::kGranted);
    expect(table, req(2, kA, X, kSess, 20, 100), AcquireOutcome::kWaiting);
    expect(table, req(5, kA, X, kSess, 50, 50), AcquireOutcome::kWaiting);
    expect(table, req(4, kA, X, kSess, 40, 50), AcquireOutcome::kWaiting);
    expect(table, req(3, kA, X, kSess, 30, 0), AcquireOutcome::kWaiting);
    CHECK(table.next_deadline_ms() == 50);

    table.expire_waits(49, events);
    CHECK(events.empty());
    table.expire_waits(50, events);
    CHECK(events_of(events) == "timeout s4 #40 advisory:1; timeout s5 #50 advisory:1");
    CHECK(table.next_deadline_ms() == 100);
    events = {};
    table.expire_waits(1000, events);
    CHECK(events_of(events) == "timeout s2 #20 advisory:1");
    CHECK_FALSE(table.next_deadline_ms().has_value());
    CHECK(table.waiting_for(3) == kA);  // no deadline: waits on
    events = {};
    table.expire_waits(INT64_MAX, events);
    CHECK(events.empty());
    require_invariants(table);
}

TEST_CASE("a timed-out head lets the queue behind it in, which is then not timed out",
          "[sql][locks][deadline]") {
    LockTable table;
    LockEvents events;
    expect(table, req(1, kA, S), AcquireOutcome::kGranted);
    expect(table, req(2, kA, X, kSess, 20, 10), AcquireOutcome::kWaiting);
    expect(table, req(3, kA, S, kSess, 30, 10), AcquireOutcome::kWaiting);
    expect(table, req(4, kA, S, kTxn, 40), AcquireOutcome::kWaiting);
    table.expire_waits(10, events);
    CHECK(events_of(events) ==
          "grant s3 #30 advisory:1 shared/session; grant s4 #40 advisory:1 shared/transaction; "
          "timeout s2 #20 advisory:1");
    CHECK(table.holders(kA) == std::vector<SessionId>{1, 3, 4});
    CHECK_FALSE(table.next_deadline_ms().has_value());
    require_invariants(table);
}

TEST_CASE("cancelling the head's wait lets the next waiter in", "[sql][locks]") {
    LockTable table;
    LockEvents events;
    expect(table, req(1, kA, S), AcquireOutcome::kGranted);
    expect(table, req(2, kA, X, kSess, 20, 500), AcquireOutcome::kWaiting);
    expect(table, req(3, kA, X, kSess, 30), AcquireOutcome::kWaiting);
    expect(table, req(4, kA, S, kSess, 40), AcquireOutcome::kWaiting);
    CHECK_FALSE(table.cancel_wait(9, events).has_value());
    // Cancelling a waiter behind a blocked head grants nothing.
    CHECK(table.cancel_wait(3, events) == 30);
    CHECK(events.empty());
    CHECK(table.cancel_wait(2, events) == 20);
    CHECK(events_of(events) == "grant s4 #40 advisory:1 shared/session");
    CHECK_FALSE(table.next_deadline_ms().has_value());
    CHECK_FALSE(table.cancel_wait(2, events).has_value());
    require_invariants(table);
}

TEST_CASE("an ended session's wait is cancelled and everything it holds is released",
          "[sql][locks]") {
    LockTable table;
    LockEvents events;
    const LockKey row{LockSpace::kRow, "t/1"};
    expect(table, req(1, kA, X), AcquireOutcome::kGranted);
    expect(table, req(1, kA, X), AcquireOutcome::kGranted);
    expect(table, req(1, row, S, kTxn), AcquireOutcome::kGranted);
    expect(table, req(2, kB), AcquireOutcome::kGranted);
    expect(table, req(3, kA, S, kSess, 30), AcquireOutcome::kWaiting);
    expect(table, req(4, row, X, kTxn, 40), AcquireOutcome::kWaiting);
    expect(table, req(1, kB, X, kSess, 10, 99), AcquireOutcome::kWaiting);
    table.end_owner(1, events);
    CHECK(events_of(events) ==
          "grant s3 #30 advisory:1 shared/session; grant s4 #40 row:\"t/1\" exclusive/transaction");
    CHECK(table.holds_of(1).empty());
    CHECK_FALSE(table.waiting_for(1).has_value());
    CHECK(table.waiters(kB).empty());
    CHECK_FALSE(table.next_deadline_ms().has_value());
    events = {};
    table.end_owner(1, events);
    CHECK(events.empty());
    require_invariants(table);
}

TEST_CASE("holds_of lists an owner's holds in key, strength, scope order", "[sql][locks]") {
    LockTable table;
    const LockKey named{LockSpace::kNamed, "n"};
    expect(table, req(1, named, X, kSess), AcquireOutcome::kGranted);
    expect(table, req(1, kB, S, kTxn), AcquireOutcome::kGranted);
    expect(table, req(1, kB, X, kSess), AcquireOutcome::kGranted);
    expect(table, req(1, kB, S, kSess), AcquireOutcome::kGranted);
    expect(table, req(1, kB, S, kSess), AcquireOutcome::kGranted);
    const std::vector<LockHold> expected = {
        {1, kB, S, kSess, 2}, {1, kB, S, kTxn, 1}, {1, kB, X, kSess, 1}, {1, named, X, kSess, 1}};
    CHECK(table.holds_of(1) == expected);
    CHECK(table.holds_of(2).empty());
}

TEST_CASE("the default limits are the documented constants", "[sql][locks][limits]") {
    const LockLimits limits;
    CHECK(limits.key_bytes_max == 4096);
    CHECK(limits.keys_per_owner_max == 10000);
    CHECK(limits.waiters_per_key_max == 10000);
    CHECK(limits.keys_max == 1000000);
    CHECK(limits.hold_count_max == 2147483647u);
    CHECK(LockTable{}.limits().keys_max == kLockKeysMax);
}

TEST_CASE("a queue longer than waiters_per_key_max is refused", "[sql][locks][limits]") {
    LockTable table;
    expect(table, req(1, kA), AcquireOutcome::kGranted);
    for (SessionId s = 2; s < 2 + kLockWaitersPerKeyMax; s++) {
        REQUIRE(table.acquire(req(s, kA), true) == AcquireOutcome::kWaiting);
    }
    const std::string before = snapshot(table);
    expect(table, req(99999, kA), AcquireOutcome::kLimit);
    // A try is busy, not over the limit: it would not queue.
    expect(table, req(99999, kA), AcquireOutcome::kBusy, false);
    CHECK(snapshot(table) == before);
    CHECK(table.waiters(kA).size() == kLockWaitersPerKeyMax);
}

TEST_CASE("an owner holding keys_per_owner_max keys can take no other", "[sql][locks][limits]") {
    LockTable table;
    for (size_t i = 0; i < kLockKeysPerOwnerMax; i++) {
        REQUIRE(table.acquire(req(1, advisory_key(static_cast<int64_t>(i))), true) ==
                AcquireOutcome::kGranted);
    }
    expect(table, req(1, kA), AcquireOutcome::kGranted);  // re-entry adds no key
    expect(table, req(1, advisory_key(-1)), AcquireOutcome::kLimit);
    // Nor wait for one: the grant would exceed the limit.
    expect(table, req(2, advisory_key(-1)), AcquireOutcome::kGranted);
    expect(table, req(1, advisory_key(-1)), AcquireOutcome::kLimit);
    expect(table, req(1, advisory_key(-1)), AcquireOutcome::kBusy, false);
    CHECK(table.key_count() == kLockKeysPerOwnerMax + 1);
}

TEST_CASE("the total key, hold count and key length limits are enforced", "[sql][locks][limits]") {
    LockLimits limits;
    limits.keys_max = 2;
    limits.hold_count_max = 2;
    LockTable table(limits);
    expect(table, req(1, kA), AcquireOutcome::kGranted);
    expect(table, req(2, kB, S), AcquireOutcome::kGranted);
    expect(table, req(3, kC), AcquireOutcome::kLimit);
    expect(table, req(3, kB, S), AcquireOutcome::kGranted);  // an existing key is no new key
    expect(table, req(1, kA), AcquireOutcome::kGranted);
    expect(table, req(1, kA), AcquireOutcome::kLimit);
    expect(table, req(1, kA, X, kTxn), AcquireOutcome::kGranted);  // another hold
    CHECK(table.held_count(1, kA, X, kSess) == 2);

    LockTable defaults;
    const LockKey longest{LockSpace::kNamed, std::string(kLockKeyBytesMax, 'k')};
    const LockKey too_long{LockSpace::kNamed, std::string(kLockKeyBytesMax + 1, 'k')};
    expect(defaults, req(1, longest), AcquireOutcome::kGranted);
    expect(defaults, req(1, too_long), AcquireOutcome::kLimit);
    CHECK(defaults.key_count() == 1);
}

// A table with every feature: spaces, scopes, counts, an upgrade at a head, deadlines.
LockTable varied_table() {
    LockTable table;
    const LockKey named{LockSpace::kNamed, "job\x01"};
    const LockKey unique{LockSpace::kUniqueKey, "users/email/a@b"};
    REQUIRE(table.acquire(req(1, kA, S), true) == AcquireOutcome::kGranted);
    REQUIRE(table.acquire(req(2, kA, S, kTxn), true) == AcquireOutcome::kGranted);
    REQUIRE(table.acquire(req(3, kA, X, kSess, 30, 700), true) == AcquireOutcome::kWaiting);
    REQUIRE(table.acquire(req(1, kA, X, kTxn, 10, 0), true) == AcquireOutcome::kWaiting);
    REQUIRE(table.acquire(req(4, named), true) == AcquireOutcome::kGranted);
    REQUIRE(table.acquire(req(4, named), true) == AcquireOutcome::kGranted);
    REQUIRE(table.acquire(req(5, named, X, kSess, 50, 300), true) == AcquireOutcome::kWaiting);
    REQUIRE(table.acquire(req(6, unique, X, kTxn), true) == AcquireOutcome::kGranted);
    REQUIRE(table.acquire(req(6, advisory_pair_key(-3, 4), S), true) == AcquireOutcome::kGranted);
    REQUIRE(table.acquire(req(2, advisory_pair_key(-3, 4), S), true) == AcquireOutcome::kGranted);
    REQUIRE(table.check_invariants() == "");
    return table;
}

TEST_CASE("a table prints one line per key", "[sql][locks]") {
    CHECK(to_string(varied_table()) ==
          "advisory:1 held=[s1 shared/session*1, s2 shared/transaction*1] "
          "queue=[s1 exclusive/transaction #10, s3 exclusive/session #30 @700]\n"
          "advisory-pair:-3,4 held=[s6 shared/session*1, s2 shared/session*1] queue=[]\n"
          "named:\"job\\x01\" held=[s4 exclusive/session*2] queue=[s5 exclusive/session #50 "
          "@300]\n"
          "unique-key:\"users/email/a@b\" held=[s6 exclusive/transaction*1] queue=[]");
    CHECK(to_string(LockTable{}) == "");
}

TEST_CASE("a snapshot round-trips byte for byte and the read table behaves the same",
          "[sql][locks][snapshot]") {
    LockTable table = varied_table();
    const std::string bytes = snapshot(table);
    LockTable copy;
    Reader r(bytes);
    REQUIRE(copy.read(r));
    CHECK(r.at_end());
    CHECK(snapshot(copy) == bytes);
    CHECK(to_string(copy) == to_string(table));
    CHECK(copy.next_deadline_ms() == 300);

    LockEvents original_events;
    LockEvents copy_events;
    table.end_owner(2, original_events);
    copy.end_owner(2, copy_events);
    table.expire_waits(300, original_events);
    copy.expire_waits(300, copy_events);
    CHECK(events_of(copy_events) == events_of(original_events));
    CHECK(events_of(copy_events) ==
          "grant s1 #10 advisory:1 exclusive/transaction; timeout s5 #50 named:\"job\\x01\"");
    CHECK(snapshot(copy) == snapshot(table));
    // Sequences are renumbered on read; an upgrade at the head still goes first.
    REQUIRE(copy.release(1, kA, S, copy_events));
    REQUIRE(table.release(1, kA, S, original_events));
    CHECK(snapshot(copy) == snapshot(table));

    std::string empty;
    Writer w(&empty);
    LockTable{}.write(w);
    CHECK(empty == std::string("\x01\x00", 2));
}

TEST_CASE("a truncated or garbled snapshot is refused without crashing", "[sql][locks][snapshot]") {
    const std::string bytes = snapshot(varied_table());
    for (size_t n = 0; n < bytes.size(); n++) {
        LockTable table;
        Reader r(std::string_view(bytes).substr(0, n));
        INFO("prefix of " << n << " bytes");
        CHECK_FALSE(table.read(r));
    }
    size_t accepted = 0;
    for (size_t i = 0; i < bytes.size(); i++) {
        for (const uint8_t flip : {0x01, 0x02, 0x80, 0xff}) {
            std::string garbled = bytes;
            garbled[i] = static_cast<char>(static_cast<uint8_t>(garbled[i]) ^ flip);
            LockTable table;
            Reader r(garbled);
            if (table.read(r)) {
                accepted++;
                CHECK(table.check_invariants() == "");
            }
        }
    }
    // Some flips change a ticket or a deadline and are valid snapshots; most are not.
    CHECK(accepted > 0);
    CHECK(accepted < bytes.size() * 4);
    // Random bytes, after a valid version byte half of the time.
    std::mt19937_64 rng(7);
    for (int i = 0; i < 5000; i++) {
        std::string noise(rng() % 64, '\0');
        for (char& c : noise) {
            c = static_cast<char>(rng());
        }
        if (i % 2 == 0 && !noise.empty()) {
            noise[0] = '\x01';
        }
        LockTable table;
        Reader r(noise);
        if (table.read(r)) {
            CHECK(table.check_invariants() == "");
        }
    }
}

// Builds snapshot bytes by hand for the malformed cases.
struct SnapshotBuilder {
    std::string bytes;
    Writer w{&bytes};
    SnapshotBuilder(uint8_t version, uint64_t keys) {
        w.u8(version);
        w.varint(keys);
    }
    void key(LockSpace space, std::string_view name) {
        w.u8(static_cast<uint8_t>(space));
        w.bytes(name);
    }
    void holders(const std::vector<std::pair<SessionId, std::array<uint32_t, 4>>>& hs) {
        w.varint(hs.size());
        for (const auto& [owner, counts] : hs) {
            w.varint(owner);
            for (const uint32_t c : counts) {
                w.varint(c);
            }
        }
    }
    void waiters(const std::vector<LockWait>& ws) {
        w.varint(ws.size());
        for (const LockWait& wait : ws) {
            w.varint(wait.owner);
            w.varint(wait.ticket);
            w.u8(static_cast<uint8_t>(wait.strength));
            w.u8(static_cast<uint8_t>(wait.scope));
            w.svarint(wait.deadline_ms);
        }
    }
};

TEST_CASE("a snapshot that breaks an invariant or a limit is refused", "[sql][locks][snapshot]") {
    // Counts index: shared/session, shared/transaction, exclusive/session, exclusive/transaction.
    const std::array<uint32_t, 4> shared = {1, 0, 0, 0};
    const std::array<uint32_t, 4> exclusive = {0, 0, 1, 0};
    const std::array<uint32_t, 4> none = {0, 0, 0, 0};
    struct Case {
        std::string name;
        std::string bytes;
        bool ok;
        LockLimits limits;
    };
    std::vector<Case> cases;
    auto add = [&](std::string name, SnapshotBuilder& b, bool ok, LockLimits limits = {}) {
        cases.push_back(Case{std::move(name), b.bytes, ok, limits});
    };
    {
        SnapshotBuilder b(1, 1);
        b.key(LockSpace::kRow, "r");
        b.holders({{1, exclusive}});
        b.waiters({{2, 20, S, kSess, 0}});
        add("valid", b, true);
        LockLimits one_waiter;
        one_waiter.waiters_per_key_max = 0;
        add("over waiters_per_key_max", b, false, one_waiter);
    }
    {
        SnapshotBuilder b(2, 0);
        add("another version", b, false);
    }
    {
        SnapshotBuilder b(1, 2);
        b.key(LockSpace::kRow, "b");
        b.holders({{1, shared}});
        b.waiters({});
        b.key(LockSpace::kRow, "a");
        b.holders({{1, shared}});
        b.waiters({});
        add("keys out of order", b, false);
        LockLimits one_key;
        one_key.keys_max = 1;
        add("over keys_max", b, false, one_key);
    }
    {
        SnapshotBuilder b(1, 1);
        b.key(static_cast<LockSpace>(6), "a");
        b.holders({{1, shared}});
        b.waiters({});
        add("an unknown space", b, false);
    }
    {
        SnapshotBuilder b(1, 1);
        b.key(LockSpace::kRow, "a");
        b.holders({{1, exclusive}, {2, shared}});
        b.waiters({});
        add("an exclusive holder that does not hold alone", b, false);
    }
    {
        SnapshotBuilder b(1, 1);
        b.key(LockSpace::kRow, "a");
        b.holders({{1, none}});
        b.waiters({});
        add("a holder without a count", b, false);
    }
    {
        SnapshotBuilder b(1, 1);
        b.key(LockSpace::kRow, "a");
        b.holders({});
        b.waiters({});
        add("a key without holders", b, false);
    }
    {
        SnapshotBuilder b(1, 1);
        b.key(LockSpace::kRow, "a");
        b.holders({{1, shared}});
        b.waiters({{2, 20, S, kSess, 0}});
        add("a grantable head", b, false);
    }
    {
        SnapshotBuilder b(1, 2);
        b.key(LockSpace::kRow, "a");
        b.holders({{1, exclusive}});
        b.waiters({{2, 20, S, kSess, 0}});
        b.key(LockSpace::kRow, "b");
        b.holders({{1, exclusive}});
        b.waiters({{2, 21, S, kSess, 0}});
        add("two waits of one owner", b, false);
    }
    {
        SnapshotBuilder b(1, 1);
        b.key(LockSpace::kRow, "a");
        b.holders({{1, shared}, {2, shared}, {3, shared}});
        b.waiters({{4, 40, X, kSess, 0}, {1, 10, X, kSess, 0}});
        add("an upgrade behind the head", b, false);
    }
    {
        SnapshotBuilder b(1, 2);
        b.key(LockSpace::kRow, "a");
        b.holders({{1, exclusive}});
        b.waiters({{2, 20, S, kSess, 0}});
        b.key(LockSpace::kRow, "b");
        b.holders({{2, exclusive}});
        b.waiters({});
        add("a waiter with keys to spare", b, true);
        LockLimits one_key_each;
        one_key_each.keys_per_owner_max = 1;
        add("a waiter whose grant would exceed keys_per_owner_max", b, false, one_key_each);
    }
    {
        SnapshotBuilder b(1, 1);
        b.key(LockSpace::kRow, "a");
        b.holders({{1, exclusive}});
        b.waiters({{2, 20, S, kSess, -5}});
        add("a negative deadline", b, false);
    }
    {
        SnapshotBuilder b(1, 1);
        b.key(LockSpace::kRow, "a");
        b.holders({{1, {3, 0, 0, 0}}});
        b.waiters({});
        LockLimits small;
        small.hold_count_max = 2;
        add("a count over hold_count_max", b, false, small);
        b.bytes.push_back('\0');
        add("trailing bytes are the caller's", b, true);
    }
    for (const Case& c : cases) {
        INFO(c.name);
        LockTable table(c.limits);
        Reader r(c.bytes);
        CHECK(table.read(r) == c.ok);
    }
}

// --- randomized comparison with a reference model ---------------------------------------------

// The semantics of lock_table.h written the obvious way: holds as a map, queues as vectors, the
// wait-for graph built edge by edge and searched from scratch.
class Model {
public:
    AcquireOutcome acquire(const LockRequest& q, bool wait) {
        auto it = keys_.find(q.key);
        if (it == keys_.end()) {
            add_hold(keys_[q.key], q.owner, q.strength, q.scope);
            return AcquireOutcome::kGranted;
        }
        Key& k = it->second;
        const bool own = holds(k, q.owner);
        if (!conflicts(k, q.owner, q.strength) && (own || k.queue.empty())) {
            add_hold(k, q.owner, q.strength, q.scope);
            return AcquireOutcome::kGranted;
        }
        if (!wait) {
            return AcquireOutcome::kBusy;
        }
        const size_t position = own ? 0 : k.queue.size();
        if (reaches(blockers(k, q.owner, q.strength, position), q.owner)) {
            return AcquireOutcome::kDeadlock;
        }
        k.queue.insert(k.queue.begin() + static_cast<ptrdiff_t>(position),
                       LockWait{q.owner, q.ticket, q.strength, q.scope, q.deadline_ms});
        return AcquireOutcome::kWaiting;
    }

    bool release(SessionId owner, const LockKey& key, LockStrength strength, LockEvents& events) {
        auto it = keys_.find(key);
        if (it == keys_.end()) {
            return false;
        }
        auto c = it->second.counts.find({owner, strength, kSess});
        if (c == it->second.counts.end()) {
            return false;
        }
        if (--c->second == 0) {
            it->second.counts.erase(c);
        }
        settle(it, events);
        return true;
    }

    size_t release_all(SessionId owner,
                       LockScope scope,
                       std::span<const LockSpace> spaces,
                       LockEvents& events) {
        size_t released = 0;
        for (auto it = keys_.begin(); it != keys_.end();) {
            auto next = std::next(it);
            if (std::find(spaces.begin(), spaces.end(), it->first.space) != spaces.end()) {
                for (const LockStrength s : {S, X}) {
                    auto c = it->second.counts.find({owner, s, scope});
                    if (c != it->second.counts.end()) {
                        released += c->second;
                        it->second.counts.erase(c);
                    }
                }
                settle(it, events);
            }
            it = next;
        }
        return released;
    }

    std::optional<uint64_t> cancel_wait(SessionId owner, LockEvents& events) {
        for (auto it = keys_.begin(); it != keys_.end(); ++it) {
            auto& queue = it->second.queue;
            for (size_t i = 0; i < queue.size(); i++) {
                if (queue[i].owner == owner) {
                    const uint64_t ticket = queue[i].ticket;
                    queue.erase(queue.begin() + static_cast<ptrdiff_t>(i));
                    settle(it, events);
                    return ticket;
                }
            }
        }
        return std::nullopt;
    }

    void end_owner(SessionId owner, LockEvents& events) {
        cancel_wait(owner, events);
        for (auto it = keys_.begin(); it != keys_.end();) {
            auto next = std::next(it);
            if (holds(it->second, owner)) {
                std::erase_if(it->second.counts,
                              [&](const auto& c) { return std::get<0>(c.first) == owner; });
                settle(it, events);
            }
            it = next;
        }
    }

    void expire_waits(TimeMs now_ms, LockEvents& events) {
        for (;;) {
            std::optional<std::tuple<TimeMs, SessionId, LockKey>> first;
            for (const auto& [key, k] : keys_) {
                for (const LockWait& w : k.queue) {
                    if (w.deadline_ms != 0 && w.deadline_ms <= now_ms &&
                        (!first || std::tie(w.deadline_ms, w.owner) <
                                       std::tie(std::get<0>(*first), std::get<1>(*first)))) {
                        first = std::make_tuple(w.deadline_ms, w.owner, key);
                    }
                }
            }
            if (!first) {
                return;
            }
            const SessionId owner = std::get<1>(*first);
            const LockKey key = std::get<2>(*first);
            const std::optional<uint64_t> ticket = cancel_wait_quietly(owner);
            events.timeouts.push_back(LockTimeout{owner, *ticket, key});
            settle(keys_.find(key), events);
        }
    }

    // The table's observable state, through the same queries the table answers.
    void require_same(const LockTable& table, const std::vector<LockKey>& keys, SessionId owners) {
        INFO(to_string(table));
        REQUIRE(table.key_count() == keys_.size());
        std::optional<TimeMs> next;
        for (const LockKey& key : keys) {
            const auto it = keys_.find(key);
            REQUIRE(table.is_free(key) == (it == keys_.end()));
            REQUIRE(table.holders(key) ==
                    (it == keys_.end() ? std::vector<SessionId>{} : it->second.holder_order));
            REQUIRE(table.waiters(key) ==
                    (it == keys_.end() ? std::vector<LockWait>{} : it->second.queue));
            for (SessionId o = 1; o <= owners; o++) {
                for (const LockStrength s : {S, X}) {
                    for (const LockScope sc : {kSess, kTxn}) {
                        uint32_t count = 0;
                        if (it != keys_.end() && it->second.counts.contains({o, s, sc})) {
                            count = it->second.counts.at({o, s, sc});
                        }
                        REQUIRE(table.held_count(o, key, s, sc) == count);
                    }
                }
            }
            if (it != keys_.end()) {
                for (const LockWait& w : it->second.queue) {
                    if (w.deadline_ms != 0 && (!next || w.deadline_ms < *next)) {
                        next = w.deadline_ms;
                    }
                }
            }
        }
        REQUIRE(table.next_deadline_ms() == next);
        for (SessionId o = 1; o <= owners; o++) {
            REQUIRE(table.waiting_for(o) == waiting_for(o));
        }
    }

    std::optional<LockKey> waiting_for(SessionId owner) const {
        for (const auto& [key, k] : keys_) {
            for (const LockWait& w : k.queue) {
                if (w.owner == owner) {
                    return key;
                }
            }
        }
        return std::nullopt;
    }

private:
    struct Key {
        std::map<std::tuple<SessionId, LockStrength, LockScope>, uint32_t> counts;
        std::vector<SessionId> holder_order;
        std::vector<LockWait> queue;
    };

    static bool holds(const Key& k, SessionId owner) {
        return std::any_of(k.counts.begin(), k.counts.end(),
                           [&](const auto& c) { return std::get<0>(c.first) == owner; });
    }

    static bool conflicting(LockStrength a, LockStrength b) { return a == X || b == X; }

    static bool conflicts(const Key& k, SessionId owner, LockStrength strength) {
        return std::any_of(k.counts.begin(), k.counts.end(), [&](const auto& c) {
            return std::get<0>(c.first) != owner && conflicting(std::get<1>(c.first), strength);
        });
    }

    static void add_hold(Key& k, SessionId owner, LockStrength strength, LockScope scope) {
        if (!holds(k, owner)) {
            k.holder_order.push_back(owner);
        }
        k.counts[{owner, strength, scope}]++;
    }

    // The owners a request at `position` of the queue waits for: the graph's edges.
    static std::set<SessionId> blockers(const Key& k,
                                        SessionId owner,
                                        LockStrength strength,
                                        size_t position) {
        std::set<SessionId> out;
        for (const auto& [hold, count] : k.counts) {
            if (std::get<0>(hold) != owner && conflicting(std::get<1>(hold), strength)) {
                out.insert(std::get<0>(hold));
            }
        }
        for (size_t i = 0; i < position; i++) {
            if (conflicting(k.queue[i].strength, strength)) {
                out.insert(k.queue[i].owner);
            }
        }
        return out;
    }

    bool reaches(std::set<SessionId> frontier, SessionId target) const {
        std::map<SessionId, std::set<SessionId>> edges;
        for (const auto& [key, k] : keys_) {
            for (size_t i = 0; i < k.queue.size(); i++) {
                edges[k.queue[i].owner] = blockers(k, k.queue[i].owner, k.queue[i].strength, i);
            }
        }
        std::set<SessionId> seen;
        while (!frontier.empty()) {
            const SessionId o = *frontier.begin();
            frontier.erase(frontier.begin());
            if (o == target) {
                return true;
            }
            if (seen.insert(o).second) {
                frontier.insert(edges[o].begin(), edges[o].end());
            }
        }
        return false;
    }

    // Grants from the head while compatible, fixes the holder order and forgets an unused key.
    void settle(std::map<LockKey, Key>::iterator it, LockEvents& events) {
        Key& k = it->second;
        std::erase_if(k.holder_order, [&](SessionId o) { return !holds(k, o); });
        while (!k.queue.empty() && !conflicts(k, k.queue[0].owner, k.queue[0].strength)) {
            const LockWait w = k.queue[0];
            k.queue.erase(k.queue.begin());
            add_hold(k, w.owner, w.strength, w.scope);
            events.grants.push_back(LockGrant{w.owner, w.ticket, it->first, w.strength, w.scope});
        }
        if (k.counts.empty()) {
            REQUIRE(k.queue.empty());
            keys_.erase(it);
        }
    }

    std::optional<uint64_t> cancel_wait_quietly(SessionId owner) {
        for (auto& [key, k] : keys_) {
            for (size_t i = 0; i < k.queue.size(); i++) {
                if (k.queue[i].owner == owner) {
                    const uint64_t ticket = k.queue[i].ticket;
                    k.queue.erase(k.queue.begin() + static_cast<ptrdiff_t>(i));
                    return ticket;
                }
            }
        }
        return std::nullopt;
    }

    std::map<LockKey, Key> keys_;
};

TEST_CASE("random operations agree with a reference model and keep every invariant",
          "[sql][locks][random]") {
    const uint64_t seed = GENERATE(1, 2, 3, 20261125);
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
    constexpr SessionId kOwners = 6;
    const std::vector<LockKey> keys = {kA, kB, advisory_pair_key(1, 2),
                                       LockKey{LockSpace::kNamed, "n"},
                                       LockKey{LockSpace::kRow, "t/1"}};
    const std::vector<std::vector<LockSpace>> space_sets = {
        {kEveryLockSpace.begin(), kEveryLockSpace.end()},
        {kAdvisoryLockSpaces.begin(), kAdvisoryLockSpaces.end()},
        {LockSpace::kNamed},
        {}};
    LockTable table;
    Model model;
    TimeMs now_ms = 0;
    std::map<std::string, size_t> seen;  // outcomes and event kinds, to know the run covered them
    for (uint64_t step = 1; step <= 3000; step++) {
        INFO("step " << step);
        LockEvents got;
        LockEvents want;
        const SessionId owner = 1 + pick(kOwners);
        const LockKey& key = keys[pick(keys.size())];
        const uint64_t op = pick(100);
        if (op < 45) {
            if (model.waiting_for(owner).has_value()) {
                continue;  // a waiting session runs no other statement
            }
            const TimeMs deadline = pick(3) == 0 ? 0 : now_ms + 1 + static_cast<TimeMs>(pick(40));
            const LockRequest q =
                req(owner, key, pick(2) == 0 ? S : X, pick(2) == 0 ? kSess : kTxn, step, deadline);
            const bool wait = pick(5) != 0;
            const AcquireOutcome outcome = table.acquire(q, wait);
            REQUIRE(to_string(outcome) == to_string(model.acquire(q, wait)));
            seen[to_string(outcome)]++;
        } else if (op < 62) {
            const LockStrength s = pick(2) == 0 ? S : X;
            REQUIRE(table.release(owner, key, s, got) == model.release(owner, key, s, want));
        } else if (op < 72) {
            const LockScope scope = pick(2) == 0 ? kSess : kTxn;
            const auto& spaces = space_sets[pick(space_sets.size())];
            REQUIRE(table.release_all(owner, scope, spaces, got) ==
                    model.release_all(owner, scope, spaces, want));
        } else if (op < 80) {
            REQUIRE(table.cancel_wait(owner, got) == model.cancel_wait(owner, want));
        } else if (op < 84) {
            table.end_owner(owner, got);
            model.end_owner(owner, want);
        } else {
            now_ms += static_cast<TimeMs>(pick(8));
            table.expire_waits(now_ms, got);
            model.expire_waits(now_ms, want);
        }
        REQUIRE(events_of(got) == events_of(want));
        seen["grant"] += got.grants.size();
        seen["timeout"] += got.timeouts.size();
        require_invariants(table);
        model.require_same(table, keys, kOwners);
        if (step % 97 == 0) {
            // Continue from the snapshot: the read table must be indistinguishable.
            const std::string bytes = snapshot(table);
            LockTable copy;
            Reader r(bytes);
            REQUIRE(copy.read(r));
            REQUIRE(snapshot(copy) == bytes);
            table = std::move(copy);
        }
    }
    for (const char* kind : {"granted", "waiting", "busy", "deadlock", "grant", "timeout"}) {
        INFO(kind);
        CHECK(seen[kind] > 0);
    }
}

}  // namespace
}  // namespace raftlock::statemachine::sql
