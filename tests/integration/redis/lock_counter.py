#!/usr/bin/python3
"""redis-py's Lock against raftlock's Redis ports (issue 8).

First the Lock API itself: acquire, a second acquire that must fail, extend, reacquire, release,
and releasing a lock that is no longer ours. These go through SET NX PX and redis-py's Lua
scripts (EVALSHA, with SCRIPT LOAD on NOSCRIPT).

Then many processes, each connected to a different node, increment one counter under the lock,
with a read-modify-write that would lose updates without mutual exclusion. The final value must be
processes x increments.

    lock_counter.py PORT [PORT ...] [--processes N] [--increments M]
"""
import argparse
import multiprocessing
import sys
import time

import redis
from redis.exceptions import LockError, LockNotOwnedError


def check_api(port):
    r = redis.Redis(port=port)
    lock = r.lock("api-lock", timeout=5)
    assert lock.acquire(blocking=False), "a free lock was not granted"
    other = r.lock("api-lock", timeout=5)
    assert not other.acquire(blocking=False), "a held lock was granted again"
    assert lock.extend(10), "extend failed"
    ttl = r.pttl("api-lock")
    assert 10000 < ttl <= 15000, f"extend: pttl {ttl}"
    assert lock.reacquire(), "reacquire failed"
    ttl = r.pttl("api-lock")
    assert 4000 < ttl <= 5000, f"reacquire: pttl {ttl}"
    assert lock.owned(), "owned() says no"
    lock.release()
    assert not lock.owned()
    try:
        lock.release()
    except LockError:
        pass
    else:
        raise AssertionError("releasing an unlocked lock did not raise")
    # A lock that expired and was taken by another owner cannot be released or extended by us.
    short = r.lock("short-lock", timeout=0.2)
    assert short.acquire(blocking=False)
    time.sleep(0.5)
    thief = r.lock("short-lock", timeout=5)
    assert thief.acquire(blocking=False), "an expired lock was not granted"
    try:
        short.extend(1)
    except LockNotOwnedError:
        pass
    else:
        raise AssertionError("extending a lock taken by another owner did not raise")
    try:
        short.release()
    except LockNotOwnedError:
        pass
    else:
        raise AssertionError("releasing a lock taken by another owner did not raise")
    thief.release()


def worker(port, increments, errors):
    r = redis.Redis(port=port, socket_timeout=15)
    for _ in range(increments):
        with r.lock("counter-lock", timeout=10, blocking_timeout=60, sleep=0.005):
            value = int(r.get("counter") or 0)
            r.set("counter", value + 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ports", type=int, nargs="+")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--increments", type=int, default=100)
    args = parser.parse_args()

    check_api(args.ports[0])
    print("ok: Lock acquire/extend/reacquire/release/not-owned")

    r = redis.Redis(port=args.ports[0])
    r.delete("counter")
    start = time.monotonic()
    procs = [
        multiprocessing.Process(
            target=worker, args=(args.ports[i % len(args.ports)], args.increments, None))
        for i in range(args.processes)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    elapsed = time.monotonic() - start
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    if failed:
        print(f"FAIL: {len(failed)} worker(s) failed", file=sys.stderr)
        return 1
    want = args.processes * args.increments
    got = int(r.get("counter"))
    print(f"counter {got} of {want} after {elapsed:.1f} s "
          f"({want / elapsed:.0f} locked increments/s, {len(args.ports)} nodes)")
    if got != want:
        print(f"FAIL: lost updates: {want - got}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
