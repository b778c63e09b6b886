#!/usr/bin/env bash
# kazoo (python3-kazoo), unmodified, on a three-node cluster's ZooKeeper ports: its API, watches,
# ephemeral nodes, and its Lock recipe under processes on every node (kazoo_basics.py); then a
# session that outlives its node's crash (kazoo_failover.py).
#
#   kazoo_test.sh BUILD_DIR PORT_BASE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2" zk-test

/usr/bin/python3 -c 'import kazoo' 2>/dev/null || { echo "python3-kazoo is not installed" >&2; exit 1; }
cluster up >/dev/null
/usr/bin/python3 "$here/kazoo_basics.py" "${zk_hosts[@]}"
export_cluster_env
/usr/bin/python3 "$here/kazoo_failover.py" "$repo/scripts/cluster.sh kill 1" "${zk_hosts[@]}"
