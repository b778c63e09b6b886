// Lists, sets and sorted sets through the state machine (issue 22): Redis 7.0's replies and
// errors, empty collections deleted, WRONGTYPE across types, the snapshot, and the command format
// that admits them.

#include <limits>

#include <catch2/catch.hpp>

#include "machine.h"
#include "statemachine/codec.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine {
namespace {

using redis::Value;
using testing::bulk;
using testing::integer;
using testing::Machine;

Value bulks(std::initializer_list<const char*> items) {
    std::vector<Value> out;
    for (const char* s : items) {
        out.push_back(bulk(s));
    }
    return Value::array(std::move(out));
}

const Value kWrongType =
    Value::error("WRONGTYPE Operation against a key holding the wrong kind of value");
const Value kNotInteger = Value::error("ERR value is not an integer or out of range");

TEST_CASE("lists: push, pop, range, index, rem, set, trim", "[redis][lists]") {
    Machine m;
    CHECK(m.run({"LPUSH", "l", "a", "b", "c"}) == integer(3));
    CHECK(m.run({"RPUSH", "l", "d"}) == integer(4));
    CHECK(m.read({"LRANGE", "l", "0", "-1"}) == bulks({"c", "b", "a", "d"}));
    CHECK(m.read({"LRANGE", "l", "-100", "1"}) == bulks({"c", "b"}));
    CHECK(m.read({"LRANGE", "l", "3", "1"}) == bulks({}));
    CHECK(m.read({"LRANGE", "l", "x", "1"}) == kNotInteger);
    CHECK(m.read({"LINDEX", "l", "-1"}) == bulk("d"));
    CHECK(m.read({"LINDEX", "l", "4"}) == Value::null());
    CHECK(m.read({"LINDEX", "nosuch", "x"}) == Value::null());  // Redis looks up the key first
    CHECK(m.read({"LLEN", "l"}) == integer(4));
    CHECK(m.read({"TYPE", "l"}) == Value::simple("list"));

    CHECK(m.run({"LPOP", "l"}) == bulk("c"));
    CHECK(m.run({"RPOP", "l", "2"}) == bulks({"d", "a"}));
    CHECK(m.run({"RPOP", "l", "0"}) == bulks({}));
    CHECK(m.run({"LPOP", "l", "-1"}) ==
          Value::error("ERR value is out of range, must be positive"));
    CHECK(m.run({"LPOP", "l", "1", "2"}) ==
          Value::error("ERR wrong number of arguments for 'lpop' command"));
    CHECK(m.run({"LPOP", "nosuch"}) == Value::null());
    CHECK(m.run({"LPOP", "nosuch", "2"}) == Value::null_array());
    CHECK(m.run({"LPOP", "l", "9223372036854775807"}) == bulks({"b"}));
    CHECK(m.read({"EXISTS", "l"}) == integer(0));  // an emptied list is deleted

    CHECK(m.run({"LPUSHX", "l", "a"}) == integer(0));
    CHECK(m.read({"EXISTS", "l"}) == integer(0));
    CHECK(m.run({"RPUSH", "l", "x", "y", "x", "z", "x"}) == integer(5));
    CHECK(m.run({"RPUSHX", "l", "w"}) == integer(6));
    CHECK(m.run({"LREM", "l", "-2", "x"}) == integer(2));
    CHECK(m.read({"LRANGE", "l", "0", "-1"}) == bulks({"x", "y", "z", "w"}));
    CHECK(m.run({"LREM", "l", "0", "nothing"}) == integer(0));
    CHECK(m.run({"LREM", "l", "-9223372036854775808", "x"}) == integer(1));
    CHECK(m.run({"LSET", "l", "-1", "W"}) == Value::ok());
    CHECK(m.run({"LSET", "l", "3", "W"}) == Value::error("ERR index out of range"));
    CHECK(m.run({"LSET", "nosuch", "0", "W"}) == Value::error("ERR no such key"));
    CHECK(m.run({"LTRIM", "l", "1", "-1"}) == Value::ok());
    CHECK(m.read({"LRANGE", "l", "0", "-1"}) == bulks({"z", "W"}));
    CHECK(m.run({"LTRIM", "l", "5", "10"}) == Value::ok());
    CHECK(m.read({"EXISTS", "l"}) == integer(0));

    CHECK(m.run({"SET", "s", "v"}) == Value::ok());
    for (const redis::Argv& a : std::vector<redis::Argv>{{"LPUSH", "s", "a"},
                                                         {"LPOP", "s"},
                                                         {"LREM", "s", "0", "a"},
                                                         {"LSET", "s", "0", "a"},
                                                         {"LTRIM", "s", "0", "1"}}) {
        INFO(a[0]);
        CHECK(m.run(a) == kWrongType);
    }
    CHECK(m.read({"LRANGE", "s", "0", "1"}) == kWrongType);
    CHECK(m.read({"LLEN", "s"}) == kWrongType);
    CHECK(m.run({"GET", "s"}) == bulk("v"));
}

TEST_CASE("sets: add, remove, members, cardinality", "[redis][sets]") {
    Machine m;
    CHECK(m.run({"SADD", "s", "b", "a", "b"}) == integer(2));
    CHECK(m.read({"SMEMBERS", "s"}) == Value::set({bulk("a"), bulk("b")}));
    CHECK(m.read({"SISMEMBER", "s", "a"}) == integer(1));
    CHECK(m.read({"SMISMEMBER", "s", "a", "z"}) == Value::array({integer(1), integer(0)}));
    CHECK(m.read({"SCARD", "s"}) == integer(2));
    CHECK(m.read({"SCARD", "nosuch"}) == integer(0));
    CHECK(m.read({"SMEMBERS", "nosuch"}) == Value::set({}));
    CHECK(m.read({"TYPE", "s"}) == Value::simple("set"));
    CHECK(m.run({"SREM", "s", "a", "z"}) == integer(1));
    CHECK(m.run({"SREM", "s", "b"}) == integer(1));
    CHECK(m.read({"EXISTS", "s"}) == integer(0));
    CHECK(m.run({"HSET", "h", "f", "v"}) == integer(1));
    CHECK(m.run({"SADD", "h", "a"}) == kWrongType);
    CHECK(m.run({"SREM", "h", "a"}) == kWrongType);
    CHECK(m.read({"SISMEMBER", "h", "a"}) == kWrongType);
    CHECK(m.read({"HGET", "h", "f"}) == bulk("v"));  // a refused SADD left the hash alone
}

TEST_CASE("sorted sets: ZADD's flags and its errors in Redis's order", "[redis][zsets]") {
    Machine m;
    CHECK(m.run({"ZADD", "z", "1", "a", "2"}) == Value::error("ERR syntax error"));
    CHECK(m.run({"ZADD", "z", "NX", "XX", "1", "a"}) ==
          Value::error("ERR XX and NX options at the same time are not compatible"));
    CHECK(m.run({"ZADD", "z", "GT", "LT", "1", "a"}) ==
          Value::error("ERR GT, LT, and/or NX options at the same time are not compatible"));
    CHECK(m.run({"ZADD", "z", "INCR", "1", "a", "2", "b"}) ==
          Value::error("ERR INCR option supports a single increment-element pair"));
    CHECK(m.run({"ZADD", "z", "nan", "a"}) == Value::error("ERR value is not a valid float"));
    CHECK(m.run({"ZADD", "z", "1e400", "a"}) == Value::error("ERR value is not a valid float"));
    CHECK(m.run({"ZADD", "z", " 1", "a"}) == Value::error("ERR value is not a valid float"));
    CHECK(m.read({"EXISTS", "z"}) == integer(0));

    CHECK(m.run({"ZADD", "z", "1", "a", "2", "b"}) == integer(2));
    CHECK(m.run({"ZADD", "z", "CH", "5", "a", "2", "b", "3", "c"}) == integer(2));
    CHECK(m.run({"ZADD", "z", "XX", "1", "d"}) == integer(0));
    CHECK(m.run({"ZADD", "z", "NX", "INCR", "1", "a"}) == Value::null());
    CHECK(m.run({"ZADD", "z", "GT", "1", "a"}) == integer(0));
    CHECK(m.run({"ZADD", "z", "GT", "CH", "10", "a"}) == integer(1));
    CHECK(m.run({"ZADD", "z", "LT", "INCR", "1", "a"}) == Value::null());
    CHECK(m.run({"ZADD", "z", "INCR", "0.5", "a"}) == Value::real(10.5));
    CHECK(m.run({"ZINCRBY", "z", "-0.5", "a"}) == Value::real(10));
    CHECK(m.run({"ZADD", "z", "+inf", "e"}) == integer(1));
    CHECK(m.run({"ZINCRBY", "z", "-inf", "e"}) ==
          Value::error("ERR resulting score is not a number (NaN)"));
    CHECK(m.run({"ZADD", "new", "XX", "1", "a"}) == integer(0));
    CHECK(m.run({"ZADD", "new", "XX", "INCR", "1", "a"}) == Value::null());
    CHECK(m.read({"EXISTS", "new"}) == integer(0));  // XX on a missing key creates nothing
    CHECK(m.run({"ZADD", "z", "-0", "m"}) == integer(1));
    CHECK(m.read({"ZSCORE", "z", "m"}) == Value::real(0));
    CHECK(m.read({"ZSCORE", "z", "m"}).text == "0");
    CHECK(m.read({"ZSCORE", "z", "e"}).text == "inf");
    CHECK(m.read({"TYPE", "z"}) == Value::simple("zset"));
    CHECK(m.run({"SET", "s", "v"}) == Value::ok());
    CHECK(m.run({"ZADD", "s", "abc", "a"}) ==
          Value::error("ERR value is not a valid float"));  // scores are read first
    CHECK(m.run({"ZADD", "s", "1", "a"}) == kWrongType);
}

TEST_CASE("sorted sets: ranges by rank and by score, ranks, counts, removal", "[redis][zsets]") {
    Machine m;
    CHECK(m.run({"ZADD", "z", "1", "a", "2", "b", "2", "c", "3", "d", "0.1", "e"}) == integer(5));
    CHECK(m.read({"ZRANGE", "z", "0", "-1"}) == bulks({"e", "a", "b", "c", "d"}));
    CHECK(m.read({"ZRANGE", "z", "0", "1", "WITHSCORES"}) ==
          Value::pairs({bulk("e"), Value::real(0.1), bulk("a"), Value::real(1)}));
    CHECK(m.read({"ZRANGE", "z", "0", "1", "WITHSCORES"}).items[1].text == "0.10000000000000001");
    CHECK(m.read({"ZRANGE", "z", "0", "1", "REV"}) == bulks({"d", "c"}));
    CHECK(m.read({"ZREVRANGE", "z", "-2", "-1"}) == bulks({"a", "e"}));
    CHECK(m.read({"ZRANGE", "z", "(1", "2", "BYSCORE"}) == bulks({"b", "c"}));
    CHECK(m.read({"ZRANGE", "z", "+inf", "(1", "BYSCORE", "REV"}) == bulks({"d", "c", "b"}));
    CHECK(m.read({"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"}) ==
          bulks({"a", "b"}));
    CHECK(m.read({"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "3", "-1"}) ==
          bulks({"c", "d"}));
    CHECK(m.read({"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "5"}) == bulks({}));
    CHECK(m.read({"ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"}) ==
          Value::error("ERR syntax error, LIMIT is only supported in combination with either "
                       "BYSCORE or BYLEX"));
    CHECK(m.read({"ZRANGE", "z", "0", "-1", "LIMIT", "0", "-1"}) ==
          bulks({"e", "a", "b", "c", "d"}));
    CHECK(m.read({"ZRANGEBYSCORE", "z", "2", "2"}) == bulks({"b", "c"}));
    CHECK(m.read({"ZRANGEBYSCORE", "z", "(2", "2"}) == bulks({}));
    CHECK(m.read({"ZRANGEBYSCORE", "z", "x", "2"}) ==
          Value::error("ERR min or max is not a float"));
    CHECK(m.read({"ZRANGEBYSCORE", "z", "0", "2", "REV"}) == Value::error("ERR syntax error"));
    CHECK(m.read({"ZREVRANGEBYSCORE", "z", "2", "1", "WITHSCORES", "LIMIT", "0", "2"}) ==
          Value::pairs({bulk("c"), Value::real(2), bulk("b"), Value::real(2)}));
    CHECK(m.read({"ZRANGE", "nosuch", "0", "-1"}) == bulks({}));
    CHECK(m.read({"ZRANGE", "z", "a", "-1"}) == kNotInteger);
    CHECK(m.read({"ZRANK", "z", "c"}) == integer(3));
    CHECK(m.read({"ZREVRANK", "z", "c"}) == integer(1));
    CHECK(m.read({"ZRANK", "z", "nosuch"}) == Value::null());
    CHECK(m.read({"ZCARD", "z"}) == integer(5));
    CHECK(m.read({"ZCOUNT", "z", "(0.1", "2"}) == integer(3));
    CHECK(m.read({"ZCOUNT", "z", "2", "1"}) == integer(0));
    CHECK(m.run({"ZREM", "z", "a", "nosuch"}) == integer(1));
    CHECK(m.run({"ZREMRANGEBYSCORE", "z", "-inf", "(2"}) == integer(1));
    CHECK(m.read({"ZRANGE", "z", "0", "-1"}) == bulks({"b", "c", "d"}));
    CHECK(m.run({"ZREMRANGEBYSCORE", "z", "x", "1"}) ==
          Value::error("ERR min or max is not a float"));
    CHECK(m.run({"ZREMRANGEBYSCORE", "z", "-inf", "+inf"}) == integer(3));
    CHECK(m.read({"EXISTS", "z"}) == integer(0));
}

TEST_CASE("a semaphore in Lua over a sorted set, as redis-semaphore writes it", "[redis][zsets]") {
    // Expire holders older than the timeout, count, and add the caller if there is room.
    const std::string acquire =
        "redis.call('zremrangebyscore', KEYS[1], '-inf', ARGV[3] - ARGV[4]) "
        "if redis.call('zcard', KEYS[1]) < tonumber(ARGV[1]) then "
        "  redis.call('zadd', KEYS[1], ARGV[3], ARGV[2]) "
        "  redis.call('pexpire', KEYS[1], ARGV[4]) return 1 end return 0";
    Machine m;
    CHECK(m.run({"EVAL", acquire, "1", "sem", "2", "p1", "1000", "500"}) == integer(1));
    CHECK(m.run({"EVAL", acquire, "1", "sem", "2", "p2", "1100", "500"}) == integer(1));
    CHECK(m.run({"EVAL", acquire, "1", "sem", "2", "p3", "1200", "500"}) == integer(0));
    // At 1501 p1's entry (1000) is older than the 500 ms timeout.
    CHECK(m.run({"EVAL", acquire, "1", "sem", "2", "p3", "1501", "500"}) == integer(1));
    CHECK(m.read({"ZRANGE", "sem", "0", "-1"}) == bulks({"p2", "p3"}));
    CHECK(m.run({"EVAL", "return redis.call('zscore', KEYS[1], 'p3')", "1", "sem"}) ==
          bulk("1501"));  // a double is a string to a script, as in RESP2
}

TEST_CASE("the collections are in the snapshot, byte for byte the same state", "[redis]") {
    Machine m;
    CHECK(m.run({"RPUSH", "l", "a", "b", "a"}) == integer(3));
    CHECK(m.run({"SADD", "s", "x", "y"}) == integer(2));
    CHECK(m.run({"ZADD", "z", "-inf", "lo", "0.1", "a", "1e300", "hi"}) == integer(3));
    CHECK(m.run({"PEXPIRE", "z", "10000"}) == integer(1));
    const std::string snap = m.sm.snapshot();
    // The types' numbers on disk: a key's name (length, bytes), then its type (2 list, 3 set,
    // 4 sorted set), then its deadline (zig-zag: 0 none; z's is 11000 ms), then the entry that
    // last changed it (snapshot version 7), then the items.
    using namespace std::string_literals;
    CHECK(snap.find("\x01l\x02\x00\x01\x03\x01"
                    "a\x01"
                    "b\x01"
                    "a"s) != std::string::npos);
    CHECK(snap.find("\x01s\x03\x00\x02\x02\x01x\x01y"s) != std::string::npos);
    CHECK(snap.find("\x01z\x04\xf0\xab\x01\x04\x03"s) != std::string::npos);
    StateMachine copy;
    REQUIRE(copy.restore(snap) == ErrorCode::kOk);
    CHECK(copy.check_invariants() == "");
    CHECK(copy.snapshot() == snap);
    CHECK(copy.redis_query({"LRANGE", "l", "0", "-1"}) == bulks({"a", "b", "a"}));
    CHECK(copy.redis_query({"ZRANGE", "z", "0", "-1", "WITHSCORES"}) ==
          m.read({"ZRANGE", "z", "0", "-1", "WITHSCORES"}));
    CHECK(copy.redis_query({"PTTL", "z"}) == integer(10000));
    for (size_t n = 0; n < snap.size(); n += 7) {
        StateMachine broken;
        CHECK(broken.restore(snap.substr(0, n)) != ErrorCode::kOk);
    }
}

TEST_CASE("a version 5 entry runs the commands of its time: lists are unknown there",
          "[redis][codec]") {
    // A log written before format 6 replays as it applied then, on every replica: LPUSH in a
    // version 5 entry was "unknown command" to the servers that applied it, and still is.
    Machine m;
    m.format = kCommandFormatVersionV5;
    CHECK(m.run({"LPUSH", "l", "a"}) ==
          Value::error("ERR unknown command 'LPUSH', with args beginning with: 'l' 'a' "));
    CHECK(m.run({"EVAL", "return redis.call('sadd', 's', 'a')", "0"})
              .text.find("Unknown Redis command called from script") != std::string::npos);
    CHECK(m.run({"SET", "k", "v"}) == Value::ok());  // what existed then still runs
    CHECK(m.read({"EXISTS", "l", "s"}) == integer(0));
    m.format = kCommandFormatVersion;
    CHECK(m.run({"LPUSH", "l", "a"}) == integer(1));
    CHECK(m.run({"EVAL", "return redis.call('sadd', 's', 'a')", "0"}) == integer(1));
}

}  // namespace
}  // namespace raftlock::statemachine
