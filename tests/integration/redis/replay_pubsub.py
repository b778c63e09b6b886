#!/usr/bin/python3
"""A restarting node must not deliver again the PUBLISHes it replays (at most once, as in Redis).

A node's Redis port opens before it has replayed its log, and every entry it replays was
delivered by the process before it, if at all. Publishes many messages through the leader, kills
a follower (kill -9), starts it again and subscribes to the channel as soon as its port opens;
while it replays, the subscriber must receive none of the old messages, and then a new one. A
run must catch the node replaying (its applied index below the commit index it restarted with,
when the subscription answered), or it proves nothing: a restart that replayed faster than the
subscription answered is made again, up to ATTEMPTS times.

    replay_pubsub.py --cluster "CMD" [--messages N] PORT PORT PORT
"""
import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.request

import redis


def info(port, field):
    return redis.Redis(port=port).info("replication").get(field)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", required=True, help="the scripts/cluster.sh command line")
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("ports", type=int, nargs=3)
    args = parser.parse_args()
    cluster = args.cluster.split()
    leader = next(p for p in args.ports if info(p, "role") == "master")
    follower = next(p for p in args.ports if p != leader)
    slot = str(args.ports.index(follower) + 1)
    pipe = redis.Redis(port=leader).pipeline(transaction=False)
    for i in range(args.messages):
        pipe.publish("replayed", f"old {i}")
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    for attempt in range(1, ATTEMPTS + 1):
        verdict = restart_and_listen(cluster, slot, leader, follower, args.messages)
        if verdict is not None:
            return verdict
        print(f"attempt {attempt}: the node had replayed its log before the subscription "
              f"answered; restarting it again", file=sys.stderr)
    print(f"FAIL: in {ATTEMPTS} restarts the node never answered the subscription while it "
          f"replayed: nothing was tested", file=sys.stderr)
    return 1


# Restarts until the subscriber is caught connected during a replay: whether it is depends on how
# the machine schedules the starting node and this script, so one restart that replays faster
# than we connect is tried again (each restart replays every old message once more, and each must
# deliver none of them), not failed.
ATTEMPTS = 5


def restart_and_listen(cluster, slot, leader, follower, messages):
    """Kills and restarts `follower`, subscribing as its Redis port opens. Returns the exit status
    when the attempt decided (a failure, or success with the replay caught), None when the node
    had replayed before the subscription answered."""
    subprocess.run(cluster + ["kill", slot], check=True, capture_output=True)
    starting = subprocess.Popen(cluster + ["start", slot], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        # As soon as the port takes a connection and answers the SUBSCRIBE (a connection the
        # starting node resets is tried again).
        try:
            sock = socket.create_connection(("127.0.0.1", follower), timeout=1)
            sock.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$8\r\nreplayed\r\n")
            sock.settimeout(10)
            got = sock.recv(1 << 16)
            if got:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            print("FAIL: the restarted node's Redis port never answered", file=sys.stderr)
            return 1
        time.sleep(0.002)
    # Replaying still? Its admin port (100 below the Redis port) says, right after the answer.
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{follower - 100}/status", timeout=5) as r:
            status = json.load(r)
    except OSError:
        status = {}
    replaying = bool(status.get("catching_up"))
    starting.wait(timeout=60)
    sock.settimeout(2)
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            got += chunk
    except socket.timeout:
        pass
    old = got.count(b"$7\r\nmessage\r\n")
    redis.Redis(port=leader).publish("replayed", "new")
    sock.settimeout(5)
    fresh = b""
    try:
        while b"new" not in fresh:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            fresh += chunk
    except socket.timeout:
        pass
    sock.close()
    failures = 0
    if old:
        print(f"FAIL: the restarted node delivered {old} of the {messages} old messages "
              f"again", file=sys.stderr)
        failures += 1
    if b"new" not in fresh:
        print("FAIL: the subscriber did not receive a message published after the restart",
              file=sys.stderr)
        failures += 1
    if failures:
        return 1
    if not replaying:
        return None
    print(f"ok: a node restarted after {messages} PUBLISHes delivered none of them again "
          f"to a subscriber connected during its replay (applied {status.get('applied')} of "
          f"{status.get('last_index')}), then a new one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
