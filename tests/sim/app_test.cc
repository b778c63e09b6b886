#include "tests/sim/app.h"

#include <catch2/catch.hpp>

#include "statemachine/codec.h"
#include "tests/sim/lock_workload.h"

namespace raftlock::sim {
namespace {

namespace sm = raftlock::statemachine;

raft::Entry command_entry(raft::Index index, const Command& c) {
    return raft::Entry{.term = 2, .index = index, .data = encode_command(c)};
}

raft::Entry lock_entry(raft::Index index, const sm::Command& c) {
    return raft::Entry{.term = 2, .index = index, .data = wrap_lock_command(c)};
}

TEST_CASE("commands survive encoding", "[sim][app]") {
    const Command write{.client = 3, .seq = 17, .kind = OpKind::kWrite, .key = 2, .value = 42};
    const Command cas{
        .client = 1, .seq = 2, .kind = OpKind::kCas, .key = 0, .value = 9, .expected = 4};
    for (const Command& c : {write, cas}) {
        std::optional<Command> back = decode_command(encode_command(c));
        REQUIRE(back.has_value());
        CHECK(back->client == c.client);
        CHECK(back->seq == c.seq);
        CHECK(back->kind == c.kind);
        CHECK(back->key == c.key);
        CHECK(back->value == c.value);
        CHECK(back->expected == c.expected);
    }
    CHECK_FALSE(decode_command("w.1.2").has_value());
    CHECK_FALSE(decode_command("x.1.2.3.4").has_value());
    CHECK_FALSE(decode_command("w.1.2.3.4.5.6").has_value());
}

TEST_CASE("a retried command takes effect once and returns the first result", "[sim][app]") {
    SimApp app;
    (void)app.apply(raft::Entry{.term = 1, .index = 1});
    const Command set{.client = 1, .seq = 1, .kind = OpKind::kWrite, .key = 0, .value = 5};
    const Command cas{
        .client = 2, .seq = 1, .kind = OpKind::kCas, .key = 0, .value = 6, .expected = 5};
    CHECK(app.apply(command_entry(2, set)).executed);
    const ApplyOutcome first = app.apply(command_entry(3, cas));
    CHECK(first.executed);
    CHECK(first.ok);
    const ApplyOutcome retry = app.apply(command_entry(4, cas));
    CHECK_FALSE(retry.executed);
    CHECK(retry.duplicate);
    CHECK(retry.ok);
    CHECK(app.read(0) == 6);
}

TEST_CASE("a snapshot restores registers, sessions and the digest", "[sim][app]") {
    SimApp app;
    (void)app.apply(raft::Entry{.term = 1, .index = 1});
    const Command set{.client = 1, .seq = 1, .kind = OpKind::kWrite, .key = 2, .value = -7};
    (void)app.apply(command_entry(2, set));
    std::optional<SimApp> copy = SimApp::from_snapshot(2, app.snapshot_data());
    REQUIRE(copy.has_value());
    CHECK(copy->digest() == app.digest());
    CHECK(copy->read(2) == -7);
    CHECK(copy->apply(command_entry(3, set)).duplicate);
    CHECK_FALSE(SimApp::from_snapshot(2, "R 1 2\n").has_value());  // no digest
}

TEST_CASE("lock commands go to the state machine, register commands to the registers",
          "[sim][app]") {
    SimApp app;
    (void)app.apply(raft::Entry{.term = 1, .index = 1});
    const ApplyOutcome open =
        app.apply(lock_entry(2, sm::Command{.time_ms = 10, .op = sm::OpenSession{1000}}));
    REQUIRE(open.lock.has_value());
    CHECK_FALSE(open.command.has_value());
    CHECK(open.lock->response.session == 2);
    const ApplyOutcome write = app.apply(command_entry(
        3, Command{.client = 1, .seq = 1, .kind = OpKind::kWrite, .key = 0, .value = 1}));
    CHECK_FALSE(write.lock.has_value());
    CHECK(write.executed);
    const ApplyOutcome acquire = app.apply(lock_entry(
        4, sm::Command{.client_id = 2, .seq = 1, .time_ms = 20, .op = sm::Acquire{.name = "x0"}}));
    REQUIRE(acquire.lock.has_value());
    CHECK(acquire.lock->response.lock == sm::LockOutcome::kGranted);
    CHECK(acquire.lock->response.token == 4);
    CHECK(app.locks().last_applied() == 4);
    CHECK(app.locks().check_invariants().empty());
}

TEST_CASE("a snapshot carries the lock state machine, and the digest covers its state",
          "[sim][app]") {
    SimApp app;
    (void)app.apply(raft::Entry{.term = 1, .index = 1});
    (void)app.apply(lock_entry(2, sm::Command{.time_ms = 10, .op = sm::OpenSession{1000}}));
    (void)app.apply(lock_entry(
        3, sm::Command{.client_id = 2, .seq = 1, .time_ms = 20, .op = sm::Acquire{.name = "x0"}}));
    for (raft::Index i = 4; i <= kLockHashEveryEntries; ++i) {
        (void)app.apply(raft::Entry{.term = 2, .index = i});
    }
    REQUIRE(app.applied() % kLockHashEveryEntries == 0);
    std::optional<SimApp> copy = SimApp::from_snapshot(app.applied(), app.snapshot_data());
    REQUIRE(copy.has_value());
    CHECK(copy->digest() == app.digest());
    CHECK(copy->locks().state_hash() == app.locks().state_hash());
    REQUIRE(copy->locks().describe_lock("x0").has_value());
    CHECK(copy->locks().describe_lock("x0")->holders.at(0).token == 3);

    // Same entries, different lock state: the digests at the hashed index differ.
    SimApp other;
    (void)other.apply(raft::Entry{.term = 1, .index = 1});
    (void)other.apply(lock_entry(2, sm::Command{.time_ms = 10, .op = sm::OpenSession{1000}}));
    (void)other.apply(raft::Entry{.term = 2, .index = 3});
    for (raft::Index i = 4; i <= kLockHashEveryEntries; ++i) {
        (void)other.apply(raft::Entry{.term = 2, .index = i});
    }
    CHECK(other.digest() != app.digest());
    // A snapshot whose lock part is cut short does not restore.
    const std::string data = app.snapshot_data();
    CHECK_FALSE(SimApp::from_snapshot(app.applied(), data.substr(0, data.size() - 1)));
}

TEST_CASE("a leader expires a silent session, but only after a full timeout of its own",
          "[sim][app][locks]") {
    sm::StateMachine machine;
    (void)machine.apply_command(2, sm::Command{.time_ms = 0, .op = sm::OpenSession{1000}});
    LeaderSessions leader;
    CHECK(leader.on_leader_tick(1, 5, machine, 5000).empty());  // new leader: fresh timeout
    leader.keepalive(1, 5, 2, 5800);                            // renewed until 6800
    CHECK(leader.on_leader_tick(1, 5, machine, 6799).empty());
    std::vector<sm::Command> expire = leader.on_leader_tick(1, 5, machine, 6800);
    REQUIRE(expire.size() == 1);
    CHECK(std::get<sm::ExpireSession>(expire[0].op).session == 2);
    // Not proposed again before the retry interval; a new term starts the session afresh.
    CHECK(leader.on_leader_tick(1, 5, machine, 6900).empty());
    CHECK(leader.on_leader_tick(1, 6, machine, 7000).empty());
    CHECK(leader.on_leader_tick(1, 6, machine, 7999).empty());
    CHECK(leader.on_leader_tick(1, 6, machine, 8000).size() == 1);
}

}  // namespace
}  // namespace raftlock::sim
