#!/usr/bin/env bash
# node-zookeeper-client from npm, unmodified, on a three-node cluster's ZooKeeper ports
# (node_client.js): its API, watches, versions, transactions, ZooKeeper's lock recipe under three
# processes on three nodes, and a session that outlives its node's crash, watches included. The
# package is installed into the test's scratch directory; npm must reach its registry.
#
#   node_client_test.sh BUILD_DIR PORT_BASE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2" zk-node-test

command -v npm >/dev/null || { echo "npm is not installed (scripts/deps.sh installs it)" >&2; exit 1; }
(cd "$work" && npm install --no-audit --no-fund --loglevel=error node-zookeeper-client@1.1.3 >/dev/null)
cluster up >/dev/null
export_cluster_env
# node_client.js appends the number of the node its client is connected to.
NODE_PATH="$work/node_modules" timeout 40 node "$here/node_client.js" main "$repo/scripts/cluster.sh kill" \
    "${zk_hosts[@]}"
