#!/usr/bin/env bash
# Runs the simulator for seeds FIRST..LAST, writes each run's client history, and has jepsen's
# linearizability checker (raftlock-check, WGL) judge it: an independent check of what the
# simulator's own invariants already claim. MODEL `kv` (the default) judges the register clients'
# history (--history); `mutex` judges the lock clients' history of the exclusive locks
# (--lock-history: acquire with its fencing token, release, fenced-write).
#
#   check_histories.sh SIM CHECKER FIRST LAST [kv|mutex]
set -euo pipefail
sim=$1 checker=$2 first=$3 last=$4 model=${5:-kv}
case $model in
    kv) flag=--history ;;
    mutex) flag=--lock-history ;;
    *) echo "unknown model $model (kv or mutex)" >&2; exit 2 ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for ((seed = first; seed <= last; seed++)); do
    "$sim" --seed "$seed" "$flag" "$dir/h.jsonl" >/dev/null
    status=0
    "$checker" --model "$model" --format jsonl --budget-ms 60000 "$dir/h.jsonl" \
        >"$dir/verdict" || status=$?
    case $status in
        0) ;;
        2) echo "seed $seed: checker ran out of budget (unknown): $(cat "$dir/verdict")" ;;
        *) echo "seed $seed: history is not linearizable ($model):" >&2
           cat "$dir/verdict" >&2
           echo "replay: $sim --seed $seed $flag h.jsonl --trace" >&2
           exit 1 ;;
    esac
done
echo "$model histories of seeds $first..$last are linearizable"
