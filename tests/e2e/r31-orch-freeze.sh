#!/usr/bin/env bash
# r31-orch-freeze.sh (issue 31): an idle sandbox is frozen, not stopped:
# its processes keep their PIDs and state and make no progress while
# frozen; the next call thaws it in milliseconds; CPU work keeps a sandbox
# awake, a process waiting for input does not; a sandbox frozen for
# reap.frozen is stopped (files kept); the state survives an orchestrator
# restart; the session JSON shows the state and the idle time; every step
# is logged and counted. Real sandboxes (local runtime).
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ "$ORCH_RT" != local ]; then
	skip "r31-orch-freeze" "needs the local runtime (root, bwrap)"
	exit 0
fi
orch_config "reap:" "  interval: 250ms" "  idle: 2s" "  frozen: 7s" "  lifetime: 10m" \
	"  idle_cpu: 100"
check "orch starts" orch_start

state() { rest GET "/v1/sessions/$1" | jq -r .state; }
cg() { echo "/sys/fs/cgroup/unified/$ORCH_CG/$1"; }
# A pid of the sandbox's processes named by its pid file (written by the job).
in_sbx() { # SANDBOX PATH: a file inside the sandbox, read from the host
	local p
	for p in $(cat "$(cg "$1")"/cgroup.procs "$(cg "$1")"/*/cgroup.procs 2>/dev/null); do
		[ -r "/proc/$p/root$2" ] && { cat "/proc/$p/root$2"; return 0; }
	done
	return 1
}
call_ms() { # SID COMMAND: the call's wall time in ms (curl), result to $T/out
	local t
	t=$(mcp_call "$1" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"$2\"}}}" \
		-o "$T/out" -w '%{time_total}')
	python3 -c "print(int(float('$t') * 1000))"
}

# --- a counting process waiting between steps: frozen in place ---
mcp_tool fz shell '{"command":"true"}' >/dev/null
sb=$(rest GET /v1/sessions/fz | jq -r .sandbox_id)
mcp_tool fz shell_async '{"command":"echo $$ > /tmp/pid; i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.2; done"}' >/dev/null
sleep 1
pid0=$(in_sbx "$sb" /tmp/pid)
check "the counting job runs (pid $pid0)" [ -n "$pid0" ]
wait_for 15 eval '[ "$(state fz)" = frozen ]'
check "idle sandbox shows frozen in the session JSON" [ "$(state fz)" = frozen ]
check "frozen logged with its reason" contains "$ORCH_LOG" "session=fz sandbox=$sb frozen reason=idle"
check "not stopped" not_contains "$ORCH_LOG" "session=fz sandbox=$sb stopped"
check "its cgroup is frozen (cgroup.freeze 1)" grep -qx 1 "$(cg "$sb")/cgroup.freeze"
wait_for 5 grep -q "frozen 1" "$(cg "$sb")/cgroup.events"
check "the kernel says frozen (cgroup.events)" grep -q "frozen 1" "$(cg "$sb")/cgroup.events"
j=$(rest GET /v1/sessions/fz)
check "session JSON: idle_ms and frozen_ms" python3 -c "
import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if j['idle_ms']>=2000 and j['frozen_ms']>=0 else 1)" "$j"
c1=$(in_sbx "$sb" /tmp/count); sleep 1.5; c2=$(in_sbx "$sb" /tmp/count)
check "no progress while frozen (count $c1 -> $c2)" [ -n "$c1" ] && [ "$c1" = "$c2" ]
st=$(mcp_struct fz sandbox_status '{}')
check "sandbox_status says frozen and does not thaw it" eval \
	'[ "$(echo "$st" | jq -r .state)" = frozen ] && grep -qx 1 "$(cg "$sb")/cgroup.freeze"'
ms=$(call_ms fz 'cat /tmp/pid; cat /tmp/count')
check "the next call thaws it and runs" contains "$T/out" "$pid0"
sleep 1
c3=$(in_sbx "$sb" /tmp/count)
check "the same process counts on from where it was ($c2 -> $c3)" [ "$c3" -gt "$c2" ] && [ "$c3" -lt $((c2 + 15)) ]
check "... with the same PID" [ "$(in_sbx "$sb" /tmp/pid)" = "$pid0" ]
check "running again" [ "$(state fz)" = running ]
# Two more rounds: the figures are the best of three (the machine is shared).
all=$ms
for r in 2 3; do
	wait_for 15 eval '[ "$(state fz)" = frozen ]'
	all="$all $(call_ms fz 'true')"
done
warm=$(call_ms fz 'true')
ths=$(sed -n "s/.*session=fz sandbox=$sb thawed in \([0-9.]*\) ms.*/\1/p" "$ORCH_LOG" | tr '\n' ' ')
best() { tr ' ' '\n' | grep . | sort -g | head -1; }
th=$(echo "$ths" | best); ms=$(echo "$all" | best)
check "three thaws logged with their times ($ths ms)" [ "$(echo $ths | wc -w)" -ge 3 ]
check "thaw under 10 ms (best of three: $th ms)" python3 -c "import sys; sys.exit(0 if float('$th') < 10 else 1)"
check "a thawed call under 50 ms end to end (best of three: $ms ms of $all; a warm one $warm ms)" [ "$ms" -lt 50 ]

# --- CPU work keeps a sandbox awake ---
mcp_tool busy shell_async '{"command":"while :; do :; done"}' >/dev/null
bsb=$(rest GET /v1/sessions/busy | jq -r .sandbox_id)
sleep 6
check "a sandbox busy on CPU is not frozen after 3x its idle timeout" [ "$(state busy)" = running ]
check "... and not frozen in its cgroup" grep -qx 0 "$(cg "$bsb")/cgroup.freeze"
mcp_tool busy shell '{"command":"pkill -f \"while :\" || kill $(pgrep -f \"do :\") ; true"}' >/dev/null

# --- frozen for reap.frozen: stopped, files kept ---
mcp_tool st shell '{"command":"echo kept > /workspace/f"}' >/dev/null
ssb=$(rest GET /v1/sessions/st | jq -r .sandbox_id)
wait_for 15 grep -q "session=st sandbox=$ssb frozen" "$ORCH_LOG"
wait_for 20 grep -q "session=st sandbox=$ssb stopped reason=frozen" "$ORCH_LOG"
check "frozen for reap.frozen, then stopped" contains "$ORCH_LOG" "session=st sandbox=$ssb stopped reason=frozen"
check "shows stopped" [ "$(state st)" = stopped ]
out=$(mcp_tool st shell '{"command":"cat /workspace/f"}')
check "its files kept; the next call starts it" contains <(echo "$out") kept

m=$(rest GET /metrics)
check "metrics count freezes and thaws" python3 -c "
import re,sys; t=sys.argv[1]
f=int(re.search(r'^orch_sandboxes_frozen_total (\d+)', t, re.M).group(1))
h=int(re.search(r'^orch_sandboxes_thawed_total (\d+)', t, re.M).group(1))
r=int(re.search(r'^orch_reaped_total\{reason=\"frozen\"\} (\d+)', t, re.M).group(1))
sys.exit(0 if f>=2 and h>=1 and r>=1 and re.search(r'^orch_thaw_seconds_count \d+', t, re.M) else 1)" "$m"


# --- an orchestrator restart adopts a frozen sandbox as frozen ---
mcp_tool ad shell '{"command":"echo $$ > /tmp/sh"}' >/dev/null
asb=$(rest GET /v1/sessions/ad | jq -r .sandbox_id)
wait_for 15 eval '[ "$(state ad)" = frozen ]'
orch_stop
check "orch restarts" orch_start
wait_for 10 eval '[ "$(state ad)" = frozen ]'
check "adopted frozen" [ "$(state ad)" = frozen ]
out=$(mcp_tool ad shell '{"command":"echo alive"}')
check "a call after the restart thaws it" contains <(echo "$out") alive
check "thawed after the restart" grep -qx 0 "$(cg "$asb")/cgroup.freeze"

