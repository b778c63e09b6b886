#include <catch2/catch.hpp>

#include "harness.h"
#include "statemachine/text.h"

namespace raftlock::statemachine {
namespace {

using testing::Harness;
constexpr LockMode kX = LockMode::kExclusive;
constexpr LockMode kS = LockMode::kShared;

TEST_CASE("a free lock is granted at once with token = the granting entry's zxid",
          "[statemachine][locks]") {
    Harness h;
    SessionId s = h.open();
    Response r = h.lock(s, "L", "t");
    CHECK(r.code == ErrorCode::kOk);
    CHECK(r.lock == LockOutcome::kGranted);
    CHECK(r.token == h.index);
    CHECK(r.hold_count == 1);
}

TEST_CASE("tokens only grow, across all locks", "[statemachine][locks]") {
    Harness h;
    SessionId s = h.open();
    Index t1 = h.lock(s, "A").token;
    Index t2 = h.lock(s, "B").token;
    h.run(s, Release{"A", "", t1});
    Index t3 = h.lock(s, "A").token;
    CHECK(t1 < t2);
    CHECK(t2 < t3);
}

TEST_CASE("a try-acquire of a busy lock gets LockBusy and leaves nothing behind",
          "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    h.lock(a, "L");
    CHECK(h.lock(b, "L").code == ErrorCode::kLockBusy);
    CHECK(h.sm.describe_lock("L")->waiters.empty());
    CHECK(h.sm.session(b)->locks == 0);
}

TEST_CASE("the releasing entry grants waiters in FIFO order (hand-off)", "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    SessionId c = h.open();
    Index ta = h.lock(a, "L").token;
    CHECK(h.lock(b, "L", "", kX, 1000).lock == LockOutcome::kQueued);
    CHECK(h.lock(c, "L", "", kX, 1000).lock == LockOutcome::kQueued);
    ApplyResult out = h.run(a, Release{"L", "", ta});
    CHECK(out.response.lock == LockOutcome::kReleased);
    CHECK(out.grants == std::vector<LockGrant>{{b, "L", "", out.index}});
    out = h.run(b, Release{"L", "", out.index});
    CHECK(out.grants == std::vector<LockGrant>{{c, "L", "", out.index}});
}

TEST_CASE("shared holders share a lock and an exclusive request waits for them",
          "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    SessionId c = h.open();
    CHECK(h.lock(a, "L", "", kS).lock == LockOutcome::kGranted);
    CHECK(h.lock(b, "L", "", kS).lock == LockOutcome::kGranted);
    CHECK(h.lock(c, "L", "", kX).code == ErrorCode::kLockBusy);
    CHECK(h.sm.describe_lock("L")->holders.size() == 2);
}

TEST_CASE("a shared request queues behind a waiting exclusive one (no barging)",
          "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    SessionId c = h.open();
    h.lock(a, "L", "", kS);
    CHECK(h.lock(b, "L", "", kX, 1000).lock == LockOutcome::kQueued);
    CHECK(h.lock(c, "L", "", kS, 1000).lock == LockOutcome::kQueued);
    CHECK(h.lock(c, "L", "other", kS).code == ErrorCode::kLockBusy);
}

TEST_CASE("a release grants the whole batch of shared waiters at the queue's head",
          "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    SessionId c = h.open();
    SessionId d = h.open();
    Index ta = h.lock(a, "L").token;
    h.lock(b, "L", "", kS, 1000);
    h.lock(c, "L", "", kS, 1000);
    h.lock(d, "L", "", kX, 1000);
    ApplyResult out = h.run(a, Release{"L", "", ta});
    CHECK(out.grants == std::vector<LockGrant>{{b, "L", "", out.index}, {c, "L", "", out.index}});
    CHECK(h.sm.describe_lock("L")->waiters.size() == 1);
}

TEST_CASE("a semaphore admits up to its permits", "[statemachine][locks]") {
    Harness h;
    SessionId s = h.open();
    constexpr LockMode kSem = LockMode::kSemaphore;
    CHECK(h.lock(s, "P", "1", kSem, 0, 2).lock == LockOutcome::kGranted);
    CHECK(h.lock(s, "P", "2", kSem, 0, 2).lock == LockOutcome::kGranted);
    CHECK(h.lock(s, "P", "3", kSem, 0, 2).code == ErrorCode::kLockBusy);
    CHECK(h.lock(s, "P", "3", kSem, 0, 3).code == ErrorCode::kBadArguments);
}

TEST_CASE("an acquire whose kind differs from the lock's gets BadArguments",
          "[statemachine][locks]") {
    Harness h;
    SessionId s = h.open();
    h.lock(s, "L");
    CHECK(h.lock(s, "L", "x", LockMode::kSemaphore, 0, 2).code == ErrorCode::kBadArguments);
    CHECK(h.lock(s, "L", "", kS).code == ErrorCode::kBadArguments);  // no upgrade/downgrade
}

TEST_CASE("re-acquiring with the same session and tag counts up; releases count down",
          "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index t = h.lock(a, "L", "t").token;
    Response again = h.lock(a, "L", "t");
    CHECK(again.lock == LockOutcome::kGranted);
    CHECK(again.token == t);
    CHECK(again.hold_count == 2);
    h.lock(b, "L", "", kX, 1000);
    ApplyResult out = h.run(a, Release{"L", "t", t});
    CHECK(out.response.hold_count == 1);
    CHECK(out.grants.empty());
    out = h.run(a, Release{"L", "t", t});
    CHECK(out.response.hold_count == 0);
    CHECK(out.grants.size() == 1);
}

TEST_CASE("the same session with another owner tag is another owner", "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    h.lock(a, "L", "t1");
    CHECK(h.lock(a, "L", "t2").code == ErrorCode::kLockBusy);
}

TEST_CASE("only the holder can release: a wrong session, tag or token changes nothing",
          "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index t = h.lock(a, "L", "t").token;
    CHECK(h.run(b, Release{"L", "t", t}).response.code == ErrorCode::kNotLockHolder);
    CHECK(h.run(a, Release{"L", "u", t}).response.code == ErrorCode::kNotLockHolder);
    CHECK(h.run(a, Release{"L", "t", t + 1}).response.code == ErrorCode::kNotLockHolder);
    CHECK(h.run(a, Release{"M", "t", t}).response.code == ErrorCode::kNotLockHolder);
    CHECK(h.sm.describe_lock("L")->holders.size() == 1);
}

TEST_CASE("a forced release takes every count of the hold and hands the lock on",
          "[statemachine][locks][force]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index t = h.lock(a, "L", "t").token;
    REQUIRE(h.lock(a, "L", "t").hold_count == 2);
    h.lock(b, "L", "", kX, 5000);
    // Session-less: nobody's session numbers move (as a user change).
    ApplyResult out = h.leader(ForceRelease{"L", a, t});
    CHECK(out.response.code == ErrorCode::kOk);
    CHECK(out.response.lock == LockOutcome::kReleased);
    CHECK(out.response.token == t);
    CHECK(out.response.hold_count == 0);
    CHECK(out.grants == std::vector<LockGrant>{{b, "L", "", out.index}});
    // The servers holding a's connections are told, so that a holder still at work learns it.
    CHECK(out.holds_revoked == std::vector<HoldRevoked>{{a, "L", t}});
    // The old token fences nothing from here on, and the old holder's release finds nothing.
    Command fenced;
    fenced.client_id = a;
    fenced.seq = ++h.seqs[a];
    fenced.time_ms = h.time_ms;
    fenced.fence = Fence{"L", t};
    fenced.op = SetData{"/missing", "x", -1};
    CHECK(h.apply(fenced).response.code == ErrorCode::kFenceRejected);
    CHECK(h.run(a, Release{"L", "t", t}).response.code == ErrorCode::kNotLockHolder);
    // The session itself lives on.
    CHECK(h.run(a, KeepAlive{}).response.code == ErrorCode::kOk);
}

TEST_CASE("a forced release names the hold exactly: a wrong session, token or lock changes nothing",
          "[statemachine][locks][force]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index t = h.lock(a, "L", "t").token;
    CHECK(h.leader(ForceRelease{"L", b, t}).response.code == ErrorCode::kNotLockHolder);
    CHECK(h.leader(ForceRelease{"L", a, t + 1}).response.code == ErrorCode::kNotLockHolder);
    CHECK(h.leader(ForceRelease{"M", a, t}).response.code == ErrorCode::kNotLockHolder);
    REQUIRE(h.sm.describe_lock("L"));
    CHECK(h.sm.describe_lock("L")->holders.size() == 1);
    // Done once, a second one (a retry after a lost reply) finds nothing.
    CHECK(h.leader(ForceRelease{"L", a, t}).response.code == ErrorCode::kOk);
    CHECK(h.leader(ForceRelease{"L", a, t}).response.code == ErrorCode::kNotLockHolder);
    CHECK(!h.sm.describe_lock("L"));
}

TEST_CASE("a forced release is unclean: the lock-delay holds back the next grant",
          "[statemachine][locks][force][time]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index t = h.lock(a, "L", "", kX, 0, 1, 2000).token;
    h.lock(b, "L", "", kX, 5000);
    ApplyResult out = h.leader(ForceRelease{"L", a, t});
    CHECK(out.response.code == ErrorCode::kOk);
    CHECK(out.grants.empty());
    CHECK(h.sm.describe_lock("L")->free_at_ms == h.time_ms + 2000);
    CHECK(h.advance(1999).grants.empty());
    out = h.advance(1);
    CHECK(out.grants == std::vector<LockGrant>{{b, "L", "", out.index}});
}

TEST_CASE("a forced release of one shared holder leaves the others holding",
          "[statemachine][locks][force]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index ta = h.lock(a, "S", "", LockMode::kShared).token;
    Index tb = h.lock(b, "S", "", LockMode::kShared).token;
    CHECK(h.leader(ForceRelease{"S", a, ta}).response.code == ErrorCode::kOk);
    std::optional<LockInfo> info = h.sm.describe_lock("S");
    REQUIRE(info);
    REQUIRE(info->holders.size() == 1);
    CHECK(info->holders[0].session == b);
    CHECK(info->holders[0].token == tb);
}

TEST_CASE("a wait that reaches its deadline ends without a grant and leaves nothing behind",
          "[statemachine][locks][time]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index t = h.lock(a, "L").token;
    h.lock(b, "L", "w", kX, 500);
    h.advance(499);
    CHECK(h.sm.describe_lock("L")->waiters.size() == 1);
    ApplyResult out = h.advance(1);
    CHECK(out.wait_timeouts == std::vector<WaitTimeout>{{b, "L", "w"}});
    CHECK(h.sm.describe_lock("L")->waiters.empty());
    CHECK(h.sm.session(b)->locks == 0);
    out = h.run(a, Release{"L", "", t});
    CHECK(out.grants.empty());
    CHECK(!h.sm.describe_lock("L"));
}

TEST_CASE("a waiter leaving the head of the queue unblocks the waiters behind it",
          "[statemachine][locks][time]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    SessionId c = h.open();
    h.lock(a, "L", "", kS);
    h.lock(b, "L", "", kX, 100);
    h.lock(c, "L", "", kS, 1000);
    ApplyResult out = h.advance(100);
    CHECK(out.wait_timeouts.size() == 1);
    CHECK(out.grants == std::vector<LockGrant>{{c, "L", "", out.index}});
}

TEST_CASE("cancel removes a queued wait", "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index t = h.lock(a, "L").token;
    h.lock(b, "L", "", kX, 1000);
    Response r = h.run(b, Cancel{"L", ""}).response;
    CHECK(r.lock == LockOutcome::kCancelled);
    CHECK(h.run(a, Release{"L", "", t}).grants.empty());
    CHECK(h.sm.session(b)->locks == 0);
}

TEST_CASE("a cancel that loses the race with a grant reports the grant", "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index t = h.lock(a, "L").token;
    h.lock(b, "L", "w", kX, 1000);
    ApplyResult released = h.run(a, Release{"L", "", t});
    Response r = h.run(b, Cancel{"L", "w"}).response;
    CHECK(r.lock == LockOutcome::kGranted);
    CHECK(r.token == released.index);
    CHECK(h.run(b, Release{"L", "w", r.token}).response.code == ErrorCode::kOk);
}

TEST_CASE("a cancel with neither a wait nor a hold reports none", "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    CHECK(h.run(a, Cancel{"L", ""}).response.lock == LockOutcome::kNone);
}

TEST_CASE("waiting twice with the same owner gets AlreadyWaiting", "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    h.lock(a, "L");
    h.lock(b, "L", "", kX, 1000);
    CHECK(h.lock(b, "L", "", kX, 1000).code == ErrorCode::kAlreadyWaiting);
}

TEST_CASE("after a holder's session expires, lock-delay holds back the next grant",
          "[statemachine][locks][time]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    h.lock(a, "L", "", kX, 0, 1, 2000);
    h.lock(b, "L", "", kX, 5000);
    ApplyResult out = h.leader(ExpireSession{a});
    CHECK(out.grants.empty());
    std::optional<LockInfo> info = h.sm.describe_lock("L");
    CHECK(info->free_at_ms == h.time_ms + 2000);
    CHECK(h.advance(1999).grants.empty());
    out = h.advance(1);
    CHECK(out.grants == std::vector<LockGrant>{{b, "L", "", out.index}});
}

TEST_CASE("lock-delay keeps a lock without waiters unavailable and describe shows free-at",
          "[statemachine][locks][time]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    h.lock(a, "L", "", kX, 0, 1, 1000);
    h.leader(ExpireSession{a});
    REQUIRE(h.sm.describe_lock("L"));
    CHECK(h.sm.describe_lock("L")->free_at_ms == h.time_ms + 1000);
    CHECK(h.lock(b, "L").code == ErrorCode::kLockBusy);
    h.advance(1000);
    CHECK(!h.sm.describe_lock("L"));
    CHECK(h.lock(b, "L").lock == LockOutcome::kGranted);
}

TEST_CASE("a clean release or close does not start lock-delay", "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    h.lock(a, "L", "", kX, 0, 1, 1000);
    h.lock(b, "L", "", kX, 5000);
    ApplyResult out = h.run(a, CloseSession{});
    CHECK(out.grants.size() == 1);
}

TEST_CASE("describe shows holders, mode, waiters in order with enqueue times",
          "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    SessionId c = h.open();
    h.time_ms = 1010;
    Index t = h.lock(a, "L", "ta").token;
    h.time_ms = 1020;
    h.lock(b, "L", "tb", kS, 100);
    h.time_ms = 1030;
    h.lock(c, "L", "tc", kX, 100);
    LockInfo info = *h.sm.describe_lock("L");
    CHECK(info.mode == kX);
    CHECK(info.holders == std::vector<HolderInfo>{{a, "ta", t, 1010, 1}});
    CHECK(info.waiters ==
          std::vector<WaiterInfo>{{b, "tb", kS, 1020, 1120}, {c, "tc", kX, 1030, 1130}});
}

TEST_CASE("describe has a stable text form", "[statemachine][locks][text]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index t = h.lock(a, "db", "w", kX, 0, 1, 500).token;
    h.time_ms += 100;
    h.lock(b, "db", "", kS, 1000);
    CHECK(fmt::format("{}", *h.sm.describe_lock("db")) ==
          fmt::format("lock \"db\" exclusive holder=s{}/\"w\"/{}@1000x1 "
                      "waiter=s{}/\"\"/shared@1100..2100 delay=500 free_at=0",
                      a, t, b));
}

TEST_CASE("list returns the lock names with a prefix, in order, up to the limit",
          "[statemachine][locks]") {
    Harness h;
    SessionId s = h.open();
    for (const char* n : {"b/2", "a/1", "b/1", "b/3", "c"}) {
        h.lock(s, n);
    }
    CHECK(h.sm.list_locks("b/", 10) == std::vector<std::string>{"b/1", "b/2", "b/3"});
    CHECK(h.sm.list_locks("b/", 2) == std::vector<std::string>{"b/1", "b/2"});
    CHECK(h.sm.list_locks("", 100).size() == 5);
}

TEST_CASE("a multi-lock acquires every lock or none", "[statemachine][locks][multi]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    h.lock(b, "y");
    AcquireMany many;
    many.locks = {LockSpec{"x", kX, 1}, LockSpec{"y", kX, 1}, LockSpec{"z", kS, 1}};
    CHECK(h.run(a, many).response.code == ErrorCode::kLockBusy);
    CHECK(!h.sm.describe_lock("x"));
    CHECK(!h.sm.describe_lock("z"));
    many.locks[1] = LockSpec{std::string("w"), kX, 1};
    Response r = h.run(a, many).response;
    CHECK(r.lock == LockOutcome::kGranted);
    CHECK(r.token == h.index);
    for (const char* n : {"x", "w", "z"}) {
        CHECK(h.sm.describe_lock(n)->holders.front().token == r.token);
    }
}

AcquireMany many_of(std::vector<LockSpec> locks, TimeMs wait_ms, std::string tag = "") {
    AcquireMany many;
    many.locks = std::move(locks);
    many.owner_tag = std::move(tag);
    many.wait_ms = wait_ms;
    return many;
}

TEST_CASE("a multi-lock that waits queues on every lock and is granted on all in one entry",
          "[statemachine][locks][multi]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    const Index ty = h.lock(b, "y").token;
    ApplyResult queued = h.run(a, many_of({{"x", kX, 1}, {"y", kX, 1}}, 1000, "t"));
    CHECK(queued.response.lock == LockOutcome::kQueued);
    // Queued on both, holding neither: x is free but waits for the set.
    CHECK(h.sm.describe_lock("x")->holders.empty());
    CHECK(h.sm.describe_lock("x")->waiters.size() == 1);
    CHECK(h.sm.describe_lock("y")->waiters.size() == 1);
    // Nobody overtakes the set on x, not even a try of a free lock.
    SessionId c = h.open();
    CHECK(h.lock(c, "x").code == ErrorCode::kLockBusy);
    ApplyResult out = h.run(b, Release{"y", "", ty});
    CHECK(out.grants == std::vector<LockGrant>{{a, "x", "t", out.index}, {a, "y", "t", out.index}});
    CHECK(h.sm.describe_lock("x")->holders.front().token == out.index);
    CHECK(h.sm.describe_lock("y")->holders.front().token == out.index);
    CHECK(h.sm.describe_lock("x")->waiters.empty());
}

TEST_CASE("multi-lock waits on crossing sets are granted in log order, without deadlock",
          "[statemachine][locks][multi]") {
    // a holds x and y; b wants {x, z}, c wants {y, z}, d wants {z}: two sets that, taken one lock
    // at a time in different orders, could deadlock. Granted oldest first: b, then c and d.
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    SessionId c = h.open();
    SessionId d = h.open();
    ApplyResult held = h.run(a, many_of({{"x", kX, 1}, {"y", kX, 1}}, 0));
    REQUIRE(held.response.lock == LockOutcome::kGranted);
    CHECK(h.run(b, many_of({{"z", kX, 1}, {"x", kX, 1}}, 5000)).response.lock ==
          LockOutcome::kQueued);
    CHECK(h.run(c, many_of({{"y", kX, 1}, {"z", kX, 1}}, 5000)).response.lock ==
          LockOutcome::kQueued);
    CHECK(h.lock(d, "z", "", kX, 5000).lock == LockOutcome::kQueued);
    // y freed: c heads y's queue but not z's (b came first), so nothing is granted.
    ApplyResult out = h.run(a, Release{"y", "", held.response.token});
    CHECK(out.grants.empty());
    out = h.run(a, Release{"x", "", held.response.token});
    CHECK(out.grants == std::vector<LockGrant>{{b, "x", "", out.index}, {b, "z", "", out.index}});
    const Index tb = out.index;
    out = h.run(b, CloseSession{});
    // b's end frees x and z: c (older than d on z) takes y and z; d still waits behind it.
    CHECK(out.grants == std::vector<LockGrant>{{c, "y", "", out.index}, {c, "z", "", out.index}});
    CHECK(tb < out.index);
    out = h.run(c, CloseSession{});
    CHECK(out.grants == std::vector<LockGrant>{{d, "z", "", out.index}});
}

TEST_CASE("a multi-lock wait ends on all its locks: cancel, deadline, session end",
          "[statemachine][locks][multi]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    SessionId c = h.open();
    h.lock(a, "y");
    SECTION("cancel by any of its locks") {
        REQUIRE(h.run(b, many_of({{"x", kX, 1}, {"y", kX, 1}}, 1000, "t")).response.lock ==
                LockOutcome::kQueued);
        CHECK(h.lock(c, "x", "", kX, 1000).lock == LockOutcome::kQueued);
        ApplyResult out = h.run(b, Cancel{"y", "t"});
        CHECK(out.response.lock == LockOutcome::kCancelled);
        // Reported on every lock: the server waits on the set under its first name, x.
        CHECK(out.wait_timeouts == std::vector<WaitTimeout>{{b, "x", "t"}, {b, "y", "t"}});
        // x was free behind the set: its next waiter takes it in the same entry.
        CHECK(out.grants == std::vector<LockGrant>{{c, "x", "", out.index}});
        CHECK(h.sm.describe_lock("y")->waiters.empty());
        CHECK(h.sm.session(b)->locks == 0);
    }
    SECTION("the deadline times out every lock of the set") {
        REQUIRE(h.run(b, many_of({{"x", kX, 1}, {"y", kX, 1}}, 1000, "t")).response.lock ==
                LockOutcome::kQueued);
        h.time_ms += 1000;
        ApplyResult out = h.leader(Noop{});
        CHECK(out.wait_timeouts == std::vector<WaitTimeout>{{b, "x", "t"}, {b, "y", "t"}});
        CHECK(!h.sm.describe_lock("x"));  // the record made for the wait is gone with it
        CHECK(h.sm.describe_lock("y")->waiters.empty());
    }
    SECTION("the session's end") {
        REQUIRE(h.run(b, many_of({{"x", kX, 1}, {"y", kX, 1}}, 1000, "t")).response.lock ==
                LockOutcome::kQueued);
        CHECK(h.lock(c, "x", "", kX, 1000).lock == LockOutcome::kQueued);
        ApplyResult out = h.run(b, CloseSession{});
        CHECK(out.grants == std::vector<LockGrant>{{c, "x", "", out.index}});
        CHECK(h.sm.describe_lock("y")->waiters.empty());
    }
}

TEST_CASE("multi-lock waits with shared locks and semaphores keep FIFO order",
          "[statemachine][locks][multi]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    SessionId c = h.open();
    const Index ta = h.lock(a, "r", "", kX).token;
    // b: r shared and one permit of a 1-permit semaphore; c: r shared alone, queued behind b.
    REQUIRE(
        h.run(b, many_of({{"r", kS, 1}, {"sem", LockMode::kSemaphore, 1}}, 1000)).response.lock ==
        LockOutcome::kQueued);
    CHECK(h.lock(c, "r", "", kS, 1000).lock == LockOutcome::kQueued);
    ApplyResult out = h.run(a, Release{"r", "", ta});
    // Both shared grants in one entry: the set, then c behind it.
    CHECK(out.grants == std::vector<LockGrant>{{b, "r", "", out.index},
                                               {b, "sem", "", out.index},
                                               {c, "r", "", out.index}});
}

TEST_CASE("a snapshot keeps multi-lock waits, and restores them as one set",
          "[statemachine][locks][multi]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    const Index ty = h.lock(a, "y").token;
    REQUIRE(h.run(b, many_of({{"x", kX, 1}, {"y", kX, 1}}, 1000)).response.lock ==
            LockOutcome::kQueued);
    StateMachine restored;
    REQUIRE(restored.restore(h.sm.snapshot()) == ErrorCode::kOk);
    CHECK(restored.snapshot() == h.sm.snapshot());
    h.sm = std::move(restored);
    ApplyResult out = h.run(a, Release{"y", "", ty});
    CHECK(out.grants == std::vector<LockGrant>{{b, "x", "", out.index}, {b, "y", "", out.index}});
}

TEST_CASE("a session's end drops its waits and hands off its holds", "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    SessionId c = h.open();
    h.lock(a, "L");
    h.lock(b, "L", "", kX, 1000);
    h.lock(c, "L", "", kX, 1000);
    h.leader(ExpireSession{b});
    ApplyResult out = h.run(a, CloseSession{});
    CHECK(out.grants == std::vector<LockGrant>{{c, "L", "", out.index}});
}

TEST_CASE("a lock queue is bounded: past the limit an acquire gets LimitExceeded",
          "[statemachine][locks][limits]") {
    // Driven directly (not through the harness) to skip the per-step invariant scan.
    StateMachine sm;
    Index index = 0;
    Command open;
    open.op = OpenSession{10000};
    SessionId s = sm.apply_command(++index, open).response.session;
    uint64_t seq = 0;
    auto acquire = [&](std::string tag) {
        Command c;
        c.client_id = s;
        c.seq = ++seq;
        c.ack_seq = seq - 1;
        c.op = Acquire{"L", std::move(tag), kX, 1, 1000, 0};
        return sm.apply_command(++index, c).response;
    };
    acquire("holder");
    for (size_t i = 0; i < kWaitersPerLockMax; i++) {
        REQUIRE(acquire(std::to_string(i)).lock == LockOutcome::kQueued);
    }
    CHECK(acquire("one-too-many").code == ErrorCode::kLimitExceeded);
    CHECK(sm.check_invariants() == "");
}

TEST_CASE("next_timer_ms names the earliest wait deadline, so a leader knows when to tick time",
          "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    CHECK(!h.sm.next_timer_ms().has_value());
    h.lock(a, "L");
    h.time_ms = 2000;
    CHECK(h.lock(b, "L", "", kX, 1000).lock == LockOutcome::kQueued);
    CHECK(h.sm.next_timer_ms() == std::optional<TimeMs>(3000));
    ApplyResult out = h.advance(1000);
    CHECK(out.wait_timeouts.size() == 1);
    CHECK(!h.sm.next_timer_ms().has_value());
}

TEST_CASE("lock_totals counts held locks and waiters", "[statemachine][locks]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    h.lock(a, "L");
    h.lock(a, "M");
    CHECK(h.lock(b, "L", "", kX, 1000).lock == LockOutcome::kQueued);
    CHECK(h.sm.lock_totals().held == 2);
    CHECK(h.sm.lock_totals().waiters == 1);
}

}  // namespace
}  // namespace raftlock::statemachine
