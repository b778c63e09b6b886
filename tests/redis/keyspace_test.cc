// The Redis keyspace through the state machine: commands, expiry in cluster time, at-most-once,
// the codec and the snapshot.

#include <catch2/catch.hpp>

#include "machine.h"
#include "statemachine/codec.h"
#include "statemachine/redis/commands.h"
#include "statemachine/redis/glob.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine {
namespace {

using redis::Argv;
using redis::Value;
using testing::bulk;
using testing::integer;
using testing::kOrigin;
using testing::Machine;

TEST_CASE("strings: SET options, GET, INCR, APPEND", "[redis]") {
    Machine m;
    CHECK(m.run({"SET", "k", "v"}) == Value::ok());
    CHECK(m.read({"GET", "k"}) == bulk("v"));
    CHECK(m.run({"set", "k", "w", "NX"}) == Value::null());
    CHECK(m.run({"SET", "k", "w", "XX", "GET"}) == bulk("v"));
    CHECK(m.run({"SET", "new", "x", "XX"}) == Value::null());
    CHECK(m.run({"SET", "k", "x", "NX", "XX"}) == Value::error("ERR syntax error"));
    CHECK(m.run({"SET", "k", "x", "EX", "0"}) ==
          Value::error("ERR invalid expire time in 'set' command"));
    CHECK(m.run({"SET", "k", "x", "EX", "ten"}) ==
          Value::error("ERR value is not an integer or out of range"));
    CHECK(m.run({"SET", "k", "x", "PX", "100", "KEEPTTL"}) == Value::error("ERR syntax error"));
    CHECK(m.run({"SETNX", "k", "y"}) == integer(0));
    CHECK(m.run({"GETSET", "k", "1"}) == bulk("w"));
    CHECK(m.run({"INCR", "k"}) == integer(2));
    CHECK(m.run({"INCRBY", "k", "-5"}) == integer(-3));
    CHECK(m.run({"DECRBY", "k", "2"}) == integer(-5));
    CHECK(m.run({"SET", "big", "9223372036854775807"}) == Value::ok());
    CHECK(m.run({"INCR", "big"}) == Value::error("ERR increment or decrement would overflow"));
    CHECK(m.run({"SET", "s", "007"}) == Value::ok());
    CHECK(m.run({"INCR", "s"}) == Value::error("ERR value is not an integer or out of range"));
    CHECK(m.run({"APPEND", "s", "x"}) == integer(4));
    CHECK(m.read({"STRLEN", "s"}) == integer(4));
    CHECK(m.run({"GETDEL", "s"}) == bulk("007x"));
    CHECK(m.read({"GET", "s"}) == Value::null());
    CHECK(m.run({"MSET", "a", "1", "b", "2"}) == Value::ok());
    CHECK(m.run({"MSET", "a", "1", "b"}) ==
          Value::error("ERR wrong number of arguments for 'mset' command"));
    CHECK(m.read({"MGET", "a", "nope", "b"}) ==
          Value::array({bulk("1"), Value::null(), bulk("2")}));
}

TEST_CASE("owner-checked release and extend: DELEX, DELIFEQ, SET IFEQ", "[redis]") {
    Machine m;
    CHECK(m.run({"SET", "lock", "me", "NX", "PX", "10000"}) == Value::ok());
    CHECK(m.run({"SET", "lock", "me", "IFEQ", "you", "PX", "20000"}) == Value::null());
    CHECK(m.run({"SET", "lock", "me", "IFEQ", "me", "PX", "20000"}) == Value::ok());
    CHECK(m.read({"PTTL", "lock"}) == integer(20000));
    CHECK(m.run({"SET", "lock", "x", "IFEQ", "me", "NX"}) == Value::error("ERR syntax error"));
    CHECK(m.run({"DELEX", "lock", "IFEQ", "you"}) == integer(0));
    CHECK(m.run({"DELEX", "lock", "IFNE", "me"}) == integer(0));
    CHECK(m.run({"DELEX", "lock", "IFEQ", "me"}) == integer(1));
    CHECK(m.run({"SET", "lock", "me"}) == Value::ok());
    CHECK(m.run({"DELIFEQ", "lock", "you"}) == integer(0));
    CHECK(m.run({"DELIFEQ", "lock", "me"}) == integer(1));
    CHECK(m.run({"DELIFEQ", "lock", "me"}) == integer(0));
    CHECK(m.run({"HSET", "h", "f", "v"}) == integer(1));
    CHECK(m.run({"DELIFEQ", "h", "v"}) == Value::error(std::string(redis::kWrongType)));
}

TEST_CASE("expiry follows cluster time, and an idle cluster has a timer for it", "[redis]") {
    Machine m;
    CHECK(m.run({"SET", "k", "v", "PX", "100"}) == Value::ok());
    CHECK(m.sm.next_timer_ms() == m.now + 100);
    CHECK(m.read({"PTTL", "k"}) == integer(100));
    CHECK(m.read({"TTL", "k"}) == integer(0));
    m.tick(99);
    CHECK(m.read({"GET", "k"}) == bulk("v"));
    m.tick(1);
    CHECK(m.read({"GET", "k"}) == Value::null());
    CHECK(m.read({"TTL", "k"}) == integer(-2));
    CHECK(m.sm.redis_key_count() == 0);
    CHECK(!m.sm.next_timer_ms());

    CHECK(m.run({"SET", "k", "v"}) == Value::ok());
    CHECK(m.read({"TTL", "k"}) == integer(-1));
    CHECK(m.run({"EXPIRE", "k", "10", "XX"}) == integer(0));
    CHECK(m.run({"EXPIRE", "k", "10", "NX"}) == integer(1));
    CHECK(m.run({"EXPIRE", "k", "5", "GT"}) == integer(0));
    CHECK(m.run({"EXPIRE", "k", "20", "GT"}) == integer(1));
    CHECK(m.run({"PEXPIRE", "k", "500", "LT"}) == integer(1));
    CHECK(m.run({"EXPIRE", "k", "5", "NX", "GT"}) ==
          Value::error("ERR NX and XX, GT or LT options at the same time are not compatible"));
    CHECK(m.run({"EXPIRE", "k", "5", "bogus"}) == Value::error("ERR Unsupported option bogus"));
    CHECK(m.run({"PERSIST", "k"}) == integer(1));
    CHECK(m.run({"PERSIST", "k"}) == integer(0));
    CHECK(m.run({"PEXPIREAT", "k", std::to_string(m.now - 1)}) == integer(1));
    CHECK(m.read({"EXISTS", "k"}) == integer(0));
    CHECK(m.run({"SET", "k", "v", "KEEPTTL"}) == Value::ok());
    CHECK(m.run({"EXPIRE", "k", "9223372036854775807"}) ==
          Value::error("ERR invalid expire time in 'expire' command"));
    // INCR and APPEND keep the TTL; SET without KEEPTTL drops it.
    CHECK(m.run({"SET", "n", "1", "EX", "100"}) == Value::ok());
    CHECK(m.run({"INCR", "n"}) == integer(2));
    CHECK(m.read({"TTL", "n"}) == integer(100));
    CHECK(m.run({"SET", "n", "1"}) == Value::ok());
    CHECK(m.read({"TTL", "n"}) == integer(-1));
}

TEST_CASE("hashes, types and WRONGTYPE", "[redis]") {
    Machine m;
    CHECK(m.run({"HSET", "h", "b", "2", "a", "1"}) == integer(2));
    CHECK(m.run({"HSET", "h", "a", "3"}) == integer(0));
    CHECK(m.run({"HSET", "h", "a"}) ==
          Value::error("ERR wrong number of arguments for 'hset' command"));
    CHECK(m.read({"HGET", "h", "a"}) == bulk("3"));
    CHECK(m.read({"HGETALL", "h"}) == Value::map({bulk("a"), bulk("3"), bulk("b"), bulk("2")}));
    CHECK(m.read({"HLEN", "h"}) == integer(2));
    CHECK(m.read({"HEXISTS", "h", "zz"}) == integer(0));
    CHECK(m.run({"HINCRBY", "h", "c", "5"}) == integer(5));
    CHECK(m.run({"HINCRBY", "h", "c", "x"}) ==
          Value::error("ERR value is not an integer or out of range"));
    CHECK(m.run({"HSET", "h", "s", "abc"}) == integer(1));
    CHECK(m.run({"HINCRBY", "h", "s", "1"}) == Value::error("ERR hash value is not an integer"));
    CHECK(m.read({"TYPE", "h"}) == Value::simple("hash"));
    CHECK(m.read({"GET", "h"}) == Value::error(std::string(redis::kWrongType)));
    CHECK(m.run({"INCR", "h"}) == Value::error(std::string(redis::kWrongType)));
    CHECK(m.run({"SET", "h", "x", "GET"}) == Value::error(std::string(redis::kWrongType)));
    CHECK(m.run({"HDEL", "h", "a", "b", "c", "s", "zz"}) == integer(4));
    CHECK(m.read({"EXISTS", "h"}) == integer(0));  // the last field deleted the key
    CHECK(m.read({"TYPE", "h"}) == Value::simple("none"));
}

TEST_CASE("keys: DEL, EXISTS, KEYS, SCAN, DBSIZE, FLUSHDB", "[redis]") {
    Machine m;
    for (int i = 0; i < 50; ++i) {
        m.run({"SET", "key:" + std::to_string(i), "v"});
    }
    m.run({"HSET", "hash:1", "f", "v"});
    CHECK(m.read({"DBSIZE"}) == integer(51));
    CHECK(m.read({"EXISTS", "key:1", "key:1", "nope"}) == integer(2));
    CHECK(m.read({"KEYS", "key:1?"}).items.size() == 10);
    CHECK(m.read({"KEYS", "*"}).items.size() == 51);
    // SCAN returns every key once, whatever is deleted meanwhile.
    std::set<std::string> seen;
    std::string cursor = "0";
    int rounds = 0;
    do {
        Value r = m.read({"SCAN", cursor, "COUNT", "7", "MATCH", "key:*"});
        REQUIRE(r.items.size() == 2);
        cursor = r.items[0].text;
        for (const Value& k : r.items[1].items) {
            CHECK(seen.insert(k.text).second);
        }
        if (rounds++ == 2) {
            m.run({"DEL", "key:0", "key:1", "key:2"});
            seen.insert({"key:0", "key:1", "key:2"});
        }
    } while (cursor != "0" && rounds < 100);
    CHECK(seen.size() == 50);
    CHECK(m.read({"SCAN", "0", "TYPE", "hash"}).items[1] == Value::array({bulk("hash:1")}));
    CHECK(m.read({"SCAN", "x"}) == Value::error("ERR invalid cursor"));
    CHECK(m.run({"UNLINK", "key:3", "key:3", "nope"}) == integer(1));
    CHECK(m.run({"FLUSHDB"}) == Value::ok());
    CHECK(m.read({"DBSIZE"}) == integer(0));
}

TEST_CASE("unknown commands and arity are refused as Redis words it", "[redis]") {
    Machine m;
    CHECK(m.run({"FOO", "a", "b"}) ==
          Value::error("ERR unknown command 'FOO', with args beginning with: 'a' 'b' "));
    CHECK(m.run({"GET"}) == Value::error("ERR wrong number of arguments for 'get' command"));
    CHECK(m.run({"SCRIPT", "nope"}) ==
          Value::error("ERR unknown subcommand 'nope'. Try SCRIPT HELP."));
    CHECK(m.read({"SET", "a", "b"}) == Value::error("ERR raftlock: not a read-only command"));
    CHECK(redis::route_of({"SCRIPT", "EXISTS", "x"}) == redis::Route::kRead);
    CHECK(redis::route_of({"script", "load", "x"}) == redis::Route::kWrite);
    CHECK(redis::route_of({"Ping"}) == redis::Route::kConnection);
}

TEST_CASE("at most once per (origin, seq): a resubmitted or overtaken write does not apply",
          "[redis]") {
    Machine m;
    CHECK(m.run({"INCR", "n"}, kOrigin, 10) == integer(1));
    // The same write again (a resubmission to a new leader after the first copy committed).
    CHECK(m.run({"INCR", "n"}, kOrigin, 10).is_error());
    // An older one from the same origin, overtaken.
    CHECK(m.run({"INCR", "n"}, kOrigin, 9).text.starts_with("TRYAGAIN"));
    // Another origin has its own sequence.
    CHECK(m.run({"INCR", "n"}, kOrigin + 1, 1) == integer(2));
    CHECK(m.run({"INCR", "n"}, kOrigin, 11) == integer(3));
}

TEST_CASE("the keyspace is in the snapshot; version 1 snapshots still restore", "[redis]") {
    Machine m;
    m.run({"SET", "a", "1", "PX", "5000"});
    m.run({"HSET", "h", "f", "v"});
    m.run({"INCR", "n"}, kOrigin, 100);
    const std::string snap = m.sm.snapshot();
    StateMachine copy;
    REQUIRE(copy.restore(snap) == ErrorCode::kOk);
    CHECK(copy.state_hash() == m.sm.state_hash());
    CHECK(copy.redis_query({"PTTL", "a"}) == integer(5000));
    CHECK(copy.redis_query({"HGET", "h", "f"}) == bulk("v"));
    // The at-most-once table came along: the same write is still refused.
    Machine again;
    REQUIRE(again.sm.restore(snap) == ErrorCode::kOk);
    again.index = m.index;
    CHECK(again.run({"INCR", "n"}, kOrigin, 100).is_error());
    // Every truncation is refused, never crashes.
    for (size_t n = 0; n < snap.size(); n += 7) {
        StateMachine broken;
        CHECK(broken.restore(snap.substr(0, n)) != ErrorCode::kOk);
    }
}

TEST_CASE("the codec bounds Redis commands", "[redis]") {
    Command c;
    c.seq = 1;
    c.op = RedisCommand{kOrigin, {"SET", "k", std::string(kRedisCommandBytesMax, 'x')}};
    CHECK(!encode_command(c).ok());
    c.op = RedisCommand{0, {"GET", "k"}};  // no origin
    CHECK(!encode_command(c).ok());
    c.op = RedisCommand{kOrigin, {}};
    CHECK(!encode_command(c).ok());
    c.op = RedisCommand{kOrigin, {"GET", "k"}};
    c.seq = 0;
    CHECK(!encode_command(c).ok());
    c.seq = 5;
    Result<std::string, ErrorCode> bytes = encode_command(c);
    REQUIRE(bytes.ok());
    Result<Command, ErrorCode> back = decode_command(bytes.value());
    REQUIRE(back.ok());
    CHECK(back.value() == c);
}

TEST_CASE("a Redis entry carries its script budget; an old entry keeps the old one", "[redis]") {
    Command c;
    c.seq = 5;
    c.op = RedisCommand{kOrigin, {"EVAL", "return 1", "0"}, 250000};
    Result<std::string, ErrorCode> bytes = encode_command(c);
    REQUIRE(bytes.ok());
    Result<Command, ErrorCode> back = decode_command(bytes.value());
    REQUIRE(back.ok());
    CHECK(back.value() == c);
    // Tag 32, then origin 77 and the budget as varints.
    const size_t at = bytes.value().find(std::string("\x20\x4d\x90\xa1\x0f", 5));
    REQUIRE(at != std::string::npos);
    // Over the ceiling: not encoded, not decoded.
    c.op = RedisCommand{kOrigin, {"EVAL", "return 1", "0"}, kScriptInstructionsMax + 1};
    CHECK(!encode_command(c).ok());
    std::string over = bytes.value();
    over.replace(at + 2, 3, std::string("\x81\x94\xeb\xdc\x03", 5));  // 10^9 + 1
    CHECK(!decode_command(over).ok());
    // Format version 1 wrote a budget under tag 16, where 0 was never written: refused.
    std::string v1 = bytes.value();
    v1[0] = static_cast<char>(kCommandFormatVersionV1);
    // Version 4's "no caller" and empty user, which version 1 did not have.
    REQUIRE(v1[at - 2] == 0);
    REQUIRE(v1[at - 1] == 0);
    v1.erase(at - 2, 2);
    v1[at - 2] = 16;
    REQUIRE(decode_command(v1).ok());
    v1.replace(at, 3, std::string("\x00", 1));
    CHECK(!decode_command(v1).ok());
    // Unstamped (0: the budget of entries from before budgets): budget field 0.
    c.op = RedisCommand{kOrigin, {"EVAL", "return 1", "0"}, 0};
    bytes = encode_command(c);
    REQUIRE(bytes.ok());
    CHECK(bytes.value().find(std::string("\x20\x4d\x00\x03", 4)) != std::string::npos);
    back = decode_command(bytes.value());
    REQUIRE(back.ok());
    CHECK(back.value() == c);
}

TEST_CASE("a script stops at its entry's budget, the same on every replica", "[redis]") {
    // Two VM instructions an iteration (ADD, FORLOOP): some 20,000 in all.
    const Argv script = {"EVAL", "local x = 0 for i = 1, 10000 do x = x + i end return x", "0"};
    const Value limit = Value::error("ERR script exceeded the instruction limit");
    for (uint64_t budget : {uint64_t{1000}, uint64_t{10000}}) {
        Machine a;
        Machine b;
        a.script_budget = b.script_budget = budget;
        CHECK(a.run(script) == limit);
        CHECK(b.run(script) == limit);
    }
    Machine a;
    a.script_budget = 100000;
    CHECK(a.run(script) == Value::integer_of(50005000));
    // An unstamped entry (written by an older server) runs with the 50,000,000 it ran with then.
    Machine old;
    const Argv longer = {"EVAL", "local x = 0 for i = 1, 1000000 do x = x + 1 end return x", "0"};
    CHECK(old.run(longer) == Value::integer_of(1000000));
    old.script_budget = 100000;
    CHECK(old.run(longer) == limit);
}

TEST_CASE("a script's redis.calls are bounded: it cannot flood the keyspace in one entry",
          "[redis]") {
    Machine m;
    const Value r = m.run(
        {"EVAL", "for i = 1, 1000000 do redis.pcall('SET', 'k' .. i, 'v') end return 1", "0"});
    CHECK(r == Value::integer_of(1));  // pcall: the refusals are the script's to handle
    CHECK(m.sm.redis_key_count() == redis::kScriptCallsMax);
    const Value e =
        m.run({"EVAL", "for i = 1, 20000 do redis.call('SET', 'x' .. i, 'v') end", "0"});
    CHECK(e.is_error());
    CHECK(e.text.find("at most 10000 commands") != std::string::npos);
}

TEST_CASE("glob patterns as Redis's stringmatchlen", "[redis]") {
    using redis::glob_match;
    CHECK(glob_match("*", ""));
    CHECK(glob_match("h?llo", "hello"));
    CHECK(glob_match("h*llo", "heeeello"));
    CHECK(glob_match("h[ae]llo", "hallo"));
    CHECK(!glob_match("h[^e]llo", "hello"));
    CHECK(glob_match("h[a-b]llo", "hbllo"));
    CHECK(glob_match("h[b-a]llo", "hbllo"));
    CHECK(glob_match("h\\*llo", "h*llo"));
    CHECK(!glob_match("h\\*llo", "hello"));
    CHECK(glob_match("*a*b*c", "xxaxxbxxc"));
    CHECK(!glob_match("*a*b*c", "xxaxxbxx"));
    // A pattern that is exponential for naive backtracking stays fast.
    CHECK(!glob_match("*a*a*a*a*a*a*a*a*a*a*b", std::string(2000, 'a')));
}

}  // namespace
}  // namespace raftlock::statemachine
