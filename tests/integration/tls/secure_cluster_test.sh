#!/usr/bin/env bash
# `scripts/cluster.sh up --secure` (issue 18): one command gives a cluster whose every port speaks
# TLS only and whose nodes prove their ids to each other, and the connection lines it prints work
# as printed: the CLI, redis-cli --tls, psql with sslmode=verify-full (each logged in as root,
# whose password up --secure made), and the admin port over HTTPS. Clients in the clear, and
# clients without a login, are refused; a node killed and started again stays secure.
#
#   secure_cluster_test.sh BUILD_DIR PORT_BASE
source "$(dirname "$0")/../cluster_lib.sh" "$1" "$2" secure

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
out=$(cluster up --secure) || fail "cluster.sh up --secure: $out"
echo "$out" | tail -n 13
ca=$work/data/pki/ca.crt
pw=$work/data/pki/root.pw
grep -qF "export RAFTLOCK_CACERT=$ca" <<<"$out" || fail "up --secure did not print the CA"
grep -qF "export RAFTLOCK_USER=root RAFTLOCK_PASSWORD_FILE=$pw" <<<"$out" ||
    fail "up --secure did not print root's login"
[ "$(stat -c %a "$pw")" = 600 ] || fail "root.pw is readable by others"
eval "$(grep -E '^  export RAFTLOCK_(ENDPOINTS|CACERT|USER)=' <<<"$out" | head -n 3)"
[ "$RAFTLOCK_CACERT" = "$ca" ] || fail "RAFTLOCK_CACERT=$RAFTLOCK_CACERT"
export RAFTLOCK_ENDPOINTS RAFTLOCK_CACERT RAFTLOCK_USER RAFTLOCK_PASSWORD_FILE

# The first leader creates root from root.pw; until that entry applies a login may not find it.
for _ in $(seq 1 100); do
    "$build_dir/cli/raftlock" --timeout 2s create /secure "over TLS" >/dev/null 2>&1 && break
    sleep 0.1
done
[ "$("$build_dir/cli/raftlock" --timeout 10s get /secure)" = "over TLS" ] ||
    fail "the CLI with the printed RAFTLOCK_CACERT and root's login"
redis_line=$(grep -E '^  redis-cli ' <<<"$out") || fail "no redis-cli line"
[ "$(eval "$redis_line" 2>&1)" = OK ] || fail "redis-cli --tls as root: $redis_line"
pg_line=$(grep -E '^  PGPASSWORD=' <<<"$out") || fail "no psql line"
[ "$(eval "$pg_line -tAc 'SELECT 1'" 2>&1)" = 1 ] || fail "psql verify-full as root: $pg_line"
echo "ok: the CLI, redis-cli --tls and psql verify-full as printed, logged in as root"

out_anonymous=$(env -u RAFTLOCK_USER "$build_dir/cli/raftlock" --timeout 10s get /secure 2>&1) &&
    fail "a client without a login was served"
grep -q "authentication required" <<<"$out_anonymous" || fail "anonymous: $out_anonymous"
[ "$(redis-cli -p "$((port_base + 301))" --tls --cacert "$ca" GET k 2>&1)" = \
    "NOAUTH Authentication required." ] || fail "redis-cli without a login"
echo "ok: clients without a login refused"

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
