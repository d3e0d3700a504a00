#!/usr/bin/env bash
# r31-orch-pressure.sh (issue 31): host memory pressure is handled before
# anything is killed. A memory hog in one sandbox (a command in flight)
# beside N idle ones (R31_IDLE, default 200): the idle ones are reclaimed
# and frozen, least recently used first; below pressure.stop_below they are
# stopped in the same order (files kept); the hog's own overrun is
# OOM-killed inside its sandbox; the daemons and a busy neighbour's command
# are untouched; the OOM killer's preferences (oom_score_adj) are set and a
# sandbox cannot lower its own. The thresholds are set from this host's
# MemAvailable at the time, with margins of hundreds of MiB for the other
# work on the machine.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ "$ORCH_RT" != local ]; then
	skip "r31-orch-pressure" "needs the local runtime (root, bwrap)"
	exit 0
fi
N=${R31_IDLE:-200}
HOG_MB=1400
avail_mb() { awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo; }
start_with() { # MIN_AVAILABLE_MB STOP_BELOW_MB
	orch_config "reap:" "  interval: 300ms" "  idle: 10m" \
		"sandbox:" "  max_memory: 4GiB" \
		"limits:" "  max_running: 1000" \
		"pressure:" "  min_available: ${1}MiB" "  stop_below: ${2}MiB" "  idle: 1s" "  psi: 0"
	orch_start
}
state() { rest GET "/v1/sessions/$1" | jq -r .state; }
cg() { echo "/sys/fs/cgroup/unified/$ORCH_CG/$1"; }
# After a restart every adopted session counts as just used: the calls
# give them their order again (i1 the least recently used).
touch_all() {
	local i
	for i in $(seq 1 "$N"); do mcp_tool "i$i" shell '{"command":"true"}' >/dev/null; done
	sleep 1.5	# pressure.idle
}
# hold SID MB: a command in flight that holds MB of memory (0: none) until
# release SID lets it go.
hold() {
	local mem=""
	[ "$2" -gt 0 ] && mem="dd if=/dev/zero bs=$(($2 << 20)) count=1 2>/dev/null | "
	mcp_tool "$1" shell "{\"command\":\": > /tmp/holding-$1; $mem(while [ ! -e /tmp/release-$1 ]; do sleep 0.1; done); rm -f /tmp/release-$1; echo $1-done\",\"timeout\":300}"
}
# A REST exec runs beside the shell's command (a file made from the host
# in the sandbox's /tmp would belong to no uid of its namespace).
release() {
	rest POST "/v1/sessions/$1/exec" -H 'Content-Type: application/json' \
		-d "{\"command\":\": > /tmp/release-$1\"}" >/dev/null
}

# Thresholds far below what the host has now: nothing acts while the
# sandboxes are made.
check "orch starts" start_with 64 32
t0=$(date +%s)
for i in $(seq 1 "$N"); do
	# each one's page cache: reclaimable
	mcp_tool "i$i" shell '{"command":"dd if=/dev/zero of=/workspace/cache bs=1048576 count=2 2>/dev/null; cat /workspace/cache > /dev/null"}' >/dev/null
done
check "$N idle sandboxes made ($(( $(date +%s) - t0 )) s)" [ "$(running_sandboxes)" -ge "$N" ]
mcp_tool hog create_sandbox '{"memory":"2GiB"}' >/dev/null
mcp_tool nb shell '{"command":"true"}' >/dev/null
hsb=$(rest GET /v1/sessions/hog | jq -r .sandbox_id)
sleep 1.5
orch_stop

# --- phase 1: pressure below min_available, above stop_below ---
a=$(avail_mb)
check "orch restarts with pressure thresholds (MemAvailable $a MiB)" start_with $((a - 500)) $((a - 4000))
touch_all
( hold nb 0 > "$T/nb" ) &
nbp=$!
( hold hog "$HOG_MB" > "$T/hog" ) &
hp=$!
wait_for 60 grep -q "frozen reason=pressure" "$ORCH_LOG"
check "pressure logged with its figures" grep -q "memory pressure: .* MiB available" "$ORCH_LOG"
check "idle sandboxes reclaimed" grep -q "reclaimed .* KiB .*(memory pressure)" "$ORCH_LOG"
first=$(grep -o "session=i[0-9]* sandbox=[^ ]* reclaimed" "$ORCH_LOG" | head -1 | sed 's/session=\(i[0-9]*\).*/\1/')
check "reclaimed least recently used first (first: $first)" [ "$first" = i1 ]
wait_for 30 eval '[ "$(grep -c "frozen reason=pressure" "$ORCH_LOG")" -ge "$N" ]'
check "every idle sandbox frozen ($(grep -c "frozen reason=pressure" "$ORCH_LOG") of $N)" \
	[ "$(grep -c "frozen reason=pressure" "$ORCH_LOG")" -ge "$N" ]
check "the hog (a command in flight) is not frozen" not_contains "$ORCH_LOG" "session=hog sandbox=$hsb frozen"
check "the busy neighbour is not frozen" eval "! grep -q 'session=nb .*frozen' '$ORCH_LOG'"
check "nothing stopped above stop_below" not_contains "$ORCH_LOG" "stopped reason=pressure"
check "no reclaim repeated without a use in between" eval "[ \$(grep -c 'session=i1 .*reclaimed' '$ORCH_LOG') -le 1 ]"
release nb; release hog
wait $hp; wait $nbp
check "the hog's command completed" contains "$T/hog" hog-done
check "the neighbour's command completed untouched" contains "$T/nb" nb-done
m=$(rest GET /metrics)
check "metrics count reclaims and freezes" python3 -c "
import re,sys; t=sys.argv[1]
g=lambda a: int(re.search(r'orch_pressure_actions_total\{action=\"%s\"\} (\d+)' % a, t).group(1))
sys.exit(0 if g('reclaim')>=1 and g('freeze')>=$N and int(re.search(r'^orch_pressure_rounds_total (\d+)', t, re.M).group(1))>=1 else 1)" "$m"
out=$(mcp_tool i2 shell '{"command":"cat /workspace/cache | wc -c"}')
check "a frozen one's next call thaws it, its files intact" contains <(echo "$out") 2097152

# --- the hog's overrun: OOM-killed inside its own sandbox ---
# two readers of 1200 MiB each (one read() stops at 2 GiB) against a 2 GiB limit
dd2='dd if=/dev/zero bs=1258291200 count=1 2>/dev/null | sleep 20'
out=$(mcp_tool hog shell "{\"command\":\"($dd2) & ($dd2) & wait; echo after\",\"timeout\":120}")
echo "$out" > "$T/oom.out"
check "the hog beyond its limit: killed inside its sandbox, its shell lives" contains <(echo "$out") after
us=$(mcp_struct hog sandbox_status '{}')
check "its sandbox counts the OOM kill and still runs" eval \
	'[ "$(echo "$us" | jq -r .usage.oom_kills)" -ge 1 ] && [ "$(echo "$us" | jq -r .state)" = running ]'
check "the orchestrator lives" kill -0 "$ORCH_PID"
out=$(mcp_tool nb shell '{"command":"cat /proc/self/oom_score_adj; echo 0 > /proc/self/oom_score_adj && echo lowered"}')
check "a sandbox process is the OOM killer's first pick (500)" contains <(echo "$out") 500
# Lowering an oom_score_adj takes CAP_SYS_RESOURCE, which some hosts (this
# machine's container) do not give even to root: then the daemons keep 0
# and the sandbox's 500 is no floor.
if python3 -c 'import sys; sys.exit(0 if int(open("/proc/self/status").read().split("CapEff:")[1].split()[0], 16) >> 24 & 1 else 1)'; then
	check "the orchestrator is protected (oom_score_adj -900)" [ "$(cat /proc/$ORCH_PID/oom_score_adj)" = -900 ]
	check "and a sandbox cannot lower its own" not_contains <(echo "$out") lowered
else
	skip "daemon oom_score_adj -900" "no CAP_SYS_RESOURCE on this host"
	check "the orchestrator says it could not lower its oom_score_adj" contains "$ORCH_LOG" "oom_score_adj not lowered"
fi
orch_stop

# --- phase 2: below stop_below: stopped, least recently used first ---
a=$(avail_mb)
L2=$(wc -l < "$ORCH_LOG")
check "orch restarts with stop_below near (MemAvailable $a MiB)" start_with $((a - 300)) $((a - 500))
touch_all
( hold hog "$HOG_MB" > "$T/hog2" ) &
hp=$!
wait_for 60 grep -q "stopped reason=pressure" "$ORCH_LOG"
sleep 1
release hog
wait $hp
check "below stop_below idle sandboxes are stopped" grep -q "stopped reason=pressure" "$ORCH_LOG"
order=$(tail -n +"$L2" "$ORCH_LOG" | grep -o "session=i[0-9]* sandbox=[^ ]* stopped reason=pressure" | sed 's/session=i\([0-9]*\).*/\1/' | tr '\n' ' ')
check "stopped least recently used first ($order)" python3 -c "
import sys; v=[int(x) for x in sys.argv[1].split()]
sys.exit(0 if v and v == sorted(v) and v[0] == 1 else 1)" "$order"
check "the hog was not stopped" not_contains "$ORCH_LOG" "session=hog sandbox=$hsb stopped"
check "the hog's command completed" contains "$T/hog2" hog-done
s1=$(tail -n +"$L2" "$ORCH_LOG" | grep -o "session=i[0-9]* sandbox=[^ ]* stopped reason=pressure" | head -1 | sed 's/session=\(i[0-9]*\).*/\1/')
out=$(mcp_tool "$s1" shell '{"command":"wc -c < /workspace/cache"}')
check "a stopped one keeps its files and starts on the next call" contains <(echo "$out") 2097152
check "metrics count the stops" eval "rest GET /metrics | grep -Eq 'orch_pressure_actions_total\\{action=\"stop\"\\} [1-9]'"
