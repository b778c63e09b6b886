#!/usr/bin/env bash
# `scripts/cluster.sh up --secure` (issue 18): one command gives a cluster whose every port speaks
# TLS only and whose nodes prove their ids to each other, and the connection lines it prints work
# as printed: the CLI, redis-cli --tls, psql with sslmode=verify-full, and the admin port over
# HTTPS. Clients in the clear are refused; a node killed and started again stays secure.
#
#   secure_cluster_test.sh BUILD_DIR PORT_BASE
source "$(dirname "$0")/../cluster_lib.sh" "$1" "$2" secure

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
out=$(cluster up --secure) || fail "cluster.sh up --secure: $out"
echo "$out" | tail -n 9
ca=$work/data/pki/ca.crt
grep -qF "export RAFTLOCK_CACERT=$ca" <<<"$out" || fail "up --secure did not print the CA"
eval "$(grep -E '^  export RAFTLOCK_(ENDPOINTS|CACERT)=' <<<"$out" | head -n 2)"
[ "$RAFTLOCK_CACERT" = "$ca" ] || fail "RAFTLOCK_CACERT=$RAFTLOCK_CACERT"
export RAFTLOCK_ENDPOINTS RAFTLOCK_CACERT

"$build_dir/cli/raftlock" --timeout 10s create /secure "over TLS" >/dev/null ||
    fail "the CLI with the printed RAFTLOCK_CACERT"
redis_line=$(grep -E '^  redis-cli ' <<<"$out") || fail "no redis-cli line"
# shellcheck disable=SC2086  # the printed command line, split into its words
set -- $redis_line
[ "$(redis-cli -p "$3" --tls --cacert "$ca" SET k v 2>&1)" = OK ] || fail "redis-cli --tls"
pg_line=$(grep -oE 'host=localhost port=[0-9]+ user=raftlock sslmode=verify-full sslrootcert=[^"]+' \
    <<<"$out") || fail "no psql line"
[ "$(psql "$pg_line dbname=raftlock" -tAc "SELECT 1" 2>&1)" = 1 ] || fail "psql: $pg_line"
echo "ok: the CLI, redis-cli --tls and psql verify-full as printed"

if env -u RAFTLOCK_CACERT "$build_dir/cli/raftlock" --timeout 2s get /secure >/dev/null 2>&1; then
    fail "a client without TLS was served"
fi
out_plain=$(psql "host=127.0.0.1 port=$((port_base + 401)) user=raftlock sslmode=disable" \
    -tAc "SELECT 1" 2>&1) && fail "psql in the clear: $out_plain"
grep -q "accepts only TLS" <<<"$out_plain" || fail "psql in the clear: $out_plain"
echo "ok: clients in the clear refused"

grep -q "the Raft port speaks mutual TLS only" "$work"/data/node1/raftlockd.log ||
    fail "node 1's Raft port is not TLS"
cluster kill 2 >/dev/null
cluster start 2 >/dev/null || fail "cluster.sh start 2 on a secure cluster"
[ "$(grep -c "the Raft port speaks mutual TLS only" "$work/data/node2/raftlockd.log")" = 2 ] ||
    fail "node 2 came back without peer TLS"
status=$(cluster status) || fail "cluster.sh status: $status"
[ "$(grep -c "role=" <<<"$status")" = 3 ] || fail "cluster.sh status over HTTPS: $status"
[ "$("$build_dir/cli/raftlock" --timeout 10s get /secure)" = "over TLS" ] || fail "data lost"
echo "ok: a node killed and started again rejoins with TLS; status over HTTPS"
echo "secure_cluster_test: all passed"
