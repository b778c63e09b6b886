#!/usr/bin/env bash
# Fails when a C++ file differs from what clang-format (the repo's .clang-format) would write.
# Fix with: scripts/check_format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -co --exclude-standard '*.h' '*.cc' | grep -v '^build')
if [ "${1:-}" = --fix ]; then
    clang-format -i "${files[@]}"
    exit 0
fi
# One clang-format process for every file: it checks them all and names each that differs in its
# diagnostics ("path:line:col: error: code should be clang-formatted"). A process per file took
# 75 s of CI's test time, almost all of it clang-format starting up.
existing=()
for f in "${files[@]}"; do
    [ -f "$f" ] && existing+=("$f")
done
if ! report=$(clang-format --dry-run --Werror "${existing[@]}" 2>&1); then
    mapfile -t bad < <(printf '%s\n' "$report" | sed -n 's/^\([^: ]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
    if [ ${#bad[@]} -eq 0 ]; then  # clang-format failed without naming a file
        printf '%s\n' "$report" >&2
        exit 1
    fi
    echo "format check: these files are not clang-formatted (run scripts/check_format.sh --fix):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
fi
echo "format check: ${#existing[@]} files clean"
