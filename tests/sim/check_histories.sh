#!/usr/bin/env bash
# Runs the simulator for seeds FIRST..LAST, writes each run's client history, and has jepsen's
# linearizability checker (raftlock-check, WGL over the kv model) judge it: an independent check
# of what the simulator's own invariants already claim.
#
#   check_histories.sh SIM CHECKER FIRST LAST
set -euo pipefail
sim=$1 checker=$2 first=$3 last=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for ((seed = first; seed <= last; seed++)); do
    "$sim" --seed "$seed" --history "$dir/h.jsonl" >/dev/null
    status=0
    "$checker" --model kv --format jsonl --budget-ms 60000 "$dir/h.jsonl" >"$dir/verdict" || status=$?
    case $status in
        0) ;;
        2) echo "seed $seed: checker ran out of budget (unknown): $(cat "$dir/verdict")" ;;
        *) echo "seed $seed: history is not linearizable:" >&2
           cat "$dir/verdict" >&2
           echo "replay: $sim --seed $seed --history h.jsonl --trace" >&2
           exit 1 ;;
    esac
done
echo "histories of seeds $first..$last are linearizable"
