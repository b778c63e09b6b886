# Shared by the ZooKeeper-mode tests: a three-node raftlock cluster with its ZooKeeper ports, in a
# scratch directory that is removed on exit (cluster_lib.sh; the nodes' last log lines shown if the
# test failed).
#
#   source lib.sh BUILD_DIR PORT_BASE NAME
#   $work (scratch directory), $zk_hosts (the three nodes' HOST:PORT), $repo, $build_dir,
#   $port_base; cluster ARGS... (scripts/cluster.sh on this cluster); export_cluster_env (for a
#   program that runs scripts/cluster.sh itself); on_exit FUNCTION (run first at exit, with the
#   exit status)

source "$(dirname "${BASH_SOURCE[0]}")/../cluster_lib.sh" "$1" "$2" "$3"
zk_hosts=("127.0.0.1:$((port_base + 501))" "127.0.0.1:$((port_base + 502))"
    "127.0.0.1:$((port_base + 503))")
