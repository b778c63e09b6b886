#!/usr/bin/env bash
# kill -9 of the leader during a redis-py lock loop: clients move to other nodes and no
# acknowledged write is lost (failover.py).
#
#   failover_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
start_cluster
wait_redis_ready
cluster_cmd="env RAFTLOCK_NO_BUILD=1 RAFTLOCK_BUILD_DIR=$build_dir RAFTLOCK_DATA_DIR=$WORK/data"
cluster_cmd+=" RAFTLOCK_PORT_BASE=$port_base $repo/scripts/cluster.sh"
/usr/bin/python3 "$here/failover.py" --cluster "$cluster_cmd" "${RAFTLOCK_REDIS_PORTS[@]}"
