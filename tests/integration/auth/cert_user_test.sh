#!/usr/bin/env bash
# Client certificates as identities (issue 18; docs/security.md): with --tls-client-auth require
# and --tls-client-cert-user on, a client certificate's common name is its connection's user, on
# the native, Redis and PostgreSQL ports, with no password. root's certificate administers; alice's
# is held to alice's permissions; a certificate naming no user gets nothing; on PostgreSQL the
# startup's user must be the certificate's. Each refusal has its positive control, and each check
# that nothing changed.
#
#   cert_user_test.sh BUILD_DIR PORT_BASE
source "$(dirname "$0")/../cluster_lib.sh" "$1" "$2" cert-user

# shellcheck source=tests/integration/tls/pki_lib.sh
source "$(dirname "$0")/../tls/pki_lib.sh"

new_ca ca "raftlock test CA"
mint ca node "raftlock node" "IP:127.0.0.1,DNS:localhost"
mint ca root root
mint ca alice alice
mint ca nobody nobody
printf 'root-secret\n' >"$work/root.pw"
chmod 600 "$work/root.pw"

export RAFTLOCKD_ARGS="--tls-cert-file $pki/node.crt --tls-key-file $pki/node.key \
--tls-ca-file $pki/ca.crt --tls-client-auth require --tls-client-cert-user on \
--root-password-file $work/root.pw"
cluster up >/dev/null || fail "cluster.sh up"
export RAFTLOCK_ENDPOINTS="127.0.0.1:$((port_base + 101)),127.0.0.1:$((port_base + 102)),127.0.0.1:$((port_base + 103))"
export RAFTLOCK_CACERT=$pki/ca.crt
unset RAFTLOCK_USER RAFTLOCK_PASSWORD_FILE RAFTLOCK_PASSWORD

# As the user certificate $1 names; the rest are the CLI's arguments.
as() {
    local who=$1
    shift
    "$build_dir/cli/raftlock" --timeout 10s --cert "$pki/$who.crt" --key "$pki/$who.key" "$@"
}
# As $2's certificate, expecting a refusal whose message holds $1.
refused() {
    local want=$1 who=$2 out
    shift 2
    if out=$(as "$who" "$@" 2>&1); then
        fail "raftlock $* as $who's certificate was served: $out"
    fi
    grep -qF -- "$want" <<<"$out" || fail "raftlock $* as $who: expected '$want', got: $out"
    echo "ok: refused: $who's certificate: raftlock $* -> $(tail -n 1 <<<"$out")"
}

# The first leader proposes root from the password file; root's certificate sees it as root.
for _ in $(seq 1 100); do
    status=$(as root --output json auth status 2>/dev/null || true)
    [ "$status" = '{"enabled":true,"root":true,"user":"root"}' ] && break
    sleep 0.1
done
[ "$status" = '{"enabled":true,"root":true,"user":"root"}' ] ||
    fail "root's certificate is not root: $status"
echo "ok: root's certificate logs in as root, no password"

# Native port: root's certificate administers; alice's is held to her role.
as root user add alice --no-password >/dev/null || fail "user add alice"
as root role add jobs >/dev/null || fail "role add jobs"
as root role grant jobs write lock jobs/ >/dev/null || fail "role grant"
as root user grant alice jobs >/dev/null || fail "user grant"
[ "$(as alice --output json auth status)" = '{"enabled":true,"root":false,"user":"alice"}' ] ||
    fail "alice's auth status: $(as alice --output json auth status 2>&1)"
as alice lock jobs/nightly -- true || fail "alice's lock inside her prefix"
refused 'user "alice" lacks write on lock "db"' alice lock db -- true
as root describe db | grep -q "^holders  0" || fail "db is held after the refusal"
refused "needs the root role" alice user add eve --no-password
[ "$(as root user list)" = "$(printf 'alice\nroot')" ] || fail "the refused user add changed users"
# A certificate the CA signed for a name that is no user: nothing.
refused "nobody" nobody create /by-nobody x
if as root get /by-nobody >/dev/null 2>&1; then fail "nobody's create made /by-nobody"; fi
# A password login on a certificate's connection is still checked: a wrong one is refused.
printf 'wrong\n' >"$work/wrong.pw"
refused "wrong password" alice --user root --password-file "$work/wrong.pw" get /
echo "ok: native port: alice's certificate is alice, nobody's is no one"

# Redis port (as Redis's tls-auth-clients-user CN): root may write, alice has no Redis role.
redis_port=$((port_base + 301))
redis_as() {
    local who=$1
    shift
    redis-cli -h 127.0.0.1 -p "$redis_port" --tls --cacert "$pki/ca.crt" \
        --cert "$pki/$who.crt" --key "$pki/$who.key" "$@" 2>&1
}
[ "$(redis_as root SET cert-key by-root)" = OK ] || fail "root's SET: $(redis_as root SET cert-key by-root)"
out=$(redis_as alice SET cert-key by-alice)
grep -q "^NOPERM" <<<"$out" || fail "alice's SET on the Redis port: $out"
[ "$(redis_as root GET cert-key)" = by-root ] || fail "alice's refused SET changed cert-key"
echo "ok: Redis port: root's certificate writes, alice's is refused (NOPERM)"

# PostgreSQL port (as PostgreSQL's `cert` method): the startup's user must be the certificate's.
pg_as() {
    local who=$1 user=$2
    shift 2
    psql "host=localhost port=$((port_base + 401)) user=$user dbname=raftlock sslmode=verify-full \
sslrootcert=$pki/ca.crt sslcert=$pki/$who.crt sslkey=$pki/$who.key" -tAc "$@" 2>&1
}
out=$(pg_as root root "SELECT pg_try_advisory_lock(7)")
[ "$out" = t ] || fail "root's certificate as root on PostgreSQL: $out"
out=$(pg_as alice root "SELECT 1") && fail "alice's certificate as root was let in: $out"
grep -qF 'certificate authentication failed for user "root"' <<<"$out" ||
    fail "alice's certificate as root: $out"
out=$(pg_as alice alice "SELECT pg_try_advisory_lock(8)") && fail "alice locked on SQL: $out"
grep -qF 'user "alice" lacks write on sql' <<<"$out" || fail "alice's SQL lock: $out"
echo "ok: PostgreSQL port: root's certificate as root, alice's only as alice (and refused a lock)"
