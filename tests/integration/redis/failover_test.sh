#!/usr/bin/env bash
# kill -9 of the leader during a redis-py lock loop, with npm clients' workers beside it through the
# same kill and restart (failover.py): ioredis + redlock (failover_redlock.js), and the locks whose
# waiters wake on a release message, simple-redis-mutex 3.0 on node-redis 5 and a Redisson-style
# lock on ioredis (failover_pubsub.js). Clients move to other nodes or reconnect and resubscribe,
# no acknowledged write is lost, no two holders of a lock overlap, and every lock makes progress
# after the kill. 12 s runs: the leader is killed after 3 s and restarted 3 s later, which leaves
# time after the election and after the 3 s lease of a lock whose holder died with its node. The
# packages are installed from npm into the test's scratch directory (node-redis 5 and
# simple-redis-mutex into a folder of their own, as in redlock_test.sh).
#
#   failover_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
command -v npm >/dev/null || { echo "npm is not installed (scripts/deps.sh installs it)" >&2; exit 1; }
(cd "$WORK" && npm install --no-audit --no-fund --loglevel=error ioredis@5.4.1 redlock@4.2.0 >/dev/null)
mkdir -p "$WORK/v5"
echo '{}' >"$WORK/v5/package.json"  # (without one npm would install into $WORK, the folder above)
npm install --prefix "$WORK/v5" --no-audit --no-fund --loglevel=error redis@5.12.1 \
    simple-redis-mutex@3.0.0 >/dev/null
start_cluster
wait_redis_ready
cluster_cmd="env RAFTLOCK_NO_BUILD=1 RAFTLOCK_BUILD_DIR=$build_dir RAFTLOCK_DATA_DIR=$WORK/data"
cluster_cmd+=" RAFTLOCK_PORT_BASE=$port_base $repo/scripts/cluster.sh"
v5_path="$WORK/v5/node_modules:$WORK/node_modules"  # node-redis 5 first, then ioredis
NODE_PATH="$WORK/node_modules" /usr/bin/python3 "$here/failover.py" --cluster "$cluster_cmd" \
    --seconds 12 --node-workers "node $here/failover_redlock.js" \
    --node-workers "env NODE_PATH=$v5_path node $here/failover_pubsub.js" "${RAFTLOCK_REDIS_PORTS[@]}"
# Then a follower killed and restarted after 20,000 PUBLISHes: a subscriber that connects while it
# replays must receive none of them again, and then a new one (replay_pubsub.py).
/usr/bin/python3 "$here/replay_pubsub.py" --cluster "$cluster_cmd" "${RAFTLOCK_REDIS_PORTS[@]}"
