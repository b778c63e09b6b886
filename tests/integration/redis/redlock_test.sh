#!/usr/bin/env bash
# ioredis + redlock from npm against a three-node cluster (redlock_test.js), then on the same
# cluster redis-semaphore's Mutex, Semaphore, MultiSemaphore and RedlockMutex (semaphore_test.js)
# and node-redis-warlock on node-redis 3 (warlock_test.js), and the locks whose waiters wait for a
# release message: simple-redis-mutex on node-redis 5 and a Redisson-style lock, with their
# hand-off latency against the polling libraries (pubsub_locks_test.js). The packages are installed
# into the test's scratch directory (node-redis 5 and what needs it into a folder of its own, as
# node-redis 3 is there); npm must reach its registry.
#
#   redlock_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
command -v npm >/dev/null || { echo "npm is not installed (scripts/deps.sh installs it)" >&2; exit 1; }
(cd "$WORK" && npm install --no-audit --no-fund --loglevel=error ioredis@5.4.1 redlock@4.2.0 \
    redis-semaphore@5.8.0 redis@3.1.2 node-redis-warlock@1.0.2 >/dev/null)
mkdir -p "$WORK/v5"
echo '{}' >"$WORK/v5/package.json"  # (without one npm would install into $WORK, the folder above)
npm install --prefix "$WORK/v5" --no-audit --no-fund --loglevel=error redis@5.12.1 \
    simple-redis-mutex@3.0.0 >/dev/null
start_cluster
wait_redis_ready
NODE_PATH="$WORK/node_modules" node "$here/redlock_test.js" "${RAFTLOCK_REDIS_PORTS[@]}"
NODE_PATH="$WORK/node_modules" node "$here/semaphore_test.js" "${RAFTLOCK_REDIS_PORTS[@]}"
NODE_PATH="$WORK/node_modules" node "$here/warlock_test.js" "${RAFTLOCK_REDIS_PORTS[@]}"
ADMIN_PORTS="$((port_base + 201)),$((port_base + 202)),$((port_base + 203))" \
    NODE_PATH="$WORK/v5/node_modules:$WORK/node_modules" node "$here/pubsub_locks_test.js" \
    "${RAFTLOCK_REDIS_PORTS[@]}"
