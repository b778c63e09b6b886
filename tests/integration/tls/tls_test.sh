#!/usr/bin/env bash
# TLS on the native client port (issue 18): a three-node cluster whose client ports speak only
# TLS, reached by the raftlock CLI and by `openssl s_client`, and each refusal with its reason:
# a client without TLS, a client trusting another CA, a name the certificate does not hold; then
# the same cluster with client certificates required, with and without one.
#
#   tls_test.sh BUILD_DIR PORT_BASE
source "$(dirname "$0")/../cluster_lib.sh" "$1" "$2" tls

pki=$work/pki
mkdir -p "$pki"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# A CA, and a certificate it signs: mint NAME CN [SAN].
new_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=$2" -keyout "$pki/$1.key" -out "$pki/$1.crt" 2>/dev/null
}
mint() {
    local name=$1 cn=$2 san=${3:-}
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
        -keyout "$pki/$name.key" -out "$pki/$name.csr" 2>/dev/null
    {
        echo "basicConstraints=CA:FALSE"
        if [ -n "$san" ]; then echo "subjectAltName=$san"; fi
    } >"$pki/$name.ext"
    openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
        -CAcreateserial -days 2 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
}
new_ca ca "raftlock test CA"
new_ca other "another CA"
mint node "raftlock node" "IP:127.0.0.1,DNS:localhost"
mint alice alice

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
# A node's /metrics (no curl on a fresh machine: bash's /dev/tcp).
metrics() {
    exec 3<>"/dev/tcp/127.0.0.1/$1"
    printf "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" >&3
    cat <&3
    exec 3<&-
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

# Refusals: each fails without touching the data, with its reason.
before=$(tls_failures)
# A client without TLS hears nothing it can read: the node logs why and closes, and the client
# retries until its deadline.
timeout=2s expect_exit 1 get /tls
grep -q "timeout" <<<"$out" || fail "plain text to a TLS port: $out"
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
after=$(tls_failures)
[ "$after" -gt "$before" ] || fail "raftlock_tls_failures_total did not count the refusals"
expect_exit 0 --cacert "$pki/ca.crt" get /tls
[ "$out" = "over TLS" ] || fail "the data changed: $out"
echo "ok: plain text, another CA and a wrong name refused ($((after - before)) TLS failures" \
    "counted), a missing CA file named"

# Mutual TLS: the same cluster restarted requiring client certificates of the CA.
cluster down >/dev/null
export RAFTLOCKD_ARGS="$tls_args --tls-ca-file $pki/ca.crt --tls-client-auth require"
cluster up >/dev/null
# TLS 1.3 ends the client's handshake before the node checks its certificate: the client learns
# of the refusal from the alert after it sent its request, and retries until its deadline.
timeout=2s expect_exit 1 --cacert "$pki/ca.crt" get /tls
grep -q "peer did not return a certificate" "$work"/data/node*/raftlockd.log ||
    fail "no node logged the missing client certificate"
expect_exit 0 --cacert "$pki/ca.crt" --cert "$pki/alice.crt" --key "$pki/alice.key" get /tls
[ "$out" = "over TLS" ] || fail "with a client certificate: $out"
expect_exit 2 --cert "$pki/alice.crt" --key "$pki/alice.key" get /tls
echo "ok: client certificates required: refused without one, served with alice's"
echo "tls_test: all passed"
