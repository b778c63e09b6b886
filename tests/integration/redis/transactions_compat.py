#!/usr/bin/env python3
"""Transactions against a real redis-server, byte for byte, with the writers on another node.

One scenario of raw RESP commands on three connections runs first against redis-server, then once
per raftlock node: A (RESP2) and B (RESP3 after HELLO 3) on node i, X on node i+1, so the writes
that must abort a WATCHing transaction reach it through the log. It covers MULTI/EXEC/DISCARD and
their errors (nesting, WATCH inside MULTI, EXECABORT after a command that cannot be queued, an
error inside the EXEC array that rolls nothing back), WATCH and UNWATCH and what clears a watch,
which writes of another connection count as a modification of a watched key (Redis calls
signalModifiedKey for some no-ops and not for others: the scenario records which), watched keys
that expire, connection commands queued inside MULTI (SUBSCRIBE too), RESET and QUIT inside MULTI,
and the RESP3 shapes (an aborted EXEC is `_`, not `*-1`).

Every connection must read exactly the bytes redis-server sent it at every step, except the steps
marked `skip` (HELLO's map names the server; PUBLISH answers how many receivers the answering node
has: docs/redis-mode.md), whose replies are only checked for their type. A step may wait before
it is sent (its fourth field, in seconds), to let a key expire.

    transactions_compat.py REAL_PORT NODE1_PORT NODE2_PORT NODE3_PORT
"""
import sys

import resp_scenario


def modified(key, setup, command):
    """A watches `key`, X runs `command`: does A's next transaction abort?"""
    steps = [("X", argv, False) for argv in setup]
    return steps + [
        ("A", ["WATCH", key], False),
        ("X", command, False),
        ("A", ["MULTI"], False),
        ("A", ["PING"], False),
        ("A", ["EXEC"], False),
    ]


# Which writes of X touch the key A watches (Redis's signalModifiedKey), a key of its own each:
# (key, steps that prepare it, the write).
MODIFICATIONS = [
    ("m:set", [["SET", "m:set", "v"]], ["SET", "m:set", "v"]),
    ("m:setnx", [["SET", "m:setnx", "v"]], ["SETNX", "m:setnx", "w"]),
    ("m:del-missing", [], ["DEL", "m:del-missing"]),
    ("m:del", [["SET", "m:del", "v"]], ["DEL", "m:del"]),
    ("m:expire-missing", [], ["EXPIRE", "m:expire-missing", "100"]),
    ("m:expire-nx", [["SET", "m:expire-nx", "v", "EX", "1000"]],
     ["EXPIRE", "m:expire-nx", "2000", "NX"]),
    ("m:persist-none", [["SET", "m:persist-none", "v"]], ["PERSIST", "m:persist-none"]),
    ("m:persist", [["SET", "m:persist", "v", "EX", "1000"]], ["PERSIST", "m:persist"]),
    ("m:incr", [["SET", "m:incr", "1"]], ["INCR", "m:incr"]),
    ("m:append", [["SET", "m:append", "a"]], ["APPEND", "m:append", "b"]),
    ("m:hset", [["HSET", "m:hset", "f", "v"]], ["HSET", "m:hset", "f", "v"]),
    ("m:hsetnx", [["HSET", "m:hsetnx", "f", "v"]], ["HSETNX", "m:hsetnx", "f", "w"]),
    ("m:hdel", [["HSET", "m:hdel", "f", "v"]], ["HDEL", "m:hdel", "g"]),
    ("m:hincrby", [["HSET", "m:hincrby", "f", "1"]], ["HINCRBY", "m:hincrby", "f", "1"]),
    ("m:lpush", [["RPUSH", "m:lpush", "a"]], ["LPUSH", "m:lpush", "b"]),
    ("m:lpop-missing", [], ["LPOP", "m:lpop-missing"]),
    ("m:lrem", [["RPUSH", "m:lrem", "a", "b"]], ["LREM", "m:lrem", "0", "z"]),
    ("m:lset", [["RPUSH", "m:lset", "a"]], ["LSET", "m:lset", "0", "a"]),
    ("m:ltrim", [["RPUSH", "m:ltrim", "a", "b"]], ["LTRIM", "m:ltrim", "0", "-1"]),
    ("m:rpushx-missing", [], ["RPUSHX", "m:rpushx-missing", "a"]),
    ("m:sadd-old", [["SADD", "m:sadd-old", "a"]], ["SADD", "m:sadd-old", "a"]),
    ("m:sadd", [["SADD", "m:sadd", "a"]], ["SADD", "m:sadd", "b"]),
    ("m:srem", [["SADD", "m:srem", "a"]], ["SREM", "m:srem", "z"]),
    ("m:zadd-same", [["ZADD", "m:zadd-same", "1", "a"]], ["ZADD", "m:zadd-same", "1", "a"]),
    ("m:zadd-nx", [["ZADD", "m:zadd-nx", "1", "a"]], ["ZADD", "m:zadd-nx", "NX", "2", "a"]),
    ("m:zadd", [["ZADD", "m:zadd", "1", "a"]], ["ZADD", "m:zadd", "2", "a"]),
    ("m:zincrby", [["ZADD", "m:zincrby", "1", "a"]], ["ZINCRBY", "m:zincrby", "1", "a"]),
    ("m:zrem", [["ZADD", "m:zrem", "1", "a"]], ["ZREM", "m:zrem", "z"]),
    ("m:zremrange", [["ZADD", "m:zremrange", "1", "a"]],
     ["ZREMRANGEBYSCORE", "m:zremrange", "5", "9"]),
    ("m:getdel", [["SET", "m:getdel", "v"]], ["GETDEL", "m:getdel"]),
    ("m:getset", [["SET", "m:getset", "v"]], ["GETSET", "m:getset", "v"]),
    ("m:mset", [["SET", "m:mset", "v"]], ["MSET", "m:mset-other", "1", "m:mset", "v"]),
    ("m:eval-write", [["SET", "m:eval-write", "v"]],
     ["EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "m:eval-write", "w"]),
    ("m:eval-read", [["SET", "m:eval-read", "v"]],
     ["EVAL", "return redis.call('get', KEYS[1])", "1", "m:eval-read"]),
    # Last: they empty the database.
    ("m:flush", [["SET", "m:flush", "v"]], ["FLUSHALL"]),
    ("m:flush-missing", [["SET", "m:flush-other", "v"]], ["FLUSHALL"]),
]

# (connection, command, skip[, seconds to wait before sending it]): A (RESP2) and B (RESP3) on
# one node, X on another.
SCENARIO = [
    ("A", ["FLUSHALL"], False),
    # An error inside EXEC's array rolls nothing back: the commands after it ran.
    ("A", ["MULTI"], False),
    ("A", ["SET", "t:s", "v"], False),
    ("A", ["GET", "t:s"], False),
    ("A", ["INCR", "t:n"], False),
    ("A", ["LPUSH", "t:s", "x"], False),
    ("A", ["INCR", "t:s"], False),
    ("A", ["INCR", "t:n"], False),
    ("A", ["GET", "t:s"], False),
    ("A", ["EXEC"], False),
    ("A", ["GET", "t:n"], False),
    ("A", ["TYPE", "t:s"], False),
    ("A", ["EXEC"], False),
    ("A", ["DISCARD"], False),
    ("A", ["UNWATCH"], False),
    ("A", ["WATCH"], False),
    # Nested MULTI and WATCH inside MULTI are refused; the transaction goes on.
    ("A", ["MULTI"], False),
    ("A", ["SET", "t:nest", "1"], False),
    ("A", ["MULTI"], False),
    ("A", ["WATCH", "t:nest"], False),
    ("A", ["EXEC"], False),
    ("A", ["GET", "t:nest"], False),
    # A command that cannot be queued aborts the whole transaction at EXEC.
    ("A", ["MULTI"], False),
    ("A", ["SET", "t:abort", "1"], False),
    ("A", ["NOSUCHCOMMAND", "x"], False),
    ("A", ["EXEC"], False),
    ("A", ["EXEC"], False),
    ("A", ["MULTI"], False),
    ("A", ["GET"], False),
    ("A", ["SET", "t:abort", "2"], False),
    ("A", ["EXEC"], False),
    ("A", ["GET", "t:abort"], False),
    ("A", ["MULTI"], False),
    ("A", ["SET", "t:discard", "1"], False),
    ("A", ["DISCARD"], False),
    ("A", ["GET", "t:discard"], False),
    ("A", ["MULTI"], False),
    ("A", ["EXEC"], False),
    ("A", ["MULTI"], False),
    ("A", ["EVAL", "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])",
           "2", "t:script", "t:n", "7"], False),
    ("A", ["GET", "t:script"], False),
    ("A", ["EVAL", "return redis.call('get', KEYS[1])", "1", "t:missing"], False),
    ("A", ["EXEC"], False),
    # The same in RESP3: nulls are `_`, a hash a map.
    ("B", ["HELLO", "3"], True),
    ("B", ["MULTI"], False),
    ("B", ["SET", "t3:s", "v"], False),
    ("B", ["GET", "t3:missing"], False),
    ("B", ["LPUSH", "t3:s", "x"], False),
    ("B", ["INCR", "t3:n"], False),
    ("B", ["EVAL", "return redis.call('get', KEYS[1])", "1", "t3:missing"], False),
    ("B", ["HSET", "t3:h", "f", "v"], False),
    ("B", ["HGETALL", "t3:h"], False),
    ("B", ["SISMEMBER", "t3:set", "a"], False),
    ("B", ["EXEC"], False),
    ("B", ["EXEC"], False),
    ("B", ["DISCARD"], False),
    ("B", ["MULTI"], False),
    ("B", ["EXEC"], False),
    ("B", ["MULTI"], False),
    ("B", ["GET"], False),
    ("B", ["EXEC"], False),
    ("B", ["SET", "t3:w", "0"], False),
    ("B", ["WATCH", "t3:w"], False),
    ("X", ["SET", "t3:w", "1"], False),
    ("B", ["MULTI"], False),
    ("B", ["GET", "t3:w"], False),
    ("B", ["EXEC"], False),
    # WATCH: (1) another connection's write aborts.
    ("A", ["SET", "w1", "0"], False),
    ("A", ["WATCH", "w1"], False),
    ("X", ["SET", "w1", "1"], False),
    ("A", ["MULTI"], False),
    ("A", ["SET", "w1", "2"], False),
    ("A", ["EXEC"], False),
    ("A", ["GET", "w1"], False),
    # (2) Nobody touches the key: EXEC runs (a write of the key inside it is no modification).
    ("A", ["SET", "w2", "0"], False),
    ("A", ["WATCH", "w2"], False),
    ("A", ["MULTI"], False),
    ("A", ["INCR", "w2"], False),
    ("A", ["EXEC"], False),
    # (3) The watching connection's own write before MULTI aborts too.
    ("A", ["SET", "w3", "0"], False),
    ("A", ["WATCH", "w3"], False),
    ("A", ["SET", "w3", "1"], False),
    ("A", ["MULTI"], False),
    ("A", ["INCR", "w3"], False),
    ("A", ["EXEC"], False),
    ("A", ["GET", "w3"], False),
    # (4) A missing key that another connection creates.
    ("A", ["WATCH", "w4"], False),
    ("X", ["SET", "w4", "1"], False),
    ("A", ["MULTI"], False),
    ("A", ["SET", "w4", "2"], False),
    ("A", ["EXEC"], False),
    ("A", ["GET", "w4"], False),
    # (5) UNWATCH forgets the key.
    ("A", ["SET", "w5", "0"], False),
    ("A", ["WATCH", "w5"], False),
    ("A", ["UNWATCH"], False),
    ("X", ["SET", "w5", "1"], False),
    ("A", ["MULTI"], False),
    ("A", ["INCR", "w5"], False),
    ("A", ["EXEC"], False),
    # (6) DISCARD does too.
    ("A", ["SET", "w6", "0"], False),
    ("A", ["WATCH", "w6"], False),
    ("A", ["MULTI"], False),
    ("A", ["INCR", "w6"], False),
    ("A", ["DISCARD"], False),
    ("X", ["SET", "w6", "1"], False),
    ("A", ["MULTI"], False),
    ("A", ["INCR", "w6"], False),
    ("A", ["EXEC"], False),
    # (7) And EXEC, whether it ran or aborted.
    ("A", ["SET", "w7", "0"], False),
    ("A", ["WATCH", "w7"], False),
    ("A", ["MULTI"], False),
    ("A", ["INCR", "w7"], False),
    ("A", ["EXEC"], False),
    ("X", ["SET", "w7", "5"], False),
    ("A", ["MULTI"], False),
    ("A", ["INCR", "w7"], False),
    ("A", ["EXEC"], False),
    ("A", ["WATCH", "w7"], False),
    ("X", ["SET", "w7", "9"], False),
    ("A", ["MULTI"], False),
    ("A", ["INCR", "w7"], False),
    ("A", ["EXEC"], False),
    ("X", ["SET", "w7", "20"], False),
    ("A", ["MULTI"], False),
    ("A", ["INCR", "w7"], False),
    ("A", ["EXEC"], False),
    # (8) Several keys, in one WATCH and in two; one key touched is enough.
    ("A", ["WATCH", "w8a", "w8b"], False),
    ("X", ["SET", "w8b", "1"], False),
    ("A", ["MULTI"], False),
    ("A", ["PING"], False),
    ("A", ["EXEC"], False),
    ("A", ["WATCH", "w8c"], False),
    ("A", ["WATCH", "w8d"], False),
    ("X", ["SET", "w8c", "1"], False),
    ("A", ["MULTI"], False),
    ("A", ["PING"], False),
    ("A", ["EXEC"], False),
    ("A", ["WATCH", "w8e", "w8f"], False),
    ("A", ["WATCH", "w8g", "w8e"], False),
    ("X", ["SET", "w8h", "1"], False),
    ("A", ["MULTI"], False),
    ("A", ["PING"], False),
    ("A", ["EXEC"], False),
]
for _key, _setup, _command in MODIFICATIONS:
    SCENARIO += modified(_key, _setup, _command)
SCENARIO += [
    # A key that expired before WATCH: its deletion (by raftlock through the log) does not abort.
    ("A", ["SET", "e:stale", "v", "PX", "100"], False),
    ("A", ["WATCH", "e:stale"], False, 0.7),
    ("A", ["MULTI"], False),
    ("A", ["GET", "e:stale"], False),
    ("A", ["EXEC"], False),
    # A key that expires while watched aborts (Redis 6.0.9 and later).
    ("A", ["SET", "e:live", "v", "PX", "700"], False),
    ("A", ["WATCH", "e:live"], False),
    ("A", ["MULTI"], False, 1.2),
    ("A", ["GET", "e:live"], False),
    ("A", ["EXEC"], False),
    # Connection commands queued: their replies come in EXEC's array.
    ("A", ["MULTI"], False),
    ("A", ["PING"], False),
    ("A", ["PING", "hello"], False),
    ("A", ["ECHO", "echo me"], False),
    ("A", ["CLIENT", "SETNAME", "txn-a"], False),
    ("A", ["CLIENT", "GETNAME"], False),
    ("A", ["SELECT", "0"], False),
    ("A", ["EXEC"], False),
    ("A", ["CLIENT", "GETNAME"], False),
    # RESET inside MULTI discards the transaction and the watches, and makes B RESP2 again.
    ("B", ["SET", "r", "0"], False),
    ("B", ["WATCH", "r"], False),
    ("B", ["MULTI"], False),
    ("B", ["INCR", "r"], False),
    ("B", ["RESET"], False),
    ("B", ["EXEC"], False),
    ("B", ["GET", "r"], False),
    ("X", ["SET", "r", "5"], False),
    ("B", ["MULTI"], False),
    ("B", ["GET", "r"], False),
    ("B", ["GET", "r:missing"], False),
    ("B", ["EXEC"], False),
    # SUBSCRIBE inside MULTI: EXEC's array holds its confirmation, then A is subscribed.
    ("A", ["MULTI"], False),
    ("A", ["SUBSCRIBE", "ch"], False),
    ("A", ["EXEC"], False),
    ("A", ["PING"], False),
    ("X", ["PUBLISH", "ch", "to A"], True),
    ("A", ["UNSUBSCRIBE"], False),
    ("A", ["GET", "r"], False),
    # QUIT inside MULTI is not queued: it answers and closes the connection. X's last step.
    ("X", ["MULTI"], False),
    ("X", ["SET", "q", "1"], False),
    ("X", ["QUIT"], False),
    ("B", ["GET", "q"], False),
]


def main():
    real, nodes = int(sys.argv[1]), [int(p) for p in sys.argv[2:5]]
    reference = resp_scenario.run(SCENARIO, {"A": real, "B": real, "X": real})
    failures = 0
    for i in range(3):
        here, other = nodes[i], nodes[(i + 1) % 3]
        got = resp_scenario.run(SCENARIO, {"A": here, "B": here, "X": other}, reference)
        mismatches = resp_scenario.mismatches(SCENARIO, reference, got, f"node {i + 1}")
        if mismatches == 0:
            print(f"ok: transactions scenario through node {i + 1} ({len(SCENARIO)} steps, the "
                  f"writer X on node {(i + 1) % 3 + 1})")
        failures += mismatches
    execs = [reference[step][conn] for step, (conn, argv, *_rest) in enumerate(SCENARIO)
             if argv[0] == "EXEC"]
    aborted = sum(reply in (b"*-1\r\n", b"_\r\n") for reply in execs)
    ran = sum(reply.startswith(b"*") and reply != b"*-1\r\n" for reply in execs)
    if aborted < 5 or ran < 5:
        print(f"FAIL: the reference aborted {aborted} EXECs and ran {ran}: "
              f"the scenario tests nothing")
        failures += 1
    if failures:
        print(f"transactions_compat: {failures} failure(s)")
        sys.exit(1)


if __name__ == "__main__":
    main()
