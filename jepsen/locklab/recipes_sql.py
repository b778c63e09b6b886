"""The lab's SQL lock recipes (docs/lock-lab.md "The families"), written the way their users write
them, over psycopg 3. The same statements run against raftlock's pg ports and against PostgreSQL,
so they stay inside raftlock's SQL dialect (docs/sql-mode.md, "Supported SQL").

The lock recipes have the interface described in recipes_redis.py (acquire, held, release,
next_endpoint, abandon, close); sql-optimistic has read_row and update instead.
setup_statements() is what --prepare makes, idempotently.

Connections: autocommit (each statement its own transaction) except sql-for-update, whose lock is
its transaction's. A session lock (advisory, GET_LOCK, a row locked FOR UPDATE) lives exactly as
long as its connection, so closing the connection is how these recipes make sure they hold nothing.
"""

import datetime
import hashlib
import math
import time
import uuid

import psycopg
import psycopg.errors

from locklab.recorder import Failed, NotHeld, Unknown

CONNECT_TIMEOUT_S = 2
SETUP_PATIENCE_S = 20


def log(message):
    print(f"recipes_sql: {message}", flush=True)


def one_line(e):
    """libpq's messages span lines ("server closed the connection unexpectedly\n\tThis
    probably means..."); the events and logs keep one line each."""
    return " ".join(str(e).split())


def connection_lost(e, conn):
    """Whether the error ended the connection (and with it the session and its locks), or left a
    statement's outcome unknown: a client-side communication error (no SQLSTATE), class 08
    (raftlock's 08006 "may or may not have been applied" included), or a FATAL shutdown/expiry."""
    return (conn.closed or conn.broken or e.sqlstate is None or e.sqlstate.startswith("08")
            or e.sqlstate in ("57P01", "57P02"))


def outcome(what, e, conn):
    """The exception an error of a statement that may change the lock's state means. An error
    the server answered on a live connection (lock_timeout, deadlock, raftlock's 57P03 "no
    leader, nothing was applied") means the statement did nothing."""
    text = f"{what}: {type(e).__name__}: {one_line(e)}"
    return Unknown(text) if connection_lost(e, conn) else Failed(text)


def connect(endpoint, args, autocommit):
    host, port = endpoint
    try:
        return psycopg.connect(host=host, port=port, user=args.pg_user, dbname=args.pg_dbname,
                               autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.Error as e:
        raise Failed(f"connect to {host}:{port}: {one_line(e)}") from e


class SqlRecipe:
    autocommit = True

    def __init__(self, args, endpoints, rng):
        self.args = args
        self.key = args.lock
        self.ttl_ms = args.ttl_ms
        self.wait_ms = 2 * args.ttl_ms
        self.rng = rng
        self.endpoints = endpoints
        self.index = 0
        self.conn = None

    @classmethod
    def setup_statements(cls, args):
        """(statement, parameters) for --prepare; every one tolerates being run again."""
        return ()

    def connection(self):
        """The connection to the current endpoint, opened (and set up) when there is none."""
        if self.conn is None or self.conn.closed:
            conn = connect(self.endpoints[self.index], self.args, self.autocommit)
            try:
                self.on_connect(conn)
            except psycopg.Error as e:
                conn.close()
                raise Failed(f"session setup: {one_line(e)}") from e
            self.conn = conn
        return self.conn

    def on_connect(self, conn):
        pass

    def set_lock_timeout(self, conn):
        """Bound every lock wait of the connection by 2 x TTL (55P03 when it passes)."""
        conn.execute(f"SET lock_timeout = '{self.wait_ms}ms'")
        if not conn.autocommit:
            conn.commit()

    def held(self, on_lost):
        pass

    def next_endpoint(self):
        self.close()
        self.index = (self.index + 1) % len(self.endpoints)

    def abandon(self):
        self.close()  # the session ends, and its locks with it

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def release_error(self, what, e):
        """A session lock's release that failed: if the connection is gone, so is the lock."""
        lost = connection_lost(e, self.conn)
        return Unknown(f"{what}: {type(e).__name__}: {one_line(e)}", lost=lost)


class UniqueRow(SqlRecipe):
    """A lock table with a unique key: INSERT takes the lock, DELETE of our own row gives it back,
    and a row older than the TTL by the server's clock is deleted so that it can be taken over.

    raftlock's dialect has no interval type, so the usual single statement
    `DELETE ... WHERE acquired_at < now() - interval '<ttl> milliseconds'` becomes two: read the
    server's now(), then delete rows acquired before now() - TTL passed as a parameter. The age is
    still judged by the server's clock (a moment earlier), on both targets."""

    @classmethod
    def setup_statements(cls, args):
        return [("CREATE TABLE IF NOT EXISTS lab_locks (name text PRIMARY KEY, "
                 "owner text NOT NULL, acquired_at timestamptz NOT NULL DEFAULT now())", None)]

    def __init__(self, args, endpoints, rng):
        super().__init__(args, endpoints, rng)
        self.owner = None  # our row's owner while we may hold it

    def acquire(self):
        conn = self.connection()
        self.owner = f"w{self.args.worker}-{uuid.uuid4().hex[:16]}"
        give_up_at = time.monotonic() + self.wait_ms / 1000
        while True:
            if self.try_insert(conn):
                return True
            if self.delete_stale(conn):
                continue  # taken over: insert again at once
            pause = self.rng.uniform(0.010, 0.020)
            if time.monotonic() + pause > give_up_at:
                self.owner = None
                return False
            time.sleep(pause)

    def try_insert(self, conn):
        try:
            conn.execute("INSERT INTO lab_locks (name, owner) VALUES (%s, %s)",
                         (self.key, self.owner))
            return True
        except psycopg.errors.UniqueViolation:
            return False
        except psycopg.Error as e:
            raise outcome("INSERT", e, conn) from e

    def delete_stale(self, conn):
        """Deletes the lock's row if it is older than the TTL; True when it did."""
        try:
            (server_now,) = conn.execute("SELECT now()").fetchone()
            stale_before = server_now - datetime.timedelta(milliseconds=self.ttl_ms)
            deleted = conn.execute("DELETE FROM lab_locks WHERE name = %s AND acquired_at < %s",
                                   (self.key, stale_before)).rowcount
        except psycopg.Error as e:
            # Whether another's stale row went or not, ours was never inserted.
            raise Failed(f"stale-row DELETE: {type(e).__name__}: {one_line(e)}") from e
        return deleted > 0

    def release(self):
        conn = self.connection()
        try:
            deleted = conn.execute("DELETE FROM lab_locks WHERE name = %s AND owner = %s",
                                   (self.key, self.owner)).rowcount
        except psycopg.Error as e:
            raise outcome("DELETE", e, conn) from e
        self.owner = None
        if deleted == 0:
            raise NotHeld("our lock row was gone: taken over as stale")

    def abandon(self):
        """Deletes our row, if it is there, through the first endpoint that answers. When none
        does, it is taken over as stale after the TTL."""
        self.close()
        for _ in self.endpoints:
            if self.owner is None:
                return
            try:
                self.connection().execute("DELETE FROM lab_locks WHERE name = %s AND owner = %s",
                                          (self.key, self.owner))
                self.owner = None
            except (Failed, psycopg.Error) as e:
                log(f"cleanup of our lock row: {one_line(e)}")
                self.next_endpoint()
        if self.owner is not None:
            log("cleanup failed on every endpoint; our row goes stale after the TTL")
            self.owner = None


class ForUpdate(SqlRecipe):
    """`BEGIN; SELECT name FROM lab_mutex WHERE name = ? FOR UPDATE`, work, `COMMIT`: the row
    lock is the transaction's. psycopg (autocommit off) sends the BEGIN before the first
    statement, as its users rely on."""

    autocommit = False

    @classmethod
    def setup_statements(cls, args):
        return [("CREATE TABLE IF NOT EXISTS lab_mutex (name text PRIMARY KEY)", None),
                ("INSERT INTO lab_mutex (name) VALUES (%s) ON CONFLICT DO NOTHING", (args.lock,))]

    def on_connect(self, conn):
        self.set_lock_timeout(conn)

    def acquire(self):
        conn = self.connection()
        try:
            rows = conn.execute("SELECT name FROM lab_mutex WHERE name = %s FOR UPDATE",
                                (self.key,)).fetchall()
        except psycopg.errors.LockNotAvailable:
            self.rollback()
            return False
        except psycopg.Error as e:
            raise outcome("SELECT ... FOR UPDATE", e, conn) from e
        if not rows:
            self.rollback()
            raise Failed("the lock's row is missing from lab_mutex (run --prepare)")
        return True

    def rollback(self):
        try:
            self.conn.rollback()
        except psycopg.Error as e:
            log(f"ROLLBACK: {one_line(e)}")
            self.close()

    def release(self):
        try:
            self.conn.commit()
        except psycopg.Error as e:
            # The transaction, and its row lock, did not survive: the holder learns it here.
            raise Unknown(f"COMMIT: {type(e).__name__}: {one_line(e)}", lost=True) from e


def advisory_key(name):
    """The bigint key of pg_advisory_lock for a lock name: the first 8 bytes of its SHA-256."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class Advisory(SqlRecipe):
    """`pg_advisory_lock(key)` / `pg_advisory_unlock(key)` on one long-lived connection, with
    `SET lock_timeout` bounding the wait."""

    def __init__(self, args, endpoints, rng):
        super().__init__(args, endpoints, rng)
        self.lock_id = advisory_key(args.lock)

    def on_connect(self, conn):
        self.set_lock_timeout(conn)

    def acquire(self):
        conn = self.connection()
        try:
            conn.execute("SELECT pg_advisory_lock(%s)", (self.lock_id,))
            return True
        except psycopg.errors.LockNotAvailable:
            return False
        except psycopg.Error as e:
            raise outcome("pg_advisory_lock", e, conn) from e

    def release(self):
        try:
            (released,) = self.conn.execute("SELECT pg_advisory_unlock(%s)",
                                            (self.lock_id,)).fetchone()
        except psycopg.Error as e:
            raise self.release_error("pg_advisory_unlock", e) from e
        if not released:
            raise NotHeld("pg_advisory_unlock returned false: the session no longer held it")


class GetLock(SqlRecipe):
    """MySQL's named locks, `GET_LOCK(name, seconds)` / `RELEASE_LOCK(name)`, on raftlock's pg
    port (PostgreSQL has no such functions)."""

    def acquire(self):
        conn = self.connection()
        seconds = math.ceil(self.wait_ms / 1000)
        try:
            (got,) = conn.execute("SELECT GET_LOCK(%s, %s)", (self.key, seconds)).fetchone()
        except psycopg.Error as e:
            raise outcome("GET_LOCK", e, conn) from e
        return got == 1  # 0: timed out; NULL: an error (MySQL's)

    def release(self):
        try:
            (released,) = self.conn.execute("SELECT RELEASE_LOCK(%s)", (self.key,)).fetchone()
        except psycopg.Error as e:
            raise self.release_error("RELEASE_LOCK", e) from e
        if released is None:
            raise NotHeld("RELEASE_LOCK returned NULL: nobody held the lock")
        if released != 1:
            raise NotHeld(f"RELEASE_LOCK returned {released}: another session holds the lock")


class OptimisticCounter(SqlRecipe):
    """No lock: a version column. Read the row, compute, `UPDATE ... WHERE version = <read>`; 0
    rows means another committed first (the next attempt reads again)."""

    @classmethod
    def setup_statements(cls, args):
        return [("CREATE TABLE IF NOT EXISTS lab_counter (id int PRIMARY KEY, "
                 "value bigint NOT NULL, version bigint NOT NULL)", None),
                ("INSERT INTO lab_counter (id, value, version) VALUES (1, 0, 0) "
                 "ON CONFLICT DO NOTHING", None)]

    def read_row(self):
        """(value, version) of the counter row. Raises Failed: a read changes nothing."""
        conn = self.connection()
        try:
            row = read_counter(conn)
        except psycopg.Error as e:
            raise Failed(f"SELECT: {type(e).__name__}: {one_line(e)}") from e
        if row is None:
            raise Failed("the counter row is missing (run --prepare)")
        return row

    def update(self, value, version):
        """Whether the conditional UPDATE committed. Raises Failed or Unknown."""
        conn = self.connection()
        try:
            cur = conn.execute("UPDATE lab_counter SET value = %s, version = version + 1 "
                               "WHERE id = 1 AND version = %s", (value, version))
        except psycopg.Error as e:
            raise outcome("UPDATE", e, conn) from e
        return cur.rowcount == 1


def read_counter(conn):
    return conn.execute("SELECT value, version FROM lab_counter WHERE id = 1").fetchone()


def with_retries(args, endpoints, step, what):
    """Runs step(connection) on an autocommit connection until it succeeds, moving through the
    endpoints, for at most SETUP_PATIENCE_S (a cluster may still be electing its leader). Returns
    its result, or raises Failed with the last error."""
    give_up_at = time.monotonic() + SETUP_PATIENCE_S
    index = 0
    while True:
        try:
            with connect(endpoints[index], args, autocommit=True) as conn:
                return step(conn)
        except (Failed, psycopg.Error) as e:
            last = f"{what} on {endpoints[index]}: {one_line(e)}"
            log(last)
        if time.monotonic() >= give_up_at:
            raise Failed(last)
        index = (index + 1) % len(endpoints)
        time.sleep(0.2)


def prepare(recipe_class, args, endpoints):
    """--prepare: the family's tables and rows."""
    statements = recipe_class.setup_statements(args)

    def run(conn):
        for statement, params in statements:
            try:
                conn.execute(statement, params)
            except (psycopg.errors.DuplicateTable, psycopg.errors.UniqueViolation):
                pass  # made by a concurrent --prepare: PostgreSQL's IF NOT EXISTS can race

    if statements:
        with_retries(args, endpoints, run, "prepare")


def final_row(args, endpoints):
    """--final of sql-optimistic: the counter row, (value, version)."""
    row = with_retries(args, endpoints, read_counter, "final read")
    if row is None:
        raise Failed("the counter row is missing")
    return row
