#!/usr/bin/env bash
# tests/bench/orchestrator/load-hostile.sh: the orchestrator under hostile
# load (issue 13; figures, not a gate): 2,000 idle client connections held
# open (from four loopback source addresses, 500 each, within
# http.max_conns_per_addr) while 100 active sessions each make a `shell`
# call every 100 ms; prints the p50/p99 of those calls (target p99 <= 50
# ms), then the same with no idle connections, and the daemon's CPU and
# memory. On the local runtime (fake with ORCH_TEST_RUNTIME=fake).
#   B=build bash tests/bench/orchestrator/load-hostile.sh
set -u
cd "$(dirname "$0")/../../.."
export TOP=$PWD
. tests/lib/common.sh
. tests/mcp/orch-lib.sh
N_SESS=${BENCH_SESSIONS:-100}
N_IDLE=${BENCH_IDLE_CONNS:-2000}
SECS=${BENCH_SECONDS:-15}
PERIOD=${BENCH_PERIOD_MS:-100}
P=tests/bench/orchestrator/paced.mjs

orch_config "pool:" "  min_idle: 0" "limits:" "  max_running: $((N_SESS + 10))" "  max_creating: 16" \
    "http:" "  idle_timeout: 30m"
sed -i "s/uid_count: 256/uid_count: $((N_SESS + 64))/" "$T/orch.yaml"
orch_start || { echo "orchestrator did not start"; exit 1; }
echo "runtime: $ORCH_RT   machine: $(nproc) cores, $(uptime | sed 's/.*load/load/')"

cpu_ms() { awk '{print int(($14 + $15) * 1000 / '"$(getconf CLK_TCK)"')}' /proc/$ORCH_PID/stat; }
run() {
	(cd tests/mcp && node "$TOP/$P" "$ORCH_URL/mcp" "$ORCH_KEY" "$N_SESS" "$SECS" "$PERIOD" "$1" 2>&1 | tail -1)
}

# Sandboxes first (and a warm-up round), so both runs measure calls only.
run warm >/dev/null
out=$(run warm)
echo "$N_SESS sessions, one shell call per ${PERIOD} ms each, no idle connections:  $out"

exec 7> >(ulimit -n $((N_IDLE + 200)); python3 tests/mcp/hostile.py hold 127.0.0.1 "$ORCH_PORT" \
    "$N_IDLE" 3600 idle 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 > "$T/hold" 2>&1)
wait_for 60 grep -q '^held' "$T/hold"
conns=$(curl -s -H "Authorization: Bearer $ORCH_KEY" "$ORCH_URL/metrics" | awk '/^orch_http_connections / {print $2}')
echo "idle connections held: $(sed -n 's/^held //p' "$T/hold") (orch_http_connections $conns)"
c0=$(cpu_ms)
out=$(run warm)
c1=$(cpu_ms)
echo "$N_SESS sessions, one shell call per ${PERIOD} ms each, $N_IDLE idle connections: $out   (target p99 <= 50 ms)"
echo "  daemon CPU during the run: $(( (c1 - c0) / SECS )) ms/s; RSS $(( $(awk '/VmRSS/ {print $2}' /proc/$ORCH_PID/status) / 1024 )) MiB"
exec 7>&-
orch_stop
