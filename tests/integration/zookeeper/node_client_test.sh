#!/usr/bin/env bash
# node-zookeeper-client from npm, unmodified, on a three-node cluster's ZooKeeper ports
# (node_client.js): its API, watches, versions, transactions, ZooKeeper's lock recipe under three
# processes on three nodes, and a session that outlives its node's crash, watches included. The
# package is installed into the test's scratch directory; npm must reach its registry.
#
#   node_client_test.sh BUILD_DIR PORT_BASE
set -euo pipefail
build_dir=$(cd "$1" && pwd)
port_base=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/raftlock-zk-node-test.XXXXXX")
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

command -v npm >/dev/null || { echo "npm is not installed (scripts/deps.sh installs it)" >&2; exit 1; }
(cd "$work" && npm install --no-audit --no-fund --loglevel=error node-zookeeper-client@1.1.3 >/dev/null)
cluster up >/dev/null
export RAFTLOCK_NO_BUILD=1 RAFTLOCK_BUILD_DIR="$build_dir" RAFTLOCK_DATA_DIR="$work/data" \
    RAFTLOCK_PORT_BASE="$port_base"
# node_client.js appends the number of the node its client is connected to.
NODE_PATH="$work/node_modules" timeout 40 node "$here/node_client.js" main "$repo/scripts/cluster.sh kill" \
    "${zk_hosts[@]}"
