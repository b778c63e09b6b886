#!/usr/bin/env bash
# Side by side: raftlock, etcd, ZooKeeper and Redis on this machine, in one run (issue 7).
#
#   bench/compare.sh [SCENARIO...]
#
# SCENARIO: lock.uncontended lock.handoff kv.write kv.read watch.latency redis.benchmark
# lock.failover session.keepalive (default: all eight). lock.failover and session.keepalive run
# last for each system, in that order (a section of their own: they kill and restart the system's
# leader, and open thousands of sessions); they reach the system's processes through
# bench/peers.sh. redis.benchmark is `redis-benchmark` itself against the systems that speak Redis
# (raftlock's Redis port on the leader, and both Redis), through bench/redis_benchmark.py, which
# also checks what each command left in the store (one INCR per request, LPUSH's items, ...).
# Each system is started by bench/peers.sh (three nodes on loopback with fsync on; Redis is one
# durable process, and once more without persistence), given the same scenarios by the same
# raftlock-bench, and stopped before the next one starts. The physical floor (4 KiB synced writes
# and a loopback round trip) is measured first, in the same run.
#
# Output in $BENCH_OUT (default /tmp/raftlock-bench-results/<date-time>): results.jsonl (one JSON object per
# run, as raftlock-bench writes it), results.json (the same as one array), table.md (the table
# printed at the end: ops/s, p50, p99, p99.9 and raftlock's ratios), chart.png (gnuplot), and the
# systems' logs are removed with their data.
#
# Environment (defaults in brackets):
#   BENCH_SYSTEMS          [raftlock raftlock-zk raftlock-redis etcd zookeeper redis
#                          redis-nofsync]
#                          raftlock-zk: raftlock again, measured through its ZooKeeper port by
#                          the same ZooKeeper driver (the zookeeper_mt C client) as ZooKeeper
#                          raftlock-redis: raftlock again, through its Redis port by the same
#                          Redis driver as Redis (one blocking socket per client, no thread of
#                          its own): the servers without the client library's cost; only
#                          lock.uncontended (SET NX PX, compare-and-delete script), kv.write and
#                          kv.read
#   BENCH_DURATION         measured seconds per run [10]
#   BENCH_WARMUP           warm-up seconds per run [2]
#   BENCH_LOCK_CLIENTS     clients for lock.uncontended [1 16]
#   BENCH_HANDOFF_CLIENTS  waiters for lock.handoff [8]
#   BENCH_KV_CLIENTS       the kv.write sweep [1 4 16 64 256]
#   BENCH_READ_CLIENTS     clients for kv.read [1 16]
#   BENCH_WATCHERS         watchers for watch.latency [1 16]
#   BENCH_FAILOVER_CLIENTS clients cycling locks while the leader is killed [4]
#   BENCH_FAILOVER_DURATION  measured seconds of that run (the kill is a quarter in) [20]
#   BENCH_FAILOVER_REPEATS holder kills per system [5]
#   BENCH_RESTART_AFTER    seconds the killed leader stays down [5]
#   BENCH_SESSION_TIMEOUT_MS  the holder's session / lease / PX timeout, every system [3000]
#   BENCH_IDLE_SESSIONS    idle session counts for session.keepalive [1000 10000]
#   BENCH_IDLE_TIMEOUT_MS  their session / lease timeout [10000]
#   BENCH_REDIS_CLIENTS    redis.benchmark's connections (-c) [50]
#   BENCH_REDIS_REQUESTS   its requests per command (-n) [100000]
#   BENCH_REDIS_TESTS      its commands (-t; publish: PUBLISH to a subscriber), one at a time
#                          [set,get,incr,lpush,lpop,sadd,zadd,publish]
#   BENCH_OPEN_LOOP        open-loop runs of lock.uncontended and kv.write at these percentages
#                          of the system's own closed-loop ops/s, with its largest client count
#                          [50 90]; empty for none. Latency counts from each operation's intended
#                          start, so a stall shows (no coordinated omission)
#   BENCH_OUT, BENCH_DATA_DIR (see bench/peers.sh), RAFTLOCK_BUILD_DIR [build-release]
#   BENCH_NO_BUILD=1       use the binaries in the build directory as they are
# Benchmarks measure what users build: CMAKE_BUILD_TYPE=Release, in a directory of its own so the
# tests' build (build/, RelWithDebInfo) is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${RAFTLOCK_BUILD_DIR:-build-release}
export RAFTLOCK_BUILD_DIR=$build_dir
# shellcheck disable=SC2206  # a space-separated list, split on purpose
systems=(${BENCH_SYSTEMS:-raftlock raftlock-zk raftlock-redis etcd zookeeper redis redis-nofsync})
duration=${BENCH_DURATION:-10}
warmup=${BENCH_WARMUP:-2}
out=${BENCH_OUT:-/tmp/raftlock-bench-results/$(date +%Y%m%d-%H%M%S)}
data_dir=${BENCH_DATA_DIR:-/tmp/raftlock-bench}
bench=$build_dir/bench/raftlock-bench
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] ||
    scenarios=(lock.uncontended lock.handoff kv.write kv.read watch.latency redis.benchmark
        lock.failover session.keepalive)

say() { echo "compare.sh: $*" >&2; }
die() {
    echo "compare.sh: $*" >&2
    exit 1
}

for s in "${scenarios[@]}"; do
    case "$s" in
        lock.uncontended | lock.handoff | kv.write | kv.read | watch.latency) ;;
        redis.benchmark | lock.failover | session.keepalive) ;;
        *) die "unknown scenario '$s'" ;;
    esac
done

build() {
    [ "${BENCH_NO_BUILD:-0}" = 1 ] && return
    scripts/deps.sh
    bench/peers.sh install
    # Configure again so CMake sees libzookeeper-mt-dev if it was just installed.
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    ninja -C "$build_dir" raftlockd raftlock-bench || die "the build failed (output above)"
}

clients_for() {
    case "$1" in
        lock.uncontended) echo "${BENCH_LOCK_CLIENTS:-1 16}" ;;
        lock.handoff) echo "${BENCH_HANDOFF_CLIENTS:-8}" ;;
        kv.write) echo "${BENCH_KV_CLIENTS:-1 4 16 64 256}" ;;
        kv.read) echo "${BENCH_READ_CLIENTS:-1 16}" ;;
        watch.latency) echo "${BENCH_WATCHERS:-1 16}" ;;
    esac
}

running=""
cleanup() {
    if [ -n "$running" ]; then
        bench/peers.sh stop "$running" || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run_system() {
    # peer: what bench/peers.sh starts; driver: raftlock-bench's --system.
    local system=$1 peer=$1 driver=$1 label=() endpoints s list flag only=""
    case "$system" in
        redis-nofsync)
            driver=redis
            label=(--label redis-nofsync)
            ;;
        raftlock-zk)
            peer=raftlock
            driver=zookeeper
            label=(--label raftlock-zk)
            ;;
        raftlock-redis)
            # Its port has no keyspace notifications (watch.latency), its failover is raftlock's
            # own (measured as raftlock), and redis.benchmark already reaches the leader's port.
            peer=raftlock
            driver=redis
            label=(--label raftlock-redis)
            only=" lock.uncontended kv.write kv.read "
            ;;
    esac
    bench/peers.sh stop "$peer" >/dev/null 2>&1 || true
    running=$peer
    if ! bench/peers.sh start "$peer"; then
        say "$system did not start; its runs are missing from the table"
        bench/peers.sh stop "$peer" || true
        running=""
        return
    fi
    endpoints=$(bench/peers.sh endpoints "$system")
    for s in "${scenarios[@]}"; do
        [ -z "$only" ] || [[ "$only" == *" $s "* ]] || continue
        case "$s" in
            lock.failover | session.keepalive) continue ;;
            redis.benchmark)
                run_redis_benchmark "$system"
                continue
                ;;
        esac
        flag=--clients
        [ "$s" = watch.latency ] && flag=--watchers
        list=$(clients_for "$s" | tr ' ' ',')
        "$bench" --system "$driver" --endpoints "$endpoints" --scenario "$s" "$flag" "$list" \
            --duration "$duration" --warmup "$warmup" --json "$out/results.jsonl" "${label[@]}" ||
            say "$system $s: some operations failed (see 'first error' above)"
        case "$s" in lock.uncontended | kv.write) run_open_loop "$system" "$driver" "$endpoints" \
            "$s" "${list##*,}" "${label[@]}" ;; esac
    done
    [ -n "$only" ] || run_failover_section "$peer" "$driver" "$endpoints" "${label[@]}"
    bench/peers.sh stop "$peer"
    running=""
}

# Open loop at fractions of the closed-loop throughput this system just measured with the same
# client count (its last record in results.jsonl): how latency grows with load below saturation.
run_open_loop() {
    local system=$1 driver=$2 endpoints=$3 scenario=$4 clients=$5 closed pct rate
    shift 5
    closed=$(python3 - "$out/results.jsonl" "$system" "$scenario" "$clients" <<'PY'
import json, sys
path, system, scenario, clients = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ops = 0
for line in open(path):
    r = json.loads(line) if line.strip() else None
    if (r and r["system"] == system and r["scenario"] == scenario and r["clients"] == clients
            and r["rate_per_s"] == 0 and r["errors"] == 0):
        ops = r["ops_per_s"]
print(f"{ops:.1f}")
PY
    )
    for pct in ${BENCH_OPEN_LOOP-50 90}; do
        rate=$(python3 -c "print(f'{$closed * $pct / 100:.1f}')")
        if [ "$rate" = 0.0 ]; then
            say "$system $scenario: no error-free closed-loop run with $clients clients; no open loop"
            return
        fi
        "$bench" --system "$driver" --endpoints "$endpoints" --scenario "$scenario" \
            --clients "$clients" --rate "$rate" --duration "$duration" --warmup "$warmup" \
            --json "$out/results.jsonl" "$@" ||
            say "$system $scenario at $pct % load: some operations failed (see above)"
    done
}

# redis-benchmark against the systems that speak Redis: raftlock's Redis port on the leader (where
# clients of a Redis-speaking library would best go; a follower forwards) and both Redis.
run_redis_benchmark() {
    local system=$1 endpoint leader
    case "$system" in
        raftlock)
            leader=$(bench/peers.sh leader raftlock) || {
                say "raftlock redis.benchmark: no leader"
                return
            }
            endpoint=$(bench/peers.sh endpoints raftlock-redis | cut -d, -f"$leader")
            ;;
        redis | redis-nofsync) endpoint=$(bench/peers.sh endpoints "$system") ;;
        *) return ;;
    esac
    python3 bench/redis_benchmark.py --system "$system" --endpoint "$endpoint" \
        --clients "${BENCH_REDIS_CLIENTS:-50}" --requests "${BENCH_REDIS_REQUESTS:-100000}" \
        --tests "${BENCH_REDIS_TESTS:-set,get,incr,lpush,lpop,sadd,zadd,publish}" --json "$out/results.jsonl" ||
        say "$system redis.benchmark: failed or a check failed (see above)"
}

# lock.failover and session.keepalive, when asked for: after the other scenarios, since the first
# kills and restarts the leader and the second opens thousands of sessions.
run_failover_section() {
    local system=$1 driver=$2 endpoints=$3 s list
    shift 3
    local common=(--system "$driver" --endpoints "$endpoints" --peers bench/peers.sh
        --peer-system "$system" --json "$out/results.jsonl" "$@")
    for s in "${scenarios[@]}"; do
        case "$s" in
            lock.failover)
                "$bench" "${common[@]}" --scenario lock.failover \
                    --clients "${BENCH_FAILOVER_CLIENTS:-4}" \
                    --duration "${BENCH_FAILOVER_DURATION:-20}" --warmup "$warmup" \
                    --failover-repeats "${BENCH_FAILOVER_REPEATS:-5}" \
                    --restart-after "${BENCH_RESTART_AFTER:-5}" \
                    --session-timeout-ms "${BENCH_SESSION_TIMEOUT_MS:-3000}" ||
                    say "$system lock.failover: some takes or cycles failed (see above)"
                ;;
            session.keepalive)
                list=$(echo "${BENCH_IDLE_SESSIONS:-1000 10000}" | tr ' ' ',')
                "$bench" "${common[@]}" --scenario session.keepalive --idle-sessions "$list" \
                    --idle-timeout-ms "${BENCH_IDLE_TIMEOUT_MS:-10000}" \
                    --duration "$duration" --warmup "$warmup" ||
                    say "$system session.keepalive: some sessions or writes failed (see above)"
                ;;
        esac
    done
}

main() {
    build
    [ -x "$bench" ] || die "$bench is missing (unset BENCH_NO_BUILD or build it)"
    mkdir -p "$out" "$data_dir"
    : >"$out/results.jsonl"
    say "results in $out; load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
    # The floor, on the disk the systems write to.
    "$bench" --system floor --scenario floor.fsync,floor.fsync.overwrite,floor.loopback --duration "$duration" \
        --warmup 1 --dir "$data_dir" --json "$out/results.jsonl"
    for system in "${systems[@]}"; do
        run_system "$system"
    done
    say "load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
    python3 bench/compare_report.py "$out"
}

main
