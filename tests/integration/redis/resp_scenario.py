"""Raw RESP scenarios on several connections, run against a real redis-server and then against
raftlock's nodes, compared byte for byte (pubsub_compat.py, transactions_compat.py).

A scenario is a list of steps (CONN, ARGV, SKIP[, DELAY]): connection CONN sends ARGV, DELAY
seconds after the step before if given. Every connection must read exactly the bytes redis-server
sent it at every step, and nothing more after the last; a step marked SKIP has its sender's reply
only checked for its type (HELLO's map names the server; PUBLISH answers how many receivers the
answering node has: docs/redis-mode.md).
"""
import select
import socket
import time


def encode(argv):
    out = b"*%d\r\n" % len(argv)
    for arg in argv:
        data = arg.encode("latin1")
        out += b"$%d\r\n%s\r\n" % (len(data), data)
    return out


def drain(sock, want, quiet):
    """Reads until `want` bytes came, then until `quiet` s pass with nothing. Waits at most 5 s for
    the first byte and 0.5 s for each next one, so a reply shorter than redis-server's costs no
    more than that."""
    got = b""
    deadline = time.monotonic() + 5
    while True:
        if len(got) >= want:
            wait = quiet
        else:
            wait = 0.5 if got else deadline - time.monotonic()
        ready, _, _ = select.select([sock], [], [], max(wait, 0))
        if not ready:
            break
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        got += chunk
    return got


def run(scenario, ports, expected=None):
    """The bytes each connection (name -> port) read at each step, and last what came after the
    last step; `expected` is redis-server's record, which says how many bytes to wait for."""
    socks = {name: socket.create_connection(("127.0.0.1", port)) for name, port in ports.items()}
    record = []
    for step, (conn, argv, _skip, *delay) in enumerate(scenario):
        if delay:
            time.sleep(delay[0])
        socks[conn].sendall(encode(argv))
        outputs = {}
        # The sender first: once its reply came and redis-server fell quiet, it has written what
        # the others got from the step too. Then the others get as many bytes as redis-server
        # sent them (raftlock's nodes deliver when they apply); bytes that no step expects show
        # up in a later step, or after the last one.
        for name in [conn] + [n for n in socks if n != conn]:
            want = len(expected[step][name]) if expected else 0
            if name == conn:
                outputs[name] = drain(socks[name], max(want, 1), 0.01 if expected else 0.02)
            else:
                outputs[name] = drain(socks[name], want, 0)
        record.append(outputs)
    record.append({name: drain(sock, 0, 0.2) for name, sock in socks.items()})
    for sock in socks.values():
        sock.close()
    return record


def describe(scenario, step):
    if step == len(scenario):
        return "after the last step"
    conn, argv = scenario[step][:2]
    return f"step {step} ({conn} {argv})"


def mismatches(scenario, reference, got, where):
    """Prints each difference between redis-server's record and `got` (a node's, named by
    `where`); returns how many there were."""
    count = 0
    for step, outputs in enumerate(got):
        conn, argv, skip = scenario[step][:3] if step < len(scenario) else (None, [], False)
        for name, have in outputs.items():
            want = reference[step][name]
            if skip and name == conn:
                if not have.startswith(b"%" if argv[0] == "HELLO" else b":"):
                    print(f"FAIL {where} {describe(scenario, step)}: {have!r}")
                    count += 1
                continue
            if want != have:
                print(f"FAIL {where} {describe(scenario, step)} on {name}:\n"
                      f"  redis:    {want!r}\n  raftlock: {have!r}")
                count += 1
    return count
