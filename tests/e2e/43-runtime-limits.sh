#!/usr/bin/env bash
# 43-runtime-limits: cgroup limits on the local runtime (this machine: v1
# controllers, v2 for tracking and cgroup.kill). A memory hog is OOM-killed
# and reported as OOM (by the agent for the job, by the runtime when the
# sandbox itself dies of it); a fork bomb is held by pids.max and the
# sandbox stays usable; 1 GB of output comes back bounded and fast; a
# command that ignores SIGTERM is killed at its timeout with its
# grandchildren; CPU is throttled; the v1 freezer kill path works; v2 mode
# without controllers is refused clearly.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/runtime.sh"
rt_setup
lacks() { ! grep -q -- "$1" <<<"$2"; }
jget() { python3 -c 'import json,sys; v=json.load(sys.stdin); print(json.dumps(eval(sys.argv[1], {"v": v})))' "$1"; }
v1=/sys/fs/cgroup

sbx create --mem 96MiB --pids 64 --cpu 200 sb-l >/dev/null || { fail "create"; exit 1; }

# ---- the limits are in place (v1 here; v2 on a pure v2 host) ----
if [ -d "$v1/memory/$RT_CG/sb-l" ]; then
	CGV=1
	check "mem-limit" [ "$(cat $v1/memory/$RT_CG/sb-l/memory.limit_in_bytes)" = $((96 << 20)) ]
	check "pids-limit" [ "$(cat $v1/pids/$RT_CG/sb-l/pids.max)" = 64 ]
	check "cpu-quota" [ "$(cat $v1/cpu/$RT_CG/sb-l/cpu.cfs_quota_us)" = 20000 ]
	check "tracked-in-v2" [ -n "$(cat $v1/unified/$RT_CG/sb-l/cgroup.procs 2>/dev/null)" ]
	PIDS_MAX=$v1/pids/$RT_CG/sb-l/pids.max PIDS_CUR=$v1/pids/$RT_CG/sb-l/pids.current
	OOMF=$v1/memory/$RT_CG/sb-l/memory.oom_control CPUSTAT=$v1/cpu/$RT_CG/sb-l/cpu.stat
else
	CGV=2
	check "mem-limit" [ "$(cat $v1/$RT_CG/sb-l/memory.max)" = $((96 << 20)) ]
	check "pids-limit" [ "$(cat $v1/$RT_CG/sb-l/pids.max)" = 64 ]
	check "cpu-quota" [ "$(cat $v1/$RT_CG/sb-l/cpu.max)" = "20000 100000" ]
	PIDS_MAX=$v1/$RT_CG/sb-l/pids.max PIDS_CUR=$v1/$RT_CG/sb-l/pids.current
	OOMF=$v1/$RT_CG/sb-l/memory.events CPUSTAT=$v1/$RT_CG/sb-l/cpu.stat
fi

# ---- memory hog: OOM-killed, reported as OOM, sandbox usable ----
r=$(rt_api sb-l POST /v1/jobs '{"command":"head -c 400000000 /dev/zero | tr \"\\\\0\" x | sort >/dev/null"}')
jid=$(jget 'v["id"]' <<<"$r" | tr -d '"')
r=$(RT_API_TIMEOUT=130 rt_api sb-l POST "/v1/jobs/$jid/wait" '{"timeout_ms":120000}')
check "oom-job-ended" lacks '"state":"running"' "$r"
check "oom-job-reported" grep -q '"oom_killed":true' <<<"$r"
check "oom-counted" [ "$(sed -n 's/^oom_kill //p' "$OOMF")" -ge 1 ]
check "oom-sandbox-usable" [ "$(rt_sh sb-l 'echo alive')" = alive ]
check "oom-sandbox-running" bash -c "'$SBX' -c '$T/rt.yaml' list | grep -q '^sb-l	running'"

# ---- fork bomb: held by pids.max, sandbox usable after ----
t0=$(date +%s)
r=$(rt_api sb-l POST /v1/shell '{"command":"b() { b | b & }; b; sleep 100","timeout_ms":4000}')
check "bomb-timed-out" grep -q '"timed_out":true' <<<"$r"
check "bomb-contained" [ "$(cat "$PIDS_MAX")" = 64 ]
usable=0
for _ in $(seq 1 60); do
	[ "$(rt_sh sb-l 'echo alive' 2>/dev/null)" = alive ] && { usable=1; break; }
	sleep 0.5
done
check "bomb-sandbox-usable" [ $usable -eq 1 ]
check "bomb-host-fine" [ "$(echo ok)" = ok ]
check "bomb-pids-bounded" [ "$(cat "$PIDS_CUR")" -le 64 ]

# ---- 1 GB of output: bounded and fast (a sandbox with the default CPU) ----
sbx create sb-big >/dev/null
t0=$(date +%s%N)
rt_api sb-big POST /v1/shell '{"command":"head -c 1000000000 /dev/zero | tr \"\\\\0\" a; echo","timeout_ms":120000}' >"$T/big.json"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
sz=$(stat -c %s "$T/big.json")
check "bigout-bounded" [ "$sz" -lt $((4 << 20)) ]
check "bigout-truncated" grep -q '"truncated":true' "$T/big.json"
check "bigout-dropped-count" python3 -c "
import json,sys; v=json.load(open(sys.argv[1])); assert v['dropped_bytes'] > 990000000, v['dropped_bytes']" "$T/big.json"
check "bigout-fast" [ "$ms" -lt 60000 ]
echo "# 1 GB output: ${ms} ms, response $sz bytes"

sbx destroy sb-big

# ---- SIGTERM-ignoring command with grandchildren: killed at its timeout ----
rt_sh sb-l 'KEEP=me; cd /tmp' >/dev/null
r=$(rt_api sb-l POST /v1/shell '{"command":"trap \"\" TERM; (trap \"\" TERM; sleep 1001) & sh -c \"trap \\\"\\\" TERM; sleep 1002 & sleep 1003\" & sleep 1004","timeout_ms":1500}')
check "term-ignorer-timed-out" grep -q '"timed_out":true' <<<"$r"
gone=0
for _ in $(seq 1 40); do
	if ! rt_pids sb-l | while read -r p; do tr '\0' ' ' </proc/$p/cmdline 2>/dev/null; echo; done | grep -q 'sleep 100[1-4]'; then gone=1; break; fi
	sleep 0.25
done
check "term-ignorer-tree-killed" [ $gone -eq 1 ]
st=$(rt_sh sb-l 'echo $KEEP $PWD')
if [ "$st" = "me /tmp" ]; then ok "shell-state-kept"; else fail "shell-state-kept" "got '$st' after: $r"; fi

# ---- CPU quota throttles ----
rt_api sb-l POST /v1/shell '{"command":"timeout 2 sh -c \"while :; do :; done\"; true","timeout_ms":10000}' >/dev/null
check "cpu-throttled" [ "$(sed -n 's/^nr_throttled //p' "$CPUSTAT")" -gt 0 ]

# ---- a sandbox that died after OOM kills is reported as failed: oom ----
# (the OOM killer picks the biggest process, never our agent, so the agent
# is then killed by hand, from the host: the runtime sees a dead sandbox whose cgroup
# counted OOM kills)
sbx create --mem 48MiB sb-o >/dev/null
r=$(rt_api sb-o POST /v1/jobs '{"command":"head -c 300000000 /dev/zero | tr \"\\\\0\" x | sort >/dev/null"}')
jid=$(jget 'v["id"]' <<<"$r" | tr -d '"')
r=$(RT_API_TIMEOUT=130 rt_api sb-o POST "/v1/jobs/$jid/wait" '{"timeout_ms":120000}')
check "oom2-job-reported" grep -q '"oom_killed":true' <<<"$r"
check "oom2-still-running" bash -c "'$SBX' -c '$T/rt.yaml' list | grep -q '^sb-o	running	busybox	-'"
# from the host: the sandbox cannot reach its agent (agent/nest.c)
kill -9 "$(pgrep -P "$(awk '{print $3}' "$RT_STATE/sb-o/pid")" | head -n1)"
died=0
for _ in $(seq 1 100); do
	sbx list | grep -q '^sb-o	failed	busybox	oom' && { died=1; break; }
	sleep 0.2
done
check "runtime-reports-oom" [ $died -eq 1 ]
check "oom-failed-then-start" sbx start sb-o
check "oom-restarted-usable" [ "$(rt_sh sb-o 'echo alive')" = alive ]
sbx destroy sb-o

if [ $CGV = 1 ]; then
# ---- the v1 freezer path (no v2 tracking) kills everything ----
	export SANDBOX_CG_NO_UNIFIED=1
	sbx create sb-f >/dev/null
	check "v1-only-not-in-v2" [ ! -d "$v1/unified/$RT_CG/sb-f" ]
	rt_api sb-f POST /v1/jobs '{"command":"sleep 1005 & sleep 1006"}' >/dev/null
	pids=$(cat $v1/pids/$RT_CG/sb-f/cgroup.procs | tr '\n' ' ')
	check "v1-tracked" [ "$(wc -w <<<"$pids")" -ge 3 ]
	sbx stop sb-f
	check "v1-stop-kills" bash -c "$(declare -f rt_alive); ! rt_alive $pids"
	sbx start sb-f
	check "v1-restart" [ "$(rt_sh sb-f 'echo alive')" = alive ]
	pids=$(cat $v1/pids/$RT_CG/sb-f/cgroup.procs | tr '\n' ' ')
	sbx destroy sb-f
	check "v1-destroy-kills" bash -c "$(declare -f rt_alive); ! rt_alive $pids"
	check "v1-destroy-cgroups" [ ! -d "$v1/pids/$RT_CG/sb-f" ] && [ ! -d "$v1/memory/$RT_CG/sb-f" ]
	unset SANDBOX_CG_NO_UNIFIED
	
else
	skip "v1-freezer-path" "this host has no cgroup v1 hierarchies"
fi

# ---- v2 mode without controllers is refused clearly ----
out=$(SANDBOX_CGROUP_MODE=v2 sbx list 2>&1); rc=$?
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
	check "v2-mode-usable" [ $rc -eq 0 ]
else
	check "v2-mode-refused" bash -c "[ $rc -ne 0 ] && grep -q 'no memory, pids and cpu controllers' <<<'$out'"
fi
out=$(SANDBOX_CGROUP_MODE=bogus sbx list 2>&1); rc=$?
check "bad-cgroup-mode" [ $rc -ne 0 ]

# ---- disk limit: an ext4 image per sandbox (opt-in: --disk / disk_bytes) ----
out=$(sbx create --disk 1MiB sb-dtiny 2>&1); rc=$?
check "disk-too-small-refused" bash -c '[ "$1" -ne 0 ] && grep -qF "disk 1MiB is outside the local runtime'"'"'s bounds (16MiB" <<<"$2"' _ "$rc" "$out"
if sbx create --disk 32MiB sb-d >/dev/null && sbx create --disk 32MiB sb-d2 >/dev/null; then
	img=$RT_STATE/sb-d/disk.img
	check "disk-image-sized" [ "$(stat -c %s "$img")" = 33554432 ]
	out=$(rt_sh sb-d 'echo keep > /workspace/k; dd if=/dev/zero of=/workspace/big bs=1M count=64 2>&1; echo rc=$?')
	check "disk-full-enospc" grep -q 'No space left on device' <<<"$out"
	check "disk-full-fails" grep -q 'rc=1' <<<"$out"
	check "disk-image-bounded" [ "$(du -k "$img" | cut -f1)" -le 33000 ]
	out=$(rt_sh sb-d 'rm -f /workspace/big; dd if=/dev/zero of=/big bs=1M count=64 2>&1; echo rc=$?; rm -f /big; echo fine')
	check "disk-root-also-limited" grep -q 'No space left on device' <<<"$out"
	check "disk-sandbox-usable-after" grep -q '^fine$' <<<"$out"
	out=$(rt_sh sb-d2 'dd if=/dev/zero of=/workspace/w bs=1M count=8 2>&1; echo rc=$?')
	check "disk-other-sandbox-unaffected" grep -q 'rc=0' <<<"$out"
	sbx create sb-nd >/dev/null
	out=$(rt_sh sb-nd 'dd if=/dev/zero of=/workspace/w bs=1M count=40 2>&1; echo rc=$?; rm -f /workspace/w')
	check "disk-unlimited-sandbox-unaffected" grep -q 'rc=0' <<<"$out"
	check "disk-no-host-mount" bash -c "! grep -q '$RT_STATE/sb-d' /proc/self/mountinfo"
	sbx stop sb-d && sbx start sb-d || fail "disk-stop-start"
	check "disk-workspace-survives" [ "$(rt_sh sb-d 'cat /workspace/k')" = keep ]
	sbx destroy sb-d; sbx destroy sb-d2
	check "disk-destroy-frees" [ ! -e "$img" ]
	check "disk-loop-detached" wait_for 20 bash -c "! losetup -a | grep -q '$RT_STATE/sb-d/'"
else
	fail "disk-create" "create --disk 32MiB failed"
fi
