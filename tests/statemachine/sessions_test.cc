#include <catch2/catch.hpp>

#include "harness.h"

namespace raftlock::statemachine {
namespace {

using testing::Harness;

TEST_CASE("opening a session returns the entry's index as its id", "[statemachine][sessions]") {
    Harness h;
    h.advance(0);
    ApplyResult out = h.leader(OpenSession{5000});
    CHECK(out.response.code == ErrorCode::kOk);
    CHECK(out.response.session == out.index);
    REQUIRE(h.sm.session(out.index).has_value());
    CHECK(h.sm.session(out.index)->timeout_ms == 5000);
}

TEST_CASE("a session timeout outside the configured bounds is refused with BadArguments",
          "[statemachine][sessions]") {
    Harness h(Config{2000, 60000, 100});
    CHECK(h.leader(OpenSession{1999}).response.code == ErrorCode::kBadArguments);
    CHECK(h.leader(OpenSession{60001}).response.code == ErrorCode::kBadArguments);
    CHECK(h.leader(OpenSession{2000}).response.code == ErrorCode::kOk);
    CHECK(h.leader(OpenSession{60000}).response.code == ErrorCode::kOk);
    CHECK(h.sm.session_count() == 2);
}

TEST_CASE("opening more sessions than the configured maximum gets LimitExceeded",
          "[statemachine][sessions][limits]") {
    Config config;
    config.sessions_max = 2;
    Harness h(config);
    SessionId a = h.open();
    h.open();
    CHECK(h.leader(OpenSession{5000}).response.code == ErrorCode::kLimitExceeded);
    h.run(a, CloseSession{});
    CHECK(h.leader(OpenSession{5000}).response.code == ErrorCode::kOk);
}

TEST_CASE("a request from an unknown session gets SessionExpired", "[statemachine][sessions]") {
    Harness h;
    CHECK(h.create(77, "/a").code == ErrorCode::kSessionExpired);
    CHECK(!h.sm.exists("/a"));
}

TEST_CASE("a retried request returns the saved result without applying it again",
          "[statemachine][sessions][exactly-once]") {
    Harness h;
    SessionId s = h.open();
    Command c;
    c.client_id = s;
    c.seq = 1;
    c.time_ms = h.time_ms;
    c.op = Create{"/q-", "", NodeKind::kPersistentSequential, 0};
    ApplyResult first = h.apply(c);
    REQUIRE(first.response.code == ErrorCode::kOk);
    CHECK(first.response.path == "/q-0000000000");
    ApplyResult retry = h.apply(c);
    CHECK(retry.replayed);
    CHECK(retry.response == first.response);
    CHECK(retry.triggers.empty());
    CHECK(h.sm.children("/").value() == std::vector<std::string>{"q-0000000000"});
}

TEST_CASE("acknowledged results are discarded and their retries get ResultDiscarded",
          "[statemachine][sessions][exactly-once]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");  // seq 1
    Command c;
    c.client_id = s;
    c.seq = 2;
    c.ack_seq = 1;
    c.op = KeepAlive{};
    h.apply(c);
    Command retry;
    retry.client_id = s;
    retry.seq = 1;
    retry.op = Create{"/a", "", NodeKind::kPersistent, 0};
    ApplyResult out = h.apply(retry);
    CHECK(!out.replayed);
    CHECK(out.response.code == ErrorCode::kResultDiscarded);
}

TEST_CASE("saved results are bounded per session and the oldest go first",
          "[statemachine][sessions][exactly-once]") {
    Harness h;
    SessionId s = h.open();
    for (size_t i = 0; i < kSavedResultsPerSessionMax + 5; i++) {
        h.run(s, KeepAlive{});
    }
    Command old;
    old.client_id = s;
    old.seq = 5;
    old.op = KeepAlive{};
    CHECK(h.apply(old).response.code == ErrorCode::kResultDiscarded);
    old.seq = 6;
    CHECK(h.apply(old).replayed);
}

// A write of `session` numbered `seq`.
Command session_write(SessionId session, uint64_t seq, Op op) {
    Command c;
    c.client_id = session;
    c.seq = seq;
    c.op = std::move(op);
    return c;
}

Command attach(SessionId session, uint64_t first_seq, uint64_t nonce) {
    Command c;
    c.seq = nonce;
    c.op = AttachSession{session, first_seq};
    return c;
}

TEST_CASE("an attach moves a session's numbering above every seq it used",
          "[statemachine][sessions][exactly-once]") {
    Harness h;
    SessionId s = h.open();
    CHECK(h.apply(attach(s + 100, kAttachSeqGap + 1, 7)).response.code ==
          ErrorCode::kSessionExpired);
    REQUIRE(
        h.apply(session_write(s, 1, Create{"/a", "", NodeKind::kPersistent, 0})).response.code ==
        ErrorCode::kOk);
    REQUIRE(h.sm.highest_seq_used(s) == 1u);
    CHECK(!h.sm.highest_seq_used(s + 100).has_value());

    // Not far enough above seq 1: refused, and nothing changes (seq 1 still replays).
    CHECK(h.apply(attach(s, kAttachSeqGap + 1, 8)).response.code == ErrorCode::kResultDiscarded);
    CHECK(h.apply(session_write(s, 1, Create{"/a", "", NodeKind::kPersistent, 0})).replayed);

    const uint64_t first = kAttachSeqGap + 2;
    const Command moved = attach(s, first, 9);
    REQUIRE(h.apply(moved).response.code == ErrorCode::kOk);
    CHECK(h.sm.highest_seq_used(s) == first - 1);
    // The old connection's retry and its write still in flight are refused, not applied.
    const ApplyResult retry =
        h.apply(session_write(s, 1, Create{"/a", "", NodeKind::kPersistent, 0}));
    CHECK(!retry.replayed);
    CHECK(retry.response.code == ErrorCode::kResultDiscarded);
    CHECK(h.apply(session_write(s, 2, Create{"/b", "", NodeKind::kPersistent, 0})).response.code ==
          ErrorCode::kResultDiscarded);
    CHECK(!h.sm.exists("/b"));
    // The new connection numbers from first_seq.
    CHECK(h.apply(session_write(s, first, Create{"/c", "", NodeKind::kPersistent, 0}))
              .response.code == ErrorCode::kOk);
    // A second copy of the same attach (resubmitted) is refused and costs the new connection
    // nothing: its saved reply and its next write stand.
    CHECK(h.apply(moved).response.code == ErrorCode::kResultDiscarded);
    CHECK(h.apply(session_write(s, first, Create{"/c", "", NodeKind::kPersistent, 0})).replayed);
    CHECK(h.apply(session_write(s, first + 1, Create{"/d", "", NodeKind::kPersistent, 0}))
              .response.code == ErrorCode::kOk);
}

// The entry as a server of command format `format` wrote it (4 and 5 share a layout).
ApplyResult apply_as_format(Harness& h, const Command& command, uint8_t format) {
    std::string bytes = encode_command(command).value();
    bytes[0] = static_cast<char>(format);
    ApplyResult out = h.sm.apply(++h.index, bytes);
    REQUIRE(h.sm.check_invariants() == "");
    return out;
}

TEST_CASE("a seq far beyond the session's highest is refused and not remembered",
          "[statemachine][sessions][exactly-once]") {
    Harness h;
    SessionId s = h.open();
    REQUIRE(h.apply(session_write(s, 1, KeepAlive{})).response.code == ErrorCode::kOk);
    // One past the bound: refused with the reason, not remembered.
    Command far = session_write(s, 1 + kSeqAheadMax + 1, KeepAlive{});
    far.ack_seq = far.seq - 1;  // would discard every honest reply below it
    ApplyResult refused = h.apply(far);
    CHECK(refused.response.code == ErrorCode::kBadArguments);
    CHECK_THAT(refused.response.message, Catch::Contains("beyond the highest this session used"));
    CHECK(h.sm.highest_seq_used(s) == 1u);
    CHECK(h.apply(session_write(s, 1, KeepAlive{})).replayed);  // seq 1's reply is still saved
    CHECK(h.apply(session_write(s, 2, KeepAlive{})).response.code == ErrorCode::kOk);
    CHECK(h.apply(session_write(s, 2, KeepAlive{})).replayed);
    // Exactly at the bound is allowed: pipelines and gaps of refused requests stay far below it.
    CHECK(h.apply(session_write(s, 2 + kSeqAheadMax, KeepAlive{})).response.code == ErrorCode::kOk);
}

TEST_CASE("an entry of format 4 applies a far seq as format 4 did: remembered",
          "[statemachine][sessions][exactly-once][golden]") {
    // What version 4's servers did, kept for logs they wrote: the far seq is saved and its
    // ack_seq discards everything below, so the honest seq 2 is refused. From version 5 on the
    // same entry is refused instead (above): the version, not the server, decides.
    for (const uint8_t format : {kCommandFormatVersionV4, kCommandFormatVersion}) {
        INFO("format " << int{format});
        Harness h;
        SessionId s = h.open();
        REQUIRE(apply_as_format(h, session_write(s, 1, KeepAlive{}), format).response.code ==
                ErrorCode::kOk);
        Command far = session_write(s, 1'000'000'000, KeepAlive{});
        far.ack_seq = far.seq - 1;
        const ErrorCode far_code = apply_as_format(h, far, format).response.code;
        const ErrorCode honest =
            apply_as_format(h, session_write(s, 2, KeepAlive{}), format).response.code;
        if (format == kCommandFormatVersionV4) {
            CHECK(far_code == ErrorCode::kOk);
            CHECK(honest == ErrorCode::kResultDiscarded);
        } else {
            CHECK(far_code == ErrorCode::kBadArguments);
            CHECK(honest == ErrorCode::kOk);
        }
    }
}

TEST_CASE("closing a session deletes its ephemeral nodes and releases its locks",
          "[statemachine][sessions]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    REQUIRE(h.create(a, "/e", NodeKind::kEphemeral).code == ErrorCode::kOk);
    REQUIRE(h.lock(a, "L").lock == LockOutcome::kGranted);
    REQUIRE(h.lock(b, "L", "", LockMode::kExclusive, 1000).lock == LockOutcome::kQueued);
    ApplyResult out = h.run(a, CloseSession{});
    CHECK(out.response.code == ErrorCode::kOk);
    CHECK(!h.sm.exists("/e"));
    REQUIRE(out.grants.size() == 1);
    CHECK(out.grants[0] == LockGrant{b, "L", "", out.index});
    CHECK(out.sessions_ended == std::vector<SessionEnded>{{a, SessionEnd::kClosed}});
    CHECK(out.triggers ==
          std::vector<WatchTrigger>{{"/e", EventType::kNodeDeleted, out.index},
                                    {"/", EventType::kNodeChildrenChanged, out.index}});
    CHECK(!h.sm.session(a));
}

TEST_CASE("an expiry entry ends the session like a close but reports it expired",
          "[statemachine][sessions]") {
    Harness h;
    SessionId a = h.open();
    h.create(a, "/e", NodeKind::kEphemeral);
    ApplyResult out = h.leader(ExpireSession{a});
    CHECK(out.response.code == ErrorCode::kOk);
    CHECK(out.sessions_ended == std::vector<SessionEnded>{{a, SessionEnd::kExpired}});
    CHECK(!h.sm.exists("/e"));
}

TEST_CASE("expiring an unknown session gets SessionExpired and changes nothing",
          "[statemachine][sessions]") {
    Harness h;
    Harness twin;
    SessionId a = h.open();
    twin.open();
    ApplyResult out = h.leader(ExpireSession{a + 100});
    twin.leader(Noop{});
    CHECK(out.response.code == ErrorCode::kSessionExpired);
    CHECK(out.sessions_ended.empty());
    CHECK(h.sm.state_hash() == twin.sm.state_hash());
}

TEST_CASE("a request after the session ended gets SessionExpired", "[statemachine][sessions]") {
    Harness h;
    SessionId a = h.open();
    h.run(a, CloseSession{});
    CHECK(h.run(a, KeepAlive{}).response.code == ErrorCode::kSessionExpired);
    CHECK(h.create(a, "/x").code == ErrorCode::kSessionExpired);
}

TEST_CASE("a replicated keepalive records the cluster time", "[statemachine][sessions]") {
    Harness h;
    SessionId a = h.open();
    h.time_ms += 700;
    h.run(a, KeepAlive{});
    CHECK(h.sm.session(a)->last_keepalive_ms == h.time_ms);
}

TEST_CASE("cluster time never goes back when a new leader's clock is behind",
          "[statemachine][sessions][time]") {
    Harness h;
    h.time_ms = 5000;
    h.leader(Noop{});
    h.time_ms = 4000;
    h.leader(Noop{});
    CHECK(h.sm.now_ms() == 5000);
}

TEST_CASE("sessions() lists every live session for a new leader to track",
          "[statemachine][sessions]") {
    Harness h;
    SessionId a = h.open(3000);
    SessionId b = h.open(4000);
    std::vector<SessionInfo> all = h.sm.sessions();
    REQUIRE(all.size() == 2);
    CHECK(all[0].id == a);
    CHECK(all[1].id == b);
    CHECK(all[1].timeout_ms == 4000);
}

TEST_CASE("malformed entry bytes give MalformedCommand and change nothing else",
          "[statemachine][sessions]") {
    Harness h;
    Harness twin;
    h.open();
    twin.open();
    ApplyResult out = h.sm.apply(++h.index, "\x01\xFF");
    twin.sm.apply(++twin.index, "");
    CHECK(out.response.code == ErrorCode::kMalformedCommand);
    CHECK(h.sm.last_applied() == h.index);
    // Only last_applied moved, exactly as with an empty entry.
    CHECK(h.sm.state_hash() == twin.sm.state_hash());
}

TEST_CASE("an empty entry (a new leader's no-op) only advances the applied index",
          "[statemachine][sessions]") {
    Harness h;
    ApplyResult out = h.sm.apply(++h.index, "");
    CHECK(out.response.code == ErrorCode::kOk);
    CHECK(h.sm.last_applied() == 1);
    CHECK(h.sm.now_ms() == 0);
}

}  // namespace
}  // namespace raftlock::statemachine
