#!/usr/bin/env bash
# The web console in a real browser (issue 23): a three-node cluster, headless Chromium driven by
# puppeteer-core (npm, into the scratch directory; no browser download: Debian's chromium) against
# the leader's admin port, and the CLI acquiring a lock while the page is open (console_test.js).
# Screenshots go to $RAFTLOCK_CONSOLE_SHOTS (default BUILD_DIR/console-shots); docs/images holds
# the ones docs/operations.md shows. Then the actions with curl: refused on a node started without
# --console-actions, done on one restarted with it. Exit 77 (skipped) only when chromium is not
# installed.
#
#   console_test.sh BUILD_DIR PORT_BASE
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v chromium >/dev/null; then
    echo "chromium is not installed (scripts/deps.sh test installs it): skipped" >&2
    exit 77
fi
source "$here/../cluster_lib.sh" "$1" "$2" console-test
command -v npm >/dev/null || { echo "npm is not installed (scripts/deps.sh installs it)" >&2; exit 1; }
echo '{}' >"$work/package.json"
(cd "$work" && npm install --no-audit --no-fund --loglevel=error puppeteer-core@24.10.0 >/dev/null)
shots=${RAFTLOCK_CONSOLE_SHOTS:-$build_dir/console-shots}
mkdir -p "$shots"

cluster up >/dev/null
endpoints="127.0.0.1:$((port_base + 101)),127.0.0.1:$((port_base + 102)),127.0.0.1:$((port_base + 103))"
# The leader's console: the one that shows every member's lag.
leader=
for _ in $(seq 100); do
    leader=$(curl -sf "http://127.0.0.1:$((port_base + 201))/status" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])' 2>/dev/null || true)
    [ -n "$leader" ] && [ "$leader" != 0 ] && break
    sleep 0.1
done
[ -n "$leader" ] && [ "$leader" != 0 ] || { echo "no leader" >&2; exit 1; }
follower=$((leader % 3 + 1))
NODE_PATH="$work/node_modules" node "$here/console_test.js" \
    "http://127.0.0.1:$((port_base + 200 + leader))" "$build_dir/cli/raftlock" "$endpoints" "$shots" \
    "http://127.0.0.1:$((port_base + 200 + follower))"

# ---- actions (curl): off by default, on for a node restarted with --console-actions on ---------
admin() { echo "http://127.0.0.1:$((port_base + 200 + $1))"; }
json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }
fail() {
    echo "FAILED: $*" >&2
    exit 1
}
held=$("$build_dir/cli/raftlock" --endpoints "$endpoints" --output json acquire actions-demo --ttl 30s)
session=$(json_field session <<<"$held")
token=$(json_field token <<<"$held")
release_query="name=actions-demo&session=$session&token=$token"
answer=$(curl -s -w ' %{http_code}' -X POST -H 'X-Raftlock-Console: 1' \
    "$(admin "$follower")/api/actions/force-release?$release_query")
[[ $answer == *"console actions are off"*" 403" ]] || fail "actions off: got $answer"
answer=$(curl -s -w ' %{http_code}' -X POST "$(admin "$follower")/api/actions/force-release?$release_query")
[[ $answer == *"X-Raftlock-Console"*" 403" ]] || fail "a POST without the header: got $answer"
echo "ok: actions are refused without --console-actions, and without the header"

cluster kill "$follower" >/dev/null
RAFTLOCKD_ARGS="--console-actions on" cluster start "$follower" >/dev/null
[ "$(curl -s "$(admin "$follower")/api/actions" | json_field actions)" = True ] ||
    fail "node $follower does not say its actions are on"
answer=$(curl -s -w ' %{http_code}' -X POST -H 'X-Raftlock-Console: 1' \
    "$(admin "$follower")/api/actions/force-release?$release_query")
[[ $answer == "done at index"*" 200" ]] || fail "force-release: got $answer"
# (A lock without holders, waiters or lock-delay is gone: 404 with no holders.)
holders=$(curl -s "$(admin "$follower")/api/lock?name=actions-demo" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("holders", [])))')
[ "$holders" = 0 ] || fail "the lock still has $holders holders after the force-release"
curl -s "$(admin "$follower")/api/events?after=0" | grep -q '"kind":"revoke"' ||
    fail "no revoke in the live feed"
echo "ok: a force-release from the console released the hold, and the feed shows the revoke"
held=$("$build_dir/cli/raftlock" --endpoints "$endpoints" --output json acquire button-demo --ttl 30s)
NODE_PATH="$work/node_modules" node "$here/actions_test.js" "$(admin "$follower")" button-demo \
    "$(json_field session <<<"$held")" "$(json_field token <<<"$held")" "$shots"
answer=$(curl -s -w ' %{http_code}' -X POST -H 'X-Raftlock-Console: 1' \
    "$(admin "$follower")/api/actions/expire-session?session=$session")
[[ $answer == *"only the leader expires sessions: use node $leader's console"*" 409" ]] ||
    fail "expire-session on a follower: got $answer"
answer=$(curl -s -w ' %{http_code}' -X POST -H 'X-Raftlock-Console: 1' \
    "$(admin "$follower")/api/actions/transfer-leadership?to=$follower")
[[ $answer == *" 202" ]] || fail "transfer-leadership: got $answer"
for _ in $(seq 100); do
    [ "$(curl -s "$(admin "$follower")/status" | json_field leader)" = "$follower" ] && break
    sleep 0.1
done
[ "$(curl -s "$(admin "$follower")/status" | json_field leader)" = "$follower" ] ||
    fail "node $follower did not take leadership"
answer=$(curl -s -w ' %{http_code}' -X POST -H 'X-Raftlock-Console: 1' \
    "$(admin "$follower")/api/actions/expire-session?session=$session")
[[ $answer == "done at index"*" 200" ]] || fail "expire-session on the leader: got $answer"
curl -s "$(admin "$follower")/api/events?after=0" | grep -q "\"kind\":\"session-expiry\",\"seq\":[0-9]*,\"session\":$session" ||
    fail "no expiry of session $session in the live feed"
echo "ok: the console handed leadership to node $follower, which expired session $session"

# ---- actions with authentication on: root users only, by HTTP Basic over HTTPS ------------------
cluster down --wipe >/dev/null
RAFTLOCKD_ARGS="--console-actions on" cluster up --secure >/dev/null
pki=$work/data/pki
export RAFTLOCK_CACERT=$pki/ca.crt RAFTLOCK_USER=root RAFTLOCK_PASSWORD_FILE=$pki/root.pw
printf 'bob-password' >"$work/bob.pw"
"$build_dir/cli/raftlock" --endpoints "$endpoints" user add bob --new-password-file "$work/bob.pw" \
    >/dev/null
held=$("$build_dir/cli/raftlock" --endpoints "$endpoints" --output json acquire auth-demo --ttl 30s)
url="https://127.0.0.1:$((port_base + 201))/api/actions/force-release?name=auth-demo"
url+="&session=$(json_field session <<<"$held")&token=$(json_field token <<<"$held")"
post() { curl -s -w ' %{http_code}' --cacert "$pki/ca.crt" -X POST -H 'X-Raftlock-Console: 1' "$@"; }
answer=$(post "$url")
[[ $answer == *"needs a root user's name and password"*" 401" ]] || fail "no credentials: got $answer"
answer=$(post -u root:wrong "$url")
[[ $answer == "wrong user name or password"*" 401" ]] || fail "a wrong password: got $answer"
answer=$(post -u bob:bob-password "$url")
[[ $answer == *"bob does not hold the root role"*" 403" ]] || fail "a user without root: got $answer"
answer=$(post -u "root:$(cat "$pki/root.pw")" "$url")
[[ $answer == "done at index"*" 200" ]] || fail "root's force-release: got $answer"
echo "ok: with authentication on, only a root user with its password may act"
