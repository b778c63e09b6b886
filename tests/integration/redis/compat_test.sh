#!/usr/bin/env bash
# The Redis port against a real redis-server (issue 8): the same redis-cli session, in RESP2 and in
# RESP3, must give byte-for-byte the same output from a three-node raftlock cluster (through every
# node) as from Redis 7. Then the commands Redis 7.0 lacks (SET IFEQ, DELEX, DELIFEQ) against
# their expected output, and HELLO, AUTH-free INFO and QUIT by hand.
#
#   compat_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2"

start_cluster
start_real_redis
wait_redis_ready

failures=0
compare() {
    local what=$1 expected=$2 actual=$3
    if ! diff -u "$expected" "$actual" >"$WORK/diff"; then
        echo "FAIL: $what differs (- expected, + raftlock):" >&2
        head -n 60 "$WORK/diff" >&2
        failures=$((failures + 1))
    else
        echo "ok: $what ($(wc -l <"$expected") lines)"
    fi
}

for proto in 2 3; do
    redis-cli -p "$REAL_REDIS_PORT" FLUSHALL >/dev/null
    redis-cli -p "$REAL_REDIS_PORT" SCRIPT FLUSH >/dev/null
    redis-cli "-$proto" -p "$REAL_REDIS_PORT" <"$here/session.redis" >"$WORK/real.$proto"
    for i in 0 1 2; do
        port=${RAFTLOCK_REDIS_PORTS[$i]}
        redis-cli -p "$port" FLUSHALL >/dev/null
        redis-cli -p "$port" SCRIPT FLUSH >/dev/null
        redis-cli "-$proto" -p "$port" <"$here/session.redis" >"$WORK/raftlock.$proto.$i"
        compare "session.redis, RESP$proto, node $((i + 1))" "$WORK/real.$proto" \
            "$WORK/raftlock.$proto.$i"
    done
done

# Pub/sub on several connections at once, subscribers and publishers on different nodes (redis-cli
# cannot: a SUBSCRIBE turns it into a listener).
python3 "$here/pubsub_compat.py" "$REAL_REDIS_PORT" "${RAFTLOCK_REDIS_PORTS[@]}" ||
    failures=$((failures + 1))
# MULTI/EXEC/DISCARD/WATCH the same way, with the writer that must abort a watcher on another node.
python3 "$here/transactions_compat.py" "$REAL_REDIS_PORT" "${RAFTLOCK_REDIS_PORTS[@]}" ||
    failures=$((failures + 1))

redis-cli -p "${RAFTLOCK_REDIS_PORTS[1]}" <"$here/session_raftlock.redis" >"$WORK/own"
compare "session_raftlock.redis (owner-checked release and extend)" \
    "$here/session_raftlock.expected" "$WORK/own"

# What differs from Redis by design: the HELLO map names our API level and role, INFO our node.
port=${RAFTLOCK_REDIS_PORTS[0]}
hello=$(redis-cli -p "$port" HELLO 3)
for want in "server redis" "proto 3" "mode standalone"; do
    grep -qx "$want" <<<"$hello" || { echo "FAIL: HELLO 3 lacks '$want': $hello" >&2; failures=$((failures + 1)); }
done
[ "$(redis-cli -p "$port" HELLO 4 2>&1)" = "NOPROTO unsupported protocol version" ] ||
    { echo "FAIL: HELLO 4" >&2; failures=$((failures + 1)); }
info=$(redis-cli -p "$port" INFO replication)
grep -q '^role:\(master\|slave\)' <<<"$info" || { echo "FAIL: INFO: $info" >&2; failures=$((failures + 1)); }
# Pipelined writes and reads in one go keep their order (redis-cli --pipe-like: all sent at once).
pipeline='SET p 0\r\nINCR p\r\nGET p\r\nINCR p\r\nINCR p\r\nGET p\r\nDEL p\r\nGET p\r\nQUIT\r\n'
for target in "$REAL_REDIS_PORT" "$port"; do
    exec 3<>"/dev/tcp/127.0.0.1/$target"
    printf "$pipeline" >&3
    timeout 5 cat <&3 >"$WORK/pipe.$target" || true
    exec 3<&-
done
compare "a pipeline of writes and reads, raw RESP" "$WORK/pipe.$REAL_REDIS_PORT" "$WORK/pipe.$port"
# WAIT: on the leader, how many followers hold the connection's write (both, within the timeout);
# on a follower, at once, the rest of a quorum (it cannot see the others' logs).
for port in "${RAFTLOCK_REDIS_PORTS[@]}"; do
    role=$(redis-cli -p "$port" INFO replication | grep -o 'role:[a-z]*' | tr -d '\r')
    got=$(printf 'SET waited 1\r\nWAIT 2 3000\r\n' | timeout 5 redis-cli -p "$port" | tail -1)
    want=$([ "$role" = role:master ] && echo 2 || echo 1)
    if [ "$got" != "$want" ]; then
        echo "FAIL: WAIT 2 3000 on $port ($role) answered '$got', not $want" >&2
        failures=$((failures + 1))
    else
        echo "ok: WAIT on $port ($role): $got"
    fi
done
got=$(timeout 5 redis-cli -p "${RAFTLOCK_REDIS_PORTS[0]}" WAIT 1 -1 2>&1)
[ "$got" = "ERR timeout is negative" ] || { echo "FAIL: WAIT 1 -1: $got" >&2; failures=$((failures + 1)); }
# Malformed RESP: an error, and only that connection closes.
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf '*1\r\n$x\r\n' >&3
reply=$(timeout 5 head -c 200 <&3 || true)
exec 3<&-
[ "$reply" = $'-ERR Protocol error: invalid bulk length\r' ] ||
    { echo "FAIL: malformed RESP got: $reply" >&2; failures=$((failures + 1)); }
[ "$(redis-cli -p "$port" PING)" = PONG ] || { echo "FAIL: the port died" >&2; failures=$((failures + 1)); }

if [ $failures -gt 0 ]; then
    echo "compat_test: $failures failure(s)" >&2
    exit 1
fi
echo "compat_test: all passed"
