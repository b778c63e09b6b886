#pragma once

// A state machine fed Redis commands the way the server feeds it, for the Redis tests.

#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "statemachine/codec.h"
#include "statemachine/redis/value.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine::testing {

using redis::Argv;
using redis::Value;

constexpr uint64_t kOrigin = 77;

// A state machine fed Redis commands the way the server feeds it: one entry each, with the
// leader's clock, sequence numbers per origin, and the invariants checked after every entry.
struct Machine {
    StateMachine sm;
    Index index = 0;
    uint64_t seq = 0;
    TimeMs now = 1000;
    uint64_t script_budget = 0;  // what the proposing server stamps; 0 as in an old entry

    // The entry's command format: today's unless a test writes an older one (the layout of
    // version 5 is version 6's; only what the entry may run differs).
    uint8_t format = kCommandFormatVersion;
    std::vector<redis::Publication> published;  // by the last run

    Value run(Argv argv, uint64_t origin = kOrigin, std::optional<uint64_t> at_seq = {}) {
        // In one expression: GCC 12 at -O1 doubts an argv assigned into a Command afterwards.
        const Command c{.seq = at_seq ? *at_seq : ++seq,
                        .time_ms = now,
                        .op = RedisCommand{origin, std::move(argv), script_budget}};
        // Through the codec, as entries reach the state machine.
        Result<std::string, ErrorCode> bytes = encode_command(c);
        REQUIRE(bytes.ok());
        REQUIRE(format >= kCommandFormatVersionV5);
        bytes.value()[0] = static_cast<char>(format);
        ApplyResult r = sm.apply(++index, bytes.value());
        REQUIRE(sm.check_invariants() == "");
        published = std::move(r.published);
        return r.response.redis;
    }
    // MULTI ... EXEC: `commands` in one entry, aborted if a key of `watched` changed after its
    // index (what a WATCH served now would record: watch()).
    Value exec(std::vector<Argv> commands, std::vector<redis::WatchedKey> watched = {}) {
        const Command c{.seq = ++seq,
                        .time_ms = now,
                        .op = RedisTransaction{
                            kOrigin, redis::Transaction{std::move(watched), std::move(commands)},
                            script_budget == 0 ? 100000 : script_budget}};
        Result<std::string, ErrorCode> bytes = encode_command(c);
        REQUIRE(bytes.ok());
        ApplyResult r = sm.apply(++index, bytes.value());
        REQUIRE(sm.check_invariants() == "");
        published = std::move(r.published);
        return r.response.redis;
    }
    // A WATCH of `key` served now: at the applied index, as a node serves it.
    redis::WatchedKey watch(std::string key) const { return {std::move(key), sm.last_applied()}; }
    Value read(Argv argv) const { return sm.redis_query(argv); }
    void tick(TimeMs ms) {
        now += ms;
        Command c;
        c.time_ms = now;
        c.op = Noop{};
        sm.apply_command(++index, c);
        REQUIRE(sm.check_invariants() == "");
    }
};

inline Value bulk(std::string s) {
    return Value::bulk(std::move(s));
}
inline Value integer(int64_t n) {
    return Value::integer_of(n);
}

}  // namespace raftlock::statemachine::testing
