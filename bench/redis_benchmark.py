#!/usr/bin/env python3
"""redis-benchmark against one Redis-speaking endpoint, as bench/compare.sh's redis.benchmark
scenario: one record per command in raftlock-bench's JSON shape, appended to --json.

    bench/redis_benchmark.py --system NAME --endpoint HOST:PORT [--clients 50]
        [--requests 100000] [--tests set,get,incr] --json OUT/results.jsonl

redis-benchmark counts a reply as done whatever it says, so its figures alone could hide a server
that refused every command. The run therefore deletes the keys the commands use, runs one command
at a time in the order given, and checks after each what it must have left: the key SET wrote holds
a value of SET's payload size, the counter INCR incremented holds exactly --requests, LPUSH's list
holds --requests items and LPOP (after it) emptied it, SADD's set and ZADD's sorted set hold their
one member (redis-benchmark's member name carries no random part without -r). `publish` (which
redis-benchmark has no -t test for) runs `PUBLISH bench:channel hello` with a subscriber on the
same endpoint, which must receive every message. A record whose check failed carries errors 1 and
says why.
"""
import argparse
import csv
import io
import json
import socket
import subprocess
import sys
import threading
import time

# redis-benchmark's keys without -r: the placeholder stays in the name.
SET_KEY = "key:__rand_int__"
COUNTER_KEY = "counter:__rand_int__"
SET_SIZE = 3  # -d 3, the default payload (random letters)
LIST_KEY = "mylist"
SET_MEMBERS_KEY = "myset"
ZSET_KEY = "myzset"
CHANNEL = "bench:channel"
MESSAGE_FRAME = b"*3\r\n$7\r\nmessage\r\n$13\r\nbench:channel\r\n$5\r\nhello\r\n"


class Subscriber(threading.Thread):
    """A RESP2 connection subscribed to CHANNEL, counting the messages it reads."""

    def __init__(self, host, port):
        super().__init__(daemon=True)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$13\r\nbench:channel\r\n")
        confirmation = b"*3\r\n$9\r\nsubscribe\r\n$13\r\nbench:channel\r\n:1\r\n"
        got = b""
        while len(got) < len(confirmation):
            got += self.sock.recv(len(confirmation) - len(got))
        if got != confirmation:
            raise RuntimeError(f"SUBSCRIBE answered {got!r}")
        self.received = 0
        self.stopped = False

    def run(self):
        pending = b""
        while not self.stopped:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                return
            pending += chunk
            whole = len(pending) // len(MESSAGE_FRAME)
            if pending[:whole * len(MESSAGE_FRAME)] != MESSAGE_FRAME * whole:
                raise RuntimeError(f"the subscriber read something else: {pending[:100]!r}")
            self.received += whole
            pending = pending[whole * len(MESSAGE_FRAME):]

    def wait_for(self, count, seconds):
        deadline = time.monotonic() + seconds
        while self.received < count and time.monotonic() < deadline:
            time.sleep(0.05)
        self.stopped = True
        self.sock.close()
        return self.received


def redis_cli(host, port, *args):
    done = subprocess.run(["redis-cli", "-h", host, "-p", str(port), "--no-raw", *args],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
    return done.stdout.strip()


def run_benchmark(host, port, clients, requests, tests):
    cmd = ["redis-benchmark", "-h", host, "-p", str(port), "-c", str(clients), "-n",
           str(requests), "--csv"]
    cmd += ["PUBLISH", CHANNEL, "hello"] if tests == "publish" else ["-t", tests]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"redis-benchmark exited {done.returncode}: {done.stderr.strip()[:200]}")
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    if not rows:
        raise RuntimeError(f"redis-benchmark printed no results: {done.stdout.strip()[:200]}")
    return rows


def check(host, port, test, requests):
    """Why the state the command left is wrong, or "" when it is right."""
    if test == "INCR":
        got = redis_cli(host, port, "GET", COUNTER_KEY)
        want = f'"{requests}"'
        return "" if got == want else f"{COUNTER_KEY} is {got}, not {want}: not one increment per INCR"
    if test == "SET":
        got = redis_cli(host, port, "STRLEN", SET_KEY)
        want = f"(integer) {SET_SIZE}"
        return "" if got == want else f"STRLEN {SET_KEY} is {got}, not {want}, after SET"
    expected = {
        "LPUSH": (("LLEN", LIST_KEY), requests, "not one item per LPUSH"),
        "LPOP": (("LLEN", LIST_KEY), 0, "LPOP after LPUSH left items"),
        "SADD": (("SCARD", SET_MEMBERS_KEY), 1, "SADD of one member"),
        "ZADD": (("ZCARD", ZSET_KEY), 1, "ZADD of one member"),
    }
    if test in expected:
        command, count, what = expected[test]
        got = redis_cli(host, port, *command)
        want = f"(integer) {count}"
        return "" if got == want else f"{' '.join(command)} is {got}, not {want}: {what}"
    return ""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--system", required=True)
    p.add_argument("--endpoint", required=True, help="HOST:PORT")
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--requests", type=int, default=100000)
    p.add_argument("--tests", default="set,get,incr,lpush,lpop,sadd,zadd,publish",
                   help="run one at a time, in this order (lpop after lpush)")
    p.add_argument("--json", required=True)
    args = p.parse_args()
    host, port = args.endpoint.rsplit(":", 1)
    for key in (SET_KEY, COUNTER_KEY, LIST_KEY, SET_MEMBERS_KEY, ZSET_KEY):
        redis_cli(host, port, "DEL", key)
    failed = False
    with open(args.json, "a") as out:
        for name in args.tests.split(","):
            subscriber = Subscriber(host, port) if name == "publish" else None
            if subscriber:
                subscriber.start()
            rows = run_benchmark(host, port, args.clients, args.requests, name)
            if len(rows) != 1:
                raise RuntimeError(f"redis-benchmark -t {name}: {len(rows)} results, not one")
            row = rows[0]
            test = row["test"].split(" ")[0]
            why = check(host, port, test, args.requests)
            if subscriber:
                received = subscriber.wait_for(args.requests, 30)
                if received != args.requests:
                    why = f"the subscriber received {received} of {args.requests} messages"
            failed = failed or bool(why)
            ms = {k: float(row[f"{k}_latency_ms"]) for k in ("p50", "p99", "max")}
            record = {
                "system": args.system, "scenario": f"redis-benchmark {test}",
                "clients": args.clients, "ops": args.requests, "ops_per_s": float(row["rps"]),
                "rate_per_s": 0, "errors": 1 if why else 0, "first_error": why,
                # redis-benchmark prints no p99.9; its max stands in that column.
                "latency_us": {"p50": ms["p50"] * 1000, "p99": ms["p99"] * 1000,
                               "p999": ms["max"] * 1000},
                "figures": {"requests": args.requests},
                "note": "redis-benchmark; the p99.9 column is its max",
            }
            out.write(json.dumps(record) + "\n")
            print(f"redis-benchmark {args.system} {test} -c {args.clients}: "
                  f"{record['ops_per_s']:.0f}/s p50 {ms['p50']:.3f} ms p99 {ms['p99']:.3f} ms"
                  + (f"  CHECK FAILED: {why}" if why else ""), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
