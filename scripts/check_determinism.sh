#!/usr/bin/env bash
# Determinism guard: the shared basics, the Raft core, the state machine and the simulator's store
# are pure. They must not include sockets (Asio), RocksDB, threads, clocks or random engines; time
# and randomness are passed in.
set -euo pipefail
cd "$(dirname "$0")/.."

pattern='#include *<(thread|random|mutex|condition_variable|future|chrono|ctime|sys/socket\.h)>'
pattern+='|#include *[<"](boost/asio|rocksdb/)'
pattern+='|std::chrono::(system|steady|high_resolution)_clock|\brand\(|\bsrand\(|std::random_device'
pattern+='|\btime\(nullptr\)|std::(mt19937|default_random_engine)'
status=0
for dir in base raft statemachine storage/fault_injecting_storage.h storage/fault_injecting_storage.cc; do
    [ -e "$dir" ] || continue
    if hits=$(grep -rnE "$pattern" "$dir"); then
        echo "determinism guard: $dir must stay pure, found:" >&2
        echo "$hits" >&2
        status=1
    fi
done
[ $status -eq 0 ] && echo "determinism guard: base/, raft/, statemachine/ and the fault-injecting store are pure"
exit $status
