#!/usr/bin/python3
"""The lock lab's worker for the Redis, SQL and kazoo families (docs/lock-lab.md, "How a worker
talks to the resource server" and "A worker's loop").

    worker.py --family F --worker W --workers N --resource HOST:PORT --endpoints H:P[,H:P...]
              --lock NAME --ttl-ms 2000 --work-ms 50 --time SECONDS --seed N
              [--pg-user lab] [--pg-dbname lab] [--prepare] [--final]

Each cycle: invoke acquire -> acquire (at most 2 x TTL) -> ok (a new grant) / fail / info -> read
the resource -> sleep --work-ms -> write value + 1 -> invoke release -> release -> ok / fail / info.
sql-optimistic instead reads the counter row, sleeps, and writes it with a conditional UPDATE,
reporting both as `db` records. --prepare makes the family's tables; --final prints sql-optimistic's
counter row as {"value": V, "version": N}.

Exit status: 0 a normal end (--time passed, or SIGTERM), 1 a setup failure (the resource server
unreachable, --prepare or --final failed for 20 s), 2 usage.
"""

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
import traceback
from contextlib import contextmanager

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# jepsen/locklab, beside this file
from locklab import recipes_redis, recipes_sql, recipes_zk  # noqa: E402
from locklab.recorder import (  # noqa: E402
    Failed, NotHeld, Recorder, ResourceError, Unknown)

LOCK_FAMILIES = {
    "redis-setnx-expire": recipes_redis.SetnxExpire,
    "redis-set-nx-px": recipes_redis.SetNxPx,
    "redis-watchdog": recipes_redis.Watchdog,
    "redisson-pubsub": recipes_redis.RedissonLock,
    "redlock": recipes_redis.Redlock,
    "sql-unique-row": recipes_sql.UniqueRow,
    "sql-for-update": recipes_sql.ForUpdate,
    "sql-advisory": recipes_sql.Advisory,
    "sql-get-lock": recipes_sql.GetLock,
    "zk-recipe": recipes_zk.KazooLock,
    "zk-recipe-fenced": recipes_zk.KazooLock,
}
# The families whose grants carry a fencing token (the recipe's `fencing_token`), which goes on
# the acquire's history event; the fenced ones also show it to the resource with every access.
TOKEN_FAMILIES = ("zk-recipe", "zk-recipe-fenced")
FENCED_FAMILIES = ("zk-recipe-fenced",)
OPTIMISTIC = "sql-optimistic"
FAMILIES = (*LOCK_FAMILIES, OPTIMISTIC)

RESOURCE_PATIENCE_S = 5
BACKOFF_S = (0.050, 0.100)  # after an error
BETWEEN_CYCLES_S = (0, 0.010)  # so that polling recipes get fair turns


class Stopping(BaseException):
    """Raised by the SIGTERM handler inside an interruptible wait. A BaseException, so that the
    recipes' and libraries' `except Exception` cannot swallow it."""


class StopSwitch:
    """SIGTERM (or SIGINT) asks the worker to stop. Outside a wait the request is a flag, looked at
    between steps; inside a wait marked interruptible (an acquire, a sleep) it raises Stopping at
    once, so that a worker stops promptly even in the middle of a 2 x TTL acquire."""

    def __init__(self):
        self.requested = False
        self.interruptible = False
        signal.signal(signal.SIGTERM, self.handle)
        signal.signal(signal.SIGINT, self.handle)

    def handle(self, _signum, _frame):
        self.requested = True
        if self.interruptible:
            self.interruptible = False
            raise Stopping()

    @contextmanager
    def waiting(self):
        if self.requested:
            raise Stopping()
        self.interruptible = True
        try:
            yield
        finally:
            self.interruptible = False

    def sleep(self, seconds):
        """Sleeps; False when a stop was requested (before or during it)."""
        try:
            with self.waiting():
                time.sleep(seconds)
            return True
        except Stopping:
            return False


def say(args, message):
    print(f"worker {args.worker}: {message}", flush=True)


class Grant:
    """One acquisition. The watchdog's thread and the main thread may both learn it was lost: the
    first to do so reports it, once."""

    def __init__(self, number, token=None):
        self.number = number
        self.token = token  # the fencing token, for the families that have one
        self._lost = False
        self._lock = threading.Lock()

    def first_loss(self):
        with self._lock:
            first, self._lost = not self._lost, True
            return first


class Loop:
    """What both loops share: the run's end, the seeded pauses, the main resource connection."""

    def __init__(self, args, recorder, stop):
        self.args = args
        self.recorder = recorder
        self.stop = stop
        self.rng = random.Random(args.seed)
        self.end = time.monotonic() + args.time
        self.counts = {}

    def running(self):
        return not self.stop.requested and time.monotonic() < self.end

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    def backoff(self):
        self.stop.sleep(self.rng.uniform(*BACKOFF_S))

    def between_cycles(self):
        self.stop.sleep(self.rng.uniform(*BETWEEN_CYCLES_S))


class LockLoop(Loop):
    def __init__(self, args, recorder, stop, recipe_class, endpoints):
        super().__init__(args, recorder, stop)
        self.recipe = recipe_class(args, endpoints, self.rng)
        self.process = args.worker
        self.grants = 0
        self.tokens = args.family in TOKEN_FAMILIES
        self.fenced = args.family in FENCED_FAMILIES
        # A recipe that learns of a loss on its own thread (the watchdog's renewal, kazoo's event
        # thread) reports it on its own connection (docs/lock-lab.md).
        self.notifier = None
        if getattr(recipe_class, "reports_from_thread", False):
            self.notifier = Recorder.connect(args.resource, args.worker, RESOURCE_PATIENCE_S)
        self.notifier_error = None

    def run(self):
        try:
            while self.running():
                self.cycle()
                if self.notifier_error is not None:
                    raise self.notifier_error
                self.between_cycles()
        finally:
            self.recipe.abandon()  # nothing is held between cycles; this covers an error's exit
            self.recipe.close()
            if self.notifier is not None:
                self.notifier.close()

    def event(self, type_, f, grant=None, error=None):
        number = grant.number if grant is not None else None
        # A token family's acquire ok and release events carry the grant's token as their value,
        # as the native worker's do: the mutex model checks that tokens only grow.
        value = grant.token if grant is not None else None
        self.recorder.event(self.process, type_, f, self.args.lock, value, number, error)

    def token_for_resource(self, grant):
        return grant.token if self.fenced else None

    def cycle(self):
        self.event("invoke", "acquire")
        try:
            with self.stop.waiting():
                held = self.recipe.acquire()
        except Failed as e:
            self.event("fail", "acquire", error=str(e))
            self.after_error("acquire fail", e)
            return
        except (Stopping, Exception) as e:
            # Unknown (the connection broke after SET NX was sent), a stop in the middle of the
            # acquire, or a bug in a recipe: whether the lock was taken is not known.
            self.event("info", "acquire", error=describe(e))
            self.after_unknown("acquire info", e)
            return
        if not held:
            self.event("fail", "acquire", error="not acquired within 2 x TTL")
            self.count("acquire timeouts")
            return
        self.grants += 1
        token = self.recipe.fencing_token if self.tokens else None
        if self.tokens and token is None:
            raise AssertionError(f"{self.args.family}: a grant without a fencing token")
        grant = Grant(self.grants, token)
        self.event("ok", "acquire", grant)
        self.count("grants")
        self.recipe.held(lambda why: self.lost_from_thread(grant, why))
        self.critical_section(grant)
        self.release(grant)

    def critical_section(self, grant):
        """Read, work, write value + 1. No check that the lock is still held before the write:
        typical user code has none, and what that costs is what the lab measures."""
        if self.stop.requested:
            return
        read = self.recorder.read(grant.number, self.token_for_resource(grant))
        if not read.get("ok"):
            say(self.args, f"read refused: {read.get('refused')}")
            return
        if not self.stop.sleep(self.args.work_ms / 1000):
            return  # stopping: give the lock back at once
        written = self.recorder.write(grant.number, read["value"] + 1,
                                      self.token_for_resource(grant))
        if not written.get("ok"):
            say(self.args, f"write refused: {written.get('refused')}")

    def release(self, grant):
        self.event("invoke", "release", grant)
        try:
            self.recipe.release()
        except NotHeld as e:
            self.lost(grant, str(e))
            self.event("fail", "release", grant, error=str(e))
            self.count("release fails")
            return
        except Exception as e:  # Failed, Unknown, or a bug in a recipe
            # Whether our release happened is unknown (or it certainly did not and the lock is
            # still ours): either way the worker gives the lock up (abandon) and goes on as a new
            # process. A SQL session lock's connection error is also the news that it is gone.
            if getattr(e, "lost", False):
                self.lost(grant, str(e))
            self.event("info", "release", grant, error=describe(e))
            self.after_unknown("release info", e)
            return
        self.event("ok", "release", grant)

    def lost(self, grant, why):
        if grant.first_loss():
            self.recorder.lost(grant.number, why)
            self.count("lost")

    def lost_from_thread(self, grant, why):
        """The watchdog's report, on its own thread and resource connection."""
        if not grant.first_loss():
            return
        try:
            self.notifier.lost(grant.number, why)
            self.count("lost")
        except ResourceError as e:
            self.notifier_error = e  # the main thread gives up at the end of the cycle
        say(self.args, f"lost grant {grant.number}: {why}")

    def after_error(self, what, e):
        self.count(what + "s")
        say(self.args, f"{what}: {e}")
        self.recipe.next_endpoint()
        self.backoff()

    def after_unknown(self, what, e):
        """After an unknown outcome: the next endpoint, hold nothing, a new Jepsen process."""
        self.count(what + "s")
        say(self.args, f"{what}: {describe(e)}; a new process")
        if not isinstance(e, (Unknown, Failed, NotHeld, Stopping)):
            traceback.print_exc(file=sys.stdout)
        self.recipe.next_endpoint()
        self.recipe.abandon()
        self.process += self.args.workers
        self.backoff()


class OptimisticLoop(Loop):
    """sql-optimistic: every attempt (numbered like grants) reads the row, works, and writes it
    back conditionally; the database's commit is the critical section's proof."""

    def __init__(self, args, recorder, stop, endpoints):
        super().__init__(args, recorder, stop)
        self.counter = recipes_sql.OptimisticCounter(args, endpoints, self.rng)
        self.attempts = 0
        self.committed = False

    def run(self):
        try:
            while self.running():
                self.committed = False
                self.attempt()
                self.between_cycles()
        finally:
            self.counter.close()

    def between_cycles(self):
        # The writer that just won answers first (the losers' UPDATEs wait on its row lock or
        # its log entry), so with equal pauses it also reads first and wins the next round too:
        # one worker took every commit for seconds. A winner that pauses for part of a work time
        # lets the losers read the new version first, as an application with other work would.
        if self.committed:
            self.stop.sleep(self.rng.uniform(0.5, 1.0) * self.args.work_ms / 1000)
        super().between_cycles()

    def attempt(self):
        try:
            value, version = self.counter.read_row()
        except Failed as e:
            self.error("read", e)
            return
        self.attempts += 1
        attempt = self.attempts
        self.recorder.db(attempt, "read", value, version, True)
        if not self.stop.sleep(self.args.work_ms / 1000):
            return
        try:
            committed = self.counter.update(value + 1, version)
        except Failed as e:
            self.recorder.db(attempt, "write", value + 1, version, False, error=str(e))
            self.error("write", e)
            return
        except Unknown as e:
            # The contract's `ok` is a boolean: an UPDATE whose outcome is unknown (the
            # connection dropped) is reported not acknowledged, marked "unknown". If it did
            # commit, the final row shows one increment more than the acknowledged ones.
            self.recorder.db(attempt, "write", value + 1, version, False, unknown=True,
                             error=str(e))
            self.error("unknown write", e)
            return
        self.recorder.db(attempt, "write", value + 1, version, committed)
        self.committed = committed
        self.count("commits" if committed else "conflicts")

    def error(self, what, e):
        self.count(what + " errors")
        say(self.args, f"{what}: {e}")
        self.counter.next_endpoint()
        self.backoff()


def describe(e):
    if isinstance(e, Stopping):
        return "stopped (SIGTERM) during the operation"
    if isinstance(e, (Failed, Unknown, NotHeld)):
        return str(e)
    return f"unexpected {type(e).__name__}: {e}"


def parse_endpoint(text):
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", required=True, choices=FAMILIES)
    p.add_argument("--worker", type=int, required=True, help="this worker's number, 1..N")
    p.add_argument("--workers", type=int, required=True, help="N, the number of workers")
    p.add_argument("--resource", required=True, help="the resource server, HOST:PORT")
    p.add_argument("--endpoints", required=True, help="the target's servers, H:P[,H:P...]")
    p.add_argument("--lock", required=True, help="the lock's name")
    p.add_argument("--ttl-ms", type=int, default=2000)
    p.add_argument("--work-ms", type=int, default=50)
    p.add_argument("--time", type=float, required=True, help="seconds to run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pg-user", default="lab")
    p.add_argument("--pg-dbname", default="lab")
    steps = p.add_mutually_exclusive_group()
    steps.add_argument("--prepare", action="store_true",
                       help="create the family's tables and rows, then exit")
    steps.add_argument("--final", action="store_true",
                       help="sql-optimistic: print the counter row as JSON, then exit")
    args = p.parse_args(argv)
    if not 1 <= args.worker <= args.workers:
        p.error("--worker must be in 1..--workers")
    if args.ttl_ms <= 0 or args.work_ms < 0 or args.time < 0:
        p.error("--ttl-ms must be positive, --work-ms and --time not negative")
    if args.final and args.family != OPTIMISTIC:
        p.error(f"--final is for {OPTIMISTIC} only")
    try:
        args.endpoint_list = [parse_endpoint(e) for e in args.endpoints.split(",")]
        parse_endpoint(args.resource)
    except ValueError as e:
        p.error(str(e))
    return args


def prepare(args):
    if args.family.startswith("sql"):
        recipe_class = LOCK_FAMILIES.get(args.family, recipes_sql.OptimisticCounter)
        recipes_sql.prepare(recipe_class, args, args.endpoint_list)
    say(args, f"{args.family}: prepared")


def final(args):
    value, version = recipes_sql.final_row(args, args.endpoint_list)
    print(json.dumps({"value": value, "version": version}), flush=True)


def run(args):
    stop = StopSwitch()
    recorder = Recorder.connect(args.resource, args.worker, RESOURCE_PATIENCE_S)
    if args.family == OPTIMISTIC:
        loop = OptimisticLoop(args, recorder, stop, args.endpoint_list)
    else:
        loop = LockLoop(args, recorder, stop, LOCK_FAMILIES[args.family], args.endpoint_list)
    try:
        loop.run()
    finally:
        recorder.close()
    counts = ", ".join(f"{k} {v}" for k, v in sorted(loop.counts.items())) or "nothing"
    why = "stopped by a signal" if stop.requested else "time is up"
    say(args, f"{args.family}: {why}: {counts}")


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.prepare:
            prepare(args)
        elif args.final:
            final(args)
        else:
            run(args)
    except (ResourceError, Failed) as e:
        say(args, f"giving up: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
