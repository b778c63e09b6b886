#!/usr/bin/env python3
"""Pub/sub against a real redis-server, byte for byte, with the connections spread over the nodes.

One scenario of raw RESP commands on several connections (subscribers in RESP2 and RESP3, a
publisher beside them, another on a different node, a script that publishes) runs first against
redis-server, then once per raftlock node: subscribers and the first publisher on node i, the
second publisher on node i+1, so a message crosses nodes through the log. Every connection must
read exactly the bytes redis-server sent it at every step, except the steps marked `skip` (HELLO's
map names the server; PUBLISH answers how many receivers the answering node has, so a publisher on
another node, or inside a script, counts differently: docs/redis-mode.md), whose replies are
only read.

    pubsub_compat.py REAL_PORT NODE1_PORT NODE2_PORT NODE3_PORT
"""
import sys

import resp_scenario

# (connection, command, skip): the subscribers A (RESP2) and B (RESP3), the publisher P beside
# them, and X on another node.
SCENARIO = [
    ("P", ["FLUSHALL"], False),
    ("A", ["SUBSCRIBE", "lock:a", "lock:b"], False),
    ("A", ["PING"], False),
    ("A", ["PING", "still here"], False),
    ("A", ["GET", "k"], False),
    ("A", ["SUBSCRIBE"], False),
    ("B", ["HELLO", "3"], True),
    ("B", ["SUBSCRIBE", "lock:a"], False),
    # No two of B's patterns match one channel: Redis would deliver their pmessages in the order of
    # its pattern table, which hashes with a seed chosen at start.
    ("B", ["PSUBSCRIBE", "lock:*", "[o]th?r"], False),
    ("P", ["PUBLISH", "lock:a", "one"], False),
    ("X", ["PUBLISH", "lock:b", "two"], True),
    ("X", ["PUBLISH", "other", "three"], True),
    ("P", ["PUBLISH", "lock:a", "with\r\nCRLF and \x00 zero"], False),
    ("P", ["PUBSUB", "NUMSUB", "lock:a", "lock:b", "other"], False),
    ("P", ["PUBSUB", "NUMPAT"], False),
    ("P", ["PUBSUB", "CHANNELS", "*a"], False),
    ("P", ["PUBSUB", "CHANNELS", "x*"], False),
    ("B", ["GET", "k"], False),
    ("B", ["PING"], False),
    ("B", ["PUBLISH", "lock:a", "to myself"], False),
    ("X", ["EVAL", "return redis.call('publish', KEYS[1], ARGV[1])", "1", "lock:b", "scripted"],
     True),
    ("P", ["SET", "lock", "me"], False),
    ("P", ["EVAL", "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]); "
           "redis.call('publish', KEYS[2], 'released'); return 1 end return 0",
           "2", "lock", "lock:b", "me"], True),
    ("A", ["UNSUBSCRIBE", "lock:a", "nope"], False),
    ("A", ["UNSUBSCRIBE"], False),
    ("A", ["UNSUBSCRIBE"], False),
    ("A", ["PUNSUBSCRIBE"], False),
    ("A", ["GET", "lock"], False),
    ("B", ["PUNSUBSCRIBE", "lock:*"], False),
    ("P", ["PUBLISH", "lock:a", "four"], False),
    ("B", ["PUNSUBSCRIBE"], False),
    ("B", ["UNSUBSCRIBE"], False),
    ("P", ["PUBLISH", "lock:a", "five"], False),
    ("A", ["SUBSCRIBE", "x"], False),
    ("A", ["RESET"], False),
    ("A", ["PUBSUB", "NUMSUB", "x"], False),
    ("P", ["PUBLISH"], False),
    ("P", ["PUBLISH", "c"], False),
    ("P", ["PUBSUB"], False),
    ("P", ["PUBSUB", "FOO"], False),
    ("P", ["PUBSUB", "CHANNELS", "a", "b"], False),
    ("P", ["PUNSUBSCRIBE"], False),
]


def main():
    real, nodes = int(sys.argv[1]), [int(p) for p in sys.argv[2:5]]
    reference = resp_scenario.run(SCENARIO, {"A": real, "B": real, "P": real, "X": real})
    failures = 0
    for i in range(3):
        here, other = nodes[i], nodes[(i + 1) % 3]
        got = resp_scenario.run(SCENARIO, {"A": here, "B": here, "P": here, "X": other},
                                reference)
        mismatches = resp_scenario.mismatches(SCENARIO, reference, got, f"node {i + 1}")
        if mismatches == 0:
            print(f"ok: pub/sub scenario through node {i + 1} ({len(SCENARIO)} steps, the second "
                  f"publisher on node {(i + 1) % 3 + 1})")
        failures += mismatches
    messages = sum(r.count(b"message") for rec in reference for r in rec.values())
    if messages < 10:
        print(f"FAIL: the reference delivered only {messages} messages: the scenario tests nothing")
        failures += 1
    if failures:
        print(f"pubsub_compat: {failures} failure(s)")
        sys.exit(1)


if __name__ == "__main__":
    main()
