#!/usr/bin/env bash
# tests/bench/homes/run.sh: what a home adds to a warm-pool claim (make
# bench), side by side in one run through the real orchestrator on the
# local runtime: the first tool call (`echo`) of a new session that claims
# a warm sandbox, p50/p90, without a user and with a user whose home
# exists (made beforehand, so mkfs is not counted), interleaved so both
# see the same load; plus the orchestrator's own home_ms (attach + HOME)
# p50. Target: a home adds <= 5 ms at p50. Needs root. Figures, not a gate.
#   BENCH_HOMES_N=30 bash tests/bench/homes/run.sh
set -u
cd "$(dirname "$0")/../../.."
TOP=$PWD
B=${B:-build}
BIN=$B
. tests/lib/common.sh
N=${BENCH_HOMES_N:-30}
if [ "$(id -u)" != 0 ]; then echo "skip: needs root"; exit 0; fi
make -s -j2 "$B/orchestrator/orchestrator" "$B/orchestrator/sandboxctl" "$B/agent/sandbox-agent" || exit 1
ORCH_TEST_RUNTIME=local
. tests/mcp/orch-lib.sh

orch_config "pool:" "  min_idle: 2" "  max_parallel: 2" "homes:" "  size: 256MiB"
orch_start || { echo "orchestrator did not start"; exit 1; }
idle() { curl -s -H "Authorization: Bearer $ORCH_KEY" "$ORCH_URL/metrics" | awk '$1 == "orch_pool_idle" {print $2}'; }
call() {	# SID USER: seconds of the first call
	local uh=()
	[ -n "$2" ] && uh=(-H "X-User-Id: $2")
	mcp_post -H "X-Session-Id: $1" "${uh[@]}" -o "$T/out" -w '%{time_total}\n' \
	    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo hi"}}}'
}
pool_full() { [ "$(idle)" = 2 ]; }
full() { wait_until 60 pool_full || echo "pool did not refill (idle=$(idle))"; }
# homes made beforehand (first use runs mkfs: not what a claim costs)
for u in 0 1 2 3; do full; call "pre-$u" "bu-$u" >/dev/null; rest DELETE "/v1/sessions/pre-$u" >/dev/null; done
: > "$T/nohome"; : > "$T/home"
for i in $(seq 1 "$N"); do
	full; call "nh-$i" "" >> "$T/nohome"
	grep -q '"hi' "$T/out" || grep -q 'hi' "$T/out" || echo "call nh-$i failed: $(head -c 200 "$T/out")"
	full; call "h-$i" "bu-$((i % 4))" >> "$T/home"
	grep -q 'hi' "$T/out" || echo "call h-$i failed: $(head -c 200 "$T/out")"
	rest DELETE "/v1/sessions/nh-$i" >/dev/null; rest DELETE "/v1/sessions/h-$i" >/dev/null
done
claims_nh=$(grep -c 'session=nh-.* claimed from pool' "$ORCH_LOG")
claims_h=$(grep -c 'session=h-.* claimed from pool' "$ORCH_LOG")
pct() { sort -n "$1" | awk -v p="$2" '{v[NR]=$1} END {i=int(NR*p/100+0.5); if (i<1) i=1; printf "%.1f", v[i]*1000}'; }
grep -o 'session=h-[0-9]* sandbox=[^ ]* home attached user=[^ ]* home_ms=[0-9]*' "$ORCH_LOG" |
    sed 's/.*home_ms=//' > "$T/home_ms"
nh50=$(pct "$T/nohome" 50) h50=$(pct "$T/home" 50)
echo "homes benchmark ($(nproc) cores, $(uname -r)); uptime:$(uptime | sed 's/.*load/ load/')"
printf '%-52s p50 %7s ms  p90 %7s ms  (%s of %s claims)\n' "warm claim + first call, no user" "$nh50" "$(pct "$T/nohome" 90)" "$claims_nh" "$N"
printf '%-52s p50 %7s ms  p90 %7s ms  (%s of %s claims)\n' "warm claim + first call, user with a home" "$h50" "$(pct "$T/home" 90)" "$claims_h" "$N"
printf '%-52s p50 %7s ms\n' "home attach + HOME (orchestrator home_ms)" "$(sort -n "$T/home_ms" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
# where an attach's time goes (runtime/local/home.c's log line), p50 in ms
for f in ns loop mount move; do
	grep -o "home user=bu-[0-9]* sandbox=[^ ]* attached .* ${f}_us=[0-9]*" "$ORCH_LOG" |
	    sed "s/.*${f}_us=//" | sort -n | awk -v f="$f" '{v[NR]=$1} END {if (NR) printf "  attach: %-6s p50 %6.2f ms\n", f, v[int((NR+1)/2)]/1000}'
done
awk -v a="$nh50" -v b="$h50" 'BEGIN { printf "a home adds %.1f ms at p50 (target <= 5 ms): %s\n", b - a, (b - a <= 5) ? "met" : "NOT met" }'
orch_stop
