"""The worker's side of the resource server's protocol (docs/lock-lab.md "How a worker talks to the
resource server"), and the outcomes a recipe reports to the worker's loop.

One Recorder is one TCP connection: newline-delimited JSON, one request line and one reply line, in
order. A thread that reports on its own (the watchdog's renewal thread) opens its own Recorder, so
the two never interleave lines on one connection.
"""

import json
import socket
import time

# The resource server is on this machine and answers at once; a reply this late means it is gone
# (or this process was stopped, which the monotonic timeout does not count against it).
REPLY_TIMEOUT_S = 10
CONNECT_TIMEOUT_S = 1


class ResourceError(Exception):
    """The resource server cannot be reached or answered outside the contract. The log can no
    longer be trusted to hold this worker's record, so the worker gives up (exit status 1)."""


class Failed(Exception):
    """An operation that certainly did not take effect (an acquire that did not get the lock)."""


class Unknown(Exception):
    """An operation whose outcome is unknown (the connection broke after the request was sent).
    `lost` is set when the error also tells the holder its lock is gone (a SQL session lock dies
    with its connection)."""

    def __init__(self, why, lost=False):
        super().__init__(why)
        self.lost = lost


class NotHeld(Exception):
    """A release that found the lock no longer ours: the recipe told the holder it lost it."""


class Recorder:
    def __init__(self, address, worker):
        host, port = address.rsplit(":", 1)
        self.worker = worker
        try:
            self.sock = socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S)
            self.sock.settimeout(REPLY_TIMEOUT_S)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as e:
            raise ResourceError(f"cannot connect to the resource at {address}: {e}") from e
        self.reader = self.sock.makefile("rb")

    @classmethod
    def connect(cls, address, worker, patience_s):
        """A Recorder, retrying for `patience_s`: the lab starts the resource before the workers,
        but a worker started by hand may race it."""
        deadline = time.monotonic() + patience_s
        while True:
            try:
                return cls(address, worker)
            except ResourceError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def close(self):
        self.reader.close()
        self.sock.close()

    def request(self, op, **fields):
        line = json.dumps({"op": op, "worker": self.worker, **fields}, separators=(",", ":"))
        try:
            self.sock.sendall(line.encode() + b"\n")
            reply = self.reader.readline()
        except OSError as e:
            raise ResourceError(f"resource {op}: {e}") from e
        if not reply:
            raise ResourceError(f"resource {op}: the server closed the connection")
        try:
            decoded = json.loads(reply)
        except ValueError as e:
            raise ResourceError(f"resource {op}: bad reply {reply[:200]!r}") from e
        if not isinstance(decoded, dict) or "t" not in decoded:
            raise ResourceError(f"resource {op}: refused {line}: {decoded}")
        return decoded

    def event(self, process, type_, f, key, value=None, grant=None, error=None):
        """A history event. `grant` goes on an acquire ok and on every release event; `error` (not
        in the contract's fields, kept by the log) says why a fail or info happened."""
        fields = {"process": process, "type": type_, "f": f, "key": key, "value": value}
        if grant is not None:
            fields["grant"] = grant
        if error is not None:
            fields["error"] = error
        return self.request("event", **fields)

    def read(self, grant, token=None):
        return self.request("read", grant=grant, token=token)

    def write(self, grant, value, token=None):
        return self.request("write", grant=grant, token=token, value=value)

    def lost(self, grant, why):
        return self.request("lost", grant=grant, why=why)

    def db(self, grant, kind, value, version, ok, **extra):
        return self.request("db", grant=grant, kind=kind, value=value, version=version, ok=ok,
                            **extra)
