#!/usr/bin/env bash
# kazoo (python3-kazoo), unmodified, on a three-node cluster's ZooKeeper ports: its API, watches,
# ephemeral nodes, and its Lock recipe under processes on every node (kazoo_basics.py); then a
# session that outlives its node's crash (kazoo_failover.py); then the basics again with
# --zk-reads local.
#
#   kazoo_test.sh BUILD_DIR PORT_BASE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2" zk-test

/usr/bin/python3 -c 'import kazoo' 2>/dev/null || { echo "python3-kazoo is not installed" >&2; exit 1; }
cluster up >/dev/null
/usr/bin/python3 "$here/kazoo_basics.py" "${zk_hosts[@]}"
export_cluster_env
/usr/bin/python3 "$here/kazoo_failover.py" "$repo/scripts/cluster.sh kill 1" "${zk_hosts[@]}"

# Again with --zk-reads local, ZooKeeper's own read semantics: the API and the Lock recipe, whose
# read-modify-write must still see the previous holder's write once its lock node's deletion
# reached the waiter (a watch event before the data that follows it).
cluster down --wipe >/dev/null
RAFTLOCKD_ARGS="--zk-reads local" cluster up >/dev/null
/usr/bin/python3 "$here/kazoo_basics.py" --reads local "${zk_hosts[@]}"
local_reads=$(/usr/bin/python3 - "$port_base" <<'PY'
import sys, urllib.request
total = 0
for n in (1, 2, 3):
    url = f"http://127.0.0.1:{int(sys.argv[1]) + 200 + n}/metrics"
    for line in urllib.request.urlopen(url, timeout=5).read().decode().splitlines():
        if line.startswith("raftlock_local_reads_total "):
            total += int(float(line.split()[1]))
print(total)
PY
)
echo "kazoo_test.sh: $local_reads reads served locally with --zk-reads local"
[ "$local_reads" -gt 0 ] || { echo "no read was served locally" >&2; exit 1; }
