# shellcheck shell=bash
# Shared by the SQL-mode tests: a three-node raftlock cluster with its PostgreSQL ports, and a
# throwaway PostgreSQL 15 server to compare with, both on ports of their own, both removed on exit.
#
#   source lib.sh BUILD_DIR PORT_BASE
#   start_cluster; start_real_postgres; wait_pg_ready
#   $RAFTLOCK_PG_PORTS (three ports), $REAL_PG_PORT, $WORK (scratch directory),
#   psql_to PORT [psql args...]   (every server is reached over TCP on 127.0.0.1)

source "$(dirname "${BASH_SOURCE[0]}")/../cluster_lib.sh" "$1" "$2" sql-test
WORK=$work
# The scratch directory is readable by everyone, so that PostgreSQL (which runs as the postgres OS
# user) can reach its own subdirectories in it.
chmod 755 "$WORK"
RAFTLOCK_PG_PORTS=("$((port_base + 401))" "$((port_base + 402))" "$((port_base + 403))")
REAL_PG_PORT=$((port_base + 399))
PG_BIN=/usr/lib/postgresql/15/bin
real_pg_pid=
export PGCONNECT_TIMEOUT=10

# Peer sessions (peer.sh) that a failed script did not close (their FIFO writers would otherwise
# sleep for ever), and the real PostgreSQL.
stop_peers_and_postgres() {
    local status=$1 pid_file
    for pid_file in "$WORK"/peers*/*.pid; do
        if [ -f "$pid_file" ]; then
            kill "$(cat "$pid_file")" 2>/dev/null || true
        fi
    done
    if [ -n "$real_pg_pid" ]; then
        # SIGINT is PostgreSQL's fast shutdown: it ends the sessions and exits at once. It goes to
        # the postmaster itself (its pid is the first line of postmaster.pid): runuser, the
        # process started here, does not pass SIGINT on.
        local postmaster
        postmaster=$(head -n1 "$WORK/pg/data/postmaster.pid" 2>/dev/null || true)
        if [[ "$postmaster" =~ ^[0-9]+$ ]]; then
            kill -INT "$postmaster" 2>/dev/null || true
        else
            kill -TERM "$real_pg_pid" 2>/dev/null || true
        fi
        wait "$real_pg_pid" 2>/dev/null || true
    fi
    if [ "$status" -ne 0 ] && [ -f "$WORK/pg.log" ]; then
        echo "--- postgres log ---" >&2
        tail -n 20 "$WORK/pg.log" >&2
    fi
}
on_exit stop_peers_and_postgres

start_cluster() {
    cluster up >/dev/null
}

# psql with the options every test uses: no ~/.psqlrc, unaligned output, errors do not stop the
# script. Any user name works on raftlock; the real server was initialised with user postgres.
psql_to() {
    local port=$1
    shift
    PGTZ=UTC psql -X -A -v ON_ERROR_STOP=0 -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"
}

# A PostgreSQL 15 of its own in $WORK/pg, as the postgres OS user (PostgreSQL refuses root), with
# trust authentication; its Unix socket goes to $WORK/pgsock. Stopped by cleanup().
start_real_postgres() {
    [ -x "$PG_BIN/postgres" ] || { echo "PostgreSQL 15 is not installed in $PG_BIN" >&2; exit 1; }
    local as_postgres=()
    if [ "$(id -u)" = 0 ]; then
        as_postgres=(runuser -u postgres --)
    fi
    mkdir -p "$WORK/pg" "$WORK/pgsock"
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$WORK/pg" "$WORK/pgsock"
    fi
    "${as_postgres[@]}" "$PG_BIN/initdb" -D "$WORK/pg/data" -U postgres -A trust -E UTF8 \
        --locale=C.UTF-8 >"$WORK/initdb.log" 2>&1 ||
        { cat "$WORK/initdb.log" >&2; echo "initdb failed" >&2; exit 1; }
    "${as_postgres[@]}" "$PG_BIN/postgres" -D "$WORK/pg/data" -p "$REAL_PG_PORT" \
        -c listen_addresses=127.0.0.1 -k "$WORK/pgsock" -c fsync=off -c synchronous_commit=off \
        -c full_page_writes=off -c timezone=UTC >"$WORK/pg.log" 2>&1 &
    real_pg_pid=$!
    for _ in $(seq 300); do
        if psql_to "$REAL_PG_PORT" -tc 'SELECT 1' >/dev/null 2>&1; then
            return 0
        fi
        kill -0 "$real_pg_pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$WORK/pg.log" >&2
    echo "PostgreSQL did not start on port $REAL_PG_PORT" >&2
    exit 1
}

# Waits until every raftlock pg port answers SELECT 1 (a leader exists: the session a connection
# opens goes through the log).
wait_pg_ready() {
    local port ok
    for port in "${RAFTLOCK_PG_PORTS[@]}"; do
        ok=0
        for _ in $(seq 300); do
            if [ "$(psql_to "$port" -tc 'SELECT 1' 2>/dev/null)" = 1 ]; then
                ok=1
                break
            fi
            sleep 0.1
        done
        [ $ok = 1 ] || { echo "raftlock's pg port $port never answered SELECT 1" >&2; exit 1; }
    done
}
