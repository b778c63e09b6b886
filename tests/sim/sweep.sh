#!/usr/bin/env bash
# One CTest entry for a simulator's seed sweep: seeds 1..LAST in two halves, run at once (the
# sweep is CPU-bound and CI has two cores), as one test. One entry, not one per half: CTest runs
# two tests at a time on CI, and two halves as two entries took both slots for minutes while the
# cluster tests, which mostly wait on timers, queued behind them. The sweeps also share a
# RESOURCE_LOCK (tests/sim/CMakeLists.txt), so one CTest slot is always left to the other tests.
# Run under SCHED_IDLE by its caller: the halves inherit it.
#
#   sweep.sh SIM LAST      (SIM: raftlock-sim or raftlock-replica-sim)
set -euo pipefail
sim=$1 last=$2
if [ "$last" -lt 2 ]; then
    echo "sweep.sh: LAST must be at least 2" >&2
    exit 2
fi
half=$((last / 2))
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$sim" --seeds "1..$half" >"$out/a" 2>&1 &
first=$!
"$sim" --seeds "$((half + 1))..$last" >"$out/b" 2>&1 &
second=$!
status=0
wait "$first" || status=1
wait "$second" || status=1
echo "== seeds 1..$half"
cat "$out/a"
echo "== seeds $((half + 1))..$last"
cat "$out/b"
exit $status
