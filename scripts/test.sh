#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, and runs the tests: in a Release
# build, in an ASan+UBSan build, the tests where threads meet in a ThreadSanitizer build, and the
# libFuzzer targets (separate build directories). The sanitizer build leaves out what it cannot add
# to: source checks, benchmarks, the jepsen smokes, the simulator's negative controls, and the
# client-library and failover tests of the Redis port. Each later stage builds while the stage
# before it tests (background_build, below), and the packages only the tests need install while
# the Release build compiles (scripts/deps.sh test).
#
#   scripts/test.sh            plain + sanitizer builds, all tests
#   RAFTLOCK_SKIP_SANITIZE=1   no ASan+UBSan build (with the next two: a quick local loop)
#   RAFTLOCK_SKIP_TSAN=1       no ThreadSanitizer build
#   RAFTLOCK_SKIP_FUZZ=1       no fuzzing (otherwise each libFuzzer target runs
#                              ${RAFTLOCK_FUZZ_SECONDS:-10} s, the client decoder 60 s, when clang
#                              is installed: scripts/fuzz.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh build

jobs=$(nproc)
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start)) s"; }

# The later stages' builds run in the background under SCHED_IDLE (chrt --idle; nice 19 where
# chrt is missing) while the stage before them tests: a cluster test mostly waits on its faults'
# timers, and the build takes the CPU it leaves, never CPU it wants (the rule CTest's sweeps
# follow too: CMakeLists.txt, RAFTLOCK_IDLE_PRIORITY). Each build writes its log under build-logs/
# and its exit status to build-logs/STAGE.rc; finish_build prints the log and fails on a failed
# build.

# Puts the calling (sub)shell, and so whatever it starts, at idle priority.
idle_self() {
    if command -v chrt >/dev/null; then
        chrt --idle -p 0 "$BASHPID" >/dev/null
    else
        renice -n 19 -p "$BASHPID" >/dev/null
    fi
}
mkdir -p build-logs
declare -A background_pids=()
background_build() {
    local stage=$1
    shift
    rm -f "build-logs/$stage.rc"
    (
        if [ "$stage" != deps ]; then
            idle_self || echo "warning: could not lower the priority of the $stage build" >&2
        fi
        status=0
        "$@" >"build-logs/$stage.log" 2>&1 || status=$?
        echo "$status" >"build-logs/$stage.rc"
    ) &
    background_pids[$stage]=$!
}
kill_tree() {
    local child
    for child in $(ps -o pid= --ppid "$1"); do
        kill_tree "$child"
    done
    kill "$1" 2>/dev/null || true
}
# A failed stage ends the script: builds still running for later stages go with it.
stop_background_builds() {
    local stage
    for stage in "${!background_pids[@]}"; do
        if [ ! -f "build-logs/$stage.rc" ]; then
            kill_tree "${background_pids[$stage]}"
        fi
    done
}
trap stop_background_builds EXIT
finish_build() {
    local stage=$1
    while [ ! -f "build-logs/$stage.rc" ]; do
        # (A build that died without writing its status must not leave this waiting for ever.)
        if ! kill -0 "${background_pids[$stage]}" 2>/dev/null &&
            [ ! -f "build-logs/$stage.rc" ]; then
            echo "== background $stage ended without a status" >&2
            cat "build-logs/$stage.log" 2>/dev/null || true
            exit 1
        fi
        sleep 2
    done
    echo "== background $stage (build-logs/$stage.log) ended at $(elapsed)"
    if [ "$(cat "build-logs/$stage.rc")" != 0 ]; then
        cat "build-logs/$stage.log"
        echo "== background $stage failed" >&2
        exit 1
    fi
}
configure() {
    local dir=$1
    shift
    # RAFTLOCK_SKIP_DIRS is cleared: a developer's cached partial build must not skip tests here.
    cmake -S . -B "$dir" -G Ninja -DRAFTLOCK_SKIP_DIRS= "$@" >/dev/null
}
# (Run where a failure does not stop the script, so each step is chained to the one before.)
build_asan() {
    configure build-asan -DCMAKE_BUILD_TYPE=Debug -DRAFTLOCK_SANITIZE=ON -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
        -DCMAKE_UNITY_BUILD=ON &&
        cmake --build build-asan -j "$jobs"
}
# ThreadSanitizer on the tests where threads meet: the server with its storage thread
# (server_tests' ReplicaCluster runs real StorageWorkers), the client library's I/O thread, the
# network runtime. RocksDB comes uninstrumented, so its own tests are not among them.
build_tsan() {
    configure build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DRAFTLOCK_TSAN=ON \
        -DCMAKE_UNITY_BUILD=ON &&
        cmake --build build-tsan -j "$jobs" --target server_tests client_tests net_tests \
            server_config_tests
}
run_tests() {
    local dir=$1
    shift
    echo "== test $dir (at $(elapsed))"
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900 "$@"
}
asan=$([ "${RAFTLOCK_SKIP_SANITIZE:-0}" != 1 ] && echo 1 || echo 0)
tsan=$([ "${RAFTLOCK_SKIP_TSAN:-0}" != 1 ] && echo 1 || echo 0)

# What only the tests need (the servers and clients they run against, clang for the fuzz build)
# installs while the Release build compiles, at normal priority (apt mostly waits on the network
# and the disk), and before any test runs.
background_build deps scripts/deps.sh test

# The main build is the Release build users make (-O2, CMakeLists.txt), so CI builds and tests
# exactly that; a panic names its file and line without debug information. The sanitizer builds
# keep line tables only (-g1): their reports keep file:line, and they build about 30% faster on
# CI's two cores than with full debug information. They are unity builds (eight sources per
# compiler run, CMakeLists.txt): about a quarter less compiling again. The Release build is not,
# so the build users make is the one that proves every file includes what it uses.
echo "== build build (Release)"
configure build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
finish_build deps
fuzz=$([ "${RAFTLOCK_SKIP_FUZZ:-0}" != 1 ] && command -v clang++ >/dev/null && echo 1 || echo 0)
if [ "$asan" = 1 ]; then
    background_build asan build_asan
fi
run_tests build
if [ "$asan" = 1 ]; then
    finish_build asan
fi
if [ "$tsan" = 1 ]; then
    background_build tsan build_tsan
fi
if [ "$fuzz" = 1 ]; then
    background_build fuzz scripts/fuzz.sh build
fi
if [ "$asan" = 1 ]; then
    run_tests build-asan
fi
if [ "$tsan" = 1 ]; then
    finish_build tsan
    run_tests build-tsan -R '^(server_unit|client_unit|net_unit|server_config_unit)$'
fi
if [ "$fuzz" = 1 ]; then
    finish_build fuzz
    echo "== fuzz (scripts/fuzz.sh, at $(elapsed))"
    RAFTLOCK_FUZZ_SECONDS=${RAFTLOCK_FUZZ_SECONDS:-10} scripts/fuzz.sh run
fi
echo "== scripts/test.sh: all tests passed in $(elapsed)"
