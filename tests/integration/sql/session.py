#!/usr/bin/python3
"""A dropped connection ends its session at once (issue 9): locks free, transaction rolled back.

A connection takes every kind of lock the SQL mode has — session advisory locks (exclusive,
stacked, shared, two-key), a GET_LOCK, and in an open transaction a transaction advisory lock, a
row lock (SELECT ... FOR UPDATE) and an uncommitted insert of a unique key — and another session
on another node checks that each is held. Then the connection goes away without a Terminate
message, in three ways: its socket is closed under the driver (psycopg2), the process holding it
is killed with SIGKILL (psycopg 3 in a child process), and a connection that is itself waiting
for a lock is dropped while it waits. Each time the other session must get every lock promptly —
its waits are bounded by a lock_timeout well under the session timeout (--pg-session-timeout-ms,
10 s by default), so a lock freed only by the session's expiry fails the test — and the
uncommitted row must never have been visible, nor be afterwards.

    session.py PORT PORT PORT
"""
import argparse
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time

import psycopg
import psycopg2
import psycopg2.errors

# Far below the default session timeout (10 s): only the closing of the connection can free the
# locks this quickly.
PROMPT_S = 4.0


def connect(port):
    conn = psycopg2.connect(host="127.0.0.1", port=port, user="session", dbname="raftlock",
                            connect_timeout=10)
    conn.autocommit = True
    return conn


def q(conn, sql, params=()):
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall() if cur.description is not None else cur.rowcount


def take_everything(run, tag):
    """Takes every kind of lock through `run` (one statement -> rows or rowcount)."""
    # void results: psycopg2 gives '' and psycopg 3 None; only that a row came back matters.
    assert len(run("SELECT pg_advisory_lock(100), pg_advisory_lock(100), "
                   "pg_advisory_lock_shared(101), pg_advisory_lock(102, 103)")) == 1
    assert run("SELECT GET_LOCK(%s, 0)", (f"session-{tag}",)) == [(1,)]
    run("BEGIN")
    assert len(run("SELECT pg_advisory_xact_lock(104)")) == 1
    assert run("SELECT id FROM rows WHERE id = 1 FOR UPDATE") == [(1,)]
    assert run("INSERT INTO names (name) VALUES (%s)", (f"uncommitted-{tag}",)) == 1
    assert run("SELECT count(*) FROM names WHERE name = %s", (f"uncommitted-{tag}",)) == [(1,)]


def check_held(other, tag):
    """Every lock of take_everything() is held by someone else, and the insert is invisible."""
    expect = [
        ("SELECT pg_try_advisory_lock(100)", (), [(False,)]),
        ("SELECT pg_try_advisory_lock(101)", (), [(False,)]),
        ("SELECT pg_try_advisory_lock_shared(101), pg_advisory_unlock_shared(101)", (),
         [(True, True)]),
        ("SELECT pg_try_advisory_lock(102, 103)", (), [(False,)]),
        ("SELECT GET_LOCK(%s, 0)", (f"session-{tag}",), [(0,)]),
        ("SELECT pg_try_advisory_lock(104)", (), [(False,)]),
        ("SELECT count(*) FROM names WHERE name = %s", (f"uncommitted-{tag}",), [(0,)]),
    ]
    for sql, params, want in expect:
        got = q(other, sql, params)
        assert got == want, f"{tag}: {sql}: {got}, want {want} (is the lock held?)"
    try:
        q(other, "SELECT id FROM rows WHERE id = 1 FOR UPDATE NOWAIT")
    except psycopg2.errors.LockNotAvailable:
        pass
    else:
        raise AssertionError(f"{tag}: FOR UPDATE NOWAIT got a row that should be locked")


def check_freed(other, tag, dropped_at):
    """`other` gets every lock promptly and the uncommitted insert never happened."""
    q(other, "SET lock_timeout = %s", (f"{int(PROMPT_S * 1000)}ms",))
    try:
        q(other, "SELECT pg_advisory_lock(100), pg_advisory_lock(101), pg_advisory_lock(102, 103)")
        q(other, "BEGIN")
        q(other, "SELECT pg_advisory_xact_lock(104)")
        assert q(other, "SELECT id FROM rows WHERE id = 1 FOR UPDATE") == [(1,)]
        # The dropped transaction's unique key is free: the same insert goes through.
        assert q(other, "INSERT INTO names (name) VALUES (%s)", (f"uncommitted-{tag}",)) == 1
        q(other, "ROLLBACK")
    except psycopg2.errors.LockNotAvailable as e:
        raise AssertionError(f"{tag}: a lock was still held {PROMPT_S} s after the connection "
                             f"closed: {e}".strip())
    assert q(other, "SELECT GET_LOCK(%s, %s)", (f"session-{tag}", int(PROMPT_S))) == [(1,)]
    elapsed = time.monotonic() - dropped_at
    assert q(other, "SELECT count(*) FROM names WHERE name = %s", (f"uncommitted-{tag}",)) == [(0,)]
    assert q(other, "SELECT RELEASE_ALL_LOCKS()") == [(1,)]
    q(other, "SELECT pg_advisory_unlock_all()")
    q(other, "RESET lock_timeout")
    return elapsed


def drop_socket(ports):
    """psycopg2: the socket is closed under the driver, so no Terminate message is sent."""
    holder = connect(ports[0])
    other = connect(ports[1])
    take_everything(lambda sql, params=(): q(holder, sql, params), "socket")
    check_held(other, "socket")
    dropped_at = time.monotonic()
    os.close(holder.fileno())
    elapsed = check_freed(other, "socket", dropped_at)
    print(f"ok: a closed socket (psycopg2): every lock free after {elapsed:.2f} s, "
          f"the uncommitted insert gone")
    other.close()


def holder_process(port, ready, tag):
    conn = psycopg.connect(host="127.0.0.1", port=port, user="session", dbname="raftlock",
                           connect_timeout=10, autocommit=True)

    def run(sql, params=()):
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description is not None else cur.rowcount

    take_everything(run, tag)
    ready.set()
    time.sleep(600)  # killed long before this


def kill_process(ports):
    """psycopg 3 in a child process killed with SIGKILL: the kernel closes its socket."""
    ready = multiprocessing.Event()
    child = multiprocessing.Process(target=holder_process, args=(ports[2], ready, "killed"))
    child.start()
    assert ready.wait(30), "the holder process did not take its locks"
    other = connect(ports[0])
    check_held(other, "killed")
    dropped_at = time.monotonic()
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    elapsed = check_freed(other, "killed", dropped_at)
    print(f"ok: a killed process (psycopg 3): every lock free after {elapsed:.2f} s, "
          f"the uncommitted insert gone")
    other.close()


def drop_waiter(ports):
    """A connection dropped while it waits: the lock it waited for must not go to it."""
    owner = connect(ports[0])
    waiter = connect(ports[1])
    other = connect(ports[2])
    assert q(owner, "SELECT GET_LOCK('waited-for', 0)") == [(1,)]
    q(owner, "SELECT pg_advisory_lock(200)")
    errors = []

    def wait(sql):
        try:
            q(waiter, sql)
        except psycopg2.Error as e:  # the socket closed under it: expected
            errors.append(e)

    t = threading.Thread(target=wait, args=("SELECT pg_advisory_lock(200)",), daemon=True)
    t.start()
    t.join(0.3)
    assert t.is_alive(), "the waiter did not wait"
    # close() would not wake the thread blocked in recv on this socket; shutdown() does, and
    # sends the same FIN.
    socket.socket(fileno=os.dup(waiter.fileno())).shutdown(socket.SHUT_RDWR)
    t.join(30)
    assert not t.is_alive(), "the waiter's driver did not notice its socket closing"
    # Released while the dropped waiter may still be queued: it must go to `other`, not to it.
    q(owner, "SELECT pg_advisory_unlock(200), RELEASE_LOCK('waited-for')")
    q(other, "SET lock_timeout = %s", (f"{int(PROMPT_S * 1000)}ms",))
    try:
        q(other, "SELECT pg_advisory_lock(200)")
    except psycopg2.errors.LockNotAvailable:
        raise AssertionError("a lock released after its waiter's connection closed went to the "
                             "closed connection")
    assert q(other, "SELECT GET_LOCK('waited-for', %s)", (int(PROMPT_S),)) == [(1,)]
    print("ok: a connection dropped while waiting: the lock went to the next live session")
    for c in (owner, other):
        c.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ports", type=int, nargs=3)
    args = parser.parse_args()
    setup = connect(args.ports[0])
    q(setup, "DROP TABLE IF EXISTS rows")
    q(setup, "DROP TABLE IF EXISTS names")
    q(setup, "CREATE TABLE rows (id int PRIMARY KEY)")
    q(setup, "CREATE TABLE names (name text PRIMARY KEY)")
    q(setup, "INSERT INTO rows VALUES (1)")
    setup.close()
    drop_socket(args.ports)
    kill_process(args.ports)
    drop_waiter(args.ports)
    return 0


if __name__ == "__main__":
    sys.exit(main())
