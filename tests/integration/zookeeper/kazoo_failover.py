#!/usr/bin/python3
"""kazoo's session surviving the loss of its node (issue 21).

A client connected to node 1 holds an ephemeral node and kazoo's Lock. Node 1 is killed (SIGKILL,
by the command given); kazoo reconnects to another node with its session id and password, which
this server serves as AttachSession. The session must survive: the same session id, state back to
CONNECTED without LOST, the ephemeral node and the lock still its own (another client cannot take
the lock), and its writes go on. Then it releases and the other client gets the lock.

    kazoo_failover.py KILL_COMMAND HOST1:PORT HOST2:PORT HOST3:PORT
"""
import subprocess
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout
from kazoo.protocol.states import KazooState


def main():
    kill_command, hosts = sys.argv[1], sys.argv[2:]
    states = []
    reconnected = threading.Event()

    def listener(state):
        states.append(state)
        if state == KazooState.CONNECTED and KazooState.SUSPENDED in states:
            reconnected.set()

    # Node 1 first, in order: the holder is on the node that is killed.
    holder = KazooClient(hosts=",".join(hosts), timeout=10, randomize_hosts=False)
    holder.add_listener(listener)
    holder.start(timeout=15)
    session = holder.client_id[0]
    holder.create("/failover/eph", b"mine", ephemeral=True, makepath=True)
    lock = holder.Lock("/failover/lock", "holder")
    assert lock.acquire(timeout=10), "the holder did not get a free lock"

    other = KazooClient(hosts=hosts[1], timeout=10)
    other.start(timeout=15)

    started = time.monotonic()
    subprocess.run(kill_command, shell=True, check=True)
    assert reconnected.wait(30), f"kazoo did not reconnect (states {states})"
    took = time.monotonic() - started
    assert KazooState.LOST not in states, f"the session was lost: {states}"
    assert holder.client_id[0] == session, "reconnected with another session"

    # Still the holder's: the ephemeral node, the lock (a contender times out), and it writes.
    stat = other.exists("/failover/eph")
    assert stat is not None and stat.ephemeralOwner == session, stat
    contender = other.Lock("/failover/lock", "other")
    try:
        taken = contender.acquire(timeout=1)
    except LockTimeout:
        taken = False
    assert not taken, "another client took a lock whose holder lives"
    holder.set("/failover/eph", b"after")
    assert other.get("/failover/eph")[0] == b"after"

    lock.release()
    assert contender.acquire(timeout=10), "the lock was not handed on after the release"
    contender.release()
    holder.stop()
    holder.close()
    assert other.exists("/failover/eph") is None, "the ephemeral outlived its closed session"
    other.stop()
    other.close()
    print(f"kazoo failover: session {session:#x} kept across its node's crash "
          f"(reconnected in {took:.1f} s)")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
