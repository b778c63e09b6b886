#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang in build-fuzz and runs each for a while from
# a seed corpus of valid inputs. Exits non-zero when a target crashes (the reproducer is left in
# build-fuzz/crashes/<target>/).
#
#   scripts/fuzz.sh                                  every target 15 s, the client decoder 60 s
#   RAFTLOCK_FUZZ_SECONDS=300 scripts/fuzz.sh        every target 300 s
#   RAFTLOCK_FUZZ_FRAME_SECONDS=600 scripts/fuzz.sh  the client decoder longer
#   scripts/fuzz.sh build | run                      only build the targets, or only run them
#                                                    (scripts/test.sh builds while tests run)
set -euo pipefail
cd "$(dirname "$0")/.."
step=${1:-all}
case $step in
    all | build | run) ;;
    *) echo "usage: scripts/fuzz.sh [build|run]" >&2; exit 2 ;;
esac

seconds=${RAFTLOCK_FUZZ_SECONDS:-15}
# The decoder of bytes from any client on the network gets the longest run (issue 5: 60 s in CI).
frame_seconds=${RAFTLOCK_FUZZ_FRAME_SECONDS:-$((seconds > 60 ? seconds : 60))}
dir=build-fuzz
targets=(frame_request_fuzz peer_frame_fuzz command_fuzz resp_fuzz keyspace_fuzz pg_codec_fuzz zk_codec_fuzz sql_parser_fuzz sql_engine_fuzz scram_fuzz)

# The whole tree is instrumented for coverage and ASan/UBSan, so the fuzzer sees into the libraries;
# the fuzz targets themselves add the libFuzzer main (tests/fuzz/CMakeLists.txt).
instrument="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
seeds=$dir/fuzz-seeds
if [ "$step" != run ]; then
    echo "== configure $dir"
    # Line tables are all a crash's stack trace needs; full debug information made the build a
    # third slower (statemachine/codec.cc: 13.3 s with -g, 9.9 s with -gline-tables-only).
    CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
        -DRAFTLOCK_FUZZ=ON \
        -DRAFTLOCK_SKIP_DIRS="storage;jepsen;bench;sim;server;client;cli;integration" \
        -DCMAKE_CXX_FLAGS="$instrument" \
        -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
    echo "== build ${targets[*]}"
    cmake --build "$dir" --target "${targets[@]}" fuzz_seeds
    rm -rf "$seeds"
    "$dir/tests/fuzz/fuzz_seeds" "$seeds"
fi
if [ "$step" = build ]; then
    exit 0
fi

# One target's run; its status is left in $dir/$name.status (0: no crash).
fuzz_one() {
    local target=$1 name=${1%_fuzz} run_seconds=$seconds
    local corpus=$dir/corpus/$name  # grows across runs; the seeds are read from their own directory
    local crashes=$dir/crashes/$name
    mkdir -p "$corpus" "$crashes"
    if [ "$target" = frame_request_fuzz ]; then
        run_seconds=$frame_seconds
    fi
    echo "== fuzz $target for ${run_seconds}s"
    local status=0
    "$dir/tests/fuzz/$target" -max_total_time="$run_seconds" -print_final_stats=1 \
        -artifact_prefix="$crashes/" "$corpus" "$seeds/$name" >"$dir/$name.log" 2>&1 || status=$?
    echo "$status" >"$dir/$name.status"
}

# Two lanes, one per core: the client decoder's long run in one, the other targets one after
# another in the other (about 80 s in all instead of 140 s with the CI defaults).
rm -f "$dir"/*.status
fuzz_one frame_request_fuzz &
lane=$!
for target in "${targets[@]}"; do
    if [ "$target" != frame_request_fuzz ]; then
        fuzz_one "$target"
    fi
done
wait "$lane"
failed=()
for target in "${targets[@]}"; do
    name=${target%_fuzz}
    if [ "$(cat "$dir/$name.status")" != 0 ]; then
        echo "!! $target failed; last lines of $dir/$name.log:" >&2
        tail -n 30 "$dir/$name.log" >&2
        failed+=("$target")
    else
        echo "$target:"
        grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$dir/$name.log" || true
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: crashes in ${failed[*]} (reproducers in $dir/crashes/)" >&2
    exit 1
fi
echo "fuzz: ${#targets[@]} targets ran without a crash (${seconds}s each, frame_request ${frame_seconds}s)"
