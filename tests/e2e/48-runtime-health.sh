#!/usr/bin/env bash
# 48-runtime-health: the local runtime's health checks, each broken in a way
# that touches nothing outside this test. At start a failing isolation check
# (user namespaces, made impossible by user.max_user_namespaces=0 inside a
# private user namespace) refuses the start unless require_isolation is
# false; /readyz re-checks every tick and names the failing check in its
# JSON body (the agent binary removed, the proxy admin socket missing, no
# free uid block), and is 200 again once it passes. Without loop devices
# (hidden in a private mount namespace) the default disk limit falls back
# with a loud warning and sandboxes still start.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"
if [ "$ORCH_RT" != local ]; then
	skip "runtime-health" "needs the local runtime (root, bwrap)"
	exit 0
fi
rz() { curl -s -m 5 -o "$T/rz" -w '%{http_code}' "$ORCH_URL/readyz"; }
rz_is() {	# CODE [FAILING]
	[ "$(rz)" = "$1" ] || return 1
	[ -z "${2:-}" ] || [ "$(jq -r .failing "$T/rz")" = "$2" ]
}
orch_start_any() {	# starts it; waits for any answer on /readyz
	"$ORCH_BIN" -f "$T/orch.yaml" >>"$T/orch.stderr" 2>&1 &
	ORCH_PID=$!
	track_pid "$ORCH_PID"
	wait_for 30 curl -s -o /dev/null "$ORCH_URL/readyz"
}
orch_wait_exit() {	# waits for the orchestrator to exit; its status
	local i
	for i in $(seq 1 100); do kill -0 "$ORCH_PID" 2>/dev/null || break; sleep 0.1; done
	wait "$ORCH_PID"
}

# ---- healthy: 200, every check listed and passing ----
orch_config "reap:" "  interval: 300ms"
check "orch starts" orch_start
check "readyz 200" rz_is 200
echo "# readyz: $(cat "$T/rz")"
for c in user_namespaces cgroups bwrap agent_bin loop_devices uid_blocks state_dir; do
	check "readyz lists $c as ok" test "$(jq -r --arg c "$c" '.checks[] | select(.name == $c) | .ok' "$T/rz")" = true
done

# ---- the agent binary goes away: 503 naming agent_bin, then back ----
mv "$AGENT_BIN" "$AGENT_BIN.away"
check "agent_bin removed: readyz 503 names agent_bin" wait_until 10 rz_is 503 agent_bin
check "agent_bin: the message says what is missing" grep -q "agent_bin $AGENT_BIN: No such file" "$T/rz"
# a create now fails; what the model is told names no host path
out=$(mcp_tool h-0 shell '{"command":"echo x"}')
echo "# tool error: $out"
check "tool error: the create failed" grep -q '^ERROR' <<<"$out"
check "tool error: no host path in it" bash -c "! grep -qF -e '$AGENT_BIN' -e '$ORCH_STATE' -e '$T' <<<\"\$1\"" _ "$out"
check "tool error: the host view is logged for the operator" grep -q "runtime error (host view):.*$AGENT_BIN" "$ORCH_LOG"
# (what the create's failure looked like, for a failure of the check above)
grep -E "session=h-0 .*create failed|host view" "$ORCH_LOG" | tail -n 3 | sed 's/^/# log: /'
mv "$AGENT_BIN.away" "$AGENT_BIN"
check "agent_bin back: readyz 200" wait_until 10 rz_is 200
orch_stop

# ---- the proxy's admin socket is missing: 503 naming proxy_admin ----
orch_config "  proxy_admin_socket: $T/admin.sock" "reap:" "  interval: 300ms"
check "orch starts without its proxy (not an isolation check)" orch_start_any
check "no admin socket: readyz 503 names proxy_admin" wait_until 10 rz_is 503 proxy_admin
check "proxy_admin: the message names the socket" grep -q "admin.sock" "$T/rz"
python3 -c 'import socket,sys,time
s=socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1]); s.listen(64); time.sleep(60)' "$T/admin.sock" &
track_pid $!
check "admin socket up: readyz 200" wait_until 10 rz_is 200
orch_stop

# ---- no free uid block: 503 naming uid_blocks ----
ORCH_LOCAL_YAML=$(sed 's/^  uid_count: .*/  uid_count: 1/' <<<"$ORCH_LOCAL_YAML")
orch_config "reap:" "  interval: 300ms"
check "orch starts with one uid block" orch_start
out=$(mcp_tool h-1 shell '{"command":"echo one"}')
echo "# h-1: $out"
check "the one block is used" test "$(head -1 <<<"$out")" = one
check "all uid blocks used: readyz 503 names uid_blocks" wait_until 10 rz_is 503 uid_blocks
rest DELETE /v1/sessions/h-1 -o /dev/null
check "block free again: readyz 200" wait_until 10 rz_is 200
orch_stop
ORCH_LOCAL_YAML=$(sed 's/^  uid_count: 1$/  uid_count: 256/' <<<"$ORCH_LOCAL_YAML")

# ---- user namespaces unavailable: the start is refused, naming the check ----
orch_config
unshare -U -r sh -c 'echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"' _ \
    "$ORCH_BIN" -f "$T/orch.yaml" >>"$T/orch.stderr" 2>&1 &
ORCH_PID=$!
track_pid "$ORCH_PID"
orch_wait_exit; rc=$?
ORCH_PID=
check "no user namespaces: the orchestrator refuses to start" test "$rc" -ne 0
check "the refusal names user_namespaces" grep -q 'isolation check user_namespaces failed: cannot make a user namespace' "$ORCH_LOG"
check "the refusal says how to start anyway" grep -q 'require_isolation: false' "$ORCH_LOG"
orch_config "  require_isolation: false" "reap:" "  interval: 300ms"
unshare -U -r sh -c 'echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"' _ \
    "$ORCH_BIN" -f "$T/orch.yaml" >>"$T/orch.stderr" 2>&1 &
ORCH_PID=$!
track_pid "$ORCH_PID"
check "require_isolation false: starts anyway" wait_until 30 curl -s -o /dev/null "$ORCH_URL/readyz"
check "readyz 503 names user_namespaces" rz_is 503 user_namespaces
echo "# readyz: $(cat "$T/rz")"
check "readyz message says why" grep -q 'No space left on device' "$T/rz"
orch_stop

# ---- no loop devices: the default disk limit falls back, loudly ----
orch_config "reap:" "  interval: 300ms"
: >"$ORCH_LOG"
unshare -m sh -c 'mount --make-rprivate / && mount --bind /dev/null /dev/loop-control && exec "$@"' _ \
    "$ORCH_BIN" -f "$T/orch.yaml" >>"$T/orch.stderr" 2>&1 &
ORCH_PID=$!
track_pid "$ORCH_PID"
check "no loop devices: starts" wait_until 30 rz_is 200
check "no loop devices: a loud warning" grep -q 'WARNING: isolation check loop_devices failed.*NO DISK LIMIT' "$ORCH_LOG"
check "readyz warns that there is no disk limit" test "$(jq -r '.checks[] | select(.name == "loop_devices") | .warning' "$T/rz")" = "no loop devices: sandboxes have NO disk limit"
out=$(mcp_tool h-2 shell '{"command":"echo works"}')
echo "# h-2: $out"
check "no loop devices: sandboxes still start" test "$(head -1 <<<"$out")" = works
sb=$(sbx_of h-2)
check "no loop devices: no disk image" test ! -e "$ORCH_SBX_DIR/$sb/disk.img"
rest DELETE /v1/sessions/h-2 -o /dev/null
orch_stop

# ---- kill -9 of the orchestrator mid-command: the next call says so ----
orch_config "reap:" "  interval: 300ms"
check "orch starts (kill -9 case)" orch_start
# The sandbox's own "sleep 309" (pids): pgrep -x, since the client's curl
# holds the same text in its arguments (the JSON request) and seeing it says
# nothing about the call having reached the agent; and in this test's
# sandbox's cgroup, since another run of this test may have one too.
sbx_sleep() {	# SANDBOX
	local p
	for p in $(pgrep -fx 'sleep 309'); do
		grep -qE ":/$ORCH_CG/$1(/|\$)" "/proc/$p/cgroup" 2>/dev/null && echo "$p"
	done
}
sbx_sleeps() { [ -n "$(sbx_sleep "$1")" ]; }
sbx_sleeps_not() { [ -z "$(sbx_sleep "$1")" ]; }
not() { ! "$@"; }
# A command killed with its orchestrator, then the next call.
mcp_tool r-1 shell '{"command":"cd /tmp; export KEEP=1"}' >/dev/null
sb=$(sbx_of r-1)
# The call is started with the orchestrator stopped, so that it cannot reach
# the sandbox yet: the wait for its command must not be satisfied then (a
# wait that saw the client's arguments let the kill -9 hit a call the
# agent never got, which ran nothing and so left no note).
kill -STOP "$ORCH_PID"
( mcp_tool r-1 shell '{"command":"echo begun; sleep 309; echo late"}' >"$T/mid" 2>&1 ) &
mid=$!
check "a call held by a stopped orchestrator is not seen running" not wait_until 1 sbx_sleeps "$sb"
kill -CONT "$ORCH_PID"
check "the command runs in the sandbox" wait_until 15 sbx_sleeps "$sb"
orch_kill9
wait "$mid" 2>/dev/null
check "the killed call's command is stopped by the agent" wait_until 10 sbx_sleeps_not "$sb"
check "the agent says it stopped it" grep -q "shell command abandoned: its caller went away" "$ORCH_SBX_DIR/$sb/log"
check "orch restarts" orch_start
out=$(mcp_tool r-1 shell '{"command":"echo after; pwd; echo keep=$KEEP"}')
echo "# after the restart: $out"
NOTE='[the previous command (echo begun; sleep 309; echo late) was interrupted: the call that ran it went away (the orchestrator restarted'
check "next call: runs (not busy)" grep -q '^after$' <<<"$out"
check "next call: no 'concurrent call'" bash -c '! grep -q "concurrent" <<<"$1"' _ "$out"
check "next call: says the previous command was interrupted" grep -qF "$NOTE" <<<"$out"
check "next call: the shell kept its state" grep -q '^/tmp$' <<<"$out"
orch_stop
