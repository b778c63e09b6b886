#!/usr/bin/env bash
# Mutual TLS on the Raft port (issue 18): a three-node cluster whose members prove who they are
# with certificates of a cluster CA naming them (node-ID.cluster-CLUSTER), and what an outsider
# on the network tries against it, each refused with its logged reason and nothing changed:
# a Hello in plain text, a certificate of another CA, the cluster CA's certificate of another
# member claiming to be node 3, a certificate of another cluster. A positive control (node 3's own
# certificate, said Hello with) is accepted, so the refusals are not the harness failing.
#
#   peer_tls_test.sh BUILD_DIR PORT_BASE
source "$(dirname "$0")/../cluster_lib.sh" "$1" "$2" peer-tls

# shellcheck source=tests/integration/tls/pki_lib.sh
source "$(dirname "$0")/pki_lib.sh"

new_ca cluster "raftlock cluster 1 CA"
new_ca stranger "a stranger's CA"
for n in 1 2 3; do
    mint cluster "peer$n" "node-$n.cluster-1" "DNS:node-$n.cluster-1"
done
mint stranger forged3 "node-3.cluster-1" "DNS:node-3.cluster-1"
mint cluster other-cluster3 "node-3.cluster-2" "DNS:node-3.cluster-2"

export RAFTLOCKD_ARGS="--peer-tls-cert-file $pki/peer{n}.crt --peer-tls-key-file $pki/peer{n}.key \
--peer-tls-ca-file $pki/cluster.crt"
cluster up >/dev/null
grep -q "the Raft port speaks mutual TLS only" "$work/data/node1/raftlockd.log" ||
    fail "node 1 did not say its Raft port speaks TLS"
endpoints="127.0.0.1:$((port_base + 101)),127.0.0.1:$((port_base + 102)),127.0.0.1:$((port_base + 103))"
cli() {
    "$build_dir/cli/raftlock" --endpoints "$endpoints" --timeout 10s "$@"
}
cli create /peers "over mutual TLS" >/dev/null || fail "a write through the TLS-linked cluster"
echo "ok: three members elect a leader and commit over mutual TLS"

# Each attempt dials node 1's Raft port and says Hello as node 3 of cluster 1 (or as told); it
# prints what came back: "accepted", "refused: REASON", or "tls: ERROR" / "closed".
attempt() {
    /usr/bin/python3 - "$((port_base + 1))" "$pki" "$@" <<'PY'
import socket, ssl, struct, sys
port, pki, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cert = sys.argv[4] if len(sys.argv) > 4 else None
cluster = int(sys.argv[5]) if len(sys.argv) > 5 else 1

def varint_field(number, value):
    return bytes([number << 3]) + bytes([value])  # every value here is < 128

hello = b"".join(varint_field(n, v) for n, v in ((1, 1), (2, cluster), (3, 3), (4, 1)))
frame = bytes([0x0A, len(hello)]) + hello  # PeerFrame.hello = 1
sock = socket.create_connection(("127.0.0.1", port), timeout=5)
if mode == "tls":
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(f"{pki}/cluster.crt")
    context.load_cert_chain(f"{pki}/{cert}.crt", f"{pki}/{cert}.key")
    try:
        sock = context.wrap_socket(sock, server_hostname="node-1.cluster-1")
    except (ssl.SSLError, OSError) as e:
        print("tls:", e)
        sys.exit()
try:
    sock.sendall(struct.pack("!I", len(frame)) + frame)
    reply = b""
    while len(reply) < 4 or len(reply) < 4 + struct.unpack("!I", reply[:4])[0]:
        chunk = sock.recv(4096)
        if not chunk:
            break
        reply += chunk
except (ssl.SSLError, OSError) as e:
    print("tls:", e)
    sys.exit()
if len(reply) < 4:
    print("closed")
    sys.exit()
body = reply[4:]
assert body[0] == 0x12, body  # PeerFrame.hello_reply = 2
inner, fields, i = body[2:2 + body[1]], {}, 0
while i < len(inner):
    key = inner[i]; i += 1
    if key & 7 == 0:
        fields[key >> 3] = inner[i]; i += 1
    else:
        length = inner[i]; i += 1
        fields[key >> 3] = inner[i:i + length].decode(); i += length
print("accepted" if fields.get(1) else "refused: " + fields.get(2, ""))
PY
}
expect() {
    local want=$1 got
    shift
    got=$(attempt "$@")
    # shellcheck disable=SC2053  # $want may be a glob ("tls: *")
    [[ "$got" == $want ]] || fail "$* gave '$got', expected '$want'"
    echo "ok: $* -> $got"
}
before=$(grep -c "TLS:" "$work/data/node1/raftlockd.log" || true)
expect "closed" plain
expect "tls: *" tls forged3
expect "refused: its certificate (common name 'node-2.cluster-1') does not name node-3.cluster-1" \
    tls peer2
expect "refused: its certificate (common name 'node-3.cluster-2') does not name node-3.cluster-1" \
    tls other-cluster3
expect "refused: cluster id 2 is not this cluster's (1)" tls other-cluster3 2
# The positive control: node 3's own certificate is accepted (node 3 redials if this displaced its
# link).
expect "accepted" tls peer3
grep -q "refused 127.0.0.1:[0-9]*: TLS: TLS handshake failed" "$work/data/node1/raftlockd.log" ||
    fail "node 1 did not log the failed handshakes"
grep -q "does not name node-3.cluster-1" "$work/data/node1/raftlockd.log" ||
    fail "node 1 did not log the wrong member's certificate"
after=$(grep -c "TLS:" "$work/data/node1/raftlockd.log" || true)
[ "$after" -gt "$before" ] || fail "no TLS refusal logged"
out=$(cli get /peers) || fail "the cluster stopped serving"
[ "$out" = "over mutual TLS" ] || fail "the data changed: $out"
cli create /peers-after "still a quorum" >/dev/null || fail "a write after the refusals"
echo "peer_tls_test: all passed"
