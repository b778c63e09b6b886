#!/usr/bin/env bash
# TLS on every client port (issue 18): a three-node cluster whose client ports speak only TLS,
# reached by each port's own clients, unmodified: the raftlock CLI and `openssl s_client` (native
# port), redis-cli --tls and redis-py (Redis), psql and psycopg with sslmode=verify-full
# (PostgreSQL), kazoo (ZooKeeper). Each refusal with its reason: a client without TLS, a client
# trusting another CA, a name the certificate does not hold, bytes smuggled after an SSLRequest.
# Then a certificate from a new CA, loaded by SIGHUP; then client certificates required, with and
# without one.
#
#   tls_test.sh BUILD_DIR PORT_BASE
source "$(dirname "$0")/../cluster_lib.sh" "$1" "$2" tls

# shellcheck source=tests/integration/tls/pki_lib.sh
source "$(dirname "$0")/pki_lib.sh"

new_ca ca "raftlock test CA"
new_ca other "another CA"
mint ca node "raftlock node" "IP:127.0.0.1,DNS:localhost"
mint ca alice alice

client_ports=($((port_base + 101)) $((port_base + 102)) $((port_base + 103)))
endpoints="127.0.0.1:${client_ports[0]},127.0.0.1:${client_ports[1]},127.0.0.1:${client_ports[2]}"
cli() {
    "$build_dir/cli/raftlock" --endpoints "$endpoints" --timeout "${timeout:-5s}" "$@"
}
# Runs the CLI expecting exit code $1; its output (both streams) in $out.
expect_exit() {
    local want=$1 status=0
    shift
    out=$(cli "$@" 2>&1) || status=$?
    [ "$status" = "$want" ] || fail "raftlock $* exited $status, expected $want: $out"
}
# A node's /metrics, over HTTPS (no curl on a fresh machine: openssl s_client).
metrics() {
    printf "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" |
        openssl s_client -quiet -connect "127.0.0.1:$1" -CAfile "${admin_ca:-$pki/ca.crt}" \
            -verify_return_error 2>/dev/null
}
tls_failures() {
    local sum=0 n value
    for n in 1 2 3; do
        value=$(metrics "$((port_base + 200 + n))" |
            awk '$1 == "raftlock_tls_failures_total" {print $2}')
        sum=$((sum + ${value%.*}))
    done
    echo "$sum"
}

tls_args="--tls-cert-file $pki/node.crt --tls-key-file $pki/node.key"
export RAFTLOCKD_ARGS=$tls_args
cluster up >/dev/null

# Served over TLS, by address (the certificate's IP SAN) and by name (its DNS SAN).
expect_exit 0 --cacert "$pki/ca.crt" create /tls "over TLS"
expect_exit 0 --cacert "$pki/ca.crt" get /tls
[ "$out" = "over TLS" ] || fail "get /tls printed: $out"
"$build_dir/cli/raftlock" --endpoints "localhost:${client_ports[1]}" --cacert "$pki/ca.crt" \
    get /tls >/dev/null || fail "by the name localhost"
RAFTLOCK_CACERT=$pki/ca.crt cli get /tls >/dev/null || fail "with \$RAFTLOCK_CACERT"
echo "ok: the CLI over TLS, by address, by name and with \$RAFTLOCK_CACERT"

# A real TLS client agrees: the chain verifies and TLS 1.3 is spoken.
handshake=$(openssl s_client -connect "127.0.0.1:${client_ports[0]}" -CAfile "$pki/ca.crt" \
    -verify_return_error -brief </dev/null 2>&1) || fail "openssl s_client: $handshake"
grep -q "Protocol version: TLSv1.3" <<<"$handshake" || fail "openssl s_client: $handshake"
grep -q "Verification: OK" <<<"$handshake" || fail "openssl s_client: $handshake"
echo "ok: openssl s_client verifies the node's chain over TLSv1.3"

# The admin port is HTTPS, with the same certificate; plain HTTP gets no HTTP answer.
metrics "$((port_base + 201))" | head -n 1 | grep -q "^HTTP/1.0 200 OK" || fail "GET /metrics over HTTPS"
# shellcheck disable=SC2016  # the inner script expands its own arguments
out=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"
    printf "GET /metrics HTTP/1.0\r\n\r\n" >&3
    cat <&3' _ "$((port_base + 201))" | head -c 5 | tr -cd "[:print:]") || true
[ "$out" != "HTTP/" ] || fail "the admin port answered plain HTTP"
echo "ok: the admin port speaks HTTPS only"

# The other client ports, each with its own clients.
redis_port=$((port_base + 301)) pg_port=$((port_base + 402)) zk_port=$((port_base + 503))
redis_tls() {
    redis-cli -h 127.0.0.1 -p "$redis_port" --tls --cacert "${cacert:-$pki/ca.crt}" "$@" 2>&1
}
out=$(redis_tls SET tls-key over-tls)
[ "$out" = OK ] || fail "redis-cli --tls SET: $out"
out=$(redis_tls GET tls-key)
[ "$out" = over-tls ] || fail "redis-cli --tls GET: $out"
pg_url() {
    echo "host=$1 port=$pg_port user=raftlock dbname=raftlock sslmode=$2 sslrootcert=$pki/ca.crt"
}
out=$(psql "$(pg_url localhost verify-full)" -tAc "SELECT 'over TLS'" 2>&1)
[ "$out" = "over TLS" ] || fail "psql sslmode=verify-full: $out"
/usr/bin/python3 - "$pki/ca.crt" "$redis_port" "$(pg_url 127.0.0.1 verify-full)" "$zk_port" <<'PY' ||
import sys
import psycopg
import redis
from kazoo.client import KazooClient
ca, redis_port, pg_url, zk_port = sys.argv[1:]
r = redis.Redis(host="127.0.0.1", port=int(redis_port), ssl=True, ssl_ca_certs=ca)
assert r.get("tls-key") == b"over-tls", "redis-py over TLS"
with psycopg.connect(pg_url) as conn:
    assert conn.pgconn.ssl_in_use, "psycopg without TLS"
    assert conn.execute("SELECT 41 + 1").fetchone() == (42,), "psycopg over TLS"
zk = KazooClient(hosts=f"127.0.0.1:{zk_port}", use_ssl=True, ca=ca, verify_certs=True)
zk.start(timeout=15)
zk.create("/tls-zk", b"over TLS")
assert zk.get("/tls-zk")[0] == b"over TLS", "kazoo over TLS"
zk.stop()
PY
    fail "redis-py, psycopg or kazoo over TLS"
echo "ok: redis-cli --tls, psql and psycopg (verify-full), redis-py and kazoo over TLS"

# Refusals: each fails without touching the data, with its reason.
before=$(tls_failures)
# A client without TLS hears nothing it can read: the node logs why and closes, and the client
# retries until its deadline, then says what the connections did.
timeout=2s expect_exit 1 get /tls
grep -q "timeout: .*closed the connection without a word: does it speak TLS" <<<"$out" ||
    fail "plain text to a TLS port: $out"
grep -q "closed a connection whose TLS failed: TLS handshake failed" "$work"/data/node*/raftlockd.log ||
    fail "no node logged the failed handshake"
expect_exit 3 --cacert "$pki/other.crt" get /tls
grep -q "certificate verify failed: unable to get local issuer certificate" <<<"$out" ||
    fail "another CA: $out"
# "127.1" reaches 127.0.0.1 too, but is a name the certificate does not hold.
status=0
out=$("$build_dir/cli/raftlock" --endpoints "127.1:${client_ports[0]}" --timeout 5s \
    --cacert "$pki/ca.crt" get /tls 2>&1) || status=$?
[ "$status" = 3 ] && grep -q "hostname mismatch" <<<"$out" || fail "a wrong name: $out"
expect_exit 2 --cacert "$pki/missing.crt" get /tls
grep -q "missing.crt" <<<"$out" || fail "a missing CA file: $out"
if out=$(redis-cli -h 127.0.0.1 -p "$redis_port" GET tls-key 2>&1); then
    fail "redis-cli without TLS was answered: $out"
fi
out=$(cacert=$pki/other.crt redis_tls GET tls-key) && fail "redis-cli trusting another CA: $out"
grep -q "certificate verify failed" <<<"$out" || fail "redis-cli trusting another CA: $out"
out=$(psql "$(pg_url 127.0.0.1 disable)" -tAc "SELECT 1" 2>&1) && fail "psql in the clear: $out"
grep -q "this port accepts only TLS connections" <<<"$out" || fail "psql in the clear: $out"
# (libpq connects to hostaddr and checks the certificate against host.)
out=$(psql "hostaddr=127.0.0.1 $(pg_url not-the-node.example verify-full)" -tAc "SELECT 1" 2>&1) &&
    fail "psql, a wrong name: $out"
grep -q "does not match host name" <<<"$out" || fail "psql, a wrong name: $out"
# Bytes sent in the clear behind the SSLRequest, before the handshake, could be taken as part of
# the encrypted session (CVE-2021-23214): refused.
out=$(/usr/bin/python3 - "$pg_port" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(struct.pack("!ii", 8, 80877103) + b"Q\0\0\0\x0dSELECT 1\0")
reply = b""
while chunk := s.recv(4096):
    reply += chunk
fields = dict((f[:1], f[1:]) for f in reply[5:].split(b"\0") if f)  # an ErrorResponse's fields
print(reply[:1].decode(), fields.get(b"M", b"").decode())
PY
)
[ "$out" = "E received unencrypted data after SSL request" ] || fail "smuggled bytes: $out"
after=$(tls_failures)
[ "$after" -gt "$before" ] || fail "raftlock_tls_failures_total did not count the refusals"
expect_exit 0 --cacert "$pki/ca.crt" get /tls
[ "$out" = "over TLS" ] || fail "the data changed: $out"
echo "ok: plain text, another CA and a wrong name refused ($((after - before)) TLS failures" \
    "counted), a missing CA file named, bytes behind an SSLRequest refused"

# Rotation: a certificate from a new CA, loaded by SIGHUP, serves new connections; a key file
# that does not load leaves the previous certificate in place.
new_ca ca2 "raftlock test CA 2"
mint ca2 rotated "raftlock node" "IP:127.0.0.1,DNS:localhost"
hangup_nodes() {
    local n
    for n in 1 2 3; do
        kill -HUP "$(cat "$work/data/node$n/raftlockd.pid")"
    done
}
cp "$pki/rotated.crt" "$pki/node.crt"
echo "not a key" >"$pki/node.key"
hangup_nodes
wait_for_log() {
    local i
    for i in $(seq 50); do
        if [ "$(grep -c "$1" "$work"/data/node*/raftlockd.log | awk -F: '{s += $2} END {print s}')" -ge "$2" ]; then
            return 0
        fi
        sleep 0.1
    done
    fail "expected $2 log lines matching: $1"
}
wait_for_log "TLS files not reloaded, the previous ones stay in use: cannot use the key file" 3
expect_exit 0 --cacert "$pki/ca.crt" get /tls
cp "$pki/rotated.key" "$pki/node.key"
hangup_nodes
wait_for_log "SIGHUP: TLS certificate .* reloaded for new connections" 3
expect_exit 0 --cacert "$pki/ca2.crt" get /tls
expect_exit 3 --cacert "$pki/ca.crt" get /tls
out=$(cacert=$pki/ca2.crt redis_tls GET tls-key)
[ "$out" = over-tls ] || fail "redis-cli after the rotation: $out"
out=$(PGSSLROOTCERT=$pki/ca2.crt psql "host=localhost port=$pg_port user=raftlock dbname=raftlock \
    sslmode=verify-full" -tAc "SELECT 1" 2>&1)
[ "$out" = 1 ] || fail "psql after the rotation: $out"
echo "ok: SIGHUP loads a rotated certificate for every port; a broken key file is not loaded"

# Mutual TLS: the same cluster restarted requiring client certificates of the CA.
cluster down >/dev/null
tls_args="--tls-cert-file $pki/node.crt --tls-key-file $pki/node.key"  # (now rotated.crt's)
export RAFTLOCKD_ARGS="$tls_args --tls-ca-file $pki/ca.crt --tls-client-auth require"
cluster up >/dev/null
# TLS 1.3 ends the client's handshake before the node checks its certificate: the client learns
# of the refusal from the alert after it sent its request, and retries until its deadline.
timeout=2s expect_exit 1 --cacert "$pki/ca2.crt" get /tls
grep -q "tlsv13 alert certificate required" <<<"$out" || fail "no client certificate: $out"
grep -q "peer did not return a certificate" "$work"/data/node*/raftlockd.log ||
    fail "no node logged the missing client certificate"
expect_exit 0 --cacert "$pki/ca2.crt" --cert "$pki/alice.crt" --key "$pki/alice.key" get /tls
[ "$out" = "over TLS" ] || fail "with a client certificate: $out"
expect_exit 2 --cert "$pki/alice.crt" --key "$pki/alice.key" get /tls
out=$(redis-cli -h 127.0.0.1 -p "$redis_port" --tls --cacert "$pki/ca2.crt" --cert "$pki/alice.crt" \
    --key "$pki/alice.key" GET tls-key 2>&1)
[ "$out" = over-tls ] || fail "redis-cli with a client certificate: $out"
# The admin port asks for no client certificate: its routes only read.
admin_ca=$pki/ca2.crt metrics "$((port_base + 202))" | head -n 1 | grep -q "^HTTP/1.0 200 OK" ||
    fail "GET /metrics without a client certificate"
echo "ok: client certificates required: refused without one, served with alice's; the admin" \
    "port without one"
echo "tls_test: all passed"
