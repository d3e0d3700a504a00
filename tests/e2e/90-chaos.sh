#!/usr/bin/env bash
# 90-chaos.sh: bounded chaos. The real orchestrator on the local runtime with
# the real egress proxy; CHAOS_CLIENTS clients (tests/chaos/client.py, raw
# MCP over HTTP, one session each) run shell calls, background jobs and file
# edits for CHAOS_SECONDS while this script kill -9s the proxy, the
# orchestrator and sandbox agents in a loop and restarts the daemons as a
# supervisor would. Afterwards (tests/chaos/check.py): every call was
# answered (a JSON-RPC result or error) or failed with a connection error
# while the orchestrator was down, none hung past 60 s or came back
# malformed; every finished job reports its full output; every answered
# file write is there; the sandboxes reach the upstream again through the
# restarted proxy; and once the sessions are cleared nothing is left: no
# sandbox, process, cgroup, mount, loop device, state directory or proxy
# registration. The whole test runs in a network namespace of its own.
# tests/chaos/selftest.py first shows that the judges catch each failure.
#
#   CHAOS_SECONDS (75)  how long the faults go on
#   CHAOS_CLIENTS (4)   clients, one session each
#   CHAOS_SEED          the fault schedule's seed (printed; set it to replay)
. "$(dirname "$0")/../lib/common.sh"
# the judges first: they must catch hangs, malformed replies, cut jobs...
if [ -z "${E2E_NETNS:-}" ]; then
	python3 "$TOP/tests/chaos/selftest.py" || _nfail=$((_nfail + 1))
fi
if [ "$(id -u)" != 0 ] || ! command -v bwrap >/dev/null 2>&1 ||
	[ ! -x "$BIN/orchestrator/sandboxctl" ]; then
	skip "chaos" "needs root, bubblewrap and sandboxctl (the local runtime)"
	exit 0
fi
if [ -z "${E2E_NETNS:-}" ]; then
	unshare --net env E2E_NETNS=1 bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@" &
	child=$!
	on_exit "kill $child 2>/dev/null; wait $child 2>/dev/null"
	wait "$child"
	exit $?
fi
export ORCH_TEST_RUNTIME=local
SECS=${CHAOS_SECONDS:-75}
NCL=${CHAOS_CLIENTS:-4}
SEED=${CHAOS_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$SEED
echo "# chaos: ${SECS}s, $NCL clients, seed $SEED"
EV=$T/events
: >"$EV"
event() { echo "$(( $(date +%s%N) / 1000000 )) $*" >>"$EV"; }

# ---- an upstream and the real proxy, restarted the way a supervisor would ----
PROXY=$BIN/egress-proxy/egress-proxy
UP=$(free_port); PP=$(free_port)
python3 "$TOP/tests/fixtures/upstream.py" "$UP" & track_pid $!
cat >"$T/p.yaml" <<YAML
listen: 127.0.0.1:$PP
workers: 2
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key, export: $T/ca-export.crt}
upstream:
  allow_cidrs: [127.0.0.0/8]
resolve:
  "plain.example:80": "127.0.0.1:$UP"
addon_watch: 0
audit: {log: $T/audit.jsonl}
log: {file: $T/proxy.log}
YAML
PX_PID=
px_up() {
	ASAN_OPTIONS=quarantine_size_mb=16:${ASAN_OPTIONS:-} "$PROXY" -d -f "$T/p.yaml" >>"$T/proxy.stderr" 2>&1 &
	PX_PID=$!
	track_pid "$PX_PID"
	wait_port "$PP" 20 && wait_for 10 test -S "$T/admin.sock"
}
px_kill9() { kill -9 "$PX_PID" 2>/dev/null; wait "$PX_PID" 2>/dev/null; PX_PID=; }
px_admin() { "$PROXY" --admin "$T/admin.sock" "$1"; }
px_up || { fail "proxy starts" "$(tail -5 "$T/proxy.stderr" "$T/proxy.log")"; exit 1; }
wait_port "$UP" 10

. "$TOP/tests/mcp/orch-lib.sh"
ORCH_LOCAL_YAML="$ORCH_LOCAL_YAML
  proxy_admin_socket: $T/admin.sock
  proxy_ca_cert: $T/ca-export.crt"
printf '%s\n' "$ORCH_LOCAL_YAML" >"$T/rt.yaml"
orch_config "reconcile:" "  interval: 1s" "reap:" "  interval: 500ms" "drain_timeout: 5s"
# what the state directory holds before any sandbox (the runtime's own files)
check "orch starts" orch_start
# (.lock, and the bookkeeping the first create makes: .admit-gen, admission's
# generation, and .slots, the uid slots, whose claims a destroy leaves for the
# next create to take over: docs/local-runtime.md, "Scale")
state_ls() { find "$ORCH_SBX_DIR" -mindepth 1 -maxdepth 1 ! -name .lock ! -name .admit-gen ! -name .slots -printf '%f\n' 2>/dev/null | sort | tr '\n' ' '; }
state_base=$(state_ls)
cg_base=$(find /sys/fs/cgroup -path "*/$ORCH_CG/*" -type d 2>/dev/null | wc -l)

# every first call creates its session's sandbox; a create must not fail
# (issue 13: "bind 127.0.0.1:3128: Cannot assign requested address")
sessions=()
for i in $(seq 1 "$NCL"); do sessions+=("chaos-$i"); done
bad=
for s in "${sessions[@]}"; do
	out=$(mcp_tool "$s" shell '{"command":"echo up"}')
	[ "$out" = "${out#*up}" ] && bad="$bad $s: $out"
done
if [ -z "$bad" ]; then ok "sessions start"; else fail "sessions start" "$bad"; fi
# through the in-sandbox listener by hand (busybox wget crashes when the
# listener refuses)
cmd='timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/3128 && printf \"GET http://plain.example/ HTTP/1.1\\r\\nHost: plain.example\\r\\nConnection: close\\r\\n\\r\\n\" >&3 && cat <&3" 2>&1'
through_proxy=$(jq -cn --arg c "$cmd" '{command: $c}')
out=$(mcp_tool chaos-1 shell "$through_proxy")
check "sandbox reaches the upstream through the proxy" contains <(echo "$out") upstream-ok

# the agent of SESSION's sandbox (the child of the sandbox's bwrap)
agent_pid() {
	local id
	id=$(sbx_of "$1")
	[ -n "$id" ] && [ -f "$ORCH_SBX_DIR/$id/pid" ] || return 1
	pgrep -P "$(awk '{print $3}' "$ORCH_SBX_DIR/$id/pid")" | head -n1
}
# the host uids this test's sandboxes had (uid_range 65536 each)
note_uids() { cat "$ORCH_SBX_DIR"/*/uid 2>/dev/null | sort -u -o "$T/uids" - "$T/uids"; }
: >"$T/uids"
note_uids
# a pause of 0.MIN to 0.MAX+ seconds
pause() { sleep "$(( $1 + RANDOM % ($2 - $1 + 1) )).$(( RANDOM % 10 ))"; }

# ---- the clients, and the faults meanwhile ----
cpids=()
for s in "${sessions[@]}"; do
	timeout -k 5 $((SECS + 120)) python3 "$TOP/tests/chaos/client.py" work "$ORCH_URL/mcp" \
	    "$ORCH_KEY" "$s" "$SECS" "$T/$s.jsonl" 2>>"$T/client.stderr" &
	cpids+=($!)
	track_pid $!
done
end=$((SECONDS + SECS))
nup_fail=0
while [ $SECONDS -lt $end ]; do
	sleep "$(( 1 + RANDOM % 2 )).$(( RANDOM % 10 ))"
	case $(( RANDOM % 6 )) in
	0)	event proxy_kill; px_kill9; pause 0 1
		px_up || nup_fail=$((nup_fail + 1)); event proxy_up ;;
	1)	event orch_kill; orch_kill9; pause 0 1
		orch_start || nup_fail=$((nup_fail + 1)); event orch_up ;;
	2)	# both at once, as when the host's daemons are restarted together
		event orch_kill; event proxy_kill; orch_kill9; px_kill9; pause 0 1
		px_up || nup_fail=$((nup_fail + 1)); event proxy_up
		orch_start || nup_fail=$((nup_fail + 1)); event orch_up ;;
	*)	note_uids
		s=${sessions[$(( RANDOM % NCL ))]}
		if p=$(agent_pid "$s") && [ -n "$p" ]; then
			event agent_kill "$s"; kill -9 "$p"
		fi ;;
	esac
done
[ -n "$ORCH_PID" ] || { orch_start || nup_fail=$((nup_fail + 1)); event orch_up; }
[ -n "$PX_PID" ] || { px_up || nup_fail=$((nup_fail + 1)); event proxy_up; }
check "daemons restart after every kill" [ "$nup_fail" = 0 ]
t0=$SECONDS
for p in "${cpids[@]}"; do wait "$p"; done
check "clients finish within the bound" [ $((SECONDS - t0)) -le 90 ]
echo "# faults: $(cut -d' ' -f2 "$EV" | sort | uniq -c | tr -s ' \n' ' ')"

# ---- the proxy restarted once more: every sandbox gets its egress back ----
# (one call per session first: an orchestrator restarted by the loop attaches
# a session's egress again at its first call, which would hide the bug)
for s in "${sessions[@]}"; do mcp_tool "$s" shell '{"command":"true"}' >/dev/null; done
px_kill9; event proxy_kill; px_up; event proxy_up
px_fds=$(ls /proc/"$PX_PID"/fd | wc -l)
egress_back() {
	local s out
	for s in "${sessions[@]}"; do
		out=$(mcp_tool "$s" shell "$through_proxy")
		grep -q upstream-ok <<<"$out" || { echo "$s: $out"; return 1; }
	done
}
if wait_until 20 egress_back; then ok "chaos: every sandbox reaches the upstream after the proxy's restart"
else fail "chaos: every sandbox reaches the upstream after the proxy's restart" "$(egress_back | head -c 300)"; fi

# ---- what the clients saw ----
vpids=()
for s in "${sessions[@]}"; do
	timeout 300 python3 "$TOP/tests/chaos/client.py" verify "$ORCH_URL/mcp" "$ORCH_KEY" "$s" "$T/$s.jsonl" \
	    2>>"$T/client.stderr" &
	vpids+=($!)
done
for p in "${vpids[@]}"; do wait "$p"; done
logs=()
for s in "${sessions[@]}"; do logs+=("$T/$s.jsonl"); done
python3 "$TOP/tests/chaos/check.py" "$EV" "${logs[@]}" >"$T/check.out" 2>&1
cat "$T/check.out"
[ -s "$T/client.stderr" ] && { echo "# client stderr:"; head -c 2000 "$T/client.stderr"; }
_nfail=$((_nfail + $(grep -c '^not ok ' "$T/check.out")))

# ---- the daemons: alive, no sanitizer report, no log flood ----
check "proxy alive" kill -0 "$PX_PID"
check "orchestrator alive" kill -0 "$ORCH_PID"
check "no sanitizer report" bash -c "! grep -l 'ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer' $T/proxy.stderr $T/orch.stderr $ORCH_SBX_DIR/*/log 2>/dev/null"
logs_small() {
	local f
	for f in "$T/proxy.log" "$T/proxy.stderr" "$ORCH_LOG" "$T/orch.stderr"; do
		[ ! -f "$f" ] || [ "$(stat -c %s "$f")" -lt $((8 * 1024 * 1024)) ] || { echo "$f: $(stat -c %s "$f") bytes"; return 1; }
	done
}
check "no log flood (each log < 8 MiB)" logs_small

# ---- the sessions cleared: nothing left ----
# clear_session returns once the sandbox's processes are gone (issue 13:
# "destroy returns up to a second before the sandbox's processes are gone")
# (zombies waiting for init to reap them hold nothing but their pid: not counted)
procs_of_uid() { ps -eo uid=,stat=,pid=,args= | awk -v b="$1" '$1 >= b && $1 < b + 65536 && $2 !~ /^Z/'; }
early=
for s in "${sessions[@]}"; do
	id=$(sbx_of "$s")
	u=$(cat "$ORCH_SBX_DIR/$id/uid" 2>/dev/null)
	mcp_tool "$s" clear_session '{}' >/dev/null
	[ -n "$u" ] && [ -n "$(procs_of_uid "$u")" ] &&
		early="$early $s: $(procs_of_uid "$u" | wc -l) processes still there ($(procs_of_uid "$u" | awk '{print $2, $4}' | sort | uniq -c | tr -s ' \n' ' '));"
done
if [ -z "$early" ]; then ok "chaos: clear_session returns when the sandbox's processes are gone"
else fail "chaos: clear_session returns when the sandbox's processes are gone" "$early"; fi
leftover() {
	local n
	n=$(sandboxes | wc -l); [ "$n" = 0 ] || { echo "$n sandboxes: $(sandboxes | tr '\n' ' ')"; return 1; }
	[ "$(state_ls)" = "$state_base" ] || { echo "state dir: $(state_ls) (was: $state_base)"; return 1; }
	n=$(ps -eo args= | grep -F "$ORCH_SBX_DIR/" | grep -vc grep)
	[ "$n" = 0 ] || { echo "$n sandbox processes: $(ps -eo pid=,args= | grep -F "$ORCH_SBX_DIR/" | grep -v grep | head -3)"; return 1; }
	note_uids
	n=$(ps -eo uid=,pid=,args= | awk 'NR == FNR { u[$1] = 1; next }
	    { for (b in u) if ($1 >= b + 0 && $1 < b + 65536) { print; break } }' "$T/uids" - | tee "$T/uidprocs" | wc -l)
	[ "$n" = 0 ] || { echo "$n processes with this test's sandbox uids: $(head -c 300 "$T/uidprocs")"; return 1; }
	n=$(find /sys/fs/cgroup -path "*/$ORCH_CG/*" -type d 2>/dev/null | wc -l)
	[ "$n" = "$cg_base" ] || { echo "cgroups: $(find /sys/fs/cgroup -path "*/$ORCH_CG/*" -type d | head -3)"; return 1; }
	! grep -qF "$ORCH_STATE" /proc/self/mountinfo || { echo "mounts: $(grep -F "$ORCH_STATE" /proc/self/mountinfo | head -2)"; return 1; }
	! losetup -l -n -O BACK-FILE 2>/dev/null | grep -qF "$ORCH_STATE" || { echo "loop devices left"; return 1; }
	n=$(px_admin '{"op":"stats"}' | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("sandboxes", [])))')
	[ "$n" = 0 ] || { echo "$n proxy registrations"; return 1; }
	n=$(find /proc/"$PX_PID"/fd /proc/"$ORCH_PID"/fd -lname 'net:*' 2>/dev/null | wc -l)
	[ "$n" = 0 ] || { echo "the daemons hold $n network namespace descriptors"; return 1; }
	n=$(ls /proc/"$PX_PID"/fd | wc -l)
	[ "$n" -le $((px_fds + 4)) ] || { echo "proxy holds $n fds (was $px_fds after its restart)"; return 1; }
}
leftover_file() { leftover >"$T/leftover" 2>&1; }
t0=$(date +%s%N)
if wait_until 20 leftover_file; then
	ok "chaos: nothing leaked (sandboxes, processes, cgroups, mounts, state, registrations)"
	echo "# all gone $(( ($(date +%s%N) - t0) / 1000000 )) ms after the last clear_session"
else
	fail "chaos: nothing leaked (sandboxes, processes, cgroups, mounts, state, registrations)" \
	    "after 20 s: $(cat "$T/leftover")"
fi
[ "$_nfail" = 0 ] || { echo "# events:"; tail -n 40 "$EV"; echo "# orchestrator log (warnings):"; grep -i ' warn \| error \| err=' "$ORCH_LOG" | tail -n 20; }
