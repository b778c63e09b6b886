#!/usr/bin/python3
"""kazoo, unmodified, against raftlock's ZooKeeper ports (issue 21).

First the client API a ZooKeeper user starts with, each step checked against what ZooKeeper
answers: create (persistent, ephemeral, sequential, with parents), get and set with versions,
exists, children, delete with a version, the errors NoNode / NodeExists / BadVersion / NotEmpty,
a one-shot data watch and a children watch, and an ephemeral node going away with its session.

ACLs across nodes: a digest ACL set by one client on one node refuses another client on another
node (NoAuth on read, write and create under it), setACL with the ACL version widens it to READ,
and getACL without ADMIN shows the digest ids as `user:x`, as ZooKeeper does.

The four-letter words `ruok` and `srvr` on every node (one leader, two followers).

Then kazoo's Lock recipe: processes connected to different nodes increment one counter node
under the lock with a read-modify-write (get, then set with the version read, which would fail
BadVersion, not lose an update, if two overlapped: so every set must succeed). The final value
must be processes x increments.

    kazoo_basics.py HOST:PORT [HOST:PORT ...] [--processes N] [--increments M]
"""
import argparse
import multiprocessing
import socket
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (BadVersionError, InvalidACLError, NoAuthError, NodeExistsError,
                              NoNodeError, NotEmptyError)
from kazoo.security import ACL, Id, make_digest_acl, make_digest_acl_credential, Permissions


def connect(hosts):
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=15)
    return zk


def check_api(hosts):
    zk = connect(hosts)
    path, stat = zk.create("/api", b"one", include_data=True)
    assert path == "/api", path
    assert stat.version == 0 and stat.dataLength == 3, stat
    data, stat = zk.get("/api")
    assert data == b"one" and stat.version == 0, (data, stat)
    stat = zk.set("/api", b"two", version=0)
    assert stat.version == 1, stat
    try:
        zk.set("/api", b"three", version=0)
    except BadVersionError:
        pass
    else:
        raise AssertionError("a set with a stale version succeeded")
    try:
        zk.create("/api", b"")
    except NodeExistsError:
        pass
    else:
        raise AssertionError("creating an existing node succeeded")
    try:
        zk.get("/missing")
    except NoNodeError:
        pass
    else:
        raise AssertionError("reading a missing node succeeded")
    assert zk.exists("/missing") is None
    assert zk.exists("/api").version == 1

    zk.create("/api/a/b/c", b"deep", makepath=True)
    assert zk.get_children("/api") == ["a"]
    try:
        zk.delete("/api/a")
    except NotEmptyError:
        pass
    else:
        raise AssertionError("deleting a node with children succeeded")
    first = zk.create("/api/seq-", b"", sequence=True)
    second = zk.create("/api/seq-", b"", sequence=True)
    assert first < second and first.startswith("/api/seq-") and len(first) == len("/api/seq-") + 10, (first, second)
    eph = zk.create("/api/eph", b"", ephemeral=True)
    assert zk.exists(eph).ephemeralOwner == zk.client_id[0]

    # Watches: one data change, one child added, each delivered once.
    fired = {"data": [], "children": []}
    data_event = threading.Event()
    child_event = threading.Event()

    def on_data(event):
        fired["data"].append(event)
        data_event.set()

    def on_children(event):
        fired["children"].append(event)
        child_event.set()

    zk.get("/api", watch=on_data)
    zk.get_children("/api/a", watch=on_children)
    other = connect(hosts)
    other.set("/api", b"changed")
    other.create("/api/a/new", b"")
    assert data_event.wait(10), "the data watch did not fire"
    assert child_event.wait(10), "the children watch did not fire"
    assert fired["data"][0].type == "CHANGED" and fired["data"][0].path == "/api", fired
    assert fired["children"][0].type == "CHILD" and fired["children"][0].path == "/api/a", fired
    other.set("/api", b"again")
    time.sleep(0.3)
    assert len(fired["data"]) == 1, "a one-shot watch fired twice"

    # The ephemeral node goes with its session.
    zk.stop()
    zk.close()
    assert other.exists("/api/eph") is None, "an ephemeral node outlived its closed session"
    other.delete("/api", recursive=True)
    assert other.exists("/api") is None
    other.stop()
    other.close()


def expect(error, action, what):
    try:
        action()
    except error:
        return
    raise AssertionError(f"{what} was not refused with {error.__name__}")


def check_acls(hosts):
    alice = KazooClient(hosts=hosts[0], timeout=10, auth_data=[("digest", "alice:secret")])
    alice.start(timeout=15)
    bob = KazooClient(hosts=hosts[-1], timeout=10, auth_data=[("digest", "bob:pw")])
    bob.start(timeout=15)
    alice_all = make_digest_acl("alice", "secret", all=True)
    alice.create("/secure", b"s", acl=[alice_all])
    bob.sync("/secure")
    expect(NoAuthError, lambda: bob.get("/secure"), "bob's read of alice's node")
    expect(NoAuthError, lambda: bob.set("/secure", b"x"), "bob's write of alice's node")
    expect(NoAuthError, lambda: bob.create("/secure/child", b""), "bob's create under it")
    expect(NoAuthError, lambda: bob.get_acls("/secure"), "bob's getACL without READ or ADMIN")
    expect(InvalidACLError, lambda: bob.create("/bad-acl", b"", acl=[ACL(Permissions.READ, Id("world", "someone"))]),
           "an ACL naming world:someone")
    assert bob.exists("/secure") is not None  # exists is not checked, as in ZooKeeper
    acls, stat = alice.get_acls("/secure")
    assert [a.id.id for a in acls] == [make_digest_acl_credential("alice", "secret")], acls
    assert stat.aversion == 0, stat
    expect(BadVersionError,
           lambda: alice.set_acls("/secure", [alice_all], version=3), "a setACL at a stale aversion")
    bob_reads = make_digest_acl("bob", "pw", read=True)
    stat = alice.set_acls("/secure", [alice_all, bob_reads], version=0)
    assert stat.aversion == 1, stat
    bob.sync("/secure")
    assert bob.get("/secure")[0] == b"s"
    expect(NoAuthError, lambda: bob.set("/secure", b"x"), "bob's write with READ only")
    acls, _ = bob.get_acls("/secure")
    assert sorted(a.id.id for a in acls) == ["alice:x", "bob:x"], acls  # no ADMIN: redacted
    assert acls[0].perms == Permissions.ALL, acls
    nobody = connect(hosts[min(1, len(hosts) - 1)])
    expect(NoAuthError, lambda: nobody.get("/secure"), "an unauthenticated read")
    nobody.stop()
    alice.delete("/secure")
    for zk in (alice, bob):
        zk.stop()
        zk.close()


def four_letter_word(host, word):
    name, port = host.rsplit(":", 1)
    with socket.create_connection((name, int(port)), timeout=5) as s:
        s.sendall(word.encode())
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    return answer.decode()


def check_four_letter_words(hosts):
    modes = []
    for host in hosts:
        assert four_letter_word(host, "ruok") == "imok", host
        srvr = four_letter_word(host, "srvr")
        assert srvr.startswith("Zookeeper version: "), srvr
        modes += [line.split(": ")[1] for line in srvr.splitlines() if line.startswith("Mode: ")]
    assert sorted(modes) == ["follower", "follower", "leader"], modes


def check_read_mode(hosts, mode):
    """Every node's `conf` names the read mode it was started with (--zk-reads)."""
    for host in hosts:
        conf = four_letter_word(host, "conf")
        assert f"reads={mode}" in conf.splitlines(), (host, conf)


def worker(hosts, increments, results, index):
    zk = connect(hosts)
    lock = zk.Lock("/counter-lock", f"worker-{index}")
    done = 0
    for _ in range(increments):
        with lock:
            data, stat = zk.get("/counter")
            # With the version read: an overlapping holder would make this fail, not lose a write.
            zk.set("/counter", str(int(data) + 1).encode(), version=stat.version)
            done += 1
    zk.stop()
    zk.close()
    results.put(done)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("hosts", nargs="+")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--increments", type=int, default=25)
    parser.add_argument("--reads", choices=["linearizable", "local"], default="linearizable",
                        help="the --zk-reads mode the nodes must report in `conf`")
    args = parser.parse_args()

    check_api(",".join(args.hosts))
    print("kazoo API: ok")
    check_acls(args.hosts)
    print("kazoo ACLs: ok")
    if len(args.hosts) == 3:
        check_four_letter_words(args.hosts)
        print("four-letter words: ok")
    check_read_mode(args.hosts, args.reads)

    setup = connect(args.hosts[0])
    setup.create("/counter", b"0")
    setup.stop()
    results = multiprocessing.Queue()
    procs = []
    for i in range(args.processes):
        # Each process talks to one node, in turn: the lock is contended across nodes.
        host = args.hosts[i % len(args.hosts)]
        p = multiprocessing.Process(target=worker, args=(host, args.increments, results, i))
        p.start()
        procs.append(p)
    started = time.monotonic()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0, f"a worker failed (exit code {p.exitcode})"
    elapsed = time.monotonic() - started
    total = sum(results.get() for _ in procs)
    check = connect(args.hosts[0])
    value = int(check.get("/counter")[0])
    check.stop()
    expected = args.processes * args.increments
    assert total == expected, f"{total} increments done of {expected}"
    assert value == expected, f"counter {value}, expected {expected}: a lost update"
    print(f"kazoo Lock: {args.processes} processes x {args.increments} increments = {value} "
          f"in {elapsed:.1f} s")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
