# shellcheck shell=bash
# Shared by the Redis-, SQL- and ZooKeeper-mode test libraries (redis/lib.sh, sql/lib.sh,
# zookeeper/lib.sh): a three-node raftlock cluster on ports of its own, in a scratch directory
# removed on exit, with the nodes' last log lines shown when the test failed.
#
#   source cluster_lib.sh BUILD_DIR PORT_BASE NAME
#   $work (scratch directory), $repo, $build_dir, $port_base
#   cluster ARGS...      scripts/cluster.sh on this cluster
#   export_cluster_env   the same environment, for a program that runs scripts/cluster.sh itself
#   cluster_command      the cluster command as one string (for a program given a command line)
#   on_exit FUNCTION     run at exit, before the cluster stops, with the exit status

set -euo pipefail
build_dir=$(cd "$1" && pwd)
port_base=$2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/raftlock-$3.XXXXXX")
exit_hooks=()

# What makes scripts/cluster.sh run this cluster, and not the README's.
cluster_env=(RAFTLOCK_NO_BUILD=1 "RAFTLOCK_BUILD_DIR=$build_dir" "RAFTLOCK_DATA_DIR=$work/data"
    "RAFTLOCK_PORT_BASE=$port_base")

cluster() {
    env "${cluster_env[@]}" "$repo/scripts/cluster.sh" "$@"
}

export_cluster_env() {
    export "${cluster_env[@]}"
}

cluster_command() {
    echo "env ${cluster_env[*]} $repo/scripts/cluster.sh"
}

on_exit() {
    exit_hooks+=("$1")
}

cleanup() {
    local status=$?
    local hook
    for hook in "${exit_hooks[@]}"; do
        "$hook" "$status" || true
    done
    cluster down >/dev/null 2>&1 || true
    if [ $status -ne 0 ]; then
        echo "--- node logs (last lines) ---" >&2
        tail -n 20 "$work"/data/node*/raftlockd.log >&2 2>/dev/null || true
    fi
    rm -rf "$work"
    exit $status
}
trap cleanup EXIT
