#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, and runs the tests: in a
# RelWithDebInfo build, in an ASan+UBSan build, and the tests where threads meet in a
# ThreadSanitizer build (separate build directories). The sanitizer
# build leaves out what it cannot add to: source checks, benchmarks, the jepsen smokes, the
# simulator's negative controls, and the client-library and failover tests of the Redis port.
#
#   scripts/test.sh            plain + sanitizer builds, all tests
#   RAFTLOCK_SKIP_SANITIZE=1   no ASan+UBSan build (with the next two: a quick local loop)
#   RAFTLOCK_SKIP_TSAN=1       no ThreadSanitizer build
#   RAFTLOCK_SKIP_FUZZ=1       no fuzzing (otherwise each libFuzzer target runs
#                              ${RAFTLOCK_FUZZ_SECONDS:-10} s, the client decoder 60 s, when clang
#                              is installed: scripts/fuzz.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh

jobs=$(nproc)
run_build() {
    local dir=$1
    shift
    echo "== configure $dir"
    # RAFTLOCK_SKIP_DIRS is cleared: a developer's cached partial build must not skip tests here.
    cmake -S . -B "$dir" -G Ninja -DRAFTLOCK_SKIP_DIRS= "$@" >/dev/null
    echo "== build $dir"
    cmake --build "$dir" -j "$jobs"
    echo "== test $dir"
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900
}

start=$(date +%s)
# The main build is the Release build users make (-O2, CMakeLists.txt), so CI builds and tests
# exactly that; a panic names its file and line without debug information. The sanitizer builds
# keep line tables only (-g1): their reports keep file:line, and they build about 30% faster on
# CI's two cores than with full debug information.
run_build build -DCMAKE_BUILD_TYPE=Release
if [ "${RAFTLOCK_SKIP_SANITIZE:-0}" != 1 ]; then
    run_build build-asan -DCMAKE_BUILD_TYPE=Debug -DRAFTLOCK_SANITIZE=ON -DCMAKE_CXX_FLAGS_DEBUG=-g1
fi
if [ "${RAFTLOCK_SKIP_TSAN:-0}" != 1 ]; then
    # ThreadSanitizer on the tests where threads meet: the server with its storage thread
    # (server_tests' ReplicaCluster runs real StorageWorkers), the client library's I/O thread,
    # the network runtime. RocksDB comes uninstrumented, so its own tests are not among them.
    echo "== configure build-tsan"
    cmake -S . -B build-tsan -G Ninja -DRAFTLOCK_SKIP_DIRS= -DCMAKE_BUILD_TYPE=Debug \
        -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DRAFTLOCK_TSAN=ON >/dev/null
    echo "== build build-tsan"
    cmake --build build-tsan -j "$jobs" --target server_tests client_tests net_tests server_config_tests
    echo "== test build-tsan"
    ctest --test-dir build-tsan --output-on-failure -j "$jobs" --timeout 900 \
        -R '^(server_unit|client_unit|net_unit|server_config_unit)$'
fi
if [ "${RAFTLOCK_SKIP_FUZZ:-0}" != 1 ] && command -v clang++ >/dev/null; then
    echo "== fuzz (scripts/fuzz.sh)"
    RAFTLOCK_FUZZ_SECONDS=${RAFTLOCK_FUZZ_SECONDS:-10} scripts/fuzz.sh
fi
echo "== scripts/test.sh: all tests passed in $(($(date +%s) - start)) s"
