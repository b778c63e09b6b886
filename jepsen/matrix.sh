#!/usr/bin/env bash
# Runs every workload against every nemesis (each fault alone, then all of them together) with
# jepsen/run and prints a summary table. Needs root and a build, as jepsen/run does.
#
#   jepsen/matrix.sh [--time 60] [--rounds 1] [--seed S] [--build DIR]
#
# --time is per run: 5 workloads x 7 nemeses x rounds runs of --time + ~5 s each (with the
# default 60 s, one round takes about 39 minutes). Results: jepsen/results/matrix-<time>/, one
# directory per run and summary.txt. Exit status 1 when any run's verdict was not linearizable.
set -euo pipefail
cd "$(dirname "$0")/.."

time_s=60
rounds=1
seed=${RANDOM}
build=build
while [ $# -gt 0 ]; do
    case "$1" in
        --time) time_s=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        *) echo "matrix.sh: unknown argument '$1' (see the top of $0)" >&2; exit 2 ;;
    esac
done

workloads=(register lock sequential sessions watch)
nemeses=(partition kill pause clock pause-client member partition,kill,pause,clock,pause-client,member)
out=jepsen/results/matrix-$(date +%Y%m%dT%H%M%S)
mkdir -p "$out"
echo "matrix.sh: ${#workloads[@]} workloads x ${#nemeses[@]} nemeses x $rounds rounds," \
    "${time_s} s each, seeds from $seed; results in $out"

run=0
for round in $(seq 1 "$rounds"); do
    for nemesis in "${nemeses[@]}"; do
        for workload in "${workloads[@]}"; do
            run=$((run + 1))
            dir=$out/$(printf '%03d' $run)-$workload-${nemesis//,/+}
            status=0
            jepsen/run --workload "$workload" --nemesis "$nemesis" --time "$time_s" \
                --seed $((seed + run)) --build "$build" --results "$dir" >"$dir.log" 2>&1 ||
                status=$?
            echo "matrix.sh: run $run (round $round) $workload / $nemesis: exit $status"
        done
    done
done

python3 - "$out" <<'EOF' | tee "$out/summary.txt"
import json, os, re, sys
out = sys.argv[1]
rows, bad = [], 0
for name in sorted(os.listdir(out)):
    path = os.path.join(out, name, "results.json")
    if not os.path.isdir(os.path.join(out, name)):
        continue
    if not os.path.exists(path):
        rows.append((name, "-", "-", "no result (see " + name + ".log)", "", "", "", ""))
        bad += 1
        continue
    r = json.load(open(path))
    m = re.search(r"ok (\d+) fail (\d+) info (\d+)", r["client"])
    ok, fail, info = m.groups() if m else ("?", "?", "?")
    rows.append((name.split("-", 1)[0], r["workload"], ",".join(r["nemesis"]) or "none",
                 r["verdict"], ok, fail, info, str(r["faults"])))
    bad += 0 if r["pass"] else 1
head = ("run", "workload", "nemesis", "verdict", "ok", "fail", "info", "faults")
widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
for row in [head] + rows:
    print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)))
print(f"{len(rows)} runs, {len(rows) - bad} as expected, {bad} not")
sys.exit(1 if bad else 0)
EOF
