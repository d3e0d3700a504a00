#!/usr/bin/env bash
# tests/bench/density/run.sh: how many idle Debian sandboxes one host holds
# and what the product costs as they add up (issue 31 part 5). Through the
# product: a real egress proxy and an orchestrator on the local runtime,
# sessions made by REST POST /v1/sessions with default options and the
# Debian image (scripts/build-image.sh; /var/lib/sandbox/images/default),
# from DENSITY_CONC clients at once. At 100, 1,000 and DENSITY_MAX (default
# 2000) it prints: sandboxes held, host memory per sandbox (MemAvailable
# delta / count), creates/s and create p50/p99 of the step, MCP shell
# `true` p50/p99 on a session made first, a new session's first call
# (cold: pool.min_idle 0, the default), the heal's cost (proxy admin
# requests in the step), loop devices and kernel threads added.
# Limits lifted for it: 16 MiB sandboxes, limits.max_running, uid_count
# and local.mem_overcommit large (until admission counts what an idle
# sandbox really uses).
# Everything it made (sandboxes, their loop devices and mounts, cgroups,
# state) goes at exit, interrupted or not. Takes about 10 minutes at 2,000
# on 2 cores; root only.
#   B=build bash tests/bench/density/run.sh
#   DENSITY_MAX=5000 DENSITY_CONC=8 B=build bash tests/bench/density/run.sh
set -u
cd "$(dirname "$0")/../../.."
export TOP=$PWD
. tests/lib/common.sh
MAX=${DENSITY_MAX:-2000}
CONC=${DENSITY_CONC:-8}
IMG=${SANDBOX_DEFAULT_IMAGE_DIR:-/var/lib/sandbox/images/default}
[ "$(id -u)" = 0 ] || { echo "density: skipped (needs root)"; exit 0; }
[ -x "$IMG/usr/bin/apt-get" ] || { echo "density: skipped (no Debian image at $IMG; scripts/build-image.sh)"; exit 0; }
export ORCH_TEST_RUNTIME=local
. tests/mcp/orch-lib.sh
M=tests/bench/orchestrator/bench.mjs
D=tests/bench/density/density.py
PROXY=$BIN/egress-proxy/egress-proxy

on_exit orch_mass_cleanup

# ---- the proxy (-v: one log line per admin request) ----
PP=$(free_port)
cat >"$T/p.yaml" <<YAML
listen: 127.0.0.1:$PP
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key}
addon_watch: 0
log:
  file: $T/proxy.log
YAML
"$PROXY" -d -v -f "$T/p.yaml" >"$T/proxy.stderr" 2>&1 & track_pid $!
wait_port "$PP" 20 && wait_for 10 test -S "$T/admin.sock" ||
	{ echo "proxy did not start: $(tail -3 "$T/proxy.stderr")"; exit 1; }

"$SBX" -c "$T/rt.yaml" image add debian "$IMG" >/dev/null || { echo "image add failed"; exit 1; }
orch_config "  proxy_admin_socket: $T/admin.sock" "  proxy_ca_cert: $T/ca.crt" \
	"  mem_overcommit: 100000" "limits:" "  max_running: $((MAX + 200))"
sed -i -e 's/^  default_image: busybox/  default_image: debian/' \
	-e 's/^  mem_bytes: 512MiB/  mem_bytes: 16MiB/' \
	-e "s/^  uid_count: 256/  uid_count: $((MAX + 300))/" "$T/orch.yaml"
sed -i -e "s/^  uid_count: 256/  uid_count: $((MAX + 300))/" "$T/rt.yaml"
orch_start || { echo "orchestrator did not start: $(tail -5 "$T/orch.stderr" "$ORCH_LOG")"; exit 1; }

avail() { awk '/^MemAvailable:/ {print $2}' /proc/meminfo; }
# what the sandboxes' cgroups hold, KiB (v1 memory, else v2): not moved by
# the rest of a shared host, as MemAvailable is
cgmem() {
	local f
	for f in /sys/fs/cgroup/memory/"$ORCH_CG"/memory.usage_in_bytes /sys/fs/cgroup/"$ORCH_CG"/memory.current; do
		[ -r "$f" ] && { echo $(( $(cat "$f") / 1024 )); return; }
	done
	echo 0
}
loops() { losetup -a 2>/dev/null | wc -l; }
kthreads() { ps -e -o ppid= | awk '$1 == 2' | wc -l; }
admin_reqs() { grep -c 'admin op=stats' "$T/proxy.log" 2>/dev/null; }
held() { ls "$ORCH_SBX_DIR" | grep -vc '^\.'; }
jf() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d.get(sys.argv[2]))' "$1" "$2"; }

echo "density: machine $(nproc) cores, $(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 )) MiB; load $(cut -d' ' -f1-3 /proc/loadavg); max $MAX, $CONC clients"
av0=$(avail); lo0=$(loops); kt0=$(kthreads)
URL=$ORCH_URL
n=0
for goal in 100 1000 "$MAX"; do
	[ "$goal" -gt "$MAX" ] && goal=$MAX
	[ "$goal" -le "$n" ] && continue
	a0=$(admin_reqs); t0=$(date +%s)
	out=$(python3 "$D" create "$URL" "$ORCH_KEY" dens "$n" "$goal" "$CONC")
	rc=$?
	n=$goal
	a1=$(admin_reqs); t1=$(date +%s)
	h=$(held)
	sleep 5	# let the last creates settle before the memory reading
	rtt=$(node $M rtt "$URL/mcp" "$ORCH_KEY" dens-0 500 2>&1 | tail -1)
	first=$(node $M first "$URL/mcp" "$ORCH_KEY" "dens-new-$goal" 5 200 2>&1 | tail -1)
	av=$(avail)
	echo "== at $goal (held $h sandboxes, load $(cut -d' ' -f1 /proc/loadavg))"
	echo "  creates: $(jf "$out" ok) ok, $(jf "$out" failed) failed, $(jf "$out" per_s)/s; create p50 $(jf "$out" p50_ms) ms p99 $(jf "$out" p99_ms) ms"
	[ "$rc" = 0 ] || echo "  first create error: $(jf "$out" error)"
	echo "  host memory per sandbox: $(( (av0 - av) / (h > 0 ? h : 1) )) KiB (MemAvailable $(( (av0 - av) / 1024 )) MiB less; moved by anything else on the host too); charged to the sandboxes' cgroups: $(( $(cgmem) / (h > 0 ? h : 1) )) KiB each"
	echo "  MCP shell 'true' warm: $rtt"
	echo "  new session's first call: $first"
	echo "  proxy stats requests (the heal): $((a1 - a0)) in $((t1 - t0)) s"
	echo "  loop devices +$(( $(loops) - lo0 )), kernel threads +$(( $(kthreads) - kt0 ))"
	[ "$rc" = 0 ] || break
done
grep -q 'reply too large' "$ORCH_LOG" && echo "  orchestrator log: 'reply too large' $(grep -c 'reply too large' "$ORCH_LOG") times"
t0=$(date +%s)
orch_mass_cleanup
echo "density: cleanup $(( $(date +%s) - t0 )) s; loop devices left +$(( $(loops) - lo0 ))"
exit 0
