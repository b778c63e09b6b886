#!/usr/bin/python3
"""Kill -9 the leader while psycopg2 clients run transactions and advisory-locked increments
(issue 9): nothing half-committed, no acknowledged COMMIT lost, no update lost under the lock.

Each worker loops over two operations, each on its connection's node:
  - a transaction: BEGIN; UPDATE a SET v = v + 1; INSERT INTO log VALUES (key); COMMIT;
  - an increment under an advisory lock: pg_advisory_lock(1); SELECT v FROM adv; UPDATE adv SET
    v = <read + 1>; pg_advisory_unlock(1) — a read-modify-write that loses updates if two
    sessions ever hold the lock at once.
Any error — the connection dropped with its node, 57P03 while there is no leader, 08006 when the
outcome is unknown — closes the connection (which ends the session: its locks and transaction
go) and the worker reconnects to the next node. A COMMIT or an UPDATE of adv that failed may or
may not have been applied. The main process kills the leader with SIGKILL (scripts/cluster.sh
kill) after a while and restarts it 2 s later. At the end, on every node:
  - a.v equals the number of log rows (the two were in one transaction: nothing half-committed);
  - every acknowledged COMMIT's log row is there;
  - acknowledged COMMITs <= a.v <= acknowledged + unknown-outcome COMMITs;
  - acknowledged adv UPDATEs <= adv.v <= acknowledged + unknown-outcome ones.

    failover.py --cluster "CMD" PORT PORT PORT
"""
import argparse
import collections
import multiprocessing
import subprocess
import sys
import time

import psycopg2


def connect(port):
    conn = psycopg2.connect(host="127.0.0.1", port=port, user="failover", dbname="raftlock",
                            connect_timeout=3)
    conn.autocommit = True
    return conn


class Outcomes:
    def __init__(self):
        self.acked_keys = []
        self.acked_at = []  # time.monotonic() of each acknowledged COMMIT (system-wide clock)
        self.unknown_keys = []
        self.acked_adv = 0
        self.unknown_adv = 0
        self.errors = collections.Counter()
        self.moves = 0


def one_round(cur, key, out, stage):
    """A transaction, then an advisory-locked increment. `stage` says what is in flight."""
    stage[0] = "transaction"
    cur.execute("BEGIN")
    cur.execute("UPDATE a SET v = v + 1 WHERE id = 1")
    cur.execute("INSERT INTO log (key) VALUES (%s)", (key,))
    stage[0] = "commit"
    cur.execute("COMMIT")
    # A COMMIT of a failed block answers ROLLBACK; every earlier error raised, so it must not.
    assert cur.statusmessage == "COMMIT", f"COMMIT answered {cur.statusmessage}"
    out.acked_keys.append(key)
    out.acked_at.append(time.monotonic())
    stage[0] = "lock"
    cur.execute("SELECT pg_advisory_lock(1)")
    cur.execute("SELECT v FROM adv WHERE id = 1")
    (v,) = cur.fetchone()
    stage[0] = "adv-update"
    cur.execute("UPDATE adv SET v = %s WHERE id = 1", (v + 1,))
    assert cur.rowcount == 1
    out.acked_adv += 1
    stage[0] = "unlock"
    cur.execute("SELECT pg_advisory_unlock(1)")
    (released,) = cur.fetchone()
    assert released is True, f"pg_advisory_unlock returned {released}"


def worker(index, ports, seconds, results):
    out = Outcomes()
    node = index % len(ports)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        stage = ["connect"]
        conn = None
        try:
            conn = connect(ports[node])
            cur = conn.cursor()
            # Far longer than a failover and a session expiry: a wait that hits it is a bug.
            cur.execute("SET lock_timeout = '30s'")
            while time.monotonic() < deadline:
                n += 1
                one_round(cur, f"w{index}-{n}", out, stage)
        except psycopg2.Error as e:
            out.errors[e.pgcode or "connection"] += 1
            if stage[0] == "commit":
                out.unknown_keys.append(f"w{index}-{n}")
            elif stage[0] == "adv-update":
                out.unknown_adv += 1
            node = (node + 1) % len(ports)
            out.moves += 1
            time.sleep(0.05)
        finally:
            if conn is not None:
                conn.close()  # ends the session: its locks and open transaction go with it
    results.put(out.__dict__)


def leader_slot(cluster_cmd):
    out = subprocess.run(cluster_cmd + ["status"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "role=leader" in line:
            return line.split()[1].rstrip(":")
    return None


def read_state(port, keys):
    """(a.v, log rows, acknowledged keys missing, adv.v) read through one node, with retries
    while it catches up after its restart."""
    for _ in range(100):
        try:
            conn = connect(port)
            cur = conn.cursor()
            cur.execute("SELECT v FROM a WHERE id = 1")
            (a_v,) = cur.fetchone()
            cur.execute("SELECT key FROM log")
            logged = {k for (k,) in cur.fetchall()}
            cur.execute("SELECT v FROM adv WHERE id = 1")
            (adv_v,) = cur.fetchone()
            conn.close()
            return a_v, len(logged), [k for k in keys if k not in logged], adv_v
        except psycopg2.Error:
            time.sleep(0.2)
    raise AssertionError(f"the node on port {port} never answered")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", required=True, help="the scripts/cluster.sh command line")
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("ports", type=int, nargs="+")
    args = parser.parse_args()
    cluster = args.cluster.split()

    conn = connect(args.ports[0])
    cur = conn.cursor()
    for sql in ["DROP TABLE IF EXISTS a", "DROP TABLE IF EXISTS log", "DROP TABLE IF EXISTS adv",
                "CREATE TABLE a (id int PRIMARY KEY, v bigint NOT NULL)",
                "CREATE TABLE log (key text PRIMARY KEY)",
                "CREATE TABLE adv (id int PRIMARY KEY, v bigint NOT NULL)",
                "INSERT INTO a VALUES (1, 0)", "INSERT INTO adv VALUES (1, 0)"]:
        cur.execute(sql)
    conn.close()

    results = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=worker, args=(i, args.ports, args.seconds, results))
             for i in range(args.workers)]
    for p in procs:
        p.start()
    time.sleep(args.seconds / 4)
    victim = leader_slot(cluster)
    if victim is None:
        print("FAIL: no leader to kill", file=sys.stderr)
        return 1
    subprocess.run(cluster + ["kill", victim], check=True, capture_output=True)
    killed_at = time.monotonic()
    print(f"killed the leader, node {victim}")
    time.sleep(2)
    subprocess.run(cluster + ["start", victim], check=True, capture_output=True)
    print(f"restarted node {victim} after {time.monotonic() - killed_at:.1f} s")

    outcomes = [results.get(timeout=180) for _ in procs]
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        print("FAIL: a worker crashed (see above)", file=sys.stderr)
        return 1
    acked = [k for o in outcomes for k in o["acked_keys"]]
    unknown = sum(len(o["unknown_keys"]) for o in outcomes)
    acked_adv = sum(o["acked_adv"] for o in outcomes)
    unknown_adv = sum(o["unknown_adv"] for o in outcomes)
    errors = collections.Counter()
    for o in outcomes:
        errors.update(o["errors"])
    moves = sum(o["moves"] for o in outcomes)
    print(f"{len(acked)} acknowledged COMMITs, {unknown} unknown; {acked_adv} acknowledged "
          f"locked increments, {unknown_adv} unknown; {moves} reconnects after errors "
          f"{dict(sorted(errors.items()))}")

    after_kill = sum(1 for o in outcomes for t in o["acked_at"] if t > killed_at)
    print(f"{after_kill} COMMITs acknowledged after the kill")
    status = 0
    if after_kill == 0:
        print("FAIL: no COMMIT was acknowledged after the leader was killed", file=sys.stderr)
        status = 1
    if errors["connection"] == 0:
        print("FAIL: no client saw its connection drop: the kill did not reach any session",
              file=sys.stderr)
        status = 1
    for port in args.ports:
        a_v, logged, missing, adv_v = read_state(port, acked)
        if a_v != logged:
            print(f"FAIL: port {port}: a.v = {a_v} but {logged} log rows: half-committed",
                  file=sys.stderr)
            status = 1
        if missing:
            print(f"FAIL: port {port}: {len(missing)} acknowledged COMMITs lost, e.g. "
                  f"{missing[:5]}", file=sys.stderr)
            status = 1
        if not len(acked) <= a_v <= len(acked) + unknown:
            print(f"FAIL: port {port}: a.v = {a_v} outside [{len(acked)}, "
                  f"{len(acked) + unknown}]", file=sys.stderr)
            status = 1
        if not acked_adv <= adv_v <= acked_adv + unknown_adv:
            print(f"FAIL: port {port}: adv.v = {adv_v} outside [{acked_adv}, "
                  f"{acked_adv + unknown_adv}]: lost or phantom updates under the lock",
                  file=sys.stderr)
            status = 1
    if status == 0:
        print(f"failover: a.v = {a_v} = log rows, adv.v = {adv_v}, every acknowledged COMMIT "
              f"present on {len(args.ports)} nodes")
    return status


if __name__ == "__main__":
    sys.exit(main())
