#!/usr/bin/env bash
# Lost-update tests with three client libraries on a three-node cluster: psycopg2 and psycopg 3
# (counter.py), then node-postgres from npm (counter.js), each incrementing counters under every
# locking technique of the SQL mode. node-postgres is installed into the test's scratch directory;
# npm must reach its registry.
#
#   counter_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
if ! command -v npm >/dev/null; then
    echo "npm is not installed (scripts/deps.sh installs it)" >&2
    exit 1
fi
(cd "$WORK" && npm install --no-audit --no-fund --loglevel=error pg@8.13.1 >/dev/null)
start_cluster
wait_pg_ready
/usr/bin/python3 "$here/counter.py" "${RAFTLOCK_PG_PORTS[@]}"
NODE_PATH="$WORK/node_modules" node "$here/counter.js" "${RAFTLOCK_PG_PORTS[@]}"
echo "counter_test: all passed"
