#!/usr/bin/env bash
# 44-runtime-survival: sandboxes outlive the process that created them (kill
# -9), a new sandboxctl lists and adopts them with their labels, a running
# job's output is complete after its client died; a create killed mid-way is
# listed as failed and destroy cleans it; a sandbox killed from outside is
# listed as failed and starts again; pid reuse never makes a stranger look
# like (or be killed as) a sandbox; interrupted removals are finished.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/runtime.sh"
rt_setup
lacks() { ! grep -q -- "$1" <<<"$2"; }

# ---- the creator is killed with -9; the sandboxes live on ----
( sbx create --label session=s1 sb-1 >/dev/null; sbx create --label session=s2 sb-2 >/dev/null; touch "$T/created"; exec sleep 300 ) &
creator=$!
wait_for 60 test -f "$T/created" || fail "creator" "creates did not finish"
kill -9 "$creator"; wait "$creator" 2>/dev/null
out=$(sbx list)
check "adopt-list" bash -c "grep -q '^sb-1	running	busybox	-	session=s1' <<<'$out' && grep -q '^sb-2	running	busybox	-	session=s2' <<<'$out'"
check "adopt-exec" [ "$(rt_sh sb-1 'echo alive')" = alive ]
p1=$(awk '{print $1}' "$RT_STATE/sb-1/pid")
check "sandbox-not-child-of-creator" [ "$(awk '{print $4}' /proc/$p1/stat)" != "$creator" ]
check "sandbox-own-session" [ "$(ps -o sid= -p "$p1" | tr -d ' ')" != "$(ps -o sid= -p $$ | tr -d ' ')" ]

# ---- a job's output is complete after its client was killed ----
r=$(rt_api sb-1 POST /v1/jobs '{"command":"for i in $(seq 1 40); do echo line-$i; sleep 0.05; done"}')
jid=$(sed -n 's/.*"id":"\([^"]*\)".*/\1/p' <<<"$r")
check "job-started" [ -n "$jid" ]
rt_api sb-1 POST "/v1/jobs/$jid/wait" '{"timeout_ms":30000}' >/dev/null &
client=$!
sleep 0.3
kill -9 "$client"; wait "$client" 2>/dev/null
r=$(rt_api sb-1 POST "/v1/jobs/$jid/wait" '{"timeout_ms":30000}')
check "job-exited" grep -q '"state":"exited"' <<<"$r"
out=$(rt_api sb-1 GET "/v1/jobs/$jid?offset=0")
check "job-output-complete" python3 -c "
import json,sys; o=json.loads(sys.argv[1])['output'].split()
assert o == ['line-%d' % i for i in range(1, 41)], o" "$out"
# the spools live in the sandbox's disk image (on by default), not on the host
check "job-spool-in-disk-image" [ -z "$(find "$RT_STATE/sb-1/agent/state" -name output 2>/dev/null)" ]

# ---- a sandbox killed from outside: failed, then starts again ----
rt_sh sb-2 'echo kept > /workspace/k' >/dev/null
c2=$(awk '{print $3}' "$RT_STATE/sb-2/pid")
kill -9 "$c2"
wait_for 20 bash -c "'$SBX' -c '$T/rt.yaml' list | grep -q '^sb-2	failed	busybox	exited'"
check "killed-is-failed" bash -c "'$SBX' -c '$T/rt.yaml' list | grep -q '^sb-2	failed	busybox	exited'"
check "killed-restarts" sbx start sb-2
check "killed-workspace-kept" [ "$(rt_sh sb-2 'cat /workspace/k')" = kept ]

# ---- pid reuse: a stranger with a recorded pid is neither running nor killed ----
sleep 300 & stranger=$!
track_pid $stranger
c2=$(awk '{print $3}' "$RT_STATE/sb-2/pid")
sbx stop sb-2
sed -i 's/"phase":"stopped"/"phase":"running"/' "$RT_STATE/sb-2/record.json"
echo "$stranger 1 $stranger 1 1" >"$RT_STATE/sb-2/pid"
check "reused-pid-not-running" bash -c "'$SBX' -c '$T/rt.yaml' list | grep -q '^sb-2	failed'"
sbx stop sb-2
check "reused-pid-not-killed" kill -0 "$stranger"
check "after-reuse-starts" sbx start sb-2

# ---- create killed mid-way: listed as failed, destroy cleans ----
cat >"$T/hang.c" <<'C'
#include <unistd.h>
int main(void) { for (;;) pause(); }
C
if gcc -static -O1 -o "$T/hang-agent" "$T/hang.c" 2>/dev/null; then
	chmod 755 "$T/hang-agent"
	sed "s|agent_bin: .*|agent_bin: $T/hang-agent|" "$T/rt.yaml" >"$T/hang.yaml"
	"$SBX" -c "$T/hang.yaml" create sb-h >/dev/null 2>&1 &
	mk=$!
	wait_for 30 test -s "$RT_STATE/sb-h/pid"
	out=$(sbx list)
	check "mid-create-is-creating" grep -q '^sb-h	creating' <<<"$out"
	kill -9 "$mk"; wait "$mk" 2>/dev/null
	out=$(sbx list)
	check "interrupted-create-failed" grep -q '^sb-h	failed	busybox	create interrupted' <<<"$out"
	hp=$(rt_pids sb-h | tr '\n' ' ')
	check "interrupted-has-processes" [ -n "$hp" ]
	sbx destroy sb-h
	check "interrupted-destroyed" [ ! -e "$RT_STATE/sb-h" ]
	check "interrupted-processes-gone" bash -c "$(declare -f rt_alive); ! rt_alive $hp"
	check "interrupted-cgroups-gone" bash -c "! ls -d /sys/fs/cgroup/*/$RT_CG/sb-h /sys/fs/cgroup/unified/$RT_CG/sb-h 2>/dev/null | grep -q ."
else
	fail "hang-agent-build" "gcc -static failed"
fi

# ---- a bare directory (crash before the record) and an interrupted removal ----
mkdir -p "$RT_STATE/sb-x"
out=$(sbx list)
check "bare-dir-failed" grep -q '^sb-x	failed	-	incomplete state' <<<"$out"
sbx destroy sb-x
check "bare-dir-destroyed" [ ! -e "$RT_STATE/sb-x" ]
mkdir -p "$RT_STATE/.gone-sb-y-1/upper/deep"
sbx list >/dev/null
check "interrupted-removal-finished" [ ! -e "$RT_STATE/.gone-sb-y-1" ]

for id in sb-1 sb-2; do sbx destroy "$id"; done
check "all-gone" [ -z "$(ls "$RT_STATE")" ]
