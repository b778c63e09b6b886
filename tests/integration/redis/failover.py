#!/usr/bin/python3
"""Kill -9 the leader while redis-py clients work (issue 8): no acknowledged write may be lost.

Each worker loops: take a redis-py Lock, INCR a counter, SET a key of its own, release. Any
error (a connection killed with its node, TRYAGAIN while there is no leader) moves the worker to
the next node; an INCR that failed may or may not have applied. The main process kills the leader
with SIGKILL after a while (scripts/cluster.sh kill), restarts it later, and at the end checks:
  - every SET that was acknowledged is there (and on every node);
  - acknowledged INCRs <= counter <= acknowledged + failed INCRs.
Each --node-workers command runs beside them through the same kill, with SECONDS PORTS...
appended: failover_test.sh passes ioredis + redlock workers (failover_redlock.js) and the locks
whose waiters wake on a release message, simple-redis-mutex and a Redisson-style lock
(failover_pubsub.js). Each checks its own mutual exclusion and progress and exits non-zero on a
failure; its last line of standard output is JSON: its acknowledged and failed INCRs of the shared
counter and its acknowledged SETs join the checks above, and "counters" (optional) names counters
of its own, {KEY: {"acked": n, "failed": n, "late": n}}, each checked on every node likewise:
acked <= KEY <= acked + failed + late (late: answered OK, but after the lock's lease ran out).

    failover.py --cluster "CMD" [--node-workers "NODE SCRIPT"]... PORT PORT PORT
"""
import argparse
import json
import multiprocessing
import subprocess
import sys
import time

import redis


def worker(index, ports, seconds, results):
    acked_incr = failed_incr = 0
    acked_keys = []
    node = index % len(ports)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        r = redis.Redis(port=ports[node], socket_timeout=15, socket_connect_timeout=2)
        try:
            with r.lock("failover-lock", timeout=20, blocking_timeout=30, sleep=0.01):
                try:
                    r.incr("counter")
                    acked_incr += 1
                except redis.RedisError:
                    failed_incr += 1
                    raise
                n += 1
                key = f"w:{index}:{n}"
                r.set(key, "x")
                acked_keys.append(key)
        except redis.RedisError:
            node = (node + 1) % len(ports)
            time.sleep(0.05)
    results.put((acked_incr, failed_incr, acked_keys))


def leader_slot(cluster_cmd):
    out = subprocess.run(cluster_cmd + ["status"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "role=leader" in line:
            return line.split()[1].rstrip(":")
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", required=True, help="the scripts/cluster.sh command line")
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--node-workers", action="append", default=[],
                        help="a command run with SECONDS PORTS... appended (repeatable)")
    parser.add_argument("ports", type=int, nargs="+")
    args = parser.parse_args()
    cluster = args.cluster.split()

    nodes = [subprocess.Popen(command.split() + [str(args.seconds)] + [str(p) for p in args.ports],
                              stdout=subprocess.PIPE, text=True) for command in args.node_workers]

    results = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=worker, args=(i, args.ports, args.seconds, results))
             for i in range(args.workers)]
    for p in procs:
        p.start()
    time.sleep(args.seconds / 4)
    victim = leader_slot(cluster)
    if victim is None:
        print("FAIL: no leader to kill", file=sys.stderr)
        for node in nodes:
            node.kill()
        return 1
    subprocess.run(cluster + ["kill", victim], check=True, capture_output=True)
    killed_at = time.monotonic()
    print(f"killed the leader, node {victim}")
    time.sleep(args.seconds / 4)
    subprocess.run(cluster + ["start", victim], check=True, capture_output=True)
    print(f"restarted node {victim} after {time.monotonic() - killed_at:.1f} s")

    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join()
    status = 0
    counters = {}  # the node workers' own counters: key -> [acked, failed, late]
    for command, node in zip(args.node_workers, nodes):
        out, _ = node.communicate(timeout=120)
        if node.returncode != 0:
            print(f"FAIL: {command} exited {node.returncode}", file=sys.stderr)
            status = 1
        else:
            theirs = json.loads(out.strip().splitlines()[-1])
            outcomes.append((theirs["acked_incr"], theirs["failed_incr"], theirs["acked_keys"]))
            for key, c in theirs.get("counters", {}).items():
                counters[key] = [c["acked"], c["failed"], c["late"]]
    acked = sum(o[0] for o in outcomes)
    failed = sum(o[1] for o in outcomes)
    keys = [k for o in outcomes for k in o[2]]

    # Reads are linearizable on every node: each must have every acknowledged key. The restarted
    # node may still be catching up; a read there waits for ReadIndex, so it sees them too.
    for port in args.ports:
        r = redis.Redis(port=port, socket_timeout=15)
        for attempt in range(50):
            try:
                present = r.exists(*keys) if keys else 0
                counter = int(r.get("counter") or 0)
                values = {key: int(r.get(key) or 0) for key in counters}
                break
            except redis.RedisError:
                time.sleep(0.2)
        else:
            print(f"FAIL: node on port {port} never answered", file=sys.stderr)
            return 1
        if present != len(keys):
            print(f"FAIL: port {port}: {len(keys) - present} acknowledged SETs lost",
                  file=sys.stderr)
            status = 1
        if not acked <= counter <= acked + failed:
            print(f"FAIL: port {port}: counter {counter} outside [{acked}, {acked + failed}]",
                  file=sys.stderr)
            status = 1
        for key, (k_acked, k_failed, k_late) in counters.items():
            if not k_acked <= values[key] <= k_acked + k_failed + k_late:
                print(f"FAIL: port {port}: {key} {values[key]} outside [{k_acked}, "
                      f"{k_acked + k_failed + k_late}] ({k_acked} SETs acknowledged within their "
                      f"lock's lease, {k_failed} failed, {k_late} answered after it)",
                      file=sys.stderr)
                status = 1
    own = "".join(f"; {key} {values[key]}: {a} acknowledged, {f} failed, {late} late"
                  for key, (a, f, late) in counters.items())
    print(f"{acked} acknowledged INCRs, {failed} failed, counter {counter}; "
          f"{len(keys)} acknowledged SETs all present on {len(args.ports)} nodes{own}"
          if status == 0 else "failover: FAILED")
    return status


if __name__ == "__main__":
    sys.exit(main())
