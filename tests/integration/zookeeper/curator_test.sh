#!/usr/bin/env bash
# Apache Curator 5.4's recipes (libcurator-recipes-java), unmodified, on a three-node cluster's
# ZooKeeper ports (curator/Recipes.java, compiled here): InterProcessMutex under three processes,
# one per node, incrementing a counter znode with no update lost; InterProcessReadWriteLock,
# InterProcessSemaphoreV2, InterProcessMultiLock and LeaderLatch; then a lock holder whose node,
# the Raft leader, is killed: its session, lock and ephemeral node survive.
#
#   curator_test.sh BUILD_DIR PORT_BASE
#
# CURATOR_TEST_DEBUG=1 logs the Java client's DEBUG lines (slf4j-simple) on stderr;
# RAFTLOCKD_ARGS="--log-level debug" is passed to the nodes by scripts/cluster.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2" curator-test
iterations=20 # per mutex process

jars=/usr/share/java
classpath=
for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute slf4j-api; do
    if [ ! -f "$jars/$jar.jar" ]; then
        echo "$jars/$jar.jar is missing: apt-get install libcurator-recipes-java default-jdk-headless" >&2
        exit 1
    fi
    classpath+="$jars/$jar.jar:"
done
logger=slf4j-nop
java_opts=(-Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto)
if [ "${CURATOR_TEST_DEBUG:-0}" = 1 ]; then
    logger=slf4j-simple
    java_opts+=(-Dorg.slf4j.simpleLogger.defaultLogLevel=debug -Dorg.slf4j.simpleLogger.showDateTime=true)
fi
if [ ! -f "$jars/$logger.jar" ] || [ ! -x /usr/bin/javac ] || [ ! -x /usr/bin/java ]; then
    echo "$jars/$logger.jar, /usr/bin/javac or /usr/bin/java is missing:" \
        "apt-get install libcurator-recipes-java default-jdk-headless" >&2
    exit 1
fi

mkdir -p "$work/classes"
/usr/bin/javac -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -J-Xshare:auto -nowarn \
    -cp "$classpath" -d "$work/classes" "$here/curator/Recipes.java"
recipes() {
    /usr/bin/java "${java_opts[@]}" -cp "$work/classes:$classpath$jars/$logger.jar" Recipes "$@"
}

cluster up >/dev/null

# InterProcessMutex: one process per node, all at once; the counter must count every increment.
pids=()
for i in 1 2 3; do
    recipes mutex "${zk_hosts[$((i - 1))]}" "p$i" "$iterations" 3 &
    pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
done
[ $failed = 0 ] || {
    echo "FAILED: a mutex process failed (above)" >&2
    exit 1
}
all=$(IFS=,; echo "${zk_hosts[*]}")
recipes counter "$all" $((3 * iterations))

recipes recipes "${zk_hosts[0]}" "${zk_hosts[1]}"

# The lock holder is connected to the Raft leader, which is killed.
leader=$(cluster status | sed -n 's/^node \([123]\): running.* role=leader .*/\1/p' | head -n 1)
[ -n "$leader" ] || {
    echo "FAILED: no node reports role=leader" >&2
    cluster status >&2
    exit 1
}
holder=${zk_hosts[$((leader - 1))]}
others=()
for i in 1 2 3; do
    [ "$i" = "$leader" ] || others+=("${zk_hosts[$((i - 1))]}")
done
export_cluster_env
recipes failover "$repo/scripts/cluster.sh kill $leader" \
    "$holder,${others[0]},${others[1]}" "${others[0]},${others[1]}"
echo "curator: every check passed"
