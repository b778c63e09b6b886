#!/usr/bin/env bash
# ZooKeeper's own zkCli.sh (Debian zookeeper 3.8), unmodified, on a three-node cluster's ZooKeeper
# ports against a real ZooKeeper 3.8 (standalone, TTL nodes enabled): the session of
# zkcli_session.txt in one zkCli.sh per server, its output normalized (zxids, times, session ids,
# JVM noise), must be the same from every raftlock node as from ZooKeeper, except for the
# differences listed in zkcli_differences.expected, each with its reason. A listed difference that
# went away fails the test as well, so the file stays true: remove it from the file.
#
#   zkcli_test.sh BUILD_DIR PORT_BASE
#   ZKCLI_UPDATE=1      rewrite zkcli_differences.expected from node 1's differences, keeping the
#                       reasons of entries still there (new ones get a TODO: review the diff)
#   ZKCLI_KEEP=DIR      keep the raw and normalized transcripts in DIR
#
# How the session is fed: every command is followed by "sync /" and "stat /zkcli-step-N". sync's
# answer is a callback on the client's event thread, so the watch events that arrived before it
# have printed by the time "Sync is OK" does; the stat's "Node does not exist: /zkcli-step-N" then
# ends step N. Within a step the events are moved after the command's own output (the two threads
# print in either order). "close" gets no marker: it and the next command are one step.
# Normalized: the server's address ($SERVER); cZxid/mZxid/pZxid by their order within the step
# (z0 the lowest); ctime/mtime; session ids in ephemeralOwner (SESSION1, ...); getEphemerals'
# list sorted (ZooKeeper's is a hash set's order); blank lines, "WATCHER::", SLF4J's lines and the
# Closed event of a closing client dropped; deleteall's racy failure message dropped (see below).
# With blank lines dropped, an empty "get" prints nothing, where a null one prints "null".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh" "$1" "$2" zkcli-test
session=$here/zkcli_session.txt
expected=$here/zkcli_differences.expected
zkcli=/usr/share/zookeeper/bin/zkCli.sh
zk_jar=/usr/share/java/zookeeper.jar
real_port=$((port_base + 590))
endpoints="127.0.0.1:$((port_base + 101)),127.0.0.1:$((port_base + 102)),127.0.0.1:$((port_base + 103))"
jvm_flags="-Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto"

if ! command -v java >/dev/null || [ ! -x "$zkcli" ] || [ ! -r "$zk_jar" ]; then
    echo "zkcli_test: needs zkCli.sh and java: apt-get install -y zookeeper default-jdk-headless" >&2
    exit 1
fi
command -v python3 >/dev/null || { echo "zkcli_test: needs python3" >&2; exit 1; }

real_pid=
stop_real_zookeeper() {
    if [ -n "$real_pid" ]; then
        kill "$real_pid" 2>/dev/null || true
        wait "$real_pid" 2>/dev/null || true
    fi
    if [ -n "${ZKCLI_KEEP:-}" ]; then
        mkdir -p "$ZKCLI_KEEP"
        cp "$work"/*.raw "$work"/*.txt "$work"/*.diff "$ZKCLI_KEEP"/ 2>/dev/null || true
    fi
    if [ "$1" -ne 0 ]; then
        tail -n 20 "$work/zookeeper.log" >&2 2>/dev/null || true
    fi
}
on_exit stop_real_zookeeper

# The real ZooKeeper, standalone, started first: its JVM starts while the cluster comes up.
mkdir -p "$work/zk/data"
cat >"$work/zk/zoo.cfg" <<EOF
tickTime=2000
dataDir=$work/zk/data
clientPort=$real_port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok
extendedTypesEnabled=true
EOF
# shellcheck disable=SC2086 # jvm_flags is a list of flags
java $jvm_flags -cp "/etc/zookeeper/conf:$zk_jar" -Dzookeeper.log.dir="$work/zk" \
    -Dzookeeper.root.logger=WARN,CONSOLE -Dznode.container.checkIntervalMs=600000 \
    -Dlog4j.configuration=file:/etc/zookeeper/conf/log4j.properties \
    org.apache.zookeeper.server.ZooKeeperServerMain "$work/zk/zoo.cfg" >"$work/zookeeper.log" 2>&1 &
real_pid=$!

cluster up >/dev/null

ruok() {
    local answer
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf ruok >&3
    answer=$(timeout 2 cat <&3 || true)
    exec 3<&-
    [ "$answer" = imok ]
}
for _ in $(seq 200); do
    ruok "$real_port" 2>/dev/null && break
    kill -0 "$real_pid" 2>/dev/null || { echo "zkcli_test: ZooKeeper exited" >&2; exit 1; }
    sleep 0.1
done
ruok "$real_port" || { echo "zkcli_test: ZooKeeper is not answering on $real_port" >&2; exit 1; }

# zkCli's input for SERVER: a first step marker (after zkCli's greeting), then the session's
# commands, each but "close" followed by the next step marker.
session_input() {
    local server=$1 line step=1
    printf 'sync /\nstat /zkcli-step-0\n'
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in '' | '#'*) continue ;; esac
        line=${line//\$SERVER/$server}
        printf '%s\n' "$line"
        [ "$line" = close ] && continue
        printf 'sync /\nstat /zkcli-step-%d\n' "$step"
        step=$((step + 1))
    done <"$session"
    echo quit
}

# Runs the session against HOST:PORT into NAME.raw, normalized into NAME.txt.
run_session() {
    local server=$1 name=$2 rc=0
    session_input "$server" >"$work/$name.in"
    (cd "$work" && CLIENT_JVMFLAGS="$jvm_flags" timeout 60 "$zkcli" -server "$server" \
        <"$work/$name.in" >"$work/$name.raw" 2>&1) || rc=$?
    # zkCli.sh's status is that of its last command; only a timeout is news.
    [ $rc -ne 124 ] || echo "zkcli_test: zkCli.sh timed out" >>"$work/$name.raw"
    python3 - "$session" "$server" "$work/$name.raw" >"$work/$name.txt" <<'EOF'
import re, sys

session, server, raw = sys.argv[1:]
steps, pending = [], []
for line in open(session):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    pending.append(line)
    if line != "close":
        steps.append(pending)
        pending = []

marker = re.compile(r"^Node does not exist: /zkcli-step-(\d+)$")
blocks, current = [], []
for line in open(raw, errors="replace"):
    line = line.rstrip("\n").replace(server, "$SERVER")
    m = marker.match(line)
    if m:
        # The line before the marker is the marker's own sync (after a print without a newline,
        # the end of that line).
        if current and current[-1].endswith("Sync is OK"):
            current[-1] = current[-1][:-len("Sync is OK")]
            if not current[-1]:
                current.pop()
        blocks.append(current)
        current = []
    else:
        current.append(line)
tail = current  # after the last marker: quit, and the Closed event

sessions = {}
def owner(value):
    # 0x0: none; 0x8000000000000000: a container; 0xff...: a TTL node's TTL; else a session.
    if value == "0x0" or value == "0x8000000000000000" or value.startswith("0xff"):
        return value
    return sessions.setdefault(value, "SESSION%d" % (len(sessions) + 1))

zxid = re.compile(r"^([cmp]Zxid) = (0x[0-9a-f]+)$")
def normalize(lines, sort_lists=False):
    out, events = [], []
    for line in lines:
        if not line.strip() or line == "WATCHER::" or line.startswith("SLF4J:"):
            continue
        if line == "Failed to delete some node(s) in the subtree!":
            # deleteall's multi callback releases its semaphore before it records the failure
            # (ZKUtil.deleteInBatch), so zkCli prints this or not: the next "ls" shows the tree.
            continue
        if line.startswith("WatchedEvent "):
            if "state:Closed" not in line:
                events.append(line)
            continue
        line = re.sub(r"^([cm]time) = .*", r"\1 = TIME", line)
        line = re.sub(r"^(ephemeralOwner) = (0x[0-9a-f]+)$",
                      lambda m: "%s = %s" % (m.group(1), owner(m.group(2))), line)
        out.append(line)
    if sort_lists:
        # getEphemerals: ZooKeeper lists a hash set's order.
        out = [("[" + ", ".join(sorted(l[1:-1].split(", "))) + "]")
               if l.startswith("[") and l.endswith("]") else l for l in out]
    # zxids: their order within the step (z0 the lowest), not their values.
    values = sorted({int(m.group(2), 16) for m in map(zxid.match, out) if m})
    rank = {v: "z%d" % i for i, v in enumerate(values)}
    out = [zxid.sub(lambda m: "%s = %s" % (m.group(1), rank[int(m.group(2), 16)]), l)
           for l in out]
    return out + events

print("> (start)")
print("\n".join(normalize(blocks[0] if blocks else [])))
for i, commands in enumerate(steps):
    print("> " + " ; ".join(commands))
    sort_lists = commands[-1].startswith("getEphemerals")
    if i + 1 < len(blocks):
        body = normalize(blocks[i + 1], sort_lists)
    elif i + 1 == len(blocks):
        body = normalize(tail, sort_lists) + ["(zkCli.sh stopped here)"]
    else:
        body = ["(no output: zkCli.sh stopped before this step)"]
    if body:
        print("\n".join(body))
EOF
}

# The differences of transcript B from transcript A, step by step: each differing step's commands
# ("> "), A's lines that differ ("-") and B's ("+").
differences() {
    python3 - "$1" "$2" <<'EOF'
import difflib, sys

def steps(path):
    out, cur = [], None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("> "):
            cur = [[line], []]
            out.append(cur)
        else:
            cur[1].append(line)
    return out

a, b = steps(sys.argv[1]), steps(sys.argv[2])
for (ca, la), (cb, lb) in zip(a, b):
    assert ca == cb, (ca, cb)
    if la == lb:
        continue
    print("\n".join(ca))
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if tag != "equal":
            for l in la[i1:i2]:
                print("-" + l)
            for l in lb[j1:j2]:
                print("+" + l)
EOF
}

# The expected differences without comments and reasons (what differences() prints).
strip_reasons() { grep -v '^#' "$1" | grep -v '^$' || true; }

# What a session left under PATH, removed with raftlock's own CLI, children first, so the next
# node's session starts from the same tree (zkCli's deleteall needs multi).
remove_tree() {
    local child
    for child in $("$build_dir/cli/raftlock" --endpoints "$endpoints" ls "$1" 2>/dev/null); do
        remove_tree "$1/$child"
    done
    "$build_dir/cli/raftlock" --endpoints "$endpoints" delete "$1" >/dev/null 2>&1 || true
}

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

run_session "127.0.0.1:$real_port" real
if grep -q '^(no output\|^(zkCli.sh stopped\|^zkcli_test:' "$work/real.txt"; then
    fail "the session did not run to its end against ZooKeeper:"
    tail -n 20 "$work/real.raw" >&2
fi

for i in 0 1 2; do
    name=node$((i + 1))
    run_session "${zk_hosts[$i]}" "$name"
    remove_tree /zkcli
    differences "$work/real.txt" "$work/$name.txt" >"$work/$name.differences"
    if [ "${ZKCLI_UPDATE:-0}" = 1 ] && [ $i = 0 ]; then
        python3 - "$expected" "$work/$name.differences" <<'EOF'
import os, sys
path, new = sys.argv[1:]
# An entry keeps its reason if its text is unchanged, else the reason of an entry of its command.
header, reasons = [], {}
if os.path.exists(path):
    reason, in_header, entry = None, True, None
    for line in list(open(path)) + ["## end"]:
        line = line.rstrip("\n")
        if line.startswith("## "):
            if entry:
                reasons.setdefault("\n".join(entry), reason)
                reasons.setdefault(entry[0], reason)
            in_header, reason, entry = False, line, None
        elif line.startswith("#") and in_header:
            header.append(line)
        elif line.startswith("> ") and reason:
            entry = [line]
        elif entry and line:
            entry.append(line)
entries, cur = [], None
for line in open(new):
    line = line.rstrip("\n")
    if line.startswith("> "):
        cur = [line]
        entries.append(cur)
    else:
        cur.append(line)
with open(path, "w") as f:
    for line in header:
        print(line, file=f)
    for e in entries:
        print("", file=f)
        print(reasons.get("\n".join(e)) or reasons.get(e[0])
              or "## TODO: why raftlock answers differently", file=f)
        print("\n".join(e), file=f)
EOF
        echo "updated ${expected##*/}: review its diff and replace the TODO reasons"
    fi
    if ! diff -u <(strip_reasons "$expected" 2>/dev/null) "$work/$name.differences" \
        >"$work/$name.diff"; then
        fail "node $((i + 1)): zkCli's output differs from ZooKeeper's other than" \
            "${expected##*/} says (- listed there, + found now; ZKCLI_UPDATE=1 rewrites it):"
        head -n 80 "$work/$name.diff" >&2
    else
        echo "ok: zkcli_session.txt, node $((i + 1)): $(grep -c '^> ' "$work/$name.txt") commands," \
            "$(grep -c "^## " "$expected" 2>/dev/null || true) listed differences"
    fi
done

# Every listed difference has its reason: a "## " line right before its "> " line.
if [ -r "$expected" ] && awk '/^> / && prev !~ /^## / {bad = 1} {prev = $0}
        /^## *(TODO.*)?$/ {bad = 1} END {exit !bad}' "$expected"; then
    fail "${expected##*/}: a difference without its reason (a '## ' line right before its '> ' line)"
fi

if [ $failures -gt 0 ]; then
    echo "zkcli_test: $failures failure(s)" >&2
    exit 1
fi
echo "zkcli_test: all passed"
