#!/usr/bin/env bash
# kazoo (python3-kazoo), unmodified, on a three-node cluster's ZooKeeper ports: its API, watches,
# ephemeral nodes, and its Lock recipe under processes on every node (kazoo_basics.py); then a
# session that outlives its node's crash (kazoo_failover.py).
#
#   kazoo_test.sh BUILD_DIR PORT_BASE
set -euo pipefail
build_dir=$(cd "$1" && pwd)
port_base=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/raftlock-zk-test.XXXXXX")
zk_hosts=("127.0.0.1:$((port_base + 501))" "127.0.0.1:$((port_base + 502))"
    "127.0.0.1:$((port_base + 503))")

cluster() {
    RAFTLOCK_NO_BUILD=1 RAFTLOCK_BUILD_DIR="$build_dir" RAFTLOCK_DATA_DIR="$work/data" \
        RAFTLOCK_PORT_BASE="$port_base" "$repo/scripts/cluster.sh" "$@"
}
cleanup() {
    local status=$?
    cluster down >/dev/null 2>&1 || true
    if [ $status -ne 0 ]; then
        echo "--- node logs (last lines) ---" >&2
        tail -n 20 "$work"/data/node*/raftlockd.log >&2 2>/dev/null || true
    fi
    rm -rf "$work"
    exit $status
}
trap cleanup EXIT

/usr/bin/python3 -c 'import kazoo' 2>/dev/null || { echo "python3-kazoo is not installed" >&2; exit 1; }
cluster up >/dev/null
/usr/bin/python3 "$here/kazoo_basics.py" "${zk_hosts[@]}"
export RAFTLOCK_NO_BUILD=1 RAFTLOCK_BUILD_DIR="$build_dir" RAFTLOCK_DATA_DIR="$work/data" \
    RAFTLOCK_PORT_BASE="$port_base"
/usr/bin/python3 "$here/kazoo_failover.py" "$repo/scripts/cluster.sh kill 1" "${zk_hosts[@]}"
