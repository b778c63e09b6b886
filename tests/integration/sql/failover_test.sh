#!/usr/bin/env bash
# kill -9 of the leader under psycopg2 clients running transactions and advisory-locked
# increments: nothing half-committed, no acknowledged COMMIT lost, no update lost (failover.py).
# The sessions of the killed node's clients hold locks until they expire; a 3 s
# --pg-session-timeout-ms (10 s by default) keeps the stall, and the test, short.
#
#   failover_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
export RAFTLOCKD_ARGS="${RAFTLOCKD_ARGS:-} --pg-session-timeout-ms 3000"
start_cluster
wait_pg_ready
/usr/bin/python3 "$here/failover.py" --cluster "$(cluster_command)" "${RAFTLOCK_PG_PORTS[@]}"
