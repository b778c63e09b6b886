#!/usr/bin/env bash
# Installs exactly the Debian 12 packages the build and the tests need. Idempotent: a package that
# is already installed is not fetched again, and apt-get update runs only when something is missing.
#
#   scripts/deps.sh           everything
#   scripts/deps.sh build     what compiling the tree needs (compilers, headers, libraries)
#   scripts/deps.sh test      what only the tests and the fuzz build need (servers, clients, tools):
#                             scripts/test.sh installs these while the Release build compiles
set -euo pipefail
part=${1:-all}
case $part in
    all | build | test) ;;
    *) echo "usage: scripts/deps.sh [build|test]" >&2; exit 2 ;;
esac

build_packages=(
    g++ cmake ninja-build pkg-config
    libboost-dev libprotobuf-dev protobuf-compiler librocksdb-dev libfmt-dev catch2
    nlohmann-json3-dev liblua5.1-0-dev libcli11-dev libtomlplusplus-dev libspdlog-dev
    # digests, HMAC and TLS (base/digest.h, net/tls.h)
    libssl-dev
    # bench/raftlock-bench's ZooKeeper driver (the C client); the peers themselves (etcd-server,
    # zookeeper, redis-server) are installed by bench/peers.sh when a comparison runs
    libzookeeper-mt-dev
    # bench/raftlock-bench's postgres driver (libpq), for the SQL mode and a real PostgreSQL
    libpq-dev
)
test_packages=(
    # the source check (clang-format) and the fuzz build (clang, libFuzzer's runtime)
    clang-format clang libclang-rt-14-dev
    # the TLS tests' certificates
    openssl
    # jepsen/run: network namespaces, veth and bridges (iproute2), partitions (nftables)
    iproute2 nftables python3 gnuplot-nox faketime
    # the Redis mode's tests: redis-cli against a real redis-server, and redis-py's Lock
    redis-server redis-tools python3-redis
    # the SQL mode's tests: psql scripts against a real PostgreSQL 15, psycopg 2 and 3
    postgresql-15 postgresql-client-15 python3-psycopg2 python3-psycopg
    # the ZooKeeper mode's tests, each client unmodified: kazoo; zkCli.sh beside a real ZooKeeper
    # 3.8 (Debian zookeeper); Curator's recipes (compiled with the JDK at test time)
    python3-kazoo zookeeper libcurator-recipes-java default-jdk-headless
    # the web console's browser test (headless, driven by puppeteer-core from npm)
    chromium
)
packages=()
if [ "$part" != test ]; then
    packages+=("${build_packages[@]}")
fi
if [ "$part" != build ]; then
    packages+=("${test_packages[@]}")
    # Node.js and npm (the Redis mode's ioredis + redlock test): the machine's own, else Debian's.
    if ! command -v npm >/dev/null; then
        packages+=(nodejs npm)
    fi
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: missing packages: ${missing[*]}; run as root or install them with apt-get" >&2
    exit 1
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
