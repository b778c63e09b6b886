#!/usr/bin/python3
"""Lost-update tests of the SQL mode's locking techniques with psycopg2 and psycopg 3 (issue 9).

N processes, spread over the nodes and alternating between psycopg2 (simple queries, parameters
quoted by the client) and psycopg 3 (extended protocol, parameters bound by the server), each
increment one counter M times under each technique. Every increment is a read-modify-write —
read v, then write back the value read plus one — so a lock that let two holders in at once would
lose updates. The final counter must be N x M exactly for every technique:

  advisory     pg_advisory_lock(k); SELECT v; UPDATE SET v = read + 1; pg_advisory_unlock(k)
  for_update   BEGIN; SELECT v ... FOR UPDATE; UPDATE SET v = read + 1; COMMIT
  optimistic   SELECT v, version; UPDATE SET v = read + 1, version = version + 1
               WHERE version = read version; again on UPDATE 0
  lock_table   INSERT INTO locks ... ON CONFLICT DO NOTHING RETURNING until a row comes back;
               read-modify-write; DELETE FROM locks WHERE name = ... AND owner = me
  get_lock     GET_LOCK('counter', 30); read-modify-write; RELEASE_LOCK('counter')

Then, as a negative control that shows the read-modify-write can lose updates at all, the same
loop without any lock ("none"): its lost updates are printed, not checked (they depend on timing).

    counter.py PORT [PORT ...] [--processes N] [--increments M] [--techniques a,b,...]
               [--user U --dbname D]   (a real PostgreSQL needs its own user and database)
"""
import argparse
import multiprocessing
import random
import sys
import time

import psycopg
import psycopg2

TECHNIQUES = ["advisory", "for_update", "optimistic", "lock_table", "get_lock"]
# Any user and database name do on raftlock; main() sets a real PostgreSQL's. Worker processes are
# forked after that, so they see it.
CONNECT = {"host": "127.0.0.1", "user": "counter", "dbname": "raftlock", "connect_timeout": 10}
ADVISORY_KEY = 7001
# A worker that cannot get the lock-table row in this many tries fails instead of spinning.
LOCK_TABLE_TRIES_MAX = 20000
OPTIMISTIC_TRIES_MAX = 20000


class Session:
    """One connection with either driver behind the same three calls."""

    def __init__(self, driver, port):
        self.driver = driver
        if driver == "psycopg2":
            self.conn = psycopg2.connect(port=port, **CONNECT)
            self.conn.autocommit = True
        else:
            self.conn = psycopg.connect(port=port, autocommit=True, **CONNECT)

    def run(self, sql, params=()):
        """Runs one statement; returns (rows or None, rowcount)."""
        cur = self.conn.cursor()
        cur.execute(sql, params)
        rows = cur.fetchall() if cur.description is not None else None
        return rows, cur.rowcount

    def one(self, sql, params=()):
        rows, _ = self.run(sql, params)
        assert rows is not None and len(rows) == 1, f"{sql}: expected one row, got {rows}"
        return rows[0]

    def close(self):
        self.conn.close()


def increment_advisory(s, name, me):
    s.run("SELECT pg_advisory_lock(%s)", (ADVISORY_KEY,))
    (v,) = s.one("SELECT v FROM counters WHERE name = %s", (name,))
    s.run("UPDATE counters SET v = %s WHERE name = %s", (v + 1, name))
    (released,) = s.one("SELECT pg_advisory_unlock(%s)", (ADVISORY_KEY,))
    assert released is True, f"pg_advisory_unlock returned {released}"


def increment_for_update(s, name, me):
    s.run("BEGIN")
    (v,) = s.one("SELECT v FROM counters WHERE name = %s FOR UPDATE", (name,))
    _, count = s.run("UPDATE counters SET v = %s WHERE name = %s", (v + 1, name))
    assert count == 1, f"UPDATE under FOR UPDATE changed {count} rows"
    s.run("COMMIT")


def increment_optimistic(s, name, me):
    for _ in range(OPTIMISTIC_TRIES_MAX):
        v, version = s.one("SELECT v, version FROM counters WHERE name = %s", (name,))
        _, count = s.run(
            "UPDATE counters SET v = %s, version = version + 1 WHERE name = %s AND version = %s",
            (v + 1, name, version))
        if count == 1:
            return 1
        assert count == 0, f"optimistic UPDATE changed {count} rows"
    raise AssertionError(f"optimistic: no write won in {OPTIMISTIC_TRIES_MAX} tries")


def increment_lock_table(s, name, me):
    lock = f"lock:{name}"
    for tries in range(1, LOCK_TABLE_TRIES_MAX + 1):
        rows, _ = s.run("INSERT INTO locks (name, owner) VALUES (%s, %s) ON CONFLICT DO NOTHING "
                        "RETURNING owner", (lock, me))
        if rows:
            assert rows == [(me,)], f"lock table: RETURNING gave {rows}"
            break
        # Polling is the lock table's nature; a short random pause keeps the pollers apart.
        time.sleep(random.uniform(0.001, 0.004))
    else:
        raise AssertionError(f"lock table: not acquired in {LOCK_TABLE_TRIES_MAX} tries")
    (v,) = s.one("SELECT v FROM counters WHERE name = %s", (name,))
    s.run("UPDATE counters SET v = %s WHERE name = %s", (v + 1, name))
    rows, _ = s.run("DELETE FROM locks WHERE name = %s AND owner = %s RETURNING owner", (lock, me))
    assert rows == [(me,)], f"lock table: the release found {rows}"
    return tries


def increment_get_lock(s, name, me):
    (got,) = s.one("SELECT GET_LOCK(%s, 30)", ("counter",))
    assert got == 1, f"GET_LOCK returned {got}"
    (v,) = s.one("SELECT v FROM counters WHERE name = %s", (name,))
    s.run("UPDATE counters SET v = %s WHERE name = %s", (v + 1, name))
    (released,) = s.one("SELECT RELEASE_LOCK(%s)", ("counter",))
    assert released == 1, f"RELEASE_LOCK returned {released}"


def increment_none(s, name, me):
    (v,) = s.one("SELECT v FROM counters WHERE name = %s", (name,))
    s.run("UPDATE counters SET v = %s WHERE name = %s", (v + 1, name))


INCREMENT = {
    "none": increment_none,
    "advisory": increment_advisory,
    "for_update": increment_for_update,
    "optimistic": increment_optimistic,
    "lock_table": increment_lock_table,
    "get_lock": increment_get_lock,
}


def worker(index, technique, port, increments, start):
    driver = "psycopg2" if index % 2 == 0 else "psycopg3"
    s = Session(driver, port)
    me = f"w{index}-{driver}"
    start.wait()
    for _ in range(increments):
        INCREMENT[technique](s, technique, me)
    s.close()


def setup(port):
    s = Session("psycopg3", port)
    s.run("DROP TABLE IF EXISTS counters")
    s.run("DROP TABLE IF EXISTS locks")
    s.run("CREATE TABLE counters (name text PRIMARY KEY, v bigint NOT NULL, "
          "version bigint NOT NULL DEFAULT 0)")
    s.run("CREATE TABLE locks (name text PRIMARY KEY, owner text NOT NULL)")
    for technique in INCREMENT:
        s.run("INSERT INTO counters (name, v) VALUES (%s, 0)", (technique,))
    s.close()


def run_technique(technique, ports, processes, increments):
    start = multiprocessing.Barrier(processes + 1)
    procs = [
        multiprocessing.Process(target=worker,
                                args=(i, technique, ports[i % len(ports)], increments, start))
        for i in range(processes)
    ]
    for p in procs:
        p.start()
    start.wait(timeout=60)
    began = time.monotonic()
    for p in procs:
        p.join(timeout=240)
    elapsed = time.monotonic() - began
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    if failed:
        print(f"FAIL: {technique}: {len(failed)} worker(s) failed (exit codes {failed})",
              file=sys.stderr)
        return False
    s = Session("psycopg2", ports[-1])
    v, version = s.one("SELECT v, version FROM counters WHERE name = %s", (technique,))
    (held,) = s.one("SELECT count(*) FROM locks")
    s.close()
    want = processes * increments
    if technique == "none":
        print(f"negative control, no lock: lost {want - v} of {want} updates"
              f"{'' if v < want else ' (none lost this time: the timing did not overlap)'}")
        return True
    print(f"{technique}: counter {v} of {want} after {elapsed:.1f} s "
          f"({want / elapsed:.0f} increments/s, {processes} processes on {len(ports)} nodes)")
    ok = True
    if v != want:
        print(f"FAIL: {technique}: lost updates: {want - v}", file=sys.stderr)
        ok = False
    if technique == "optimistic" and version != want:
        print(f"FAIL: optimistic: version {version}, want {want}", file=sys.stderr)
        ok = False
    if held != 0:
        print(f"FAIL: {technique}: {held} lock-table rows left", file=sys.stderr)
        ok = False
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ports", type=int, nargs="+")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--increments", type=int, default=60)
    parser.add_argument("--techniques", default=",".join(TECHNIQUES + ["none"]))
    parser.add_argument("--user", default=CONNECT["user"])
    parser.add_argument("--dbname", default=CONNECT["dbname"])
    args = parser.parse_args()
    CONNECT.update(user=args.user, dbname=args.dbname)
    techniques = args.techniques.split(",")
    for technique in techniques:
        if technique not in INCREMENT:
            parser.error(f"unknown technique {technique}")
    setup(args.ports[0])
    ok = all([run_technique(t, args.ports, args.processes, args.increments) for t in techniques])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
