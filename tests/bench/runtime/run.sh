#!/usr/bin/env bash
# tests/bench/runtime/run.sh: local runtime figures (make bench), beside the
# floor measured in the same run:
#   cold create to first command p50/p99   vs  bare bwrap start-and-exit
#     (same namespaces and mounts, spawned without a shell: bench floor)
#   shell round trip for `true` p50/p99    vs  a bash pipe round trip
#   agent resident memory
#   idle sandboxes held and host memory per sandbox (BENCH_IDLE, default 500)
# Uses the busybox test image. Needs root. Figures, not a gate.
#   BENCH_CREATE=30 BENCH_RTT=1000 BENCH_IDLE=500 bash tests/bench/runtime/run.sh
set -u
cd "$(dirname "$0")/../../.."
TOP=$PWD
B=${B:-build}
. tests/lib/common.sh
. tests/lib/runtime.sh
NC=${BENCH_CREATE:-30} NR=${BENCH_RTT:-1000} NI=${BENCH_IDLE:-500}

make -s -j2 "$B/orchestrator/sandboxctl" "$B/agent/sandbox-agent" || exit 1
RT_UID_BASE=5000000 RT_UID_COUNT=$((NI + 100))
rt_setup
gcc -O2 -std=c11 -D_GNU_SOURCE -Icommon -Iorchestrator -I/usr/share/include/llhttp \
	$(pkg-config --cflags libcjson) tests/bench/runtime/bench_runtime.c \
	$(for s in orchestrator/runtime/local/*.c; do [ "${s##*/}" = sandboxctl.c ] || echo "$B/${s%.c}.o"; done) \
	"$B"/orchestrator/runtime/runtime.o "$B"/orchestrator/lib/agentc.o "$B"/orchestrator/lib/egress.o \
	"$B"/llhttp/*.o \
	"$B"/common/*.o $(pkg-config --libs libcjson yaml-0.1 openssl libcurl) -pthread \
	-o "$T/bench" 2>"$T/cc.log" || { cat "$T/cc.log"; exit 1; }

echo "local runtime benchmark ($(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg))"
# ---- floor: bare bwrap start-and-exit, same namespaces and mounts ----
"$T/bench" floor "$NC" "$RT_BB"
"$T/bench" -c "$T/rt.yaml" create "$NC"
# ---- where create time goes: the runtime's step timings (sandboxctl -v), medians ----
for i in $(seq 1 "${BENCH_STEPS:-15}"); do
	sbx -v create "bench-s$i" 2>&1 | grep ' create:'
	sbx destroy "bench-s$i"
done | awk '{ for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2 && kv[2] ~ /^[0-9.]+$/) {
		if (!(kv[1] in n)) order[++k] = kv[1]; v[kv[1], ++n[kv[1]]] = kv[2] } }
	END { printf "%-34s", "create steps, median ms"
	for (j = 1; j <= k; j++) { key = order[j]; m = n[key]
		for (a = 1; a <= m; a++) x[a] = v[key, a]
		for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (x[b] < x[a]) { t = x[a]; x[a] = x[b]; x[b] = t }
		printf " %s=%s", key, x[int((m + 1) / 2)] }
	printf "\n" }'
"$T/bench" -c "$T/rt.yaml" pipe "$NR"
"$T/bench" -c "$T/rt.yaml" rtt "$NR"
# ---- agent resident memory (the rtt sandbox, after its 1000 calls) ----
cp=$(awk '{print $3}' "$RT_STATE/bench-rtt/pid")
ap=$(cat /proc/"$cp"/task/"$cp"/children | awk '{print $1}')
printf '%-34s %s kB (pid 1 bwrap %s kB, shell %s kB)\n' "agent resident memory (VmRSS)" \
	"$(awk '/^VmRSS/ {print $2}' /proc/"$ap"/status)" "$(awk '/^VmRSS/ {print $2}' /proc/"$cp"/status)" \
	"$(for c in $(cat /proc/"$ap"/task/"$ap"/children); do awk '/^VmRSS/ {print $2}' /proc/$c/status; done | head -1)"
sbx destroy bench-rtt
# ---- idle sandboxes ----
"$T/bench" -c "$T/rt.yaml" idle "$NI"
n=$(ls "$RT_STATE" | wc -l)
echo "destroying $n sandboxes..."
t0=$(date +%s)
for d in "$RT_STATE"/*/; do sbx destroy "$(basename "$d")" & [ $(jobs -r | wc -l) -ge 8 ] && wait -n; done; wait
echo "destroyed in $(( $(date +%s) - t0 )) s"
