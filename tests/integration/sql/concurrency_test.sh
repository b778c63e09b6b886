#!/usr/bin/env bash
# lock_timeout (55P03), deadlocks (40P01) and cancel (57014) between two and three sessions, on a
# three-node cluster (one node per session) and on a real PostgreSQL 15: the outcomes must be the
# same (concurrency.py).
#
#   concurrency_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"
start_real_postgres
start_cluster
wait_pg_ready
/usr/bin/python3 "$here/concurrency.py" --real "$REAL_PG_PORT" "${RAFTLOCK_PG_PORTS[@]}"
