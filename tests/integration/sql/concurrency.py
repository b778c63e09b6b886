#!/usr/bin/python3
"""Waits between sessions against raftlock and a real PostgreSQL (issue 9): lock_timeout (55P03),
deadlocks (40P01), cancel (57014).

Each scenario runs on both servers — on raftlock with its sessions on different nodes — and
returns a transcript of outcomes that does not depend on timing: which statements succeeded,
which SQLSTATEs appeared, how many sessions were chosen as deadlock victims, the final rows. The
transcripts must be equal. What differs by design is left out: PostgreSQL looks for a deadlock
after deadlock_timeout (1 s) and may choose either session, raftlock fails the request that closes
the cycle at once; so the transcript says "one victim" and what the survivor saw, not who. Timing
is checked separately with generous bounds: a 500 ms lock_timeout fires after at least 400 ms and
well before 10 s.

    concurrency.py --real PORT PORT PORT PORT   (PostgreSQL's port, then raftlock's three)
"""
import argparse
import concurrent.futures
import difflib
import sys
import time

import psycopg2
import psycopg2.extensions

WAIT_S = 30  # the longest any statement here may take before the test gives up on it
TIMEOUT_MS = 500


class Session:
    """A psycopg2 connection in autocommit mode whose statements can run in the background."""

    def __init__(self, name, port, user, dbname):
        self.name = name
        self.conn = psycopg2.connect(host="127.0.0.1", port=port, user=user, dbname=dbname,
                                     connect_timeout=10)
        self.conn.autocommit = True
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    def run(self, sql):
        """Runs sql; returns "ok <rows or count>" or "error <SQLSTATE>", and the seconds taken."""
        began = time.monotonic()
        cur = self.conn.cursor()
        try:
            cur.execute(sql)
            if cur.description is not None:
                rows = [tuple("" if v is None else v for v in row) for row in cur.fetchall()]
                outcome = f"ok {rows}"
            else:
                outcome = f"ok {cur.statusmessage}"
        except psycopg2.Error as e:
            outcome = f"error {e.pgcode}"
        return outcome, time.monotonic() - began

    def start(self, sql):
        return self.pool.submit(self.run, sql)

    def close(self):
        self.pool.shutdown()
        self.conn.close()


def waiting(future):
    """True when the statement is still running 0.3 s after it was started: it waits for a lock.
    A statement that does not wait is answered within milliseconds by either server."""
    try:
        future.result(timeout=0.3)
        return False
    except concurrent.futures.TimeoutError:
        return True


def result(future):
    return future.result(timeout=WAIT_S)


class Scenario:
    """The sessions of one scenario, on the server's ports in turn, and its transcript."""

    def __init__(self, server, count):
        self.server = server
        self.sessions = [
            Session(chr(ord("a") + i), server.ports[i % len(server.ports)], server.user,
                    server.dbname) for i in range(count)
        ]
        self.lines = []
        self.info = []
        self.slow = []

    def note(self, line):
        self.lines.append(line)

    def timed(self, what, outcome_and_seconds, low_s, high_s):
        outcome, seconds = outcome_and_seconds
        if not low_s <= seconds <= high_s:
            self.slow.append(f"{what}: {seconds:.2f} s, outside [{low_s}, {high_s}]")
        return outcome

    def close(self):
        for s in self.sessions:
            s.close()


def setup(s):
    for sql in ["DROP TABLE IF EXISTS t", "CREATE TABLE t (id int PRIMARY KEY, v text)",
                "INSERT INTO t VALUES (1, 'init'), (2, 'init')",
                "DROP TABLE IF EXISTS u", "CREATE TABLE u (k text PRIMARY KEY)"]:
        outcome, _ = s.run(sql)
        assert outcome.startswith("ok"), f"{sql}: {outcome}"


def lock_timeout_rows(x):
    a, b = x.sessions
    a.run("BEGIN")
    x.note(f"a locks row 1: {a.run('SELECT id FROM t WHERE id = 1 FOR UPDATE')[0]}")
    b.run(f"SET lock_timeout = '{TIMEOUT_MS}ms'")
    low, high = TIMEOUT_MS / 1000 * 0.8, 10
    for sql in ["UPDATE t SET v = 'b' WHERE id = 1", "DELETE FROM t WHERE id = 1",
                "SELECT id FROM t WHERE id = 1 FOR UPDATE",
                "SELECT id FROM t WHERE id = 1 FOR SHARE",
                "SELECT id FROM t ORDER BY id FOR UPDATE"]:
        x.note(f"b: {sql}: {x.timed(sql, b.run(sql), low, high)}")
    other_row = b.run("UPDATE t SET v = 'b' WHERE id = 2")[0]
    x.note(f"b, the row a does not lock: {other_row}")
    b.run("BEGIN")
    in_block = x.timed("in a block", b.run("UPDATE t SET v = 'b' WHERE id = 1"), low, high)
    x.note(f"b in a block: {in_block}, then {b.run('SELECT 1')[0]}, {b.run('ROLLBACK')[0]}")
    x.note(f"a: {a.run('COMMIT')[0]}; b: {b.run('UPDATE t SET v = NULL WHERE id = 1')[0]}")
    b.run("UPDATE t SET v = 'init'")


def lock_timeout_advisory(x):
    a, b = x.sessions
    x.note(f"a: {a.run('SELECT pg_advisory_lock(1), pg_advisory_lock_shared(2)')[0]}")
    b.run(f"SET lock_timeout = '{TIMEOUT_MS}ms'")
    low, high = TIMEOUT_MS / 1000 * 0.8, 10
    for sql in ["SELECT pg_advisory_lock(1)", "SELECT pg_advisory_lock_shared(1)",
                "SELECT pg_advisory_lock(2)"]:
        x.note(f"b: {sql}: {x.timed(sql, b.run(sql), low, high)}")
    x.note(f"b: shared 2: {b.run('SELECT pg_advisory_lock_shared(2)')[0]}")
    x.note(f"b in a block: {b.run('BEGIN')[0]}, "
           f"{x.timed('xact', b.run('SELECT pg_advisory_xact_lock(1)'), low, high)}, "
           f"{b.run('SELECT 1')[0]}, {b.run('ROLLBACK')[0]}")
    x.note(f"a: {a.run('SELECT pg_advisory_unlock(1)')[0]}; "
           f"b: {b.run('SELECT pg_advisory_lock(1)')[0]}")
    b.run("SELECT pg_advisory_unlock_all()")
    a.run("SELECT pg_advisory_unlock_all()")


def lock_timeout_unique(x):
    """An uncommitted insert of a key makes a second insert of it wait."""
    a, b = x.sessions
    sql = "INSERT INTO u VALUES ('k')"
    a.run("BEGIN")
    x.note(f"a inserts k: {a.run(sql)[0]}")
    b.run(f"SET lock_timeout = '{TIMEOUT_MS}ms'")
    x.note(f"b: {sql}: {x.timed(sql, b.run(sql), TIMEOUT_MS / 1000 * 0.8, 10)}")
    x.note(f"a: {a.run('ROLLBACK')[0]}; b: {b.run(sql)[0]}")
    b.run("DELETE FROM u")


def no_timeout_waits(x):
    """lock_timeout 0, the default: the waiter waits until the holder lets go, however long."""
    a, b = x.sessions
    x.note(f"a: {a.run('SELECT pg_advisory_lock(3)')[0]}")
    f = b.start("SELECT pg_advisory_lock(3)")
    x.note(f"b waits: {waiting(f)}")
    time.sleep(0.7)  # the holder keeps the lock longer than any timeout above; nothing polls
    x.note(f"b still waits: {not f.done()}")
    unlocked = a.run("SELECT pg_advisory_unlock(3)")[0]
    x.note(f"a: {unlocked}; b: {x.timed('wait', result(f), 1.0, WAIT_S)}")
    b.run("SELECT pg_advisory_unlock_all()")


def deadlock(x, begin, lock_a, lock_b, wait_a, wait_b, release, symmetric=True):
    """Each session runs `begin` (or nothing), a takes lock_a, b lock_b; a waits for b's lock,
    then b for a's: exactly one must fail with 40P01; the victim runs `release` (the end of its
    transaction, or an unlock), and the survivor goes on. When the two waits differ (not
    symmetric), only whether the survivor's succeeded is compared: the victims differ."""
    a, b = x.sessions
    for s, sql in ((a, begin), (b, begin), (a, lock_a), (b, lock_b)):
        if sql:
            outcome, _ = s.run(sql)
            assert outcome.startswith("ok"), f"{sql}: {outcome}"
    fa = a.start(wait_a)
    x.note(f"a waits for b: {waiting(fa)}")
    fb = b.start(wait_b)
    # The victim is the one that fails. On PostgreSQL the survivor may be answered first: the
    # victim's transaction frees its locks as it fails.
    done, _ = concurrent.futures.wait([fa, fb], timeout=WAIT_S,
                                      return_when=concurrent.futures.FIRST_COMPLETED)
    assert done, "neither session of a deadlock was chosen as the victim"
    if all(result(f)[0].startswith("ok") for f in done):
        concurrent.futures.wait([fa, fb], timeout=WAIT_S)
    failed = [f for f in (fa, fb) if f.done() and result(f)[0].startswith("error")]
    assert len(failed) == 1, f"deadlock: {len(failed)} sessions failed"
    victim, survivor, fs = (a, b, fb) if failed[0] is fa else (b, a, fa)
    x.note(f"victims: 1 with {result(failed[0])[0]}")
    still_waits = waiting(fs)
    if release == "ROLLBACK":
        # The victim's transaction is aborted at the error and its locks freed then, before
        # its ROLLBACK.
        x.note(f"the survivor waits until the victim's ROLLBACK: {still_waits}")
    else:
        x.note(f"the survivor still waits (session locks outlive the error): {still_waits}")
    x.note(f"the victim: {victim.run('SELECT 1')[0]}; {victim.run(release)[0]}")
    survivor_outcome = result(fs)[0]
    x.note(f"the survivor: {survivor_outcome if symmetric else survivor_outcome.split()[0]}")
    return victim, survivor


def deadlock_rows(x):
    victim, survivor = deadlock(x, "BEGIN", "UPDATE t SET v = 'a' WHERE id = 1",
                                "UPDATE t SET v = 'b' WHERE id = 2",
                                "UPDATE t SET v = 'a' WHERE id = 2",
                                "UPDATE t SET v = 'b' WHERE id = 1", "ROLLBACK")
    x.note(f"the survivor: {survivor.run('COMMIT')[0]}")
    a, b = x.sessions
    rows, _ = a.run("SELECT id, v FROM t ORDER BY id")
    # Both rows are the survivor's, whichever session that was.
    x.note("rows: " + rows.replace(f"'{survivor.name}'", "'survivor'"))
    a.run("UPDATE t SET v = 'init'")


def deadlock_advisory(x):
    victim, survivor = deadlock(x, None, "SELECT pg_advisory_lock(10)",
                                "SELECT pg_advisory_lock(11)", "SELECT pg_advisory_lock(11)",
                                "SELECT pg_advisory_lock(10)", "SELECT pg_advisory_unlock_all()")
    both = survivor.run("SELECT pg_advisory_unlock(10), pg_advisory_unlock(11)")[0]
    x.note(f"the survivor holds both: {both}")
    x.sessions[0].run("SELECT pg_advisory_unlock_all()")
    x.sessions[1].run("SELECT pg_advisory_unlock_all()")


def deadlock_upgrade(x):
    """Two shared holders that both ask for the exclusive lock."""
    victim, survivor = deadlock(x, None, "SELECT pg_advisory_lock_shared(12)",
                                "SELECT pg_advisory_lock_shared(12)", "SELECT pg_advisory_lock(12)",
                                "SELECT pg_advisory_lock(12)", "SELECT pg_advisory_unlock_all()")
    x.sessions[0].run("SELECT pg_advisory_unlock_all()")
    x.sessions[1].run("SELECT pg_advisory_unlock_all()")


def deadlock_mixed(x):
    """A row lock and a transaction advisory lock in one cycle."""
    victim, survivor = deadlock(x, "BEGIN", "SELECT id FROM t WHERE id = 1 FOR UPDATE",
                                "SELECT pg_advisory_xact_lock(13)",
                                "SELECT pg_advisory_xact_lock(13)",
                                "SELECT id FROM t WHERE id = 1 FOR UPDATE", "ROLLBACK",
                                symmetric=False)
    x.note(f"the survivor: {survivor.run('COMMIT')[0]}")


def deadlock_three(x):
    """a waits for b, b for c, c for a: one victim; its ROLLBACK lets the other two finish."""
    a, b, c = x.sessions
    for s, key in ((a, 20), (b, 21), (c, 22)):
        s.run("BEGIN")
        s.run(f"SELECT pg_advisory_xact_lock({key})")
    fa = a.start("SELECT pg_advisory_xact_lock(21)")
    fb = b.start("SELECT pg_advisory_xact_lock(22)")
    x.note(f"a and b wait: {waiting(fa)}, {waiting(fb)}")
    fc = c.start("SELECT pg_advisory_xact_lock(20)")
    futures = {fa: a, fb: b, fc: c}
    outcomes = []
    # Each session that gets its answer ends its transaction, which lets the next one through.
    while futures:
        done, _ = concurrent.futures.wait(futures, timeout=WAIT_S,
                                          return_when=concurrent.futures.FIRST_COMPLETED)
        assert done, "the sessions still waiting after the deadlock never got their locks"
        for f in done:
            outcomes.append(result(f)[0])
            futures.pop(f).run("ROLLBACK")
    x.note(f"victims: {outcomes.count('error 40P01')}; the others: "
           f"{sorted(o for o in outcomes if o != 'error 40P01')}")


def chain_is_not_deadlock(x):
    """a waits for b, b waits for c: a chain, not a cycle; c's release lets everyone through."""
    a, b, c = x.sessions
    c.run("SELECT pg_advisory_lock(31)")
    b.run("SELECT pg_advisory_lock(30)")
    fb = b.start("SELECT pg_advisory_lock(31)")
    fa = a.start("SELECT pg_advisory_lock(30)")
    x.note(f"a and b wait: {waiting(fa)}, {waiting(fb)}")
    x.note(f"c releases: {c.run('SELECT pg_advisory_unlock(31)')[0]}")
    x.note(f"b: {result(fb)[0]}; b releases 30: {b.run('SELECT pg_advisory_unlock(30)')[0]}")
    x.note(f"a: {result(fa)[0]}")
    for s in (a, b, c):
        s.run("SELECT pg_advisory_unlock_all()")


def cancel_wait(x):
    """A CancelRequest ends a waiting statement with 57014; the session goes on."""
    a, b = x.sessions
    a.run("SELECT pg_advisory_lock(40)")
    f = b.start("SELECT pg_advisory_lock(40)")
    x.note(f"b waits: {waiting(f)}")
    b.conn.cancel()
    cancelled = result(f)[0]
    x.note(f"b after the cancel: {cancelled}; then: {b.run('SELECT pg_try_advisory_lock(40)')[0]}")
    a.run("BEGIN")
    a.run("SELECT id FROM t WHERE id = 1 FOR UPDATE")
    f = b.start("UPDATE t SET v = 'b' WHERE id = 1")
    x.note(f"b waits for the row: {waiting(f)}")
    b.conn.cancel()
    x.note(f"b after the cancel: {result(f)[0]}")
    a.run("ROLLBACK")
    a.run("SELECT pg_advisory_unlock_all()")


def getlock_deadlock(x):
    """raftlock only: GET_LOCK waits take part in deadlock detection, with advisory locks too.
    (MySQL fails such a GET_LOCK with ER_USER_LOCK_DEADLOCK; here it is 40P01.)"""
    a, b = x.sessions
    take_x, take_y = "SELECT GET_LOCK('x', 0)", "SELECT GET_LOCK('y', 0)"
    x.note(f"a, b: {a.run(take_x)[0]}, {b.run(take_y)[0]}")
    fa = a.start("SELECT GET_LOCK('y', 20)")
    x.note(f"a waits for b: {waiting(fa)}")
    wait_x = "SELECT GET_LOCK('x', 20)"
    x.note(f"b closes the cycle: {b.run(wait_x)[0]}")
    x.note(f"b releases: {b.run('SELECT RELEASE_ALL_LOCKS()')[0]}; a: {result(fa)[0]}")
    a.run("SELECT RELEASE_ALL_LOCKS()")
    a.run(take_x)
    b.run("SELECT pg_advisory_lock(5)")
    fa = a.start("SELECT pg_advisory_lock(5)")
    x.note(f"a waits for b's advisory lock: {waiting(fa)}")
    x.note(f"b waits for a's named lock: {b.run(wait_x)[0]}")
    x.note(f"b releases: {b.run('SELECT pg_advisory_unlock_all()')[0]}; a: {result(fa)[0]}")
    a.run("SELECT pg_advisory_unlock_all(), RELEASE_ALL_LOCKS()")


# What getlock_deadlock must print (raftlock only: PostgreSQL has no GET_LOCK).
GETLOCK_DEADLOCK = [
    "a, b: ok [(1,)], ok [(1,)]",
    "a waits for b: True",
    "b closes the cycle: error 40P01",
    "b releases: ok [(1,)]; a: ok [(1,)]",
    "a waits for b's advisory lock: True",
    "b waits for a's named lock: error 40P01",
    "b releases: ok [('',)]; a: ok [('',)]",
]

SCENARIOS = [
    (lock_timeout_rows, 2), (lock_timeout_advisory, 2), (lock_timeout_unique, 2),
    (no_timeout_waits, 2), (deadlock_rows, 2), (deadlock_advisory, 2), (deadlock_upgrade, 2),
    (deadlock_mixed, 2), (deadlock_three, 3), (chain_is_not_deadlock, 3), (cancel_wait, 2),
]


class Server:
    def __init__(self, name, ports, user, dbname):
        self.name, self.ports, self.user, self.dbname = name, ports, user, dbname


def run_all(server):
    """Runs every scenario on `server`; returns (transcript lines, timing complaints)."""
    s = Session("setup", server.ports[0], server.user, server.dbname)
    setup(s)
    s.close()
    lines, slow, info = [], [], []
    for scenario, count in SCENARIOS:
        x = Scenario(server, count)
        lines.append(f"--- {scenario.__name__}")
        try:
            scenario(x)
        finally:
            x.close()
        lines += x.lines
        slow += [f"{server.name}: {scenario.__name__}: {s}" for s in x.slow]
        info += [f"{server.name}: {scenario.__name__}: {s}" for s in x.info]
    return lines, slow, info


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--real", type=int, required=True, help="PostgreSQL's port")
    parser.add_argument("ports", type=int, nargs="+", help="raftlock's pg ports")
    args = parser.parse_args()
    real = Server("PostgreSQL", [args.real], "postgres", "postgres")
    raftlock = Server("raftlock", args.ports, "concurrency", "raftlock")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        real_run = pool.submit(run_all, real)
        raftlock_run = pool.submit(run_all, raftlock)
        real_lines, real_slow, real_info = real_run.result()
        raftlock_lines, raftlock_slow, raftlock_info = raftlock_run.result()
    x = Scenario(raftlock, 2)
    try:
        getlock_deadlock(x)
    finally:
        x.close()
    status = 0
    if x.lines != GETLOCK_DEADLOCK:
        print("FAIL: getlock_deadlock (- expected, + raftlock):", file=sys.stderr)
        sys.stderr.writelines(line + "\n" for line in difflib.unified_diff(
            GETLOCK_DEADLOCK, x.lines, lineterm="", n=2))
        status = 1
    if real_lines != raftlock_lines:
        print("FAIL: the outcomes differ (- PostgreSQL, + raftlock):", file=sys.stderr)
        sys.stderr.writelines(line + "\n" for line in difflib.unified_diff(
            real_lines, raftlock_lines, lineterm="", n=2))
        status = 1
    for complaint in real_slow + raftlock_slow:
        print(f"FAIL: timing: {complaint}", file=sys.stderr)
        status = 1
    for needle, want in (("victims: 1 with error 40P01", 4), ("victims: 1; the others", 1),
                         ("error 55P03", 11), ("error 57014", 2)):
        got = sum(line.count(needle) for line in raftlock_lines)
        if got != want:
            print(f"FAIL: raftlock's transcript has {got} times '{needle}', want {want}",
                  file=sys.stderr)
            status = 1
    if status == 0:
        print("\n".join(raftlock_lines))
        print("\n".join(f"not compared: {line}" for line in real_info + raftlock_info))
        print("\n".join(["--- getlock_deadlock (raftlock only)"] + x.lines))
        print(f"concurrency: {len(SCENARIOS)} scenarios, {len(raftlock_lines)} outcomes equal "
              f"on PostgreSQL and raftlock, and GET_LOCK deadlocks as expected")
    return status


if __name__ == "__main__":
    sys.exit(main())
