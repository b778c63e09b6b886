"""The lab's faults (docs/lock-lab.md "The faults"): one kind per cell, injected again and again
after a quiet start, healed before a fault-free end.

Every fault lands while a holder is inside its critical section (the worker that the resource
server says is between its read and its write): the client faults hit that worker, the server faults
hit the server while it works. A fault that lands between two sections can do no harm to either,
and with 50 ms sections chance alone would often put it there.
"""

import json
import os
import signal
import socket
import threading
import time
import traceback

from locklab import netns

FAULTS = ("none", "client-pause", "client-partition", "server-kill", "server-clock",
          "client-clock")
QUIET_START_S = 5.0  # every worker makes progress before the first fault
QUIET_BETWEEN_S = 3.0
SERVER_DOWN_S = 3.0
SERVER_CLOCK_HOLD_S = 4.0
CLIENT_CLOCK_HOLD_S = 8.0
CLIENT_CLOCK_RATE = 0.5
HOLDER_WAIT_S = 3.0
STOPPED_SETTLE_S = 0.05  # for a write sent just before a SIGSTOP to reach the resource


def monotonic_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def fault_hold_s(fault, ttl_s):
    """How long one fault lasts: a client fault outlives every lease (TTL), so that another worker
    can be granted the lock while the holder still believes it has it."""
    return {"client-pause": ttl_s + 2.0, "client-partition": ttl_s + 3.0,
            "server-kill": SERVER_DOWN_S, "server-clock": SERVER_CLOCK_HOLD_S,
            "client-clock": CLIENT_CLOCK_HOLD_S}[fault]


def server_clock_step_s(ttl_s):
    return ttl_s + 8.0


def ask_resource(address, request):
    host, port = address
    with socket.create_connection((host, port), timeout=2) as s:
        s.sendall((json.dumps(request) + "\n").encode())
        return json.loads(s.makefile().readline())


class Nemesis(threading.Thread):
    """Runs `fault` until `stop_at` (time.monotonic), then heals everything. An exception is kept
    (with its traceback) and fails the cell; the heal still runs."""

    def __init__(self, fault, target, workers, resource_address, origin_ns, stop_at, ttl_s, rng,
                 out_path):
        super().__init__(daemon=True)
        self.fault, self.target, self.workers = fault, target, workers
        self.resource_address, self.origin_ns, self.stop_at = resource_address, origin_ns, stop_at
        self.ttl_s, self.rng = ttl_s, rng
        self.out = open(out_path, "w")
        self.windows = []  # [start_ns, stop_ns, detail] of every fault injected
        self.final_heal_ns = None
        self.error = None
        self.abort = threading.Event()
        self._heal = None  # undoes the fault in force, if one is

    def record(self, phase, detail):
        t = monotonic_ns() - self.origin_ns
        self.out.write(json.dumps({"time_ns": t, "fault": self.fault, "phase": phase,
                                   "detail": detail}) + "\n")
        self.out.flush()
        return t

    def sleep_until(self, deadline):
        return not self.abort.wait(max(0.0, deadline - time.monotonic()))

    def run(self):
        try:
            if self.fault != "none":
                self.schedule()
        except Exception:  # any failure of the nemesis fails the cell, never silently
            self.error = traceback.format_exc()
            self.record("error", {"traceback": self.error})
        finally:
            self.heal_all()
            self.out.close()

    def schedule(self):
        hold = fault_hold_s(self.fault, self.ttl_s)
        next_at = time.monotonic() + QUIET_START_S
        while next_at + hold <= self.stop_at and self.sleep_until(next_at):
            detail = self.inject()
            if detail is None:  # no holder to hit this time; try again shortly
                next_at = time.monotonic() + 0.2
                continue
            start = self.record("start", detail)
            self.sleep_until(time.monotonic() + hold)
            heal, self._heal = self._heal, None
            stop_detail = heal() or {}
            self.windows.append([start, self.record("stop", stop_detail), detail])
            next_at = time.monotonic() + QUIET_BETWEEN_S
        self.sleep_until(self.stop_at)

    def heal_all(self):
        if self._heal is not None:
            heal, self._heal = self._heal, None
            try:
                heal()
            except Exception:
                self.error = self.error or traceback.format_exc()
        self.final_heal_ns = self.record("heal", {})

    def holder(self):
        """The worker inside its critical section now, waiting a little for one."""
        deadline = time.monotonic() + HOLDER_WAIT_S
        while time.monotonic() < deadline and not self.abort.is_set():
            answer = ask_resource(self.resource_address, {"op": "holder"})
            worker = answer.get("worker")
            if worker is not None and self.workers[worker].alive():
                return self.workers[worker], answer.get("grant")
            time.sleep(0.005)
        return None, None

    def inject(self):
        """Starts one fault; sets self._heal; returns its detail, or None when it has no
        victim right now."""
        if self.fault in ("client-pause", "client-partition", "client-clock"):
            worker, grant = self.holder()
            if worker is None:
                return None
            detail = {"worker": worker.id, "grant": grant}
            if self.fault == "client-pause":
                os.kill(worker.pid, signal.SIGSTOP)
                # It may have made its write between our question and the stop (a write sent
                # just before lands within the settle time): then it has left its section, and
                # waking it would find nothing left to do. That pause would miss the point of
                # the fault and could let a broken family pass unnoticed: undo it, try again.
                time.sleep(STOPPED_SETTLE_S)
                answer = ask_resource(self.resource_address, {"op": "holder"})
                if (answer.get("worker"), answer.get("grant")) != (worker.id, grant):
                    os.kill(worker.pid, signal.SIGCONT)
                    return None
                self._heal = lambda: os.kill(worker.pid, signal.SIGCONT)
            elif self.fault == "client-partition":
                netns.cut_off(worker.ns, self.target.ips())
                self._heal = lambda: netns.heal(worker.ns)
            else:
                worker.clock.run_at(CLIENT_CLOCK_RATE)
                detail["rate"] = CLIENT_CLOCK_RATE
                self._heal = worker.clock.reset
            return detail
        # A server fault still lands when no holder shows up in time (a lock that is down).
        worker, grant = self.holder()
        during = {"holder": worker.id, "grant": grant} if worker is not None else {}
        if self.fault == "server-kill":
            slot, detail = self.target.server_kill()
            self._heal = lambda: self.target.server_restart(slot)
            return {**detail, **during}
        if self.fault == "server-clock":
            slot = self.target.kill_victim()
            clock = self.target.procs[slot].clock
            step = server_clock_step_s(self.ttl_s)
            clock.step(step)
            self._heal = clock.reset
            return {"slot": slot, "server": self.target.procs[slot].name, "step_s": step,
                    **during}
        raise ValueError(f"unknown fault {self.fault!r}")
