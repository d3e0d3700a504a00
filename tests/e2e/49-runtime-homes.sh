#!/usr/bin/env bash
# 49-runtime-homes.sh: durable per-user homes on the local runtime, through
# the real orchestrator and real sandboxes: /home/user (HOME) survives
# clear_session, the idle reaper, create_sandbox and an orchestrator
# restart; two sessions of one user share it; another user and a session
# without one see nothing of it; the quota gives ENOSPC; GET/DELETE
# /v1/users/{id}/home (409 in use); homes.ttl purge; a warm claim with a
# home stays a claim; no loop device or mount is left behind.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ "$ORCH_RT" != local ]; then skip "homes need the local runtime (root, bwrap)"; exit 0; fi
HOMES=$ORCH_STATE/homes

# mcpu SID USER NAME ARGS: a tool call as USER ("" : no X-User-Id).
mcpu() {
	local sid=$1 user=$2 name=$3 args=$4 uh=()
	[ -n "$user" ] && uh=(-H "X-User-Id: $user")
	mcp_tool "$sid" "$name" "$args" "${uh[@]}"
}
has() { grep -qF -- "$2" <<<"$1"; }
hasnt() { ! grep -qF -- "$2" <<<"$1"; }
# jqok JSON FILTER: the filter holds for a non-empty JSON document
jqok() { [ -n "$1" ] && jq -e "$2" <<<"$1" >/dev/null; }
sh_as() { mcpu "$1" "$2" shell "$(jq -cn --arg c "$3" '{command:$c}')"; }
# loop devices attached to images under our homes dir
home_loops() { losetup -a 2>/dev/null | grep -c "$HOMES/" || true; }
img_loops() { losetup -j "$HOMES/u-$1/home.img" 2>/dev/null | wc -l; }

orch_config "homes:" "  size: 64MiB" "  keep_mounted: 3s" "  users:" "    bigu: 80MiB" \
    "reap:" "  interval: 300ms" "  idle: 4s" "  freeze: false"
check "orch starts" orch_start

out=$(sh_as a1 alice 'echo "HOME=$HOME"; echo n1 > $HOME/note; cat /home/user/note')
check "HOME is /home/user" contains <(echo "$out") "HOME=/home/user"
check "a file written in the home" contains <(echo "$out") n1
check "home image made on first use" [ -f "$HOMES/u-alice/home.img" ]
check "one loop device for the home" [ "$(img_loops alice)" = 1 ]
check "the host mount table never holds a home" eval "! grep -q \"$HOMES\" /proc/self/mountinfo && ! grep -q ' /home/user ' /proc/self/mountinfo"
out=$(mcpu a1 alice shell_async '{"command":"echo \"job HOME=$HOME\"; cat ~/note"}')
jid=$(sed -n 's/^Started job \([^ ]*\).*/\1/p' <<<"$out")
sleep 1
out=$(mcpu a1 alice shell_poll "{\"job_id\":\"$jid\"}")
check "jobs get HOME" has "$out" "job HOME=/home/user"
check "jobs see the home" has "$out" n1

# clear_session: a new sandbox, the same home
sb1=$(rest GET /v1/sessions/a1 | jq -r .sandbox_id)
mcpu a1 alice clear_session '{}' >/dev/null
out=$(sh_as a1 alice 'cat /home/user/note')
sb2=$(rest GET /v1/sessions/a1 | jq -r .sandbox_id)
check "clear_session gave a new sandbox" [ "$sb1" != "$sb2" ]
check "home kept across clear_session" contains <(echo "$out") n1
check "the new sandbox's attach cloned the kept mount (no second mount of the filesystem)" \
    grep -q "home user=alice sandbox=$sb2 attached dev=(kept)" "$ORCH_LOG"

# two sessions of one user share it, concurrently
out=$(sh_as a2 alice 'cat /home/user/note; echo from-a2 > /home/user/n2')
check "second session of the user sees the home" contains <(echo "$out") n1
out=$(sh_as a1 alice 'cat /home/user/n2')
check "first session sees the second's write at once" contains <(echo "$out") from-a2
check "still one loop device for two sandboxes" [ "$(img_loops alice)" = 1 ]

# another user, a user-less session, and path tricks
out=$(sh_as b1 bob 'echo "HOME=$HOME"; ls -a /home/user; cat /home/user/note 2>&1; find / -xdev -name note 2>/dev/null | head')
check "another user gets its own home" contains <(echo "$out") "HOME=/home/user"
check "another user does not see alice's files" hasnt "$out" n1
check "bob's home is a separate image" [ -f "$HOMES/u-bob/home.img" ]
out=$(sh_as n1 "" 'echo "HOME=$HOME"; ls /home/user 2>&1; cat /home/user/note 2>&1; ls /proc/*/root/home/user 2>&1 | head -5')
check "a session without a user has another HOME" hasnt "$out" "HOME=/home/user"
check "a session without a user sees no home" hasnt "$out" n1
check "no homes directory for a user-less session" [ "$(ls "$HOMES" | grep -vc '^u-\(alice\|bob\)$')" = 0 ]
out=$(sh_as d1 '..' 'ls -a /home/user; cat /home/user/note 2>&1')
check "user id .. is a name of its own" [ -f "$HOMES/u-../home.img" ]
check "user .. does not see alice's files" hasnt "$out" n1
j=$(rest GET '/v1/users/../home' --path-as-is)
check "REST: .. is user \"..\", never a path" jqok "$j" '.user == ".." and .exists'
j=$(rest GET '/v1/users/.%2E/home')
check "REST: an encoded .. is not decoded" bash -c "[ -z '$j' ] || jq -e '.error' <<<'$j' >/dev/null"
code=$(rest GET '/v1/users/alice%2F..%2Fbob/home' -o /dev/null -w '%{http_code}')
check "REST: an encoded slash refused" [ "$code" = 400 ]
code=$(rest GET '/v1/users/al%00ice/home' -o /dev/null -w '%{http_code}')
check "REST: a NUL refused" [ "$code" = 400 ]
code=$(rest GET '/v1/users/alice/home/x' -o /dev/null -w '%{http_code}')
check "REST: other paths are 404" [ "$code" = 404 ]
code=$(curl -s -o /dev/null -w '%{http_code}' "$ORCH_URL/v1/users/alice/home")
check "REST: the bearer key is required" [ "$code" = 401 ]

# root inside cannot take the home off or move it (no CAP_SYS_ADMIN)
out=$(sh_as e1 eve 'echo e-mark-1 > /home/user/mark; umount /home/user 2>&1; umount -l /home/user 2>&1; mount -o remount,ro /home/user 2>&1; cat /home/user/mark; echo w > /home/user/w2 && echo still-rw')
check "root inside cannot unmount the home" contains <(echo "$out") "still-rw"
check "the home stays mounted after the attempts" contains <(echo "$out") "e-mark-1"
rest DELETE /v1/sessions/e1 >/dev/null

# quota: ENOSPC with a clear message, and the home still works after
out=$(sh_as a1 alice 'dd if=/dev/zero of=/home/user/big bs=1M count=100 2>&1; rm -f /home/user/big; echo after > /home/user/after && cat /home/user/after')
check "quota full: No space left on device" contains <(echo "$out") "No space left on device"
check "home usable after the quota was hit" contains <(echo "$out") after
out=$(sh_as q1 bigu 'echo "SZ=$(df -k /home/user | awk "NR==2{print \$2}")"')
sz=$(sed -n 's/^SZ=\([0-9]*\).*/\1/p' <<<"$out")
check "per-user size override (homes.users)" [ "${sz:-0}" -gt 70000 ]

# GET / DELETE
j=$(rest GET /v1/users/alice/home)
check "GET home: exists, size, sessions" jqok "$j" '.exists and .size_bytes == 67108864 and .sessions == 2 and .in_use and .used_bytes > 0 and .last_used_ms > 0' 
j=$(rest GET /v1/users/nobody-here/home)
check "GET home of a user without one" jqok "$j" '.exists == false and .sessions == 0' 
code=$(rest DELETE /v1/users/alice/home -o "$T/del" -w '%{http_code}')
check "DELETE while in use: 409" [ "$code" = 409 ]
check "409 says why" contains "$T/del" "in use"
check "home untouched by the refused DELETE" [ -f "$HOMES/u-alice/home.img" ]

# idle reaper: stopped, resumed, home back
mcpu a2 alice clear_session '{}' >/dev/null
sb=$(rest GET /v1/sessions/a1 | jq -r .sandbox_id)
wait_for 30 grep -q "session=a1 sandbox=$sb stopped reason=idle" "$ORCH_LOG"
check "idle reaper stopped the sandbox" grep -q "session=a1 sandbox=$sb stopped reason=idle" "$ORCH_LOG"
j=$(rest GET /v1/users/alice/home)
check "a home kept mounted by the orchestrator is not in use" jqok "$j" '.exists and (.in_use | not)'
wait_until 15 [ "$(img_loops alice)" = 0 ]
check "no loop device once homes.keep_mounted passed with no sandbox" [ "$(img_loops alice)" = 0 ]
check "the kept mount's release logged" grep -q "home user=alice released (unused" "$ORCH_LOG"
out=$(sh_as a1 alice 'cat /home/user/note /home/user/n2')
check "home kept across the idle reaper" has "$out" n1
check "both sessions' files kept" has "$out" from-a2

# re-provisioning: create_sandbox
mcpu a1 alice create_sandbox '{"fresh_workspace":true}' >/dev/null
nsb=$(rest GET /v1/sessions/a1 | jq -r .sandbox_id)
out=$(sh_as a1 alice 'cat /home/user/note')
check "create_sandbox made a new sandbox" [ "$nsb" != "$sb" ]
check "home kept across create_sandbox" contains <(echo "$out") n1

# orchestrator restart: the running sandbox keeps it, a new one shares it
orch_kill9
check "orch restarts" orch_start
out=$(sh_as a1 alice 'echo post-restart >> /home/user/note; cat /home/user/note')
check "home kept across an orchestrator restart" has "$out" n1
check "writable after the restart" has "$out" post-restart
out=$(sh_as a3 alice 'cat /home/user/note')
check "a new session after the restart shares the same home" contains <(echo "$out") post-restart
check "one loop device after the restart too" [ "$(img_loops alice)" = 1 ]

# delete everything of alice's, then the home
for s in a1 a2 a3; do rest DELETE "/v1/sessions/$s" >/dev/null; done
code=$(rest DELETE /v1/users/alice/home -o "$T/del" -w '%{http_code}')
check "DELETE once unused: 200" [ "$code" = 200 ]
check "home gone" [ ! -e "$HOMES/u-alice" ]
j=$(rest GET /v1/users/alice/home)
check "GET after DELETE: exists false" jqok "$j" '.exists == false' 
code=$(rest DELETE /v1/users/alice/home -o /dev/null -w '%{http_code}')
check "DELETE of a missing home: 404" [ "$code" = 404 ]
out=$(sh_as a4 alice 'ls /home/user/note 2>&1')
check "a deleted home starts empty" contains <(echo "$out") "No such file"
rest DELETE /v1/sessions/a4 >/dev/null

# warm claims with a home stay claims; then ttl purge
orch_stop
orch_config "homes:" "  size: 64MiB" "  ttl: 3s" "pool:" "  min_idle: 1" "reap:" "  interval: 300ms"
check "orch restarts with a warm pool and homes.ttl" orch_start
wait_for 60 bash -c "curl -s -H 'Authorization: Bearer $ORCH_KEY' $ORCH_URL/metrics | grep -qx 'orch_pool_idle 1'"
out=$(sh_as w1 carol 'echo warm > /home/user/w; cat /home/user/w; echo "HOME=$HOME"')
check "a warm claim gets the home" has "$out" warm
check "a warm claim gets HOME" has "$out" HOME=/home/user
check "the claim came from the pool" grep -q "session=w1 sandbox=w-.* claimed from pool" "$ORCH_LOG"
check "no cold create for it" eval "! grep -q 'session=w1 sandbox=.* creating' '$ORCH_LOG'"
check "home attach logged with its time" grep -q "session=w1 sandbox=w-.* home attached user=carol home_ms=" "$ORCH_LOG"
sleep 4
check "a home in use is not purged" [ -f "$HOMES/u-carol/home.img" ]
rest DELETE /v1/sessions/w1 >/dev/null
wait_until 30 [ ! -e "$HOMES/u-carol" ]
check "homes.ttl purges an unused home" [ ! -e "$HOMES/u-carol" ]
check "purge logged" grep -q "home user=carol purged" "$ORCH_LOG"
wait_until 30 [ ! -e "$HOMES/u-bob" ]
check "every unused home purged (bob's too)" [ ! -e "$HOMES/u-bob" ]

# nothing left: no loop device on a home image, no mount
for s in b1 n1 d1 q1; do rest DELETE "/v1/sessions/$s" >/dev/null; done
orch_stop
wait_until 10 [ "$(home_loops)" = 0 ]
check "no loop device left on home images" [ "$(home_loops)" = 0 ]
check "no home mount on the host" eval "! grep -q -e \"$HOMES\" -e ' /home/user ' /proc/self/mountinfo"
