#!/usr/bin/env bash
# The README's main command for now: builds raftlock-sim if needed and runs it with the given
# arguments (e.g. --seed 42 --trace, or --seeds 1..10000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if [ ! -x build/tests/sim/raftlock-sim ]; then
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build build --target raftlock-sim >/dev/null
exec build/tests/sim/raftlock-sim "$@"
