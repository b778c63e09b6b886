"""The lab's Redis lock recipes (docs/lock-lab.md "The families"), written the way their users write
them, over redis-py. The same code runs against raftlock's Redis ports and against real Redis.

A recipe is driven by the worker's loop (worker.py) through:

    acquire()         True: held; False: not acquired within 2 x TTL (certainly not held).
                      Raises Failed (certainly not held) or Unknown (outcome unknown).
    held(on_lost)     the grant began; on_lost(why) tells the worker, from any thread, that the
                      recipe learned it lost the lock.
    release()         returns when released. Raises NotHeld (the lock was no longer ours), Failed
                      or Unknown.
    next_endpoint()   after an error: the next server of --endpoints.
    abandon()         after an unknown outcome: make sure nothing is held. Never raises.
    close()
"""

import threading
import time
import uuid

import redis

from locklab.recorder import Failed, NotHeld, Unknown

SOCKET_TIMEOUT_S = 1.0
CONNECT_TIMEOUT_S = 0.5
# Redlock asks each server with a timeout "small compared to the auto-release time", so that a
# dead server costs little of the lock's validity (redis.io, "Distributed Locks with Redis").
REDLOCK_TIMEOUT_S = 0.05

# The release script of redis-py's Lock and of the Redlock reference implementations.
COMPARE_AND_DELETE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
else
    return 0
end
"""


def wall_ms():
    """The wall clock in ms, which the lab's clock faults move: the recipes below that read time
    read this clock, as their published versions do."""
    return int(time.time() * 1000)


def certainly_not_applied(e):
    """Whether a redis-py error proves the command had no effect."""
    if isinstance(e, (redis.ConnectionError, redis.TimeoutError)):
        # redis-py says "Error N connecting to", "Timeout connecting to server" when it could not
        # connect: nothing was sent. A connection that broke after sending may have applied it.
        return "connecting to" in str(e)
    if isinstance(e, redis.ResponseError):
        # The server answered with an error: READONLY from a replica, raftlock's "TRYAGAIN ... no
        # leader". Only raftlock's timeout says otherwise (docs/redis-mode.md).
        return "may or may not have been applied" not in str(e)
    return False


def outcome(what, e):
    """The exception an error of `what` means for the operation."""
    kind = Failed if certainly_not_applied(e) else Unknown
    return kind(f"{what}: {type(e).__name__}: {e}")


def log(message):
    print(f"recipes_redis: {message}", flush=True)


class Servers:
    """A redis-py client for one of --endpoints at a time. Every node of raftlock serves
    everything; of a [primary, replica] pair, the primary (the replica answers READONLY, and is
    the primary after a failover). On an error the worker moves to the next."""

    def __init__(self, endpoints):
        self.endpoints = endpoints
        self.index = 0
        self._client = None

    @property
    def client(self):
        if self._client is None:
            host, port = self.endpoints[self.index]
            self._client = redis.Redis(host=host, port=port, socket_timeout=SOCKET_TIMEOUT_S,
                                       socket_connect_timeout=CONNECT_TIMEOUT_S)
        return self._client

    def advance(self):
        self.close()
        self.index = (self.index + 1) % len(self.endpoints)

    def close(self):
        if self._client is not None:
            self._client.close()
            self._client.connection_pool.disconnect()
            self._client = None


class RedisRecipe:
    def __init__(self, args, endpoints, rng):
        self.key = args.lock
        self.ttl_ms = args.ttl_ms
        self.wait_s = 2 * args.ttl_ms / 1000
        self.rng = rng
        self.servers = Servers(endpoints)

    def held(self, on_lost):
        pass

    def next_endpoint(self):
        self.servers.advance()

    def close(self):
        self.servers.close()

    def delete_if(self, value):
        """Compare-and-delete `value`: after an unknown outcome the key may be ours."""
        self.clean_up(COMPARE_AND_DELETE, 1, self.key, value)

    def clean_up(self, script, *numkeys_keys_args):
        """Runs a releasing script on the first server that answers, the current one first. When
        none answers, the key's TTL ends the lock."""
        for _ in self.servers.endpoints:
            try:
                self.servers.client.eval(script, *numkeys_keys_args)
                return
            except redis.RedisError as e:
                log(f"cleanup on {self.servers.endpoints[self.servers.index]}: {e}")
                self.servers.advance()
        log("cleanup failed on every endpoint; the lock expires by itself")


class SetnxExpire(RedisRecipe):
    """The classic two-step recipe: `SETNX lock <expiry>` then `PEXPIRE`, and the takeover of a
    lock whose stored expiry (the acquirer's wall clock) has passed with `GETSET` — the "Design
    pattern: Locking with SETNX" of the SETNX page of redis.io (now marked as discouraged), with
    the EXPIRE its users add. Its flaws are the point: a worker that dies between SETNX and
    PEXPIRE leaves a key without a TTL (only the stored-expiry takeover frees it), and every
    decision trusts the clients' wall clocks."""

    def __init__(self, args, endpoints, rng):
        super().__init__(args, endpoints, rng)
        self.expiry = None  # our stored expiry while held
        self.ours = None  # a value the key may hold for us: compare-and-delete it when abandoning

    def acquire(self):
        give_up_at = time.monotonic() + self.wait_s
        while True:
            if self.try_once():
                return True
            pause = self.rng.uniform(0.010, 0.020)
            if time.monotonic() + pause > give_up_at:
                return False
            time.sleep(pause)

    def try_once(self):
        r = self.servers.client
        expiry = wall_ms() + self.ttl_ms
        self.ours = expiry  # set before SETNX: abandon() needs it even if SETNX is interrupted
        try:
            won = r.setnx(self.key, expiry)
        except redis.RedisError as e:
            raise outcome("SETNX", e)
        if won:
            self.expiry = expiry
            try:
                r.pexpire(self.key, self.ttl_ms)
            except redis.RedisError as e:
                # Held, without a TTL: the recipe's known flaw. The worker gives it up.
                raise Unknown(f"PEXPIRE after SETNX: {type(e).__name__}: {e}")
            return True
        self.ours = None
        try:
            current = r.get(self.key)
        except redis.RedisError as e:
            raise Failed(f"GET: {type(e).__name__}: {e}")
        if current is None or int(current) >= wall_ms():
            return False  # held and not expired (or just deleted: SETNX again after the pause)
        try:
            old = r.getset(self.key, expiry)
        except redis.RedisError as e:
            # If GETSET was applied, the key holds our value whether we won the takeover or
            # overwrote the winner's expiry (the recipe's accepted race); deleting it could free
            # the winner's lock, so the key is left to expire by its stored time.
            raise outcome("GETSET", e)
        if old is None or int(old) < wall_ms():
            self.expiry = self.ours = expiry
            return True
        return False  # another client's GETSET came first: its expiry stands (ours overwrote it)

    def release(self):
        # The recipe's check: "the client holding the lock should always check the timeout
        # didn't expire before unlocking the key using DEL", since another may have taken it.
        if wall_ms() >= self.expiry:
            self.ours = None
            raise NotHeld("our stored expiry passed before the release (by our clock); not deleted")
        try:
            deleted = self.servers.client.delete(self.key)
        except redis.RedisError as e:
            raise outcome("DEL", e)
        self.ours = None
        if not deleted:
            raise NotHeld("DEL found no key: it had expired on the server")

    def abandon(self):
        if self.ours is not None:
            self.delete_if(self.ours)
            self.ours = None


class SetNxPx(RedisRecipe):
    """redis-py's `Lock`: `SET lock <random> NX PX ttl`, polled every 10 ms for at most 2 x TTL,
    released by a Lua compare-and-delete that raises LockNotOwnedError when the key is no longer
    ours. A new client (and Lock) for each endpoint."""

    def __init__(self, args, endpoints, rng):
        super().__init__(args, endpoints, rng)
        self.lock = None
        self.token = None  # the token we may hold the key with: abandon() deletes it

    def acquire(self):
        self.lock = self.servers.client.lock(self.key, timeout=self.ttl_ms / 1000, sleep=0.01,
                                             blocking_timeout=self.wait_s, thread_local=False)
        # Our own token (redis-py makes one when not given) so that abandon() can delete it.
        self.token = uuid.uuid4().hex
        try:
            return self.lock.acquire(token=self.token)
        except redis.RedisError as e:
            raise outcome("Lock.acquire", e)

    def release(self):
        try:
            self.lock.release()
        except redis.exceptions.LockNotOwnedError as e:
            self.token = None
            raise NotHeld(f"Lock.release: {e}")
        except redis.RedisError as e:
            raise outcome("Lock.release", e)
        self.token = None

    def abandon(self):
        if self.token is not None:
            self.delete_if(self.token)
            self.token = None


class Watchdog(SetNxPx):
    """SetNxPx plus Redisson's watchdog: while held, a thread resets the TTL every TTL/3 with
    `Lock.reacquire()`; the first failed renewal stops it and tells the holder."""

    reports_from_thread = True  # the renewal thread tells the holder (worker.py)

    def __init__(self, args, endpoints, rng):
        super().__init__(args, endpoints, rng)
        self.renewer = None

    def held(self, on_lost):
        self.renewer = Renewer(self.lock, self.ttl_ms / 3000, on_lost)
        self.renewer.start()

    def stop_renewing(self):
        if self.renewer is not None:
            self.renewer.stop()
            self.renewer = None

    def release(self):
        self.stop_renewing()
        super().release()

    def abandon(self):
        self.stop_renewing()
        super().abandon()

    def close(self):
        self.stop_renewing()
        super().close()


class RedissonLock(RedisRecipe):
    """Redisson's RLock (RedissonLock), over redis-py: the lock is a hash of owner -> hold count
    with a TTL, taken by a script that answers the holder's PTTL when refused; a waiter SUBSCRIBEs
    to the lock's channel and tries again when the release message comes, or when the holder's TTL
    runs out; the release script PUBLISHes on that channel. While held, Redisson's watchdog resets
    the TTL every TTL/3 and stops (telling the holder) when the hash no longer names it."""

    reports_from_thread = True  # the renewal thread tells the holder (worker.py)
    LOCK = """
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
"""
    UNLOCK = """
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
"""
    RENEW = """
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
return 0
"""
    UNLOCK_MESSAGE = "0"

    def __init__(self, args, endpoints, rng):
        super().__init__(args, endpoints, rng)
        self.channel = f"redisson_lock__channel:{{{self.key}}}"
        self.owner = None  # uuid:thread, as Redisson names a holder; set while we may hold it
        self.renewer = None

    def try_lock(self):
        return self.servers.client.eval(self.LOCK, 1, self.key, self.ttl_ms, self.owner)

    def acquire(self):
        self.owner = f"{uuid.uuid4()}:1"
        deadline = time.monotonic() + self.wait_s
        pubsub = None
        try:
            if self.try_lock() is None:
                return True
            pubsub = self.servers.client.pubsub(ignore_subscribe_messages=True)
            pubsub.subscribe(self.channel)
            while True:
                ttl_ms = self.try_lock()  # subscribed first, so no release goes unheard
                if ttl_ms is None:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    self.owner = None
                    return False
                pubsub.get_message(timeout=min(max(int(ttl_ms), 1) / 1000, left))
        except redis.RedisError as e:
            raise outcome("RLock.lock", e)
        finally:
            if pubsub is not None:
                pubsub.close()

    def reacquire(self):
        """The watchdog's renewal (Renewer calls it)."""
        if self.servers.client.eval(self.RENEW, 1, self.key, self.ttl_ms, self.owner) != 1:
            raise redis.exceptions.LockNotOwnedError("the lock's hash no longer names us")

    def held(self, on_lost):
        self.renewer = Renewer(self, self.ttl_ms / 3000, on_lost)
        self.renewer.start()

    def stop_renewing(self):
        if self.renewer is not None:
            self.renewer.stop()
            self.renewer = None

    def unlock_args(self):
        return (self.UNLOCK, 2, self.key, self.channel, self.UNLOCK_MESSAGE, self.ttl_ms,
                self.owner)

    def release(self):
        self.stop_renewing()
        try:
            released = self.servers.client.eval(*self.unlock_args())
        except redis.RedisError as e:
            raise outcome("RLock.unlock", e)
        self.owner = None
        if released is None:
            raise NotHeld("RLock.unlock: the lock's hash no longer names us")

    def abandon(self):
        self.stop_renewing()
        if self.owner is not None:
            self.clean_up(*self.unlock_args())
            self.owner = None

    def close(self):
        self.stop_renewing()
        super().close()


class Renewer:
    def __init__(self, lock, interval_s, on_lost):
        self.lock = lock
        self.interval_s = interval_s
        self.on_lost = on_lost
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, name="watchdog", daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        self.stopped.set()
        self.thread.join()

    def run(self):
        while not self.stopped.wait(self.interval_s):
            try:
                self.lock.reacquire()
            except (redis.exceptions.LockError, redis.RedisError) as e:
                # Redisson stops renewing on a failed renewal, whatever the cause.
                self.on_lost(f"watchdog renewal failed: {type(e).__name__}: {e}")
                return


class Redlock:
    """The Redlock algorithm as published on redis.io ("Distributed Locks with Redis") and
    implemented by redlock-py and Redlock-rb: a random token; `SET key token NX PX ttl` on every
    server in turn with a short timeout; acquired when a majority said OK and the validity left,
    ttl - elapsed - drift by the client's wall clock, is positive; otherwise unlock all and retry
    after a random delay. The worker does not check the validity again before writing, as typical
    library use does not (`with redlock:` then work): what that costs is what the lab measures."""

    CLOCK_DRIFT_FACTOR = 0.01

    def __init__(self, args, endpoints, rng):
        self.key = args.lock
        self.ttl_ms = args.ttl_ms
        self.wait_s = 2 * args.ttl_ms / 1000
        self.rng = rng
        self.clients = [redis.Redis(host=h, port=p, socket_timeout=REDLOCK_TIMEOUT_S,
                                    socket_connect_timeout=REDLOCK_TIMEOUT_S)
                        for h, p in endpoints]
        self.quorum = len(self.clients) // 2 + 1
        self.token = None

    def acquire(self):
        give_up_at = time.monotonic() + self.wait_s
        while True:
            self.token = uuid.uuid4().hex
            t0 = time.time()  # the wall clock, as the reference implementations use
            locked = sum(self.lock_instance(c) for c in self.clients)
            elapsed_ms = (time.time() - t0) * 1000
            drift_ms = self.ttl_ms * self.CLOCK_DRIFT_FACTOR + 2
            validity_ms = self.ttl_ms - elapsed_ms - drift_ms
            if locked >= self.quorum and validity_ms > 0:
                return True
            self.unlock_all()
            delay = self.rng.uniform(0, 0.020)
            if time.monotonic() + delay > give_up_at:
                return False
            time.sleep(delay)

    def lock_instance(self, client):
        try:
            return bool(client.set(self.key, self.token, nx=True, px=self.ttl_ms))
        except redis.RedisError:
            return False  # a server that does not answer in time counts as a refusal

    def unlock_instance(self, client):
        """1 when our key was deleted, 0 when it was not ours (or gone), None on an error."""
        try:
            return int(client.eval(COMPARE_AND_DELETE, 1, self.key, self.token))
        except redis.RedisError:
            return None

    def unlock_all(self):
        return [self.unlock_instance(c) for c in self.clients]

    def held(self, on_lost):
        pass

    def release(self):
        results = self.unlock_all()
        deleted = results.count(1)
        unreachable = results.count(None)
        if deleted >= self.quorum:
            self.token = None
            return
        detail = f"deleted on {deleted} of {len(results)} servers ({unreachable} unreachable)"
        if deleted + unreachable < self.quorum:
            self.token = None
            raise NotHeld(f"Redlock unlock {detail}: no longer held on a majority (late)")
        raise Unknown(f"Redlock unlock {detail}")  # abandon() tries the unreachable ones again

    def next_endpoint(self):
        pass  # Redlock always talks to every server

    def abandon(self):
        if self.token is not None:
            self.unlock_all()
            self.token = None

    def close(self):
        for c in self.clients:
            c.close()
            c.connection_pool.disconnect()
