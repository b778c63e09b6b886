#!/usr/bin/env bash
# A connection that holds locks and an open transaction is dropped without a Terminate message
# (socket closed, process killed, closed while waiting): another session on another node gets
# every lock at once and never sees the uncommitted row (session.py).
#
#   session_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
start_cluster
wait_pg_ready
/usr/bin/python3 "$here/session.py" "${RAFTLOCK_PG_PORTS[@]}"
echo "session_test: all passed"
