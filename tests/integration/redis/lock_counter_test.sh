#!/usr/bin/env bash
# redis-py's Lock on a three-node cluster: its API, then processes on every node incrementing one
# counter under it, with no lost update (lock_counter.py).
#
#   lock_counter_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
start_cluster
wait_redis_ready
/usr/bin/python3 "$here/lock_counter.py" "${RAFTLOCK_REDIS_PORTS[@]}"
/usr/bin/python3 "$here/watch_counter.py" "${RAFTLOCK_REDIS_PORTS[@]}"
