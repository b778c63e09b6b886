#!/usr/bin/python3
"""A restarting node must not deliver again the PUBLISHes it replays (at most once, as in Redis).

A node's Redis port opens before it has replayed its log, and every entry it replays was
delivered by the process before it, if at all. Publishes many messages through the leader, kills
a follower (kill -9), starts it again and subscribes to the channel as soon as its port opens;
while it replays, the subscriber must receive none of the old messages, and then a new one. The
run must have caught the node replaying (its applied index below the leader's commit when the
subscription answered), or it proves nothing.

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
    failures = 0
    if old:
        print(f"FAIL: the restarted node delivered {old} of the {args.messages} old messages "
              f"again", file=sys.stderr)
        failures += 1
    if b"new" not in fresh:
        print("FAIL: the subscriber did not receive a message published after the restart",
              file=sys.stderr)
        failures += 1
    if not replaying:
        print(f"FAIL: the node had replayed its log before the subscription answered "
              f"({status}): nothing was tested", file=sys.stderr)
        failures += 1
    if failures == 0:
        print(f"ok: a node restarted after {args.messages} PUBLISHes delivered none of them again "
              f"to a subscriber connected during its replay (applied {status.get('applied')}), "
              f"then a new one")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
