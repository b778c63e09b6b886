# Shared by the Redis-mode tests: a three-node raftlock cluster with its Redis ports, and a real
# redis-server to compare with, both on ports of their own, both removed on exit.
#
#   source lib.sh BUILD_DIR PORT_BASE
#   start_cluster; start_real_redis
#   $RAFTLOCK_REDIS_PORTS (three ports), $REAL_REDIS_PORT, $WORK (scratch directory)

source "$(dirname "${BASH_SOURCE[0]}")/../cluster_lib.sh" "$1" "$2" redis-test
WORK=$work
RAFTLOCK_REDIS_PORTS=("$((port_base + 301))" "$((port_base + 302))" "$((port_base + 303))")
REAL_REDIS_PORT=$((port_base + 399))
real_redis_pid=

stop_real_redis() {
    if [ -n "$real_redis_pid" ]; then
        kill "$real_redis_pid" 2>/dev/null || true
        wait "$real_redis_pid" 2>/dev/null || true
    fi
}
on_exit stop_real_redis

start_cluster() {
    cluster up >/dev/null
}

start_real_redis() {
    command -v redis-server >/dev/null || { echo "redis-server is not installed" >&2; exit 1; }
    redis-server --port "$REAL_REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$WORK" --logfile "$WORK/redis.log" &
    real_redis_pid=$!
    for _ in $(seq 100); do
        redis-cli -p "$REAL_REDIS_PORT" PING >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "redis-server did not start on port $REAL_REDIS_PORT" >&2
    exit 1
}

# Waits until every raftlock Redis port answers a write (a leader exists and forwards work).
wait_redis_ready() {
    local port
    for port in "${RAFTLOCK_REDIS_PORTS[@]}"; do
        for _ in $(seq 200); do
            [ "$(redis-cli -p "$port" SET __ready 1 2>/dev/null)" = OK ] && break
            sleep 0.05
        done
    done
    redis-cli -p "${RAFTLOCK_REDIS_PORTS[0]}" DEL __ready >/dev/null
}
