#!/usr/bin/python3
"""The lab's protected resource and recorder (docs/lock-lab.md "How a worker talks to the resource
server").

One thread, one event loop: requests from every worker are handled one at a time, each stamped
with this process's CLOCK_MONOTONIC at the moment it is handled, so the log is a single real-time
order that no worker's clock (which the lab may move) can distort.

    resource.py --listen HOST:PORT --log resource.jsonl --origin-ns NS [--fence]

The resource is a counter. With --fence it refuses any access whose token is missing or lower than
the highest token it has accepted (the storage side of fencing, as in Kleppmann's "How to do
distributed locking"); without it, tokens are recorded and never checked.
"""

import argparse
import asyncio
import json
import signal
import sys
import time

LINE_BYTES_MAX = 64 * 1024  # a request is a few hundred bytes; more is a broken worker
WORKER_OPS = ("event", "read", "write", "lost", "db")


def monotonic_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Resource:
    def __init__(self, log, origin_ns, fence):
        self.log = log
        self.origin_ns = origin_ns
        self.fence = fence
        self.counter = 0
        self.highest_token = None
        self.requests = 0
        # worker -> (grant, t) of a read not yet followed by that grant's write: who is inside
        # its critical section, for the nemesis.
        self.reading = {}

    def handle(self, request):
        """The reply to one request; logs it. Raises ValueError on a malformed request."""
        t = monotonic_ns() - self.origin_ns
        op = request.get("op")
        if op == "holder":
            return self.holder(t)
        if op == "stats":
            return {"t": t, "requests": self.requests, "counter": self.counter}
        if op not in WORKER_OPS:
            raise ValueError(f"unknown op {op!r}")
        if not isinstance(request.get("worker"), int) or request["worker"] < 1:
            raise ValueError("a worker request needs \"worker\": an integer >= 1")
        reply = {"t": t}
        if op in ("read", "write"):
            reply.update(self.access(request, t))
        elif op == "db":
            self.note_db(request, t)
        self.requests += 1
        self.log.write(json.dumps({**request, **reply}, separators=(",", ":")) + "\n")
        return reply

    def access(self, request, t):
        token = request.get("token")
        if token is not None and not isinstance(token, int):
            raise ValueError("\"token\" is an integer or null")
        refused = self.refusal(token)
        worker = request["worker"]
        if refused:
            self.reading.pop(worker, None)
            return {"ok": False, "refused": refused}
        if token is not None and (self.highest_token is None or token > self.highest_token):
            self.highest_token = token
        if request["op"] == "read":
            self.reading[worker] = (request.get("grant"), t)
            return {"ok": True, "value": self.counter}
        value = request.get("value")
        if not isinstance(value, int):
            raise ValueError("a write needs \"value\": an integer")
        self.reading.pop(worker, None)
        before, self.counter = self.counter, value
        return {"ok": True, "before": before}

    def note_db(self, request, t):
        """sql-optimistic keeps its counter in the database and reports each step here: between
        its row read and its conditional update it is "inside" as much as a lock holder is, and the
        client faults must land there too."""
        worker = request["worker"]
        if request.get("kind") == "read" and request.get("ok"):
            self.reading[worker] = (request.get("grant"), t)
        else:
            self.reading.pop(worker, None)

    def refusal(self, token):
        if not self.fence:
            return None
        if token is None:
            return "no fencing token"
        if self.highest_token is not None and token < self.highest_token:
            return f"stale token {token} < {self.highest_token}"
        return None

    def holder(self, t):
        if not self.reading:
            return {"t": t, "worker": None}
        # Several at once only when the lock is already broken; the longest inside is the one
        # most likely to still be there when the fault lands.
        worker, (grant, since) = min(self.reading.items(), key=lambda kv: kv[1][1])
        return {"t": t, "worker": worker, "grant": grant, "since": since}


async def serve_connection(resource, reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("a request is a JSON object")
                reply = resource.handle(request)
            except ValueError as e:  # json.JSONDecodeError is one too
                reply = {"error": str(e)}
                print(f"resource: bad request {line[:200]!r}: {e}", file=sys.stderr, flush=True)
            writer.write((json.dumps(reply, separators=(",", ":")) + "\n").encode())
            await writer.drain()
    except (ConnectionError, asyncio.LimitOverrunError, ValueError):
        pass  # a worker that dies mid-line (kill -9, a paused one's reset) just goes away
    finally:
        writer.close()


async def flush_every_second(log):
    while True:
        await asyncio.sleep(1)
        log.flush()


async def main_async(args):
    host, port = args.listen.rsplit(":", 1)
    with open(args.log, "w") as log:
        resource = Resource(log, args.origin_ns, args.fence)
        server = await asyncio.start_server(
            lambda r, w: serve_connection(resource, r, w), host, int(port), limit=LINE_BYTES_MAX)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        flusher = asyncio.create_task(flush_every_second(log))
        print(f"resource: listening on {args.listen}", flush=True)
        async with server:
            await stop.wait()
        flusher.cancel()
        log.flush()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", required=True, help="HOST:PORT")
    p.add_argument("--log", required=True, help="resource.jsonl to write")
    p.add_argument("--origin-ns", type=int, default=None,
                   help="CLOCK_MONOTONIC time 0 of the log (default: now)")
    p.add_argument("--fence", action="store_true", help="refuse missing and stale tokens")
    args = p.parse_args()
    if args.origin_ns is None:
        args.origin_ns = monotonic_ns()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
