#!/usr/bin/env bash
# Users and permissions on the native port (issue 18; docs/security.md): a cluster started with
# --root-password-file creates root and turns authentication on; the CLI logs in with SCRAM;
# root makes a user and a role; every refusal says what was missing, and nothing changed. Each
# refusal has its positive control (the same request by a user who may), so the test cannot pass
# by refusing everything.
#
#   auth_test.sh BUILD_DIR PORT_BASE
source "$(dirname "$0")/../cluster_lib.sh" "$1" "$2" auth

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
rl() {
    "$build_dir/cli/raftlock" --timeout 10s "$@"
}
# Runs the CLI expecting a refusal whose message holds $1; the rest are its arguments.
refused() {
    local want=$1 out
    shift
    if out=$(rl "$@" 2>&1); then
        fail "raftlock $* was served: $out"
    fi
    grep -qF -- "$want" <<<"$out" || fail "raftlock $*: expected '$want', got: $out"
    echo "ok: refused: raftlock $* -> $(tail -n 1 <<<"$out")"
}

printf 'root-secret\n' >"$work/root.pw"
chmod 600 "$work/root.pw"
printf 'bob-secret\n' >"$work/bob.pw"
printf 'wrong\n' >"$work/wrong.pw"
# Low limits, so that the test can cross them: 50 requests a second per connection, 1 s to log in.
export RAFTLOCKD_ARGS="--root-password-file $work/root.pw --max-requests-per-second 50 --login-deadline-ms 1000"
cluster up >/dev/null || fail "cluster.sh up"
export RAFTLOCK_ENDPOINTS="127.0.0.1:$((port_base + 101)),127.0.0.1:$((port_base + 102)),127.0.0.1:$((port_base + 103))"
root=(--user root --password-file "$work/root.pw")
bob=(--user bob --password-file "$work/bob.pw")

# The first leader proposes root; every node applies it.
for _ in $(seq 1 100); do
    status=$(rl --output json auth status 2>/dev/null || true)
    grep -q '"enabled":true' <<<"$status" && break
    sleep 0.1
done
grep -q '"enabled":true' <<<"$status" || fail "authentication not enabled: $status"
echo "ok: --root-password-file made root and enabled authentication"

refused "authentication required" create /anonymous x
refused "wrong password" --user root --password-file "$work/wrong.pw" get /
refused "wrong password" --user nobody --password-file "$work/wrong.pw" get /
[ "$(rl "${root[@]}" --output json auth status)" = '{"enabled":true,"root":true,"user":"root"}' ] ||
    fail "root's auth status"

rl "${root[@]}" user add bob --new-password-file "$work/bob.pw" >/dev/null || fail "user add bob"
rl "${root[@]}" role add jobs >/dev/null || fail "role add"
rl "${root[@]}" role grant jobs write lock jobs/ >/dev/null || fail "role grant lock"
rl "${root[@]}" role grant jobs read node / >/dev/null || fail "role grant node"
rl "${root[@]}" user grant bob jobs >/dev/null || fail "user grant"
[ "$(rl "${root[@]}" user list)" = "$(printf 'bob\nroot')" ] || fail "user list"
rl "${root[@]}" role get jobs | grep -qF 'write lock "jobs/"' || fail "role get"
rl "${bob[@]}" user get | grep -q "roles: jobs" || fail "bob's own user"
echo "ok: root added bob with role jobs (write on locks jobs/, read on nodes)"

# Locks: inside the prefix granted, outside refused (and the lock stays free).
rl "${bob[@]}" lock jobs/nightly -- true || fail "bob's lock inside his prefix"
refused 'user "bob" lacks write on lock "db"' "${bob[@]}" lock db -- true
rl "${root[@]}" describe db | grep -q "^holders  0" || fail "db is held after the refusal"
# Nodes: read but not write.
rl "${root[@]}" create /config v1 >/dev/null || fail "root's create"
[ "$(rl "${bob[@]}" get /config)" = v1 ] || fail "bob's read"
refused 'user "bob" lacks write on node "/config"' "${bob[@]}" set /config v2
[ "$(rl "${root[@]}" get /config)" = v1 ] || fail "the refused set changed /config"
# Administration: bob may not.
refused "needs the root role" "${bob[@]}" user add eve --no-password
refused "needs the root role" "${bob[@]}" role grant jobs write lock ""
refused "needs the root role" "${bob[@]}" session list
refused "needs the root role" "${bob[@]}" auth disable
refused "needs the root role" "${bob[@]}" member remove 3
[ "$(rl "${root[@]}" --output json member list | grep -o '"id":' | wc -l)" = 3 ] ||
    fail "a refused member change changed the members"
[ "$(rl "${root[@]}" user list)" = "$(printf 'bob\nroot')" ] || fail "a refused change changed users"

# Sessions belong to their owner: bob cannot close, renew or release through root's session.
held=$(rl "${root[@]}" --output json acquire jobs/held --ttl 60s --no-wait) ||
    fail "root's acquire: $held"
session=$(grep -oE '"session":[0-9]+' <<<"$held" | cut -d: -f2)
rl "${root[@]}" session list | grep -qE "^$session .* root$" || fail "session owner not shown"
refused "belongs to another user" "${bob[@]}" session close "$session"
refused "belongs to another user" "${bob[@]}" release jobs/held --session "$session"
refused "belongs to another user" "${bob[@]}" renew --session "$session"
rl "${root[@]}" describe jobs/held | grep -q "session $session " || fail "root's lock lost"
rl "${root[@]}" release jobs/held --session "$session" >/dev/null || fail "root's release"
echo "ok: another user's session refused; its owner (root) still served"

# Another user's lock is taken away with admin on the lock (release --force), not its session.
held=$(rl "${root[@]}" --output json acquire jobs/stuck --ttl 60s --no-wait) ||
    fail "root's acquire of jobs/stuck: $held"
session=$(grep -oE '"session":[0-9]+' <<<"$held" | cut -d: -f2)
refused 'user "bob" lacks admin on lock "jobs/stuck"' "${bob[@]}" release jobs/stuck \
    --session "$session" --force
rl "${root[@]}" describe jobs/stuck | grep -q "session $session " ||
    fail "a refused forced release released the lock"
rl "${root[@]}" role add jobs-admin >/dev/null || fail "role add jobs-admin"
rl "${root[@]}" role grant jobs-admin admin lock jobs/ >/dev/null || fail "role grant admin"
rl "${root[@]}" user grant bob jobs-admin >/dev/null || fail "user grant jobs-admin"
out=$(rl "${bob[@]}" release jobs/stuck --session "$session" --force) ||
    fail "bob's forced release with admin on jobs/: $out"
grep -qF "released jobs/stuck from session $session" <<<"$out" || fail "forced release said: $out"
if rl "${root[@]}" describe jobs/stuck 2>/dev/null | grep -q "session $session "; then
    fail "jobs/stuck is still held after the forced release"
fi
rl "${root[@]}" session list | grep -qE "^$session " || fail "the forced release ended the session"
echo "ok: a forced release needs admin on the lock; with it, the holder's session lives on"
# A holder still at work hears of it: `lock -- CMD` stops its command and exits 4.
rl "${root[@]}" lock jobs/run --ttl 60s -- sleep 60 >"$work/lock.out" 2>&1 &
lock_pid=$!
for _ in $(seq 100); do
    rl "${root[@]}" describe jobs/run 2>/dev/null | grep -q "session " && break
    sleep 0.1
done
info=$(rl "${root[@]}" --output json describe jobs/run) || fail "describe jobs/run: $info"
run_session=$(grep -oE '"session":[0-9]+' <<<"$info" | head -n 1 | cut -d: -f2)
[ -n "$run_session" ] || fail "jobs/run was never held: $info"
rl "${bob[@]}" release jobs/run --session "$run_session" --force >/dev/null ||
    fail "bob's forced release of jobs/run"
status=0
timeout 10 tail --pid="$lock_pid" -f /dev/null || fail "lock -- sleep 60 kept running"
wait "$lock_pid" || status=$?
[ "$status" = 4 ] || fail "lock -- sleep 60 exited $status, not 4: $(cat "$work/lock.out")"
grep -qF "taken away by an administrator" "$work/lock.out" ||
    fail "lock's message: $(cat "$work/lock.out")"
echo "ok: raftlock lock stopped its command when its hold was taken (exit 4)"

# A user changes its own password; the old one stops working.
printf 'bob-new\n' >"$work/bob-new.pw"
rl "${bob[@]}" user passwd bob --new-password-file "$work/bob-new.pw" >/dev/null ||
    fail "bob's own passwd"
refused "wrong password" "${bob[@]}" get /config
[ "$(rl --user bob --password-file "$work/bob-new.pw" get /config)" = v1 ] ||
    fail "bob's new password"

# The Redis port: AUTH user pass and HELLO AUTH log in as a cluster user; what the user may do
# is what its roles grant (the redis space takes the empty prefix). Before a login: NOAUTH.
redis=(redis-cli -p $((port_base + 301)))
[ "$("${redis[@]}" GET k 2>&1)" = "NOAUTH Authentication required." ] || fail "redis before AUTH"
[ "$("${redis[@]}" --user bob --pass bob-new --no-auth-warning SET k v 2>&1)" = \
    'NOPERM user "bob" lacks write on redis ""' ] || fail "redis SET without the permission"
[ "$("${redis[@]}" --user root --pass root-secret --no-auth-warning GET k 2>&1)" = "" ] ||
    fail "the refused SET wrote k"
rl "${root[@]}" role grant jobs write redis >/dev/null || fail "role grant redis"
[ "$("${redis[@]}" --user bob --pass bob-new --no-auth-warning SET k v 2>&1)" = OK ] ||
    fail "redis SET with the permission"
[ "$("${redis[@]}" --user bob --pass bob-new --no-auth-warning GET k 2>&1)" = v ] ||
    fail "redis GET with write (which includes read)"
out=$("${redis[@]}" --user bob --pass wrong --no-auth-warning GET k 2>&1)
[ "$out" = "$(printf 'AUTH failed: WRONGPASS invalid username-password pair or user is disabled.\nNOAUTH Authentication required.')" ] ||
    fail "redis wrong password: $out"
hello=$("${redis[@]}" HELLO 3 AUTH bob bob-new 2>&1)
grep -q "proto" <<<"$hello" || fail "HELLO 3 AUTH bob: $hello"
echo "ok: Redis AUTH user pass and HELLO AUTH as cluster users; NOPERM without the permission"

# A subscriber whose user loses the permission gets no more messages: the node closes its
# connection at the next publication, as Redis disconnects the subscribers an ACL change shuts out.
/usr/bin/python3 - "$((port_base + 301))" "$work/sub.ready" >"$work/sub.out" 2>&1 <<'PY' &
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(20)
s.sendall(b"AUTH bob bob-new\r\nSUBSCRIBE news\r\n")
got = b""
while b"news\r\n:1\r\n" not in got:  # +OK, then the subscribe confirmation
    chunk = s.recv(4096)
    assert chunk, got
    got += chunk
open(sys.argv[2], "w").close()
while True:  # until the node closes the connection (a timeout fails the test)
    chunk = s.recv(4096)
    if not chunk:
        break
    got += chunk
print(got.decode(errors="replace").replace("\r\n", " "))
print("closed by the node")
PY
subscriber=$!
for _ in $(seq 100); do [ -e "$work/sub.ready" ] && break; sleep 0.1; done
[ -e "$work/sub.ready" ] || fail "the subscriber did not subscribe"
redis_root=("${redis[@]}" --user root --pass root-secret --no-auth-warning)
[ "$("${redis_root[@]}" PUBLISH news before-revoke)" = 1 ] || fail "PUBLISH before the revoke"
rl "${root[@]}" role revoke jobs write redis >/dev/null || fail "role revoke redis"
[ "$("${redis_root[@]}" PUBLISH news after-revoke)" = 0 ] || fail "PUBLISH after the revoke"
wait "$subscriber" || fail "the subscriber's connection stayed open: $(cat "$work/sub.out")"
grep -q "before-revoke" "$work/sub.out" || fail "no message before the revoke: $(cat "$work/sub.out")"
if grep -q "after-revoke" "$work/sub.out"; then
    fail "a message after the revoke reached the subscriber: $(cat "$work/sub.out")"
fi
rl "${root[@]}" role grant jobs write redis >/dev/null || fail "role grant redis again"
echo "ok: a subscriber whose role lost redis read was closed at the next publication"

# The PostgreSQL port: SCRAM-SHA-256 against the same users (psql and psycopg, unmodified).
pg() {  # USER PASSWORD SQL
    PGPASSWORD=$2 psql "host=127.0.0.1 port=$((port_base + 401)) user=$1 dbname=raftlock sslmode=disable" \
        -tAc "$3" 2>&1
}
out=$(pg bob bob-new "SELECT 1") && fail "psql SELECT without the permission: $out"
grep -qF 'user "bob" lacks read on sql ""' <<<"$out" || fail "psql without the permission: $out"
out=$(pg bob wrong "SELECT 1") && fail "psql with a wrong password: $out"
grep -qF 'password authentication failed for user "bob"' <<<"$out" || fail "psql wrong: $out"
rl "${root[@]}" role grant jobs write sql >/dev/null || fail "role grant sql"
[ "$(pg bob bob-new "SELECT 1")" = 1 ] || fail "psql SELECT with the permission"
pg bob bob-new "CREATE TABLE t (k int PRIMARY KEY)" >/dev/null || fail "psql CREATE TABLE"
/usr/bin/python3 - "$((port_base + 401))" <<'PY' || fail "psycopg as bob"
import sys, psycopg
with psycopg.connect(host="127.0.0.1", port=int(sys.argv[1]), user="bob", password="bob-new",
                     dbname="raftlock", sslmode="disable", autocommit=True) as c:
    c.execute("INSERT INTO t VALUES (1)")
    assert c.execute("SELECT count(*) FROM t").fetchone()[0] == 1
PY
echo "ok: psql and psycopg log in with SCRAM-SHA-256; 42501 without the permission"

# Bounded abuse: a connection that does not log in is closed after --login-deadline-ms, and one
# that sends faster than --max-requests-per-second gets its excess refused.
/usr/bin/python3 - "$((port_base + 101))" <<'PY' || fail "a connection that never logs in stayed open"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(5)
start = time.monotonic()
assert s.recv(1) == b"", "the node sent something instead of closing"
assert 0.9 < time.monotonic() - start < 4, time.monotonic() - start
PY
pipelined=$(for _ in $(seq 1 200); do echo "GET k"; done |
    "${redis[@]}" --user bob --pass bob-new --no-auth-warning)
limited=$(grep -c "more than 50 requests a second on this connection" <<<"$pipelined" || true)
[ "$limited" -ge 100 ] && [ "$limited" -lt 200 ] || fail "rate limit: $limited of 200 refused"
echo "ok: a connection not logged in closed after 1 s; $limited of 200 pipelined GETs over the rate refused"
metrics_all=$(for n in 1 2 3; do curl -s "http://127.0.0.1:$((port_base + 200 + n))/metrics"; done)
for counter in raftlock_login_deadline_closed_total raftlock_rate_limited_total; do
    sum=$(awk -v c="$counter" '$1 == c {s += $2} END {print s + 0}' <<<"$metrics_all")
    [ "$sum" -ge 1 ] || fail "$counter not counted"
done

# The counters show the failed logins and the refusals.
metrics=$(curl -s "http://127.0.0.1:$((port_base + 201))/metrics")
for counter in raftlock_auth_failures_total raftlock_auth_logins_total \
    raftlock_permission_denied_total; do
    value=$(grep -E "^$counter " <<<"$metrics" | awk '{print $2}')
    [ -n "$value" ] || fail "$counter missing"
done
total=0
for n in 1 2 3; do
    v=$(curl -s "http://127.0.0.1:$((port_base + 200 + n))/metrics" |
        awk '/^raftlock_auth_failures_total /{print $2}')
    total=$((total + ${v:-0}))
done
# Three native logins failed so far (root's and nobody's wrong passwords, bob's old one),
# one Redis AUTH and one psql login.
[ "$total" -eq 5 ] || fail "auth failures counted: $total, not 5"
echo "ok: /metrics counted the 5 failed logins"
# Users survive a restart (the log replays them; the node does not bootstrap root again).
cluster kill 2 >/dev/null
cluster start 2 >/dev/null || fail "cluster.sh start 2"
[ "$(RAFTLOCK_ENDPOINTS=127.0.0.1:$((port_base + 102)) rl --user bob --password-file \
    "$work/bob-new.pw" get /config)" = v1 ] || fail "bob on the restarted node"
RAFTLOCK_ENDPOINTS=127.0.0.1:$((port_base + 102)) refused "authentication required" get /config

echo "auth_test: all passed"
