#include "tests/sim/app.h"

#include <catch2/catch.hpp>

namespace raftlock::sim {
namespace {

raft::Entry command_entry(raft::Index index, const Command& c) {
    return raft::Entry{.term = 2, .index = index, .data = encode_command(c)};
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
    RegisterApp app;
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
    RegisterApp app;
    (void)app.apply(raft::Entry{.term = 1, .index = 1});
    const Command set{.client = 1, .seq = 1, .kind = OpKind::kWrite, .key = 2, .value = -7};
    (void)app.apply(command_entry(2, set));
    std::optional<RegisterApp> copy = RegisterApp::from_snapshot(2, app.snapshot_data());
    REQUIRE(copy.has_value());
    CHECK(copy->digest() == app.digest());
    CHECK(copy->read(2) == -7);
    CHECK(copy->apply(command_entry(3, set)).duplicate);
    CHECK_FALSE(RegisterApp::from_snapshot(2, "R 1 2\n").has_value());  // no digest
}

}  // namespace
}  // namespace raftlock::sim
