#!/usr/bin/env bash
# kill -9 of the leader during a redis-py lock loop, with ioredis + redlock workers beside it
# (failover_redlock.js, from npm into the test's scratch directory): clients move to other nodes,
# no acknowledged write is lost, and no two redlock holders overlap (failover.py).
#
#   failover_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
command -v npm >/dev/null || { echo "npm is not installed (scripts/deps.sh installs it)" >&2; exit 1; }
(cd "$WORK" && npm install --no-audit --no-fund --loglevel=error ioredis@5.4.1 redlock@4.2.0 >/dev/null)
start_cluster
wait_redis_ready
cluster_cmd="env RAFTLOCK_NO_BUILD=1 RAFTLOCK_BUILD_DIR=$build_dir RAFTLOCK_DATA_DIR=$WORK/data"
cluster_cmd+=" RAFTLOCK_PORT_BASE=$port_base $repo/scripts/cluster.sh"
NODE_PATH="$WORK/node_modules" /usr/bin/python3 "$here/failover.py" --cluster "$cluster_cmd" \
    --node-workers "node $here/failover_redlock.js" "${RAFTLOCK_REDIS_PORTS[@]}"
