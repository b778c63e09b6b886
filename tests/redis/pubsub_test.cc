// PUBLISH in the state machine: what an entry publishes is part of its ApplyResult, in order, for
// every node to deliver; the keyspace keeps nothing of it. Delivery itself is the front end's
// (tests/server/redis_pubsub_test.cc).

#include <catch2/catch.hpp>

#include "machine.h"

namespace raftlock::statemachine {
namespace {

using redis::Publication;
using redis::Value;
using testing::integer;
using testing::Machine;

TEST_CASE("PUBLISH records the message for delivery and changes no key", "[redis][pubsub]") {
    Machine m;
    // The state machine answers 0: the receivers are counted by the node that answers.
    CHECK(m.run({"PUBLISH", "locks", "released"}) == integer(0));
    CHECK(m.published == std::vector<Publication>{{"locks", "released"}});
    CHECK(m.read({"DBSIZE"}) == integer(0));
    // Binary-safe, empty included.
    CHECK(m.run({"publish", std::string("a\0b", 3), ""}) == integer(0));
    CHECK(m.published == std::vector<Publication>{{std::string("a\0b", 3), ""}});
    // An entry that publishes nothing carries nothing, whatever came before.
    CHECK(m.run({"SET", "k", "v"}) == Value::ok());
    CHECK(m.published.empty());
    CHECK(m.run({"PUBLISH", "c"}) ==
          Value::error("ERR wrong number of arguments for 'publish' command"));
    CHECK(m.published.empty());
}

TEST_CASE("a script publishes in call order, and its other writes stay", "[redis][pubsub]") {
    Machine m;
    // Redisson's unlock: delete the hold, then tell the waiters.
    const std::string unlock =
        "redis.call('del', KEYS[1]); "
        "redis.call('publish', KEYS[2], ARGV[1]); "
        "return redis.call('publish', KEYS[2], ARGV[2])";
    CHECK(m.run({"SET", "lock", "me"}) == Value::ok());
    CHECK(m.run({"EVAL", unlock, "2", "lock", "lock-channel", "first", "second"}) == integer(0));
    CHECK(m.published ==
          std::vector<Publication>{{"lock-channel", "first"}, {"lock-channel", "second"}});
    CHECK(m.read({"EXISTS", "lock"}) == integer(0));
    // A script that fails after publishing: as in Redis, what it did before the error stands.
    CHECK(m.run({"EVAL", "redis.call('publish', 'c', 'm'); return redis.call('incr', 'k2', 'x')",
                 "0"})
              .is_error());
    CHECK(m.published == std::vector<Publication>{{"c", "m"}});
    // The connection commands are not for scripts.
    CHECK(m.run({"EVAL", "return redis.call('subscribe', 'c')", "0"})
              .text.find("This Redis command is not allowed from script") != std::string::npos);
    CHECK(m.published.empty());
}

TEST_CASE("a version 6 entry runs the commands of its time: PUBLISH is unknown there",
          "[redis][pubsub][codec]") {
    Machine m;
    m.format = kCommandFormatVersionV6;
    CHECK(m.run({"PUBLISH", "c", "m"}) ==
          Value::error("ERR unknown command 'PUBLISH', with args beginning with: 'c' 'm' "));
    CHECK(m.run({"EVAL", "return redis.call('publish', 'c', 'm')", "0"})
              .text.find("Unknown Redis command called from script") != std::string::npos);
    CHECK(m.published.empty());
    CHECK(m.run({"LPUSH", "l", "a"}) == integer(1));  // what existed then still runs
    m.format = kCommandFormatVersion;
    CHECK(m.run({"PUBLISH", "c", "m"}) == integer(0));
    CHECK(m.published == std::vector<Publication>{{"c", "m"}});
}

}  // namespace
}  // namespace raftlock::statemachine
