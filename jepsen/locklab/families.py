"""The lock families of the lab (docs/lock-lab.md "The families"): where each runs and what its
recipe needs from the lab. One table, read by the lab and by its report."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Family:
    targets: tuple
    native: bool = False  # the C++ worker (raftlock's client library); else the Python worker
    fenced: bool = False  # the resource refuses stale tokens
    tokens: bool = False  # acquisitions carry fencing tokens: the history goes to the mutex model
    optimistic: bool = False  # no lock: the counter is a row of the database
    prepare: bool = False  # the Python worker's --prepare makes tables first


REDIS_TARGETS = ("raftlock", "redis", "redis-replicated")
SQL_TARGETS = ("raftlock", "postgres")
ZK_TARGETS = ("raftlock", "zookeeper")
FAMILIES = {
    "native-fenced": Family(("raftlock",), native=True, fenced=True, tokens=True),
    "native-unfenced": Family(("raftlock",), native=True, tokens=True),
    "native-zk-recipe": Family(("raftlock",), native=True, tokens=True),
    "native-zk-recipe-fenced": Family(("raftlock",), native=True, fenced=True, tokens=True),
    "zk-recipe": Family(ZK_TARGETS, tokens=True),
    "zk-recipe-fenced": Family(ZK_TARGETS, fenced=True, tokens=True),
    "redis-setnx-expire": Family(REDIS_TARGETS),
    "redis-set-nx-px": Family(REDIS_TARGETS),
    "redis-watchdog": Family(REDIS_TARGETS),
    "redisson-pubsub": Family(REDIS_TARGETS),
    "redlock": Family(("redis5",)),
    "sql-unique-row": Family(SQL_TARGETS, prepare=True),
    "sql-for-update": Family(SQL_TARGETS, prepare=True),
    "sql-advisory": Family(SQL_TARGETS),
    "sql-get-lock": Family(("raftlock",)),
    "sql-optimistic": Family(SQL_TARGETS, optimistic=True, prepare=True),
}
