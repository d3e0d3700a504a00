#!/usr/bin/env bash
# 34-agent-pid1: the agent as PID 1 of a fresh pid namespace (as in a
# Kubernetes container): it reaps every orphan, jobs and the shell work,
# the sandbox's own processes can neither stop it (signals from inside are
# ignored) nor trace it (not dumpable), and SIGTERM from outside takes the
# whole namespace down.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/agent.sh"

if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
	skip "agent as PID 1" "cannot create a pid namespace here"
	exit 0
fi
mkdir -p "$T/ws" "$T/state"
unshare --pid --fork --mount-proc --kill-child "$AGENT" -d --listen "unix:$SOCK" \
    --state "$T/state" --workdir "$T/ws" >>"$T/agent.log" 2>&1 &
upid=$!
track_pid $upid
check "agent up in its own pid namespace" wait_for 20 curl -sf --unix-socket "$SOCK" http://a/v1/health
api GET /v1/health
check "agent is PID 1" test "$(j .pid)" = 1

# Orphans (double forks) get reparented to PID 1 and must be reaped.
sh_run 'for i in $(seq 20); do (sh -c "sleep 0.2 &" &); done; sleep 1; ps -eo stat= | grep -c "^Z" || true'
check "orphans reaped: no zombies" test "$(j .output)" = 0
sh_run 'ps -o ppid= -p $$; ps -o comm= -p 1'
check "the shell runs under PID 1" test "$(j .output | tr -d ' ' | tr '\n' ' ' | cut -c1-15)" = "1 sandbox-agent"

id=$(job_start 'sleep 0.3; echo job-in-ns; exit 2')
job_wait "$id"
check "a job in the namespace: exit 2" test "$(j .exit_code)" = 2
sh_run 'sleep 100' 500
check "timeout works as PID 1" test "$(j .timed_out)" = true

# The sandbox's own processes cannot stop or trace PID 1 (as on Kubernetes,
# where the agent is the container's init): signals from inside are
# ignored, and it is not dumpable.
sh_run 'kill -TERM 1; kill -INT 1; kill -HUP 1; kill -STOP 1; sleep 0.3; echo sent'
check "signals from inside the namespace: sent" test "$(j .output)" = sent
api GET /v1/health
check "signals from inside the namespace: agent still answers" test "$(j .pid)" = 1
check "signals from inside logged once" test "$(grep -c 'inside the sandbox ignored' "$T/agent.log")" = 1
# (root here holds every capability: without CAP_SYS_PTRACE, as a sandbox)
sh_run "setpriv --bounding-set -sys_ptrace --inh-caps -sys_ptrace -- python3 $TOP/tests/fixtures/pid1probe.py"
j .output >"$T/probe.out"
check "PID 1 not dumpable: ptrace, /proc/1/mem and pidfd_getfd refused without CAP_SYS_PTRACE" \
    bash -c "grep -q '^ptrace -1 ' $T/probe.out && grep -q '^getfd -1 ' $T/probe.out && grep -q '^mem-open ' $T/probe.out && ! grep -qx 'mem-open ok' $T/probe.out"

# SIGTERM to the agent (PID 1 inside) from outside ends everything.
id=$(job_start 'sleep 241')
apid=$(pgrep -P $(pgrep -P $upid -x unshare || echo $upid) -f sandbox-agent || true)
[ -n "$apid" ] || apid=$(pgrep -f "sandbox-agent -d --listen unix:$SOCK" | head -1)
kill -TERM "$apid"
check "SIGTERM: agent gone" wait_for 10 bash -c "! kill -0 $apid 2>/dev/null"
# The kernel kills the rest of the namespace when PID 1 exits: not at once.
check "SIGTERM: its job is gone too" wait_for 10 bash -c '! pgrep -f "^sleep 241$" >/dev/null'
