#!/usr/bin/env bash
# The README's main command: a local three-node raftlock cluster on loopback.
#
#   scripts/cluster.sh up              install deps, build, start nodes 1-3, wait until they serve
#   scripts/cluster.sh up --secure     the same with TLS on every port and mutual TLS between the
#                                      nodes, from a throwaway CA made in DATA_DIR/pki (kept, and
#                                      used again by later commands, until down --wipe), and
#                                      authentication on: user root, its password in pki/root.pw
#   scripts/cluster.sh down [--wipe]   SIGTERM, SIGKILL after 10 s; --wipe also removes ./data
#   scripts/cluster.sh status          per node: alive?, role, term, leader, commit, applied
#   scripts/cluster.sh logs [-f] [N]   last 50 lines of the node logs (-f follows)
#   scripts/cluster.sh kill N          SIGKILL node N (a crash, for the failover walkthrough)
#   scripts/cluster.sh start N         start node N again, wait until it serves (it replays its log)
#
# Node N listens on 127.0.0.1: Raft 700N, clients 710N, admin HTTP 720N, Redis (RESP) 730N,
# PostgreSQL 740N, ZooKeeper 750N; its data directory is ./data/nodeN, with raftlockd.log and
# raftlockd.pid in it.
# See docs/operations.md, docs/redis-mode.md, docs/sql-mode.md and docs/zookeeper-mode.md.
#
# Environment:
#   RAFTLOCK_CLUSTER_ID   cluster id (default 1)
#   RAFTLOCKD_ARGS        extra raftlockd flags for every node, e.g. "--log-level debug"; "{n}"
#                         in them becomes the node's number (per-node certificate files); with
#                         --tls-cert-file the admin port is HTTPS, checked with $RAFTLOCK_CACERT
#                         when it is set (else unverified: these are this script's own nodes)
#   RAFTLOCK_NO_BUILD=1   use the binaries already in the build directory: no deps.sh, no build
#   RAFTLOCK_BUILD_DIR, RAFTLOCK_DATA_DIR, RAFTLOCK_PORT_BASE   (defaults build, data, 7000)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

build_dir=${RAFTLOCK_BUILD_DIR:-build}
data_dir=${RAFTLOCK_DATA_DIR:-data}
port_base=${RAFTLOCK_PORT_BASE:-7000}
cluster_id=${RAFTLOCK_CLUSTER_ID:-1}
raftlockd=$build_dir/cli/raftlockd
cli=$build_dir/cli/raftlock
nodes=(1 2 3)
up_deadline_s=20
serve_deadline_s=600 # a node replaying a long log says "catching up" on /healthz meanwhile
down_deadline_s=10

say() { echo "cluster.sh: $*"; }
die() {
    echo "cluster.sh: $*" >&2
    exit 1
}

# Paths given to raftlockd are absolute, so its log names them unambiguously.
abs_path() {
    case "$1" in
        /*) echo "$1" ;;
        *) echo "$root/$1" ;;
    esac
}

raft_port() { echo $((port_base + $1)); }
client_port() { echo $((port_base + 100 + $1)); }
admin_port() { echo $((port_base + 200 + $1)); }
redis_port() { echo $((port_base + 300 + $1)); }
pg_port() { echo $((port_base + 400 + $1)); }
zk_port() { echo $((port_base + 500 + $1)); }
node_dir() { echo "$data_dir/node$1"; }
pid_file() { echo "$data_dir/node$1/raftlockd.pid"; }
log_file() { echo "$data_dir/node$1/raftlockd.log"; }

endpoints() {
    local list=() n
    for n in "${nodes[@]}"; do
        list+=("127.0.0.1:$(client_port "$n")")
    done
    (
        IFS=,
        echo "${list[*]}"
    )
}

check_node() {
    case "${1:-}" in
        1 | 2 | 3) ;;
        *) die "expected a node number 1, 2 or 3, got '${1:-}'" ;;
    esac
}

# The pid of node N when its process is alive, else nothing (status 1). The command line is checked
# too, so a pid reused by another program after a crash is not mistaken for the node.
node_pid() {
    local file pid
    file=$(pid_file "$1")
    [ -f "$file" ] || return 1
    pid=$(cat "$file")
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q raftlockd || return 1
    echo "$pid"
}

pki_dir=$data_dir/pki
# Set by secure_setup (up --secure, or any command on a data directory that has the pki).
secure=0

admin_scheme=http
if [[ " ${RAFTLOCKD_ARGS:-} " == *" --tls-cert-file "* ]]; then
    admin_scheme=https
fi

# A throwaway PKI for up --secure: a CA for the client ports (and one certificate for every node,
# naming 127.0.0.1 and localhost), and a cluster CA whose certificate for node N names it
# node-N.cluster-ID (docs/security.md). Made once; the flags go into RAFTLOCKD_ARGS.
make_pki() {
    local dir=$pki_dir n
    mkdir -p "$dir"
    chmod 700 "$dir"
    command -v openssl >/dev/null || die "up --secure needs openssl (scripts/deps.sh installs it)"
    # mint CA NAME CN SAN
    mint() {
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" \
            -keyout "$dir/$2.key" -out "$dir/$2.csr" 2>/dev/null
        printf 'basicConstraints=CA:FALSE\nsubjectAltName=%s\n' "$4" >"$dir/$2.ext"
        openssl x509 -req -in "$dir/$2.csr" -CA "$dir/$1.crt" -CAkey "$dir/$1.key" \
            -CAcreateserial -days 365 -extfile "$dir/$2.ext" -out "$dir/$2.crt" 2>/dev/null
        rm -f "$dir/$2.csr" "$dir/$2.ext"
    }
    for ca in ca cluster-ca; do
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
            -subj "/CN=raftlock $ca (cluster.sh up --secure)" -keyout "$dir/$ca.key" \
            -out "$dir/$ca.crt" 2>/dev/null
    done
    mint ca node "raftlock node" "IP:127.0.0.1,DNS:localhost"
    for n in "${nodes[@]}"; do
        mint cluster-ca "peer$n" "node-$n.cluster-$cluster_id" "DNS:node-$n.cluster-$cluster_id"
    done
    # Root's password: the first leader creates root from it and turns authentication on.
    (umask 077 && openssl rand -base64 18 >"$dir/root.pw")
    say "made a throwaway CA, certificates and root's password in $dir"
}

secure_setup() {
    if [ "$1" = 1 ] && [ ! -f "$pki_dir/ca.crt" ]; then
        make_pki
    fi
    [ -f "$pki_dir/ca.crt" ] || return 0
    secure=1
    local pki
    pki=$(abs_path "$pki_dir")
    RAFTLOCKD_ARGS="${RAFTLOCKD_ARGS:-} --tls-cert-file $pki/node.crt --tls-key-file $pki/node.key"
    RAFTLOCKD_ARGS+=" --peer-tls-cert-file $pki/peer{n}.crt --peer-tls-key-file $pki/peer{n}.key"
    RAFTLOCKD_ARGS+=" --peer-tls-ca-file $pki/cluster-ca.crt"
    if [ -f "$pki/root.pw" ]; then
        RAFTLOCKD_ARGS+=" --root-password-file $pki/root.pw"
    fi
    admin_scheme=https
    RAFTLOCK_CACERT=${RAFTLOCK_CACERT:-$pki/ca.crt}
}

# GET http(s)://127.0.0.1:PORT/PATH with a 1 s limit; curl when present, else bash's /dev/tcp
# (or openssl s_client for HTTPS).
http_get() {
    local port=$1 path=$2
    if [ "$admin_scheme" = https ]; then
        local request openssl_verify=()
        request=$(printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" "$path")
        if [ -n "${RAFTLOCK_CACERT:-}" ]; then
            openssl_verify=(-CAfile "$RAFTLOCK_CACERT" -verify_return_error)
        fi
        # (-quiet waits for the server's close, which follows the response.)
        timeout 1 openssl s_client -quiet -connect "127.0.0.1:$port" "${openssl_verify[@]}" \
            <<<"$request" 2>/dev/null | sed '1,/^\r$/d'
        return
    fi
    if command -v curl >/dev/null; then
        curl -sf --max-time 1 "http://127.0.0.1:$port$path"
        return
    fi
    # shellcheck disable=SC2016  # the inner script expands its own arguments
    timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" "$2" >&3
        cat <&3' _ "$port" "$path" | sed '1,/^\r$/d'
}

# Node N's /status as "id role term leader commit applied", or status 1 when it does not answer.
status_summary() {
    local body
    body=$(http_get "$(admin_port "$1")" /status) || return 1
    [ -n "$body" ] || return 1
    if command -v python3 >/dev/null; then
        python3 -c 'import json, sys
d = json.loads(sys.argv[1])
print(*(d.get(k, "?") for k in ("id", "role", "term", "leader", "commit", "applied")))' "$body"
        return
    fi
    # Without python3: the first occurrence of each key. The JSON's keys are sorted, and every
    # key read here sorts before "peers", whose objects repeat some of them.
    local k out=()
    for k in id role term leader commit applied; do
        out+=("$(grep -o "\"$k\":\"\\?[^,\"}]*" <<<"$body" | head -n1 | sed 's/.*:"\?//')")
    done
    echo "${out[*]}"
}

build() {
    if [ "${RAFTLOCK_NO_BUILD:-0}" = 1 ]; then
        [ -x "$raftlockd" ] || die "RAFTLOCK_NO_BUILD=1 but $raftlockd does not exist"
        return
    fi
    scripts/deps.sh
    # Configure when there is no build yet or it cannot build the server (a developer's cached
    # partial build may skip cli/; RAFTLOCK_SKIP_DIRS is cleared, as scripts/test.sh does).
    if ! ninja -C "$build_dir" -t query raftlockd >/dev/null 2>&1 ||
        ! ninja -C "$build_dir" -t query raftlock >/dev/null 2>&1; then
        say "configuring $build_dir"
        cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
            -DRAFTLOCK_SKIP_DIRS= >/dev/null
    fi
    # Ninja rebuilds only what is stale, so this is quick when nothing changed.
    say "building raftlockd and raftlock in $build_dir"
    ninja -C "$build_dir" raftlockd raftlock || die "the build failed (output above)"
}

start_node() {
    local n=$1 members=() m
    local args=${RAFTLOCKD_ARGS:-}
    args=${args//\{n\}/$n}
    for m in "${nodes[@]}"; do
        members+=(--member "$m=127.0.0.1:$(raft_port "$m")")
    done
    mkdir -p "$(node_dir "$n")"
    rm -f "$(pid_file "$n")"
    # set -m gives the node its own process group, so a Ctrl-C in this terminal does not reach it.
    # shellcheck disable=SC2086  # $args is a list of flags, split on purpose
    (
        set -m
        echo "=== $(date '+%F %T') cluster.sh starts node $n" >>"$(log_file "$n")"
        nohup "$(abs_path "$raftlockd")" --id "$n" --cluster-id "$cluster_id" "${members[@]}" \
            --client-listen "127.0.0.1:$(client_port "$n")" \
            --admin-listen "127.0.0.1:$(admin_port "$n")" \
            --redis-listen "127.0.0.1:$(redis_port "$n")" \
            --pg-listen "127.0.0.1:$(pg_port "$n")" \
            --zk-listen "127.0.0.1:$(zk_port "$n")" \
            --data-dir "$(abs_path "$(node_dir "$n")")" $args \
            >>"$(log_file "$n")" 2>&1 </dev/null &
        echo $! >"$(pid_file "$n")"
    )
    # The pid is the forked shell's until it has exec'd raftlockd; node_pid() recognises the node by
    # its command line, so wait for the exec (or the end of the process) before anyone checks.
    local pid tries=0
    pid=$(cat "$(pid_file "$n")")
    while kill -0 "$pid" 2>/dev/null && ! node_pid "$n" >/dev/null && [ $tries -lt 100 ]; do
        sleep 0.01
        tries=$((tries + 1))
    done
    say "started node $n (pid $pid)"
}

# A node that died while starting: show why, from its log.
explain_exit() {
    local n=$1
    echo "cluster.sh: node $n exited; the end of $(log_file "$n"):" >&2
    tail -n 20 "$(log_file "$n")" >&2 || true
    echo "cluster.sh: fix the cause and run $0 up again; $0 down stops the other nodes" >&2
    exit 1
}

# Waits until one of the nodes reports role "leader"; prints "id term".
wait_for_leader() {
    local deadline=$((SECONDS + up_deadline_s)) n summary
    while [ $SECONDS -lt $deadline ]; do
        for n in "${nodes[@]}"; do
            node_pid "$n" >/dev/null || explain_exit "$n"
            if summary=$(status_summary "$n") && [ "$(cut -d' ' -f2 <<<"$summary")" = leader ]; then
                cut -d' ' -f1,3 <<<"$summary"
                return 0
            fi
        done
        sleep 0.2
    done
    echo "cluster.sh: no leader after ${up_deadline_s} s; see: $0 status, $0 logs" >&2
    return 1
}

# Node N's /healthz text ("ok", "no leader", "catching up: applied A of C"), or nothing.
health_of() {
    http_get "$(admin_port "$1")" /healthz 2>/dev/null | head -n 1 || true
}

# Waits until every node given answers /healthz "ok": it knows a leader and has replayed its log.
wait_for_serving() {
    local deadline=$((SECONDS + serve_deadline_s)) next_report=$((SECONDS + 5)) n health waiting
    while :; do
        waiting=()
        for n in "$@"; do
            node_pid "$n" >/dev/null || explain_exit "$n"
            health=$(health_of "$n")
            [ "$health" = ok ] || waiting+=("node $n: ${health:-no answer}")
        done
        [ ${#waiting[@]} -eq 0 ] && return 0
        if [ $SECONDS -ge $deadline ]; then
            echo "cluster.sh: not serving after ${serve_deadline_s} s: ${waiting[*]}" >&2
            return 1
        fi
        if [ $SECONDS -ge $next_report ]; then
            say "waiting: ${waiting[*]}"
            next_report=$((SECONDS + 5))
        fi
        sleep 0.2
    done
}

print_endpoints() {
    local n
    for n in "${nodes[@]}"; do
        printf '  node %s: raft 127.0.0.1:%s  client 127.0.0.1:%s  admin %s://127.0.0.1:%s' \
            "$n" "$(raft_port "$n")" "$(client_port "$n")" "$admin_scheme" "$(admin_port "$n")"
        printf '  redis 127.0.0.1:%s  postgres 127.0.0.1:%s  zookeeper 127.0.0.1:%s\n' \
            "$(redis_port "$n")" "$(pg_port "$n")" "$(zk_port "$n")"
    done
    echo
    echo "export RAFTLOCK_ENDPOINTS=$(endpoints)"
}

cmd_up() {
    local n running=() to_start=() want_secure=0
    case "${1:-}" in
        "") ;;
        --secure) want_secure=1 ;;
        *) die "up: unknown option '$1' (expected --secure or nothing)" ;;
    esac
    secure_setup 0  # a data directory made secure before stays so
    for n in "${nodes[@]}"; do
        if node_pid "$n" >/dev/null; then
            running+=("$n")
        else
            to_start+=("$n")
        fi
    done
    if [ ${#to_start[@]} -eq 0 ]; then
        say "the cluster is already running (nodes ${running[*]}); nothing to do"
        print_endpoints
        return
    fi
    build # (installs openssl, which make_pki needs)
    if [ "$want_secure" = 1 ] && [ "$secure" = 0 ]; then
        secure_setup 1
    fi
    for n in "${to_start[@]}"; do
        [ -f "$(pid_file "$n")" ] && say "node $n: stale pid file (the process is gone); restarting"
        start_node "$n"
    done
    local leader
    leader=$(wait_for_leader) || exit 1
    wait_for_serving "${to_start[@]}" || exit 1
    say "cluster $cluster_id is up: node ${leader% *} is the leader (term ${leader#* })"
    print_endpoints
    echo
    echo "Try:"
    echo "  export RAFTLOCK_ENDPOINTS=$(endpoints)"
    if [ "$secure" = 1 ]; then
        local ca
        ca=$(abs_path "$pki_dir")/ca.crt
        local pw
        pw=$(abs_path "$pki_dir")/root.pw
        echo "  export RAFTLOCK_CACERT=$ca"
        if [ -f "$pw" ]; then
            echo "  export RAFTLOCK_USER=root RAFTLOCK_PASSWORD_FILE=$pw"
            echo "  $cli acquire demo --ttl 30s"
            echo "  redis-cli -p $(redis_port 1) --tls --cacert $ca --user root --pass \"\$(cat $pw)\" --no-auth-warning SET k v"
            echo "  PGPASSWORD=\"\$(cat $pw)\" psql \"host=localhost port=$(pg_port 1) user=root sslmode=verify-full sslrootcert=$ca\""
        else
            echo "  $cli acquire demo --ttl 30s"
            echo "  redis-cli -p $(redis_port 1) --tls --cacert $ca SET k v"
            echo "  psql \"host=localhost port=$(pg_port 1) user=raftlock sslmode=verify-full sslrootcert=$ca\""
        fi
        echo "  curl --cacert $ca https://127.0.0.1:$(admin_port 1)/status"
        echo "(every port speaks TLS only; the nodes prove their ids to each other with certificates"
        echo "of $(abs_path "$pki_dir")/cluster-ca.crt; authentication is on, with user root, and"
        echo "\`raftlock user add\` makes more: docs/security.md. The ZooKeeper port does not log users"
        echo "in yet, so it refuses sessions on this cluster.)"
    else
        echo "  $cli acquire demo --ttl 30s"
    fi
}

cmd_down() {
    local wipe=0 n pid pids=()
    case "${1:-}" in
        "") ;;
        --wipe) wipe=1 ;;
        *) die "down: unknown option '$1' (expected --wipe or nothing)" ;;
    esac
    for n in "${nodes[@]}"; do
        if pid=$(node_pid "$n"); then
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$n:$pid")
        fi
    done
    [ ${#pids[@]} -gt 0 ] && say "sent SIGTERM to ${pids[*]} (node:pid)"
    local deadline=$((SECONDS + down_deadline_s)) entry alive
    while :; do
        alive=()
        for entry in "${pids[@]}"; do
            kill -0 "${entry#*:}" 2>/dev/null && alive+=("$entry")
        done
        [ ${#alive[@]} -eq 0 ] && break
        if [ $SECONDS -ge $deadline ]; then
            say "still running after ${down_deadline_s} s, sending SIGKILL: ${alive[*]}"
            for entry in "${alive[@]}"; do
                kill -KILL "${entry#*:}" 2>/dev/null || true
            done
            break
        fi
        sleep 0.2
    done
    for n in "${nodes[@]}"; do
        rm -f "$(pid_file "$n")"
    done
    [ ${#pids[@]} -eq 0 ] && say "no node was running"
    if [ $wipe = 1 ]; then
        rm -rf "$data_dir"
        say "removed $data_dir"
    fi
    say "down"
}

cmd_status() {
    local n pid summary id role term leader commit applied
    for n in "${nodes[@]}"; do
        if pid=$(node_pid "$n"); then
            printf 'node %s: running (pid %s)' "$n" "$pid"
        elif [ -f "$(pid_file "$n")" ]; then
            printf 'node %s: NOT running (stale pid file: crashed or killed)' "$n"
        else
            printf 'node %s: stopped' "$n"
        fi
        if summary=$(status_summary "$n"); then
            read -r id role term leader commit applied <<<"$summary"
            printf '  id=%s role=%s term=%s leader=%s commit=%s applied=%s\n' \
                "$id" "$role" "$term" "$leader" "$commit" "$applied"
        elif [ -n "${pid:-}" ]; then
            printf '  (admin port %s not answering)\n' "$(admin_port "$n")"
        else
            echo
        fi
        pid=
    done
}

cmd_logs() {
    local follow=0
    if [ "${1:-}" = -f ]; then
        follow=1
        shift
    fi
    local files=() n
    if [ $# -gt 0 ]; then
        check_node "$1"
        files=("$(log_file "$1")")
    else
        for n in "${nodes[@]}"; do
            [ -f "$(log_file "$n")" ] && files+=("$(log_file "$n")")
        done
    fi
    if [ ${#files[@]} -eq 0 ] || [ ! -f "${files[0]}" ]; then
        die "no log yet in $data_dir (run: $0 up)"
    fi
    if [ $follow = 1 ]; then
        exec tail -n 50 -F "${files[@]}"
    fi
    tail -n 50 "${files[@]}"
}

cmd_kill() {
    check_node "${1:-}"
    local pid
    pid=$(node_pid "$1") || die "node $1 is not running"
    kill -KILL "$pid"
    say "killed node $1 (pid $pid) with SIGKILL; restart it with: $0 start $1"
}

cmd_start() {
    check_node "${1:-}"
    local n=$1 pid
    if pid=$(node_pid "$n"); then
        say "node $n is already running (pid $pid)"
        return
    fi
    build
    start_node "$n"
    local deadline=$((SECONDS + up_deadline_s)) summary
    while [ $SECONDS -lt $deadline ]; do
        node_pid "$n" >/dev/null || explain_exit "$n"
        if status_summary "$n" >/dev/null; then
            # It answers; success once it serves (a leader known, its log replayed).
            wait_for_serving "$n" || die "node $n answers but does not serve; see: $0 logs $n"
            read -r _ role term leader _ _ <<<"$(status_summary "$n")"
            say "node $n serves: role=$role term=$term leader=$leader"
            return
        fi
        sleep 0.2
    done
    die "node $n did not answer on its admin port within ${up_deadline_s} s; see: $0 logs $n"
}

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}

main() {
    local command=${1:-}
    [ $# -gt 0 ] && shift
    # A data directory made by up --secure stays secure for every later command (up sees to it).
    if [ "$command" != up ]; then
        secure_setup 0
    fi
    case "$command" in
        up) cmd_up "$@" ;;
        down) cmd_down "$@" ;;
        status) cmd_status "$@" ;;
        logs) cmd_logs "$@" ;;
        kill) cmd_kill "$@" ;;
        start) cmd_start "$@" ;;
        -h | --help | help) usage ;;
        *)
            usage >&2
            exit 2
            ;;
    esac
}

main "$@"
