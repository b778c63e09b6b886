#!/usr/bin/env bash
# A second (third, ...) psql session for the single-session psql scripts, driven from them with
# \! so that one script can show what another session sees: a row lock held elsewhere, NOWAIT,
# SKIP LOCKED, an advisory lock another session holds. Each peer is a psql reading a FIFO; its
# output is printed, prefixed with its name, only when the script asks for it, so the transcript
# does not depend on timing.
#
#   peer.sh open NAME            start session NAME on $PEER_HOST:$PEER_PORT
#   peer.sh send NAME 'SQL'      send SQL (psql input); wait until it is done; print its output
#   peer.sh start NAME 'SQL'     send SQL without waiting (a statement that will block)
#   peer.sh blocked NAME         check that what was started is still waiting 0.3 s later
#   peer.sh wait NAME            wait until everything sent is done; print the output since
#   peer.sh close NAME           end the session (psql reads EOF and disconnects)
#
# The pids of each peer's psql and FIFO writer are in $PEER_DIR/NAME.*.pid; lib.sh's cleanup ends
# those a failed script left behind.
# Environment: PEER_DIR (scratch directory of the peers), PEER_HOST, PEER_PORT, PEER_VERBOSITY
# (psql's VERBOSITY), PEER_TIMEOUT_S (how long send and wait poll before giving up, default 30).
set -euo pipefail
: "${PEER_DIR:?PEER_DIR is not set}"
command=$1
name=$2
base=$PEER_DIR/$name
timeout_s=${PEER_TIMEOUT_S:-30}

die() {
    echo "peer.sh: $*" >&2
    exit 1
}

# Appends a marker after SQL, so that the output shows when the peer has run everything before it.
send_marked() {
    local sql=$1 n
    n=$(($(cat "$base.sent") + 1))
    echo "$n" >"$base.sent"
    printf '%s\n\\echo __peer_mark_%s__\n' "$sql" "$n" >"$base.in"
}

# Waits for the last marker sent, then prints the new output lines with the peer's name in front.
collect() {
    local n done_at shown
    n=$(cat "$base.sent")
    done_at=$((SECONDS + timeout_s))
    until grep -qx "__peer_mark_${n}__" "$base.out"; do
        kill -0 "$(cat "$base.psql.pid")" 2>/dev/null || die "peer $name exited: $(cat "$base.out")"
        [ $SECONDS -lt $done_at ] || die "peer $name did not finish within ${timeout_s} s"
        sleep 0.02
    done
    shown=$(cat "$base.shown")
    # Only the lines after those shown before, without the markers.
    tail -n +"$((shown + 1))" "$base.out" | grep -v '^__peer_mark_[0-9]*__$' |
        sed "s/^/[$name] /" || true
    wc -l <"$base.out" >"$base.shown"
}

case "$command" in
    open)
        : "${PEER_PORT:?PEER_PORT is not set}"
        mkdir -p "$PEER_DIR"
        rm -f "$base.in"
        mkfifo "$base.in"
        echo 0 >"$base.sent"
        echo 0 >"$base.shown"
        : >"$base.out"
        # Line-buffered, so that a marker is in the file as soon as psql has printed it. psql
        # opens the FIFO for reading; the sleeping writer keeps it open between sends.
        # The same psql settings as the script's own session: echo, unaligned, no CONTEXT lines.
        setsid stdbuf -oL -eL env PGTZ=UTC psql -X -e -A -v ON_ERROR_STOP=0 \
            -v VERBOSITY="${PEER_VERBOSITY:-default}" -v SHOW_CONTEXT=never \
            -h "${PEER_HOST:-127.0.0.1}" -p "$PEER_PORT" -U postgres -d postgres \
            <"$base.in" >"$base.out" 2>&1 &
        echo $! >"$base.psql.pid"
        setsid sleep infinity >"$base.in" &
        echo $! >"$base.writer.pid"
        send_marked "SELECT 'connected' AS $name;"
        collect >/dev/null
        ;;
    send)
        send_marked "$3"
        collect
        ;;
    start)
        send_marked "$3"
        ;;
    blocked)
        # A statement that does not wait is done within milliseconds on either server; one still
        # running after 0.3 s waits for a lock. A slow machine could only turn "did not wait"
        # into "waiting", never the reverse, and the scripts ask this only of statements that
        # must wait: so it cannot make them fail, only hide a statement that wrongly did not wait.
        n=$(cat "$base.sent")
        for _ in $(seq 15); do
            if grep -qx "__peer_mark_${n}__" "$base.out"; then
                echo "[$name] (did not wait)"
                exit 0
            fi
            sleep 0.02
        done
        echo "[$name] (waiting)"
        ;;
    wait)
        collect
        ;;
    close)
        kill "$(cat "$base.writer.pid")" 2>/dev/null || true
        pid=$(cat "$base.psql.pid")
        done_at=$((SECONDS + timeout_s))
        while kill -0 "$pid" 2>/dev/null; do
            [ $SECONDS -lt $done_at ] || die "peer $name did not exit within ${timeout_s} s"
            sleep 0.02
        done
        rm -f "$base".*
        ;;
    *)
        die "unknown command '$command'"
        ;;
esac
