# shellcheck shell=bash
# Shared by the TLS tests (tls_test.sh, peer_tls_test.sh): a scratch PKI under $pki, and fail.
#
#   new_ca NAME CN               a self-signed CA: $pki/NAME.crt and .key
#   mint CA NAME CN [SAN]        a certificate of CA: $pki/NAME.crt and .key (SAN as openssl
#                                writes it: "IP:127.0.0.1,DNS:localhost")

pki=$work/pki
mkdir -p "$pki"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

new_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=$2" -keyout "$pki/$1.key" -out "$pki/$1.crt" 2>/dev/null
}

mint() {
    local ca=$1 name=$2 cn=$3 san=${4:-}
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
        -keyout "$pki/$name.key" -out "$pki/$name.csr" 2>/dev/null
    {
        echo "basicConstraints=CA:FALSE"
        if [ -n "$san" ]; then echo "subjectAltName=$san"; fi
    } >"$pki/$name.ext"
    openssl x509 -req -in "$pki/$name.csr" -CA "$pki/$ca.crt" -CAkey "$pki/$ca.key" \
        -CAcreateserial -days 2 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
}
