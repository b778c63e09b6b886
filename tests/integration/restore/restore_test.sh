#!/usr/bin/env bash
# A new cluster from a copy of one node's data directory (raftlock-storage restore; docs/
# operations.md, "Starting a new cluster from a copy"): cluster A takes writes, one follower is
# stopped and its directory copied, A is lost entirely, and cluster B (other ports, other
# addresses) starts from stores made from the copy. B must hold A's nodes and locks (same tokens),
# grant new tokens above them, know only its own members, and take writes.
#
#   restore_test.sh BUILD_DIR PORT_BASE     (cluster A on PORT_BASE, B on PORT_BASE + 600)
source "$(dirname "$0")/../cluster_lib.sh" "$1" "$2" restore
base_b=$((port_base + 600))
raftlock="$build_dir/cli/raftlock"
storage="$build_dir/storage/raftlock-storage"
a_endpoints="127.0.0.1:$((port_base + 101)),127.0.0.1:$((port_base + 102)),127.0.0.1:$((port_base + 103))"
b_endpoints="127.0.0.1:$((base_b + 101)),127.0.0.1:$((base_b + 102)),127.0.0.1:$((base_b + 103))"
b_env=(RAFTLOCK_NO_BUILD=1 "RAFTLOCK_BUILD_DIR=$build_dir" "RAFTLOCK_DATA_DIR=$work/b"
    "RAFTLOCK_PORT_BASE=$base_b")
cluster_b() {
    env "${b_env[@]}" "$repo/scripts/cluster.sh" "$@"
}
stop_b() {
    cluster_b down >/dev/null 2>&1 || true
    if [ "$1" -ne 0 ]; then
        tail -n 20 "$work"/b/node*/raftlockd.log >&2 2>/dev/null || true
    fi
}
on_exit stop_b

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
json_field() {  # json_field FIELD: one top-level field of the JSON on stdin
    python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}
holder_token() {  # holder_token ENDPOINTS LOCK: the token of its one holder
    "$raftlock" --endpoints "$1" --output json describe "$2" |
        python3 -c 'import json, sys; h = json.load(sys.stdin)["holders"]; print(h[0]["token"] if len(h) == 1 else "none")'
}

cluster up >/dev/null
"$raftlock" --endpoints "$a_endpoints" create /restored v1 >/dev/null
kept=$("$raftlock" --endpoints "$a_endpoints" --output json acquire kept --ttl 120s | json_field token)
both=$("$raftlock" --endpoints "$a_endpoints" --output json acquire left right --ttl 120s |
    json_field token)
# Writes after these, so that node 3's stored commit index (recorded with its next write) covers
# them, whatever it holds of the last ones.
for i in 1 2 3; do
    "$raftlock" --endpoints "$a_endpoints" create "/after$i" x >/dev/null
done
sleep 1

# The backup: node 3 stopped cleanly (SIGTERM), its directory copied. Then every disk is lost.
pid=$(cat "$work/data/node3/raftlockd.pid")
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "node 3 did not stop on SIGTERM"
cp -a "$work/data/node3" "$work/copy"
"$storage" verify "$work/copy" >/dev/null || fail "the copy does not verify"
cluster down >/dev/null
rm -rf "$work/data"

members=()
for n in 1 2 3; do members+=(--member "$n=127.0.0.1:$((base_b + n))"); done
for n in 1 2 3; do
    "$storage" restore "$work/copy" "$work/b/node$n" "${members[@]}" ||
        fail "restore into node $n"
done
# Never over an existing store, nor from something that is not one.
if "$storage" restore "$work/copy" "$work/b/node1" "${members[@]}" 2>/dev/null; then
    fail "restore wrote over an existing store"
fi
mkdir -p "$work/not-a-store"
if "$storage" restore "$work/not-a-store" "$work/b/none" "${members[@]}" 2>/dev/null; then
    fail "restore took an empty directory for a copy"
fi

cluster_b up >/dev/null
got=$("$raftlock" --endpoints "$b_endpoints" get /restored | head -n 1)
[ "$got" = "v1" ] || fail "/restored reads '$got', not v1"
[ "$(holder_token "$b_endpoints" kept)" = "$kept" ] || fail "kept is not held with token $kept"
for name in left right; do
    [ "$(holder_token "$b_endpoints" "$name")" = "$both" ] ||
        fail "$name is not held with the multi-lock's token $both"
done
fresh=$("$raftlock" --endpoints "$b_endpoints" --output json acquire fresh --ttl 30s |
    json_field token)
[ "$fresh" -gt "$both" ] || fail "a new grant's token $fresh is not above the copy's $both"
addresses=$("$raftlock" --endpoints "$b_endpoints" member list)
for n in 1 2 3; do
    grep -q "127.0.0.1:$((base_b + n))" <<<"$addresses" || fail "member $n's address: $addresses"
done
if grep -q "127.0.0.1:$((port_base + 1))\b" <<<"$addresses"; then
    fail "cluster A's members survived: $addresses"
fi
echo "restore: cluster B holds /restored, kept (token $kept), left and right (token $both);" \
    "new token $fresh"
