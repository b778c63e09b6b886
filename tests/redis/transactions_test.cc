// MULTI/EXEC and WATCH in the state machine (statemachine/redis/keyspace.h): a transaction is one
// entry, its commands run in a row with no rollback, and it aborts when a watched key changed after
// its watch, where Redis would (the byte-for-byte comparison with redis-server is
// tests/integration/redis/transactions_compat.py; the front end's queueing is
// tests/server/redis_transactions_test.cc).

#include <functional>
#include <map>
#include <optional>

#include <catch2/catch.hpp>

#include "base/rng.h"
#include "machine.h"

namespace raftlock::statemachine {
namespace {

using redis::Argv;
using redis::Publication;
using redis::Value;
using testing::bulk;
using testing::integer;
using testing::Machine;

const Value kAborted = Value::null_array();

TEST_CASE("EXEC runs its commands in a row; an error stops nothing", "[redis][transactions]") {
    Machine m;
    CHECK(m.run({"SET", "s", "text"}) == Value::ok());
    const Value reply = m.exec({{"SET", "a", "1"},
                                {"INCR", "a"},
                                {"INCR", "s"},  // fails: Redis does not roll back, and goes on
                                {"GET", "a"},   // reads see the transaction's own writes
                                {"LPUSH", "s", "x"},
                                {"PUBLISH", "c", "m"}});
    CHECK(reply ==
          Value::array({Value::ok(), integer(2),
                        Value::error("ERR value is not an integer or out of range"), bulk("2"),
                        Value::error("WRONGTYPE Operation against a key holding the "
                                     "wrong kind of value"),
                        integer(0)}));
    // The PUBLISH is delivered like a lone one, and its item is the one a node answers for.
    REQUIRE(m.published.size() == 1);
    CHECK(m.published[0].exec_item == std::optional<size_t>(5));
    CHECK(m.exec({}) == Value::array({}));
    // Commands the keyspace does not run get their error in place; the rest still run.
    CHECK(m.exec({{"PING"}, {"NOSUCH"}, {"GET", "a"}}) ==
          Value::array({Value::error("ERR raftlock: a connection command cannot be replicated"),
                        Value::error("ERR unknown command 'NOSUCH', with args beginning with: "),
                        bulk("2")}));
}

TEST_CASE("a watched key changed after its watch aborts EXEC; untouched, it runs",
          "[redis][transactions]") {
    Machine m;
    CHECK(m.run({"SET", "k", "1"}) == Value::ok());
    const redis::WatchedKey before = m.watch("k");
    CHECK(m.exec({{"SET", "k", "2"}}, {before}) == Value::array({Value::ok()}));
    // The transaction's own write was after `before`: the same watch now aborts.
    CHECK(m.exec({{"SET", "k", "3"}}, {before}) == kAborted);
    CHECK(m.read({"GET", "k"}) == bulk("2"));  // nothing of the aborted one ran
    // A missing key: created after the watch aborts; deleted after it too.
    const redis::WatchedKey missing = m.watch("new");
    CHECK(m.run({"SET", "new", "x"}) == Value::ok());
    CHECK(m.exec({{"GET", "new"}}, {missing}) == kAborted);
    const redis::WatchedKey present = m.watch("new");
    CHECK(m.run({"DEL", "new"}) == integer(1));
    CHECK(m.exec({{"GET", "new"}}, {present}) == kAborted);
    // One changed key among several is enough.
    CHECK(m.run({"SET", "other", "x"}) == Value::ok());
    const std::vector<redis::WatchedKey> both{m.watch("k"), m.watch("other")};
    CHECK(m.exec({{"GET", "k"}}, both) == Value::array({bulk("2")}));
    CHECK(m.run({"APPEND", "other", "y"}) == integer(2));
    CHECK(m.exec({{"GET", "k"}}, both) == kAborted);
}

// Where Redis calls signalModifiedKey: some writes that change nothing still count (SET of the
// same value, HSET, LSET, LTRIM), others do not (SETNX on an existing key, SADD of a member, ZADD
// of the same score, EXPIRE NX on a key with a TTL). Redis 7.0.15's answers, case by case.
TEST_CASE("which writes count as a change is Redis's", "[redis][transactions]") {
    struct Case {
        std::vector<Argv> setup;
        Argv write;
        bool aborts;
    };
    const std::vector<Case> cases = {
        {{{"SET", "k", "v"}}, {"SET", "k", "v"}, true},
        {{{"SET", "k", "v"}}, {"SETNX", "k", "w"}, false},
        {{}, {"DEL", "k"}, false},
        {{{"SET", "k", "v"}}, {"DEL", "k"}, true},
        {{}, {"EXPIRE", "k", "10"}, false},
        {{{"SET", "k", "v", "EX", "1000"}}, {"EXPIRE", "k", "2000", "NX"}, false},
        {{{"SET", "k", "v"}}, {"PERSIST", "k"}, false},
        {{{"SET", "k", "v", "EX", "1000"}}, {"PERSIST", "k"}, true},
        {{{"SET", "k", "1"}}, {"INCR", "k"}, true},
        {{{"HSET", "k", "f", "v"}}, {"HSET", "k", "f", "v"}, true},
        {{{"HSET", "k", "f", "v"}}, {"HSETNX", "k", "f", "w"}, false},
        {{{"HSET", "k", "f", "v"}}, {"HDEL", "k", "g"}, false},
        {{{"HSET", "k", "f", "1"}}, {"HINCRBY", "k", "f", "1"}, true},
        {{{"RPUSH", "k", "a"}}, {"LPUSH", "k", "b"}, true},
        {{}, {"LPOP", "k"}, false},
        {{{"RPUSH", "k", "a", "b"}}, {"LREM", "k", "0", "c"}, false},
        {{{"RPUSH", "k", "a"}}, {"LSET", "k", "0", "a"}, true},
        {{{"RPUSH", "k", "a", "b"}}, {"LTRIM", "k", "0", "-1"}, true},
        {{}, {"RPUSHX", "k", "a"}, false},
        {{{"SADD", "k", "a"}}, {"SADD", "k", "a"}, false},
        {{{"SADD", "k", "a"}}, {"SADD", "k", "b"}, true},
        {{{"SADD", "k", "a"}}, {"SREM", "k", "b"}, false},
        {{{"ZADD", "k", "1", "a"}}, {"ZADD", "k", "1", "a"}, false},
        {{{"ZADD", "k", "1", "a"}}, {"ZADD", "k", "NX", "2", "a"}, false},
        {{{"ZADD", "k", "1", "a"}}, {"ZADD", "k", "2", "a"}, true},
        {{{"ZADD", "k", "1", "a"}}, {"ZINCRBY", "k", "1", "a"}, true},
        {{{"ZADD", "k", "1", "a"}}, {"ZREM", "k", "b"}, false},
        {{{"ZADD", "k", "1", "a"}}, {"ZREMRANGEBYSCORE", "k", "5", "6"}, false},
        {{{"SET", "k", "v"}}, {"GETDEL", "k"}, true},
        {{{"SET", "k", "v"}}, {"GETSET", "k", "v"}, true},
        {{{"SET", "k", "v"}}, {"MSET", "k", "v", "x", "y"}, true},
        {{{"SET", "k", "v"}}, {"EVAL", "return redis.call('set', KEYS[1], 'w')", "1", "k"}, true},
        {{{"SET", "k", "v"}}, {"EVAL", "return redis.call('get', KEYS[1])", "1", "k"}, false},
        {{{"SET", "k", "v"}}, {"FLUSHALL"}, true},
    };
    for (const Case& c : cases) {
        INFO(c.write[0] << " " << (c.write.size() > 1 ? c.write[1] : ""));
        Machine m;
        REQUIRE(m.run({"SET", "elsewhere", "v"}) == Value::ok());  // a node serves WATCH after one
        for (const Argv& argv : c.setup) {
            REQUIRE_FALSE(m.run(argv).is_error());
        }
        const redis::WatchedKey watched = m.watch("k");
        REQUIRE_FALSE(m.run(c.write).is_error());
        CHECK(m.exec({{"PING"}}, {watched}).kind ==
              (c.aborts ? Value::Kind::kNullArray : Value::Kind::kArray));
    }
}

TEST_CASE("expiry after the watch aborts; a key already expired at the watch does not",
          "[redis][transactions]") {
    Machine m;
    CHECK(m.run({"SET", "stale", "v", "PX", "100"}) == Value::ok());
    CHECK(m.run({"SET", "fresh", "v", "PX", "700"}) == Value::ok());
    m.tick(200);  // the entry that deletes "stale"
    const redis::WatchedKey stale = m.watch("stale");
    const redis::WatchedKey fresh = m.watch("fresh");
    CHECK(m.exec({{"GET", "stale"}}, {stale}) == Value::array({Value::null()}));
    m.tick(1000);
    CHECK(m.exec({{"GET", "fresh"}}, {fresh}) == kAborted);
}

TEST_CASE("the scripts of one EXEC share one instruction budget", "[redis][transactions]") {
    Machine m;
    m.script_budget = 120000;
    const Argv loop = {"EVAL", "local n = 0 for i = 1, 40000 do n = n + i end return n", "0"};
    // One run alone fits the budget; a second in the same transaction does not, nor any after.
    CHECK_FALSE(m.run(loop).is_error());
    const Value reply = m.exec({loop, loop, loop, loop, {"SET", "after", "1"}});
    REQUIRE(reply.items.size() == 5);
    CHECK_FALSE(reply.items[0].is_error());
    for (size_t i = 1; i < 4; ++i) {
        INFO(i << ": " << reply.items[i].text);
        CHECK(reply.items[i] == Value::error("ERR script exceeded the instruction limit"));
    }
    CHECK(reply.items[4] == Value::ok());  // a command that is not a script still runs
}

TEST_CASE("replicas decide EXEC alike whether they applied the log or restored a snapshot",
          "[redis][transactions][snapshot]") {
    Machine a;
    for (int i = 0; i < 50; ++i) {
        REQUIRE_FALSE(a.run({"SET", "k" + std::to_string(i % 7), std::to_string(i)}).is_error());
        if (i % 5 == 0) {
            REQUIRE_FALSE(a.run({"DEL", "k" + std::to_string(i % 3)}).is_error());
        }
    }
    Machine b;
    REQUIRE(b.sm.restore(a.sm.snapshot()) == ErrorCode::kOk);
    CHECK(b.sm.snapshot() == a.sm.snapshot());
    b.index = a.index;
    b.seq = a.seq;
    // Every watch index across the log, every key: the same answers from both.
    int aborted = 0;
    const Index restored_at = a.index;
    for (Index at = 1; at <= restored_at; at += 3) {
        for (int k = 0; k < 8; ++k) {
            const std::vector<redis::WatchedKey> watched{{"k" + std::to_string(k), at}};
            const Value from_a = a.exec({{"GET", "k0"}}, watched);
            CHECK(b.exec({{"GET", "k0"}}, watched) == from_a);
            aborted += from_a == kAborted ? 1 : 0;
        }
    }
    CHECK(aborted > 10);
}

TEST_CASE("a watch from before the first format 8 entry aborts", "[redis][transactions][codec]") {
    // A replica that restored a snapshot written before format 8 has no record of older changes:
    // every replica must then abort such a watch, whatever it knows.
    Machine m;
    m.format = kCommandFormatVersionV7;
    CHECK(m.run({"SET", "k", "v"}) == Value::ok());
    CHECK(m.run({"MULTI"}) ==
          Value::error("ERR unknown command 'MULTI', with args beginning with: "));
    const redis::WatchedKey old = m.watch("k");
    m.format = kCommandFormatVersion;
    CHECK(m.run({"SET", "other", "v"}) == Value::ok());  // the first entry of format 8
    const redis::WatchedKey recent = m.watch("k");
    CHECK(m.exec({{"GET", "k"}}, {old}) == kAborted);
    CHECK(m.exec({{"GET", "k"}}, {recent}) == Value::array({bulk("v")}));
}

// The property WATCH rests on: whatever a write does to a key's value or TTL, a watch from before
// it aborts. Random writes over a few keys; before and after each, every key's full state.
TEST_CASE("no change to a key escapes a watch", "[redis][transactions][property]") {
    const std::vector<std::string> keys = {"a", "b", "c", "d"};
    const auto state = [&](const Machine& m, const std::string& k) {
        // The deadline, not the time left: that changes with the clock alone.
        const int64_t ttl = m.read({"PTTL", k}).integer;
        std::string out =
            m.read({"TYPE", k}).text + "|" + std::to_string(ttl < 0 ? ttl : ttl + m.now);
        for (const Argv& read : std::vector<Argv>{{"GET", k},
                                                  {"HGETALL", k},
                                                  {"LRANGE", k, "0", "-1"},
                                                  {"SMEMBERS", k},
                                                  {"ZRANGE", k, "0", "-1", "WITHSCORES"}}) {
            const Value v = m.read(read);
            out += "|" + v.text;
            for (const Value& item : v.items) {
                out += "," + item.text;
            }
        }
        return out;
    };
    const std::vector<std::function<Argv(Rng&, const std::string&)>> writes = {
        [](Rng& r, const std::string& k) {
            return Argv{"SET", k, std::to_string(r.uniform(3))};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"SETNX", k, std::to_string(r.uniform(3))};
        },
        [](Rng&, const std::string& k) {
            return Argv{"DEL", k};
        },
        [](Rng&, const std::string& k) {
            return Argv{"INCR", k};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"PEXPIRE", k, std::to_string(1 + r.uniform(300))};
        },
        [](Rng&, const std::string& k) {
            return Argv{"PERSIST", k};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"HSET", k, std::to_string(r.uniform(2)), "v"};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"HDEL", k, std::to_string(r.uniform(2))};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"RPUSH", k, std::to_string(r.uniform(2))};
        },
        [](Rng&, const std::string& k) {
            return Argv{"LPOP", k};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"LREM", k, "1", std::to_string(r.uniform(2))};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"SADD", k, std::to_string(r.uniform(3))};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"SREM", k, std::to_string(r.uniform(3))};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"ZADD", k, std::to_string(r.uniform(3)), std::to_string(r.uniform(2))};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"ZREM", k, std::to_string(r.uniform(2))};
        },
        [](Rng& r, const std::string& k) {
            return Argv{"ZREMRANGEBYSCORE", k, "0", std::to_string(r.uniform(3))};
        },
        [](Rng&, const std::string& k) {
            return Argv{"EVAL", "return redis.call('append', KEYS[1], 'x')", "1", k};
        },
    };
    Rng rng(20261130);
    Machine m;
    int changes = 0;
    for (int step = 0; step < 3000; ++step) {
        std::map<std::string, std::string> before;
        std::vector<redis::WatchedKey> watched;
        for (const std::string& k : keys) {
            before[k] = state(m, k);
            watched.push_back(m.watch(k));
        }
        const Argv write = writes[rng.uniform(writes.size())](rng, keys[rng.uniform(keys.size())]);
        m.run(write);
        if (rng.uniform(4) == 0) {
            m.tick(static_cast<TimeMs>(rng.uniform(200)));  // expiries happen between the writes
        }
        for (size_t i = 0; i < keys.size(); ++i) {
            if (state(m, keys[i]) != before[keys[i]]) {
                INFO("step " << step << ": " << write[0] << " " << write[1] << " changed "
                             << keys[i] << " from " << before[keys[i]]);
                REQUIRE(m.exec({}, {watched[i]}) == kAborted);
                ++changes;
            }
        }
    }
    CHECK(changes > 1000);  // the writes did change keys: the check above ran
}

}  // namespace
}  // namespace raftlock::statemachine
