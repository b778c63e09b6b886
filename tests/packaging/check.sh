#!/usr/bin/env bash
# packaging/ checked three ways:
#  1. `cmake --install` puts the programs, the unit and the example where the unit expects them;
#  2. systemd-analyze verify finds nothing to say about the unit (it warns, and still exits 0, on
#     an unknown key or a bad value; any output fails here), its ExecStart pointed at the
#     installed raftlockd;
#  3. the example configuration, with this machine's addresses and a scratch data directory put
#     in, starts a node that elects itself and answers /status, and SIGTERM stops it with exit 0.
# Exit 77 (skipped) when systemd-analyze is not installed; the other two checks run first.
#
#   check.sh BUILD_DIR PORT_BASE
set -euo pipefail
build=$(cd "$1" && pwd)
port_base=$2
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# 1. The install tree.
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in bin/raftlockd bin/raftlock bin/raftlock-storage lib/systemd/system/raftlockd@.service \
         share/doc/raftlock/node.toml share/doc/raftlock/operations.md; do
    [ -e "$work/prefix/$f" ] || fail "cmake --install did not install $f"
done
[ -x "$work/prefix/bin/raftlockd" ] || fail "the installed raftlockd is not executable"
grep -q '^ExecStart=/usr/local/bin/raftlockd --config /etc/raftlock/%i.toml$' \
    "$source_dir/packaging/raftlockd@.service" || fail "the unit's ExecStart changed: update this test"
echo "ok: cmake --install lays out the programs, the unit and the example"

# 3. The example configuration starts a node (one member here, so it leads alone).
admin_port=$((port_base + 2))
sed -e "s|^members = .*|members = [\"1=127.0.0.1:$port_base\"]|" \
    -e "s|^client_listen = .*|client_listen = \"127.0.0.1:$((port_base + 1))\"|" \
    -e "s|^admin_listen = .*|admin_listen = \"127.0.0.1:$admin_port\"|" \
    -e "s|^data_dir = .*|data_dir = \"$work/data\"|" \
    "$source_dir/packaging/node.toml" >"$work/node1.toml"
grep -q "$work/data" "$work/node1.toml" || fail "node.toml has no data_dir line to point elsewhere"
"$work/prefix/bin/raftlockd" --config "$work/node1.toml" >"$work/log" 2>&1 &
pid=$!
status=
for _ in $(seq 100); do
    status=$(python3 -c "import urllib.request,sys
try: print(urllib.request.urlopen('http://127.0.0.1:$admin_port/status', timeout=1).read().decode())
except Exception: pass") || true
    case "$status" in *'"role":"leader"'*) break ;; esac
    kill -0 "$pid" 2>/dev/null || { cat "$work/log" >&2; fail "raftlockd exited at start"; }
    sleep 0.1
done
case "$status" in
    *'"role":"leader"'*) ;;
    *) cat "$work/log" >&2; fail "the example's node did not lead within 10 s: $status" ;;
esac
kill -TERM "$pid"
code=0
wait "$pid" || code=$?
pid=
[ "$code" = 0 ] || { cat "$work/log" >&2; fail "SIGTERM: exit $code, not 0"; }
echo "ok: the example configuration starts a node that leads, and SIGTERM stops it (exit 0)"

# 2. The unit, as systemd reads it.
if ! command -v systemd-analyze >/dev/null; then
    echo "skipped: systemd-analyze is not installed"
    exit 77
fi
mkdir "$work/units"
sed "s|/usr/local/bin/raftlockd|$work/prefix/bin/raftlockd|" \
    "$work/prefix/lib/systemd/system/raftlockd@.service" >"$work/units/raftlockd@.service"
out=$(cd "$work/units" && systemd-analyze verify ./raftlockd@node1.service 2>&1) ||
    fail "systemd-analyze verify failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify has something to say: $out"
echo "ok: systemd-analyze verify passes raftlockd@.service"
