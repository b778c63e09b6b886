"""The lab's ZooKeeper lock recipe (docs/lock-lab.md "The families"), written the way kazoo's users
write it: kazoo's `Lock` (ZooKeeper's lock recipe: an ephemeral-sequential child of the lock's
node, a watch on the predecessor only, the lowest child holds) on one kazoo session, with a state
listener that learns when the session is lost. The same code runs against raftlock's ZooKeeper
ports and against a real ZooKeeper ensemble.

The holder's child's czxid is its fencing token: children are created in sequence order, and the
lowest one holds, so a later holder's child always has a higher czxid (on both servers the zxid
of a create grows with every write). `zk-recipe-fenced` shows the token to the resource.

The recipe interface is recipes_redis's (acquire, held, release, next_endpoint, abandon, close);
`fencing_token` is the current grant's token.
"""

import logging
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.handlers.threading import KazooTimeoutError

from locklab.recorder import Failed, NotHeld, Unknown

LOCKS_ROOT = "/lab"
CONNECT_TIMEOUT_S = 5.0


def log(message):
    print(f"recipes_zk: {message}", flush=True)


class KazooLock:
    """kazoo's Lock on one session. The session outlives the cycles (as an application's
    KazooClient does); after an unknown outcome it is closed, which deletes whatever child it may
    still have, and the next acquire opens a new one."""

    # The lock's loss is told from kazoo's event thread: the worker reports it on its own
    # resource connection (worker.py).
    reports_from_thread = True

    def __init__(self, args, endpoints, _rng):
        self.hosts = ",".join(f"{host}:{port}" for host, port in endpoints)
        self.path = f"{LOCKS_ROOT}/{args.lock}"
        self.identifier = f"worker-{args.worker}"
        self.ttl_s = args.ttl_ms / 1000
        self.wait_s = 2 * self.ttl_s
        self.client = None
        self.lock = None
        self.fencing_token = None
        self._guard = threading.Lock()  # the listener's thread and the worker's
        self._holding = False  # from a successful acquire to the end of its release
        self._on_lost = None  # the worker's callback, from held() to the release
        self._lost_why = None  # the session ended during the grant
        # kazoo logs connection drops at WARNING; the worker's log shows them beside its own.
        logging.basicConfig(level=logging.WARNING, format="kazoo: %(levelname)s %(message)s")

    def connect(self):
        if self.client is not None:
            return self.client
        client = KazooClient(
            hosts=self.hosts, timeout=self.ttl_s,
            # Reconnect for ever (a worker outlives every fault); bounded commands, so that a
            # release cannot hang past the session it belongs to.
            connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 0.5},
            command_retry={"max_tries": -1, "delay": 0.05, "max_delay": 0.5,
                           "deadline": self.wait_s})
        client.add_listener(self.state_changed)
        try:
            client.start(timeout=CONNECT_TIMEOUT_S)
        except KazooTimeoutError as e:
            client.stop()
            client.close()
            raise Failed(f"no ZooKeeper server of {self.hosts} answered: {e}")
        self.client = client
        return client

    def state_changed(self, state):
        """kazoo's state listener, on its event thread. LOST: the session expired (or was closed),
        and its ephemeral children with it: the lock is gone. SUSPENDED (connection lost, session
        maybe alive) is not a loss: kazoo's documentation asks the application to be careful
        there, and the lab measures what happens when it carries on."""
        if state != KazooState.LOST:
            return
        with self._guard:
            if not self._holding or self._lost_why is not None:
                return
            self._lost_why = "the ZooKeeper session was lost (kazoo state LOST)"
            # During a release the worker's own thread reports it (release raises NotHeld).
            on_lost, self._on_lost = self._on_lost, None
        if on_lost is not None:
            on_lost(self._lost_why)

    def acquire(self):
        client = self.connect()
        self.lock = client.Lock(self.path, identifier=self.identifier)
        self.fencing_token = None
        with self._guard:
            self._holding, self._lost_why = False, None
        try:
            got = self.lock.acquire(timeout=self.wait_s)
        except LockTimeout:
            got = False  # kazoo deleted our child (best effort) before raising
        except KazooException as e:
            # kazoo deletes its child on the way out when it can; when it could not, the session
            # still holds it: abandon() (the worker's next step) closes the session.
            raise Unknown(f"Lock.acquire: {type(e).__name__}: {e}")
        if not got:
            if not client.connected:
                self.abandon()  # the child may be left; only the session's end removes it
            return False
        try:
            stat = client.exists(f"{self.path}/{self.lock.node}")
        except KazooException as e:
            raise Unknown(f"exists of our child after the acquire: {type(e).__name__}: {e}")
        if stat is None:
            raise Unknown("our child was gone right after the acquire (the session expired)")
        self.fencing_token = stat.czxid
        with self._guard:
            self._holding = True
        return True

    def held(self, on_lost):
        with self._guard:
            self._on_lost = on_lost

    def release(self):
        with self._guard:
            self._on_lost = None
        try:
            # kazoo's release deletes the child and ignores NoNode: a child the session's expiry
            # already deleted reads as released. The listener is what tells the holder; kazoo
            # calls it when it learns of the expiry, before a retried delete runs on the new
            # session, so it has spoken by the time release() returns.
            self.lock.release()
        except KazooException as e:
            raise Unknown(f"Lock.release: {type(e).__name__}: {e}")
        finally:
            self.fencing_token = None
            with self._guard:
                self._holding, lost_why = False, self._lost_why
        if lost_why is not None:
            raise NotHeld(lost_why)

    def next_endpoint(self):
        pass  # kazoo moves to the next server of its host list by itself

    def abandon(self):
        with self._guard:
            self._holding, self._on_lost = False, None
        self.fencing_token = None
        if self.client is None:
            return
        try:
            self.client.stop()  # closeSession when connected: the server deletes our children
            self.client.close()
        except Exception as e:  # never raises: the session expires by itself
            log(f"closing the session: {type(e).__name__}: {e}")
        self.client = None
        self.lock = None

    def close(self):
        self.abandon()

