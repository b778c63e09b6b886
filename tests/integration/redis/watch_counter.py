#!/usr/bin/python3
"""Optimistic locking with WATCH/MULTI/EXEC, as Redis documents it, through redis-py.

Many processes, each connected to a node in turn, increment one counter with redis-py's classic
loop: WATCH the key, read it, MULTI, write the value read plus one, EXEC, and start again when
EXEC aborts (WatchError) because another client changed the key in between. The same transaction
appends "process:value" to a log list, so the history can be checked, not only the total: the
counter must end at processes x increments, and the log must hold every value from 1 to that
exactly once (two transactions that both ran after reading the same value would write the same
one). The processes must have collided (some WatchError), or the run proved nothing.

Then the same read-modify-write without WATCH, for information only: the updates it loses are
what WATCH prevents.

    watch_counter.py PORT [PORT ...] [--processes N] [--increments M]
"""
import argparse
import collections
import multiprocessing
import sys
import time

import redis

COUNTER, LOG, UNWATCHED = "watch-counter", "watch-log", "unwatched-counter"


def watched_worker(process, port, increments, start, retries):
    r = redis.Redis(port=port, socket_timeout=15)
    start.wait()
    for _ in range(increments):
        with r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(COUNTER)
                    value = int(pipe.get(COUNTER) or 0)
                    pipe.multi()
                    pipe.set(COUNTER, value + 1)
                    pipe.rpush(LOG, f"{process}:{value + 1}")
                    pipe.execute()
                    break
                except redis.WatchError:
                    retries[process] += 1
                    continue


def unwatched_worker(process, port, increments, start, retries):
    r = redis.Redis(port=port, socket_timeout=15)
    start.wait()
    for _ in range(increments):
        with r.pipeline() as pipe:
            value = int(r.get(UNWATCHED) or 0)
            pipe.multi()
            pipe.set(UNWATCHED, value + 1)
            pipe.execute()


def run(worker, args):
    """Runs `worker` in every process at once; returns each one's WatchError count, and the time."""
    start = multiprocessing.Barrier(args.processes + 1)
    retries = multiprocessing.Array("l", args.processes)
    procs = [
        multiprocessing.Process(
            target=worker,
            args=(p, args.ports[p % len(args.ports)], args.increments, start, retries))
        for p in range(args.processes)
    ]
    for p in procs:
        p.start()
    start.wait()
    began = time.monotonic()
    for p in procs:
        p.join()
    elapsed = time.monotonic() - began
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    if failed:
        raise SystemExit(f"FAIL: {len(failed)} worker(s) failed")
    return list(retries), elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ports", type=int, nargs="+")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--increments", type=int, default=60)
    args = parser.parse_args()
    total = args.processes * args.increments

    r = redis.Redis(port=args.ports[0], decode_responses=True)
    r.delete(COUNTER, LOG, UNWATCHED)
    retries, elapsed = run(watched_worker, args)
    failures = []
    counter = int(r.get(COUNTER) or 0)
    if counter != total:
        failures.append(f"the counter is {counter}, not {total}")
    log = r.lrange(LOG, 0, -1)
    if len(log) != total:
        failures.append(f"the log holds {len(log)} transactions, not {total}")
    entries = [entry.split(":") for entry in log]
    values = collections.Counter(int(value) for _, value in entries)
    if sorted(values) != list(range(1, total + 1)) or len(values) != len(log):
        again = sorted(v for v, n in values.items() if n > 1)
        missing = sorted(set(range(1, total + 1)) - set(values))
        failures.append(f"the log's values are not 1..{total} once each: written more than once "
                        f"{again[:10]}, never {missing[:10]}")
    per_process = collections.Counter(process for process, _ in entries)
    for p in range(args.processes):
        if per_process[str(p)] != args.increments:
            failures.append(f"process {p} logged {per_process[str(p)]} transactions, not "
                            f"{args.increments}")
    print(f"watch_counter: {args.processes} processes x {args.increments} increments = {counter}, "
          f"{sum(retries)} WatchErrors, {elapsed:.1f} s ({len(args.ports)} ports)")
    if sum(retries) == 0:
        failures.append("no transaction was aborted: the processes never collided, the run proved "
                        "nothing")

    r.delete(UNWATCHED)
    _, elapsed = run(unwatched_worker, args)
    lost = total - int(r.get(UNWATCHED) or 0)
    print(f"without WATCH: {lost} of {total} updates lost, {elapsed:.1f} s (for information)")

    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
