#!/usr/bin/env bash
# Starts and stops the systems bench/compare.sh measures, each on loopback with its durable
# default, one at a time.
#
#   bench/peers.sh start SYSTEM      install its packages if missing, start it, wait until healthy
#   bench/peers.sh stop SYSTEM       kill it (SIGTERM, SIGKILL after 10 s) and remove its data
#   bench/peers.sh endpoints SYSTEM  the client endpoints to give raftlock-bench --endpoints;
#                                    `endpoints raftlock-zk` / `raftlock-redis`: raftlock's
#                                    ZooKeeper / Redis ports
#   bench/peers.sh status SYSTEM     which of its processes are alive
#   bench/peers.sh install           install every peer package that is missing
#   bench/peers.sh leader SYSTEM     the node number (1-3) of the current leader
#   bench/peers.sh leader-now SYSTEM the same, asked once: exit status 1 when none leads now
#   bench/peers.sh kill-node SYSTEM N   SIGKILL node N (its data stays)
#   bench/peers.sh start-node SYSTEM N  start node N again on its data, wait until it answers
#   bench/peers.sh pids SYSTEM       the process ids of its running servers, one a line
#
# SYSTEM:
#   raftlock       three raftlockd (build/cli/raftlockd), Raft 27401-27403, clients
#                  27411-27413, admin 27421-27423, ZooKeeper 27431-27433 (raftlock-bench
#                  --system zookeeper measures that port as it measures ZooKeeper; ports of
#                  its own: the README cluster of
#                  scripts/cluster.sh uses 7001-7403, so both can run at once); synced writes
#                  to its default store, the journal (RAFTLOCK_BENCH_FLAGS adds raftlockd flags,
#                  e.g. "--storage-engine rocksdb" for the RocksDB store)
#   etcd           three etcd 3.4 members (Debian etcd-server), clients 24791-24793, peers
#                  24801-24803; fsync on (etcd's default; --unsafe-no-fsync is not given)
#   zookeeper      a three-server ZooKeeper 3.8 ensemble (Debian zookeeper), clients 21811-21813,
#                  quorum 28881-28883, election 38881-38883, forceSync=yes, admin server off,
#                  minSessionTimeout=1000 (the default, 2 ticks = 4 s, would raise the 3 s
#                  session timeout lock.failover gives every system)
#   redis          one redis-server 7.0 (Debian redis-server) on 16379, appendonly yes,
#                  appendfsync always: durable, but one process, no replication, no consensus
#   redis-nofsync  the same redis-server with no persistence at all (no AOF, no RDB)
#   postgres       one PostgreSQL 15 (Debian postgresql-15) on 15432, a throwaway cluster made by
#                  initdb, trust auth on 127.0.0.1, fsync=on, synchronous_commit=on (its
#                  defaults, given explicitly), max_connections=200: durable, but one process, no
#                  replication. It runs as the postgres OS user (PostgreSQL refuses root);
#                  measure it with raftlock-bench --system postgres, as raftlock's SQL mode
#
# Data lives under $BENCH_DATA_DIR (default /tmp/raftlock-bench; on this machine /tmp is the same
# ext4 disk as everything else, not a tmpfs: keep it on a real disk or fsync costs nothing).
#
# Packages: `apt-get install -y etcd-server zookeeper redis-server libzookeeper-mt-dev
# postgresql-15` runs when one of them is missing. On a machine with systemd, installing
# etcd-server, redis-server or postgresql-15 starts their default service (ports 2379/2380, 6379,
# 5432); this script stops those units, but only when it installed the package itself in this
# call, so a service someone already ran is left alone. The units stay enabled (they would start
# again at boot); `systemctl disable etcd redis-server postgresql` if that is unwanted.
#
# Environment: BENCH_DATA_DIR, RAFTLOCK_BUILD_DIR (default build-release, as bench/compare.sh),
# RAFTLOCK_BENCH_FLAGS (more raftlockd flags, split on spaces).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

data_root=${BENCH_DATA_DIR:-/tmp/raftlock-bench}
build_dir=${RAFTLOCK_BUILD_DIR:-build-release}
healthy_deadline_s=60
stop_deadline_s=10
nodes=(1 2 3)

say() { echo "peers.sh: $*" >&2; }
die() {
    echo "peers.sh: $*" >&2
    exit 1
}

system_dir() { echo "$data_root/$1"; }

# --- packages -------------------------------------------------------------------------------------

ensure_packages() {
    local wanted=("$@") missing=() p
    for p in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || die "missing packages ${missing[*]}: run as root or apt-get install them"
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # A package's own service would compete for CPU and disk with the measured cluster.
    if [ -d /run/systemd/system ]; then
        local unit
        for p in "${missing[@]}"; do
            case "$p" in
                etcd-server) unit=etcd ;;
                redis-server) unit=redis-server ;;
                zookeeper) unit=zookeeper ;;
                postgresql-15) unit=postgresql ;;
                *) continue ;;
            esac
            if systemctl is-active --quiet "$unit" 2>/dev/null; then
                say "stopping the $unit service the $p package just started"
                systemctl stop "$unit" || true
            fi
        done
    fi
}

all_packages() {
    ensure_packages etcd-server zookeeper redis-server libzookeeper-mt-dev postgresql-15
}

# --- processes ------------------------------------------------------------------------------------

# start_process NAME LOG COMMAND...: runs COMMAND in the background in its own process group,
# records its pid in $dir/NAME.pid.
start_process() {
    local name=$1 log=$2
    shift 2
    (
        set -m
        nohup "$@" >>"$log" 2>&1 </dev/null &
        echo $! >"$dir/$name.pid"
    )
}

alive_pids() {
    local f pid
    for f in "$dir"/*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        kill -0 "$pid" 2>/dev/null && echo "$pid"
    done
    return 0
}

stop_system() {
    dir=$(system_dir "$1")
    [ -d "$dir" ] || {
        say "$1: nothing to stop"
        return 0
    }
    local pids pid deadline=$((SECONDS + stop_deadline_s)) signal=TERM
    # PostgreSQL's SIGTERM waits for every client to leave; SIGINT is its fast shutdown.
    [ "$1" = postgres ] && signal=INT
    pids=$(alive_pids)
    for pid in $pids; do
        kill "-$signal" "$pid" 2>/dev/null || true
    done
    while [ -n "$(alive_pids)" ] && [ $SECONDS -lt $deadline ]; do
        sleep 0.2
    done
    for pid in $(alive_pids); do
        say "$1: pid $pid still running after ${stop_deadline_s} s, SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    done
    sleep 0.2
    rm -rf "$dir"
    say "$1: stopped, data removed"
}

# Fails when a process of the system died while it was starting (and shows its log).
check_alive() {
    local f pid
    for f in "$dir"/*.pid; do
        pid=$(cat "$f")
        if ! kill -0 "$pid" 2>/dev/null; then
            say "$(basename "$f" .pid) exited while starting; the end of its log:"
            tail -n 20 "$dir/$(basename "$f" .pid).log" >&2 || true
            return 1
        fi
    done
}

# wait_healthy NAME CHECK...: polls CHECK until it succeeds or the deadline passes.
wait_healthy() {
    local name=$1 deadline=$((SECONDS + healthy_deadline_s))
    shift
    while [ $SECONDS -lt $deadline ]; do
        check_alive || die "$name did not start"
        if "$@" >/dev/null 2>&1; then
            say "$name is up: $(cmd_endpoints "$name")"
            return 0
        fi
        sleep 0.5
    done
    die "$name not healthy after ${healthy_deadline_s} s (logs in $dir)"
}

# --- raftlock -------------------------------------------------------------------------------------

raftlock_port_base=27400
# The nodes' ports at base + OFFSET + n: 10 the native client port, 30 the ZooKeeper port, 50 the
# Redis port.
raftlock_ports() {
    local n list=()
    for n in "${nodes[@]}"; do
        list+=("127.0.0.1:$((raftlock_port_base + $1 + n))")
    done
    (IFS=,; echo "${list[*]}")
}
raftlock_endpoints() { raftlock_ports 10; }
raftlock_zk_endpoints() { raftlock_ports 30; }
raftlock_redis_endpoints() { raftlock_ports 50; }

start_raftlock() {
    local n
    for n in "${nodes[@]}"; do
        start_raftlock_node "$n"
    done
    wait_healthy raftlock raftlock_has_leader
}

# The same command for the first start and a restart: raftlockd recovers from its data dir.
start_raftlock_node() {
    local n=$1 raftlockd=$root/$build_dir/cli/raftlockd members=() m
    [ -x "$raftlockd" ] || die "$raftlockd is missing: ninja -C $build_dir raftlockd"
    for m in "${nodes[@]}"; do
        members+=(--member "$m=127.0.0.1:$((raftlock_port_base + m))")
    done
    mkdir -p "$dir/node$n"
    start_process "raftlockd$n" "$dir/raftlockd$n.log" "$raftlockd" --id "$n" \
        --cluster-id 7 "${members[@]}" --client-listen "127.0.0.1:$((raftlock_port_base + 10 + n))" \
        --admin-listen "127.0.0.1:$((raftlock_port_base + 20 + n))" \
        --zk-listen "127.0.0.1:$((raftlock_port_base + 30 + n))" \
        --redis-listen "127.0.0.1:$((raftlock_port_base + 50 + n))" --data-dir "$dir/node$n" \
        --max-connections 100000 --max-connections-per-address 100000 \
        ${RAFTLOCK_BENCH_FLAGS:-}
    # Every client of a benchmark comes from 127.0.0.1, and a ZooKeeper session is a connection of
    # its own: session.keepalive's 10,000 idle sessions through the ZooKeeper port need more than
    # the default 1,024 per address (ZooKeeper runs with maxClientCnxns=0 here, unlimited, too).
}

raftlock_node_answers() {
    curl -sf --max-time 1 "http://127.0.0.1:$((raftlock_port_base + 20 + $1))/status" | grep -q '"role"'
}

raftlock_leader() {
    local n
    for n in "${nodes[@]}"; do
        if curl -sf --max-time 1 "http://127.0.0.1:$((raftlock_port_base + 20 + n))/status" |
            grep -q '"role":"leader"'; then
            echo "$n"
            return 0
        fi
    done
    return 1
}

raftlock_has_leader() {
    local n
    for n in "${nodes[@]}"; do
        curl -sf --max-time 1 "http://127.0.0.1:$((raftlock_port_base + 20 + n))/status" | grep -q '"role":"leader"' &&
            return 0
    done
    return 1
}

# --- etcd -----------------------------------------------------------------------------------------

etcd_endpoints() { echo "127.0.0.1:24791,127.0.0.1:24792,127.0.0.1:24793"; }

start_etcd() {
    ensure_packages etcd-server
    local n
    for n in "${nodes[@]}"; do
        start_etcd_node "$n"
    done
    wait_healthy etcd etcd_healthy
}

# A restart uses the same flags: with an existing data dir etcd ignores the --initial-* ones.
start_etcd_node() {
    local n=$1 cluster="" m
    for m in "${nodes[@]}"; do
        cluster+="${cluster:+,}n$m=http://127.0.0.1:$((24800 + m))"
    done
    start_process "etcd$n" "$dir/etcd$n.log" /usr/bin/etcd --name "n$n" \
        --data-dir "$dir/n$n" \
        --listen-client-urls "http://127.0.0.1:$((24790 + n))" \
        --advertise-client-urls "http://127.0.0.1:$((24790 + n))" \
        --listen-peer-urls "http://127.0.0.1:$((24800 + n))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((24800 + n))" \
        --initial-cluster "$cluster" --initial-cluster-token raftlock-bench \
        --initial-cluster-state new --log-level warn --logger zap
}

etcd_node_answers() {
    curl -sf --max-time 2 "http://127.0.0.1:$((24790 + $1))/health" | grep -q '"health":"true"'
}

# Every member reports its own id and the leader's; the leader is the one where they are equal.
etcd_leader() {
    local n answer own leader
    for n in "${nodes[@]}"; do
        answer=$(curl -sf --max-time 2 -X POST -d '{}' \
            "http://127.0.0.1:$((24790 + n))/v3/maintenance/status") || continue
        own=$(grep -o '"member_id":"[0-9]*"' <<<"$answer" | head -n1 | grep -o '[0-9]\+') || continue
        leader=$(grep -o '"leader":"[0-9]*"' <<<"$answer" | head -n1 | grep -o '[0-9]\+') || continue
        if [ "$own" = "$leader" ]; then
            echo "$n"
            return 0
        fi
    done
    return 1
}

etcd_healthy() {
    local n
    for n in "${nodes[@]}"; do
        curl -sf --max-time 2 "http://127.0.0.1:$((24790 + n))/health" | grep -q '"health":"true"' ||
            return 1
    done
}

# --- ZooKeeper ------------------------------------------------------------------------------------

zookeeper_endpoints() { echo "127.0.0.1:21811,127.0.0.1:21812,127.0.0.1:21813"; }

start_zookeeper() {
    ensure_packages zookeeper
    local n m cfg
    for n in "${nodes[@]}"; do
        mkdir -p "$dir/zk$n/data"
        echo "$n" >"$dir/zk$n/data/myid"
        cfg=$dir/zk$n/zoo.cfg
        {
            echo "tickTime=2000"
            echo "initLimit=10"
            echo "syncLimit=5"
            echo "minSessionTimeout=1000"
            echo "dataDir=$dir/zk$n/data"
            echo "clientPort=$((21810 + n))"
            echo "clientPortAddress=127.0.0.1"
            echo "forceSync=yes"
            echo "maxClientCnxns=0"
            echo "admin.enableServer=false"
            echo "4lw.commands.whitelist=srvr,ruok"
            for m in "${nodes[@]}"; do
                echo "server.$m=127.0.0.1:$((28880 + m)):$((38880 + m))"
            done
        } >"$cfg"
        start_zookeeper_node "$n"
    done
    wait_healthy zookeeper zookeeper_healthy
}

start_zookeeper_node() {
    local n=$1
    start_process "zookeeper$n" "$dir/zookeeper$n.log" /usr/bin/java -Xmx512m \
        -cp "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar" \
        -Dzookeeper.log.dir="$dir/zk$n" -Dzookeeper.root.logger=WARN,CONSOLE \
        -Dlog4j.configuration=file:/etc/zookeeper/conf/log4j.properties \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zk$n/zoo.cfg"
}

# The answer of the four-letter word "srvr" (whitelisted in zoo.cfg) from server N.
zookeeper_srvr() {
    # shellcheck disable=SC2016  # the inner script expands its own argument
    timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && echo srvr >&3 && cat <&3' \
        _ "$((21810 + $1))"
}

zookeeper_node_answers() { zookeeper_srvr "$1" | grep -qE "Mode: (leader|follower)"; }

# Every server answers "srvr" with a leader or follower mode.
zookeeper_healthy() {
    local n
    for n in "${nodes[@]}"; do
        zookeeper_node_answers "$n" || return 1
    done
}

zookeeper_leader() {
    local n
    for n in "${nodes[@]}"; do
        if zookeeper_srvr "$n" 2>/dev/null | grep -q "Mode: leader"; then
            echo "$n"
            return 0
        fi
    done
    return 1
}

# --- Redis ----------------------------------------------------------------------------------------

redis_endpoints() { echo "127.0.0.1:16379"; }

start_redis() {
    ensure_packages redis-server
    local persistence=("$@")
    start_process redis "$dir/redis.log" /usr/bin/redis-server --port 16379 --bind 127.0.0.1 \
        --dir "$dir" --daemonize no --save "" "${persistence[@]}"
    wait_healthy "$system" redis_healthy
}

redis_healthy() { [ "$(redis-cli -p 16379 ping 2>/dev/null)" = PONG ]; }

# --- PostgreSQL -----------------------------------------------------------------------------------

postgres_endpoints() { echo "127.0.0.1:15432"; }
postgres_bin=/usr/lib/postgresql/15/bin

start_postgres() {
    ensure_packages postgresql-15
    local as_postgres=()
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres: "$dir"
        as_postgres=(runuser -u postgres --)
    fi
    "${as_postgres[@]}" "$postgres_bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 \
        --no-instructions >"$dir/initdb.log" 2>&1 || {
        tail -n 20 "$dir/initdb.log" >&2
        die "initdb failed"
    }
    # setpriv executes the server in its own place (runuser would stay as its parent), so the pid
    # file holds the postmaster's pid, which stop, pids and status need.
    [ ${#as_postgres[@]} -eq 0 ] ||
        as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    start_process postgres "$dir/postgres.log" "${as_postgres[@]}" "$postgres_bin/postgres" \
        -D "$dir/data" -c listen_addresses=127.0.0.1 -c port=15432 \
        -c unix_socket_directories="$dir" -c fsync=on -c synchronous_commit=on \
        -c max_connections=200
    wait_healthy postgres postgres_healthy
}

postgres_healthy() { "$postgres_bin/pg_isready" -q -h 127.0.0.1 -p 15432; }

# --- commands -------------------------------------------------------------------------------------

cmd_endpoints() {
    case "$1" in
        raftlock) raftlock_endpoints ;;
        etcd) etcd_endpoints ;;
        zookeeper) zookeeper_endpoints ;;
        redis | redis-nofsync) redis_endpoints ;;
        postgres) postgres_endpoints ;;
        *) die "unknown system '$1' (raftlock, etcd, zookeeper, redis, redis-nofsync, postgres)" ;;
    esac
}

cmd_start() {
    system=$1
    cmd_endpoints "$system" >/dev/null
    dir=$(system_dir "$system")
    if [ -d "$dir" ] && [ -n "$(alive_pids)" ]; then
        die "$system is already running (bench/peers.sh stop $system)"
    fi
    local other
    for other in raftlock etcd zookeeper redis redis-nofsync postgres; do
        [ "$other" = "$system" ] && continue
        if [ -d "$(system_dir "$other")" ]; then
            die "$other is still running or left data: bench/peers.sh stop $other (one at a time)"
        fi
    done
    rm -rf "$dir"
    mkdir -p "$dir"
    case "$system" in
        raftlock) start_raftlock ;;
        etcd) start_etcd ;;
        zookeeper) start_zookeeper ;;
        redis) start_redis --appendonly yes --appendfsync always ;;
        redis-nofsync) start_redis --appendonly no ;;
        postgres) start_postgres ;;
    esac
}

# --- one node at a time (lock.failover) ------------------------------------------------------------

# The process-name prefix of SYSTEM's pid files, or nothing for the single-process systems.
node_process() {
    case "$1" in
        raftlock) echo raftlockd ;;
        etcd) echo etcd ;;
        zookeeper) echo zookeeper ;;
        redis | redis-nofsync | postgres)
            die "$1 is a single process: no nodes to fail over between"
            ;;
    esac
}

check_node() {
    cmd_endpoints "$1" >/dev/null
    node_process "$1" >/dev/null
    case "${2:-}" in
        1 | 2 | 3) ;;
        *) die "node must be 1, 2 or 3, got '${2:-}'" ;;
    esac
    dir=$(system_dir "$1")
    [ -d "$dir" ] || die "$1 is not running (bench/peers.sh start $1)"
}

cmd_leader() {
    cmd_endpoints "$1" >/dev/null
    node_process "$1" >/dev/null
    local deadline=$((SECONDS + 10))
    # Right after an election there may briefly be none: ask again for a while.
    while [ $SECONDS -lt $deadline ]; do
        "${1}_leader" && return 0
        sleep 0.2
    done
    die "$1: no leader found in 10 s"
}

cmd_kill_node() {
    check_node "$1" "$2"
    local f pid
    f="$dir/$(node_process "$1")$2.pid"
    pid=$(cat "$f")
    kill -0 "$pid" 2>/dev/null || die "$1 node $2 (pid $pid) is not running"
    kill -KILL "$pid"
    # The process may take a moment to go (or linger as a zombie until it is reaped).
    local deadline=$((SECONDS + stop_deadline_s))
    while process_alive "$pid" && [ $SECONDS -lt $deadline ]; do
        sleep 0.05
    done
    say "$1 node $2 (pid $pid) killed"
}

# Running, and not a zombie.
process_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

cmd_start_node() {
    check_node "$1" "$2"
    local f pid deadline=$((SECONDS + healthy_deadline_s))
    f="$dir/$(node_process "$1")$2.pid"
    pid=$(cat "$f")
    if process_alive "$pid"; then
        die "$1 node $2 (pid $pid) is still running"
    fi
    "start_${1}_node" "$2"
    while [ $SECONDS -lt $deadline ]; do
        if "${1}_node_answers" "$2" >/dev/null 2>&1; then
            say "$1 node $2 is back (pid $(cat "$f"))"
            return 0
        fi
        sleep 0.2
    done
    die "$1 node $2 did not answer within ${healthy_deadline_s} s (log in $dir)"
}

cmd_pids() {
    cmd_endpoints "$1" >/dev/null
    dir=$(system_dir "$1")
    [ -d "$dir" ] || die "$1 is not running"
    alive_pids
}

cmd_status() {
    dir=$(system_dir "$1")
    local f pid
    for f in "$dir"/*.pid; do
        [ -f "$f" ] || {
            echo "$1: not running"
            return
        }
        pid=$(cat "$f")
        if kill -0 "$pid" 2>/dev/null; then
            echo "$(basename "$f" .pid): running (pid $pid)"
        else
            echo "$(basename "$f" .pid): dead"
        fi
    done
}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

main() {
    local command=${1:-} system=${2:-}
    case "$command" in
        start) cmd_start "$system" ;;
        stop)
            cmd_endpoints "$system" >/dev/null
            stop_system "$system"
            ;;
        endpoints)
            # raftlock-zk and raftlock-redis are no systems of their own: raftlock's ZooKeeper
            # and Redis ports.
            if [ "$system" = raftlock-zk ]; then
                raftlock_zk_endpoints
            elif [ "$system" = raftlock-redis ]; then
                raftlock_redis_endpoints
            else
                cmd_endpoints "$system"
            fi
            ;;
        status) cmd_status "$system" ;;
        install) all_packages ;;
        leader) cmd_leader "$system" ;;
        leader-now)
            cmd_endpoints "$system" >/dev/null
            "${system}_leader" || exit 1
            ;;
        kill-node) cmd_kill_node "$system" "${3:-}" ;;
        start-node) cmd_start_node "$system" "${3:-}" ;;
        pids) cmd_pids "$system" ;;
        -h | --help | help) usage ;;
        *)
            usage >&2
            exit 2
            ;;
    esac
}

main "$@"
