#!/usr/bin/env bash
# Runs raftlock-check as a user would and checks its exit statuses: 0 linearizable, 1 not,
# 2 unknown (budget exhausted), 3 bad input with the line of the first bad record.
# usage: check_cli_test.sh RAFTLOCK_CHECK ETCD_TESTDATA_DIR
set -uo pipefail
check=$1
etcd=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

expect() {  # expect STATUS DESCRIPTION COMMAND...
    local want=$1 what=$2
    shift 2
    "$@" >"$work/out" 2>&1
    local got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: $what: exit $got, want $want" >&2
        cat "$work/out" >&2
        failures=$((failures + 1))
    fi
}

expect 0 "linearizable etcd history" "$check" --model register --format jepsen-log "$etcd/etcd_002.log"
expect 1 "non-linearizable etcd history" \
    "$check" --model register --format jepsen-log --html "$work/t.html" "$etcd/etcd_000.log"
grep -q 'class="op stuck' "$work/t.html" || { echo "FAIL: html has no stuck operation" >&2; failures=$((failures + 1)); }
expect 1 "worst status over several files" \
    "$check" --model register --format jepsen-log "$etcd/etcd_002.log" "$etcd/etcd_000.log"

cat >"$work/bad.jsonl" <<'JSONL'
{"index":0,"process":1,"type":"invoke","f":"write","key":"x","value":1}
{"index":1,"process":1,"type":"ok","f":"write","key":"x","value":1}

{"index":2,"process":1,"type":"ok","f":"write","key":"x","value":1}
JSONL
expect 3 "completion without invocation" "$check" --model kv --format jsonl "$work/bad.jsonl"
grep -q 'bad.jsonl:4:' "$work/out" || { echo "FAIL: bad input must name line 4" >&2; cat "$work/out" >&2; failures=$((failures + 1)); }
expect 3 "missing file" "$check" --model kv --format jsonl "$work/missing.jsonl"
expect 3 "bad usage" "$check" --model kv "$work/bad.jsonl"

# Forty writes that time out and a read of a value nobody wrote: hopeless within 1 ms.
{
    for p in $(seq 0 39); do
        echo "{\"process\":$p,\"type\":\"invoke\",\"f\":\"write\",\"key\":\"x\",\"value\":$((p + 1))}"
    done
    echo '{"process":99,"type":"invoke","f":"read","key":"x"}'
    echo '{"process":99,"type":"ok","f":"read","key":"x","value":12345}'
} >"$work/hard.jsonl"
expect 2 "budget exhausted" "$check" --model kv --format jsonl --budget-ms 1 "$work/hard.jsonl"

if [ "$failures" -ne 0 ]; then
    exit 1
fi
echo "raftlock-check command: all exit statuses as expected"
