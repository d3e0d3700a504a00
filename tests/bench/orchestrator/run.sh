#!/usr/bin/env bash
# tests/bench/orchestrator/run.sh: orchestrator figures (not a pass/fail
# gate). On the local runtime (fake with ORCH_TEST_RUNTIME=fake):
#   - MCP tools/call shell `true` round trip on a warm session (p50, p99)
#   - first call on a new session id, with a warm pool and without one
#   - sustained tool calls per second over 50 sessions
#   - orchestrator resident memory with 200 idle sessions
# and beside them the runtime's own floor: the agent's /v1/shell round trip
# and a cold sandbox create.
#   B=build bash tests/bench/orchestrator/run.sh
set -u
cd "$(dirname "$0")/../../.."
export TOP=$PWD
. tests/lib/common.sh
. tests/mcp/orch-lib.sh
M=tests/bench/orchestrator/bench.mjs
N_IDLE=${BENCH_IDLE_SESSIONS:-200}

orch_config "pool:" "  min_idle: 0" "limits:" "  max_running: $((N_IDLE + 20))" "  max_creating: 32"
sed -i "s/uid_count: 256/uid_count: $((N_IDLE + 64))/" "$T/orch.yaml"
orch_start || { echo "orchestrator did not start"; exit 1; }
echo "runtime: $ORCH_RT   machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"

mcp_tool bench-warm shell '{"command":"true"}' >/dev/null
rtt=$(node $M rtt "$ORCH_URL/mcp" "$ORCH_KEY" bench-warm 2000)
echo "MCP shell 'true' round trip, warm session:   $rtt   (target p50 <= 2 ms, p99 <= 10 ms)"
sock=$(find "$ORCH_SBX_DIR/$(sbx_of bench-warm)" -name agent.sock 2>/dev/null | head -1)
[ -n "$sock" ] && echo "  floor: agent /v1/shell 'true' direct:       $(node $M agent "$sock" 2000)"

cold=$(node $M first "$ORCH_URL/mcp" "$ORCH_KEY" bench-cold 10 100)
echo "first call on a new session, no warm pool:   $cold"
if [ "$ORCH_RT" = local ]; then
	t0=$(date +%s%N); sbx create bench-floor >/dev/null; t1=$(date +%s%N); sbx destroy bench-floor >/dev/null
	echo "  floor: cold sandbox create (sandboxctl):    $(( (t1 - t0) / 1000000 )) ms"
fi

out=$(cd tests/mcp && node load.mjs "$ORCH_URL/mcp" "$ORCH_KEY" 50 10 bench-load true 2>&1 | tail -1)
echo "sustained calls over 50 sessions (10 s):     $out   (target >= 2000 calls/s)"
orch_stop

# Warm pool: new sessions claim ready sandboxes.
orch_config "pool:" "  min_idle: 10" "  max_parallel: 4" "reap:" "  interval: 200ms"
n0=$(wc -l < "$ORCH_LOG")
orch_start
wait_for 120 bash -c "curl -s -H 'Authorization: Bearer $ORCH_KEY' $ORCH_URL/metrics | grep -qx 'orch_pool_idle 10'"
warm=$(node $M first "$ORCH_URL/mcp" "$ORCH_KEY" bench-pool 10 1500)
echo "first call on a new session, warm pool:      $warm   (target p50 <= 10 ms)"
# Where a claim spends its time (the orchestrator's own log lines): the
# runtime's relabel (the crash-safe record) and its proxy registration.
med() { sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "?"}'; }
lab=$(tail -n +$((n0 + 1)) "$ORCH_LOG" | grep -o 'claimed from pool labels_ms=[0-9]*' | cut -d= -f2 | med)
att=$(tail -n +$((n0 + 1)) "$ORCH_LOG" | grep 'env applied in the pool' | grep -o 'attach_ms=[0-9]*' | cut -d= -f2 | med)
echo "  of which (p50): runtime set_labels ${lab} ms, runtime attach_egress ${att} ms"
orch_stop

# Memory with N idle sessions.
orch_config "pool:" "  min_idle: 0" "limits:" "  max_running: $((N_IDLE + 20))" "  max_creating: 32"
sed -i "s/uid_count: 256/uid_count: $((N_IDLE + 64))/" "$T/orch.yaml"
orch_start
rss0=$(awk '/VmRSS/ {print $2}' /proc/$ORCH_PID/status)
pids=()
for i in $(seq 1 "$N_IDLE"); do
	rest POST /v1/sessions -H 'Content-Type: application/json' -d "{\"id\":\"idle-$i\"}" -o /dev/null &
	pids+=($!)
	if [ $((i % 20)) = 0 ]; then wait "${pids[@]}"; pids=(); fi	# never a bare wait: the daemon is a child too
done
[ ${#pids[@]} -gt 0 ] && wait "${pids[@]}"
n=$(rest GET /v1/sessions | jq '.sessions | length')
rss=$(awk '/VmRSS/ {print $2}' /proc/$ORCH_PID/status)
echo "orchestrator RSS with $n idle sessions:      $((rss / 1024)) MiB (at start $((rss0 / 1024)) MiB; target <= 64 MiB)"
orch_stop
