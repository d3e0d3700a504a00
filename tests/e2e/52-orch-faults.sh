#!/usr/bin/env bash
# 52-orch-faults.sh: crash safety. kill -9 of the orchestrator during a
# running async job and during sandbox creation; orphans and lost sandboxes
# fixed by reconcile; SIGTERM drains and leaves sandboxes running.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

orch_config "reconcile:" "  interval: 1s" "reap:" "  interval: 500ms" "drain_timeout: 20s"
check "orch starts" orch_start

# --- kill -9 during a running async job ---
out=$(mcp_tool job-s shell '{"command":"export KEEP=still-here; cd /tmp"}')
out=$(mcp_tool job-s shell_async '{"command":"for i in $(seq 1 40); do echo tick$i; sleep 0.1; done; echo job-end; exit 5"}')
jid=$(echo "$out" | sed -n 's/^Started job \([^ ]*\).*/\1/p')
check "async job started" [ -n "$jid" ]
sleep 0.7
before=$(sandboxes | sort)
orch_kill9
check "sandbox survives the orchestrator" [ "$(running_sandboxes)" = 1 ]
check "orch restarts" orch_start
out=$(mcp_tool job-s shell_wait "{\"job_id\":\"$jid\",\"timeout\":30}")
check "job pollable after restart" contains <(echo "$out") 'exit code 5'
check "job output complete" python3 -c "import sys; t=sys.argv[1]; sys.exit(0 if all(('tick%d\n' % i) in t for i in range(1,41)) and 'job-end' in t else 1)" "$out"
out=$(mcp_tool job-s shell '{"command":"echo $KEEP; pwd"}')
check "shell state survives the restart" contains <(echo "$out") 'still-here'
check "same sandbox adopted, none leaked" [ "$(sandboxes | sort)" = "$before" ]
check "adoption logged" contains "$ORCH_LOG" "session=job-s sandbox=$before adopted"

# --- kill -9 during sandbox creation ---
orch_stop
orch_config "reconcile:" "  interval: 1s" "fake:" "  create_delay: 3s" "  state_dir: $ORCH_STATE" "  agent: $AGENT_BIN"
# orch_config wrote fake: twice for the fake runtime; keep only ours
python3 - "$T/orch.yaml" <<'PY'
import sys
p = sys.argv[1]; lines = open(p).read().split('\n')
i = lines.index('fake:'); del lines[i:i+3]
open(p, 'w').write('\n'.join(lines))
PY
check "orch restarts with slow creation" orch_start
( mcp_tool crash-s shell '{"command":"echo created"}' > "$T/crash-out" 2>&1 ) &
cpid=$!
n0=$(sandboxes | wc -l)
wait_for 10 bash -c "[ \$(ls -d $ORCH_STATE/*/ | wc -l) -gt $n0 ]"
sleep 0.3
orch_kill9
wait $cpid 2>/dev/null
check "interrupted creation left a sandbox dir" [ "$(sandboxes | wc -l)" -gt "$n0" ]
check "orch restarts after crash mid-creation" orch_start
check "interrupted creation removed at start" [ "$(sandboxes | wc -l)" = "$n0" ]
check "removal logged" contains "$ORCH_LOG" "reason=interrupted creation"
orch_stop
orch_config "reconcile:" "  interval: 1s" "reap:" "  interval: 500ms" "drain_timeout: 20s"
check "orch restarts (normal)" orch_start
out=$(mcp_tool crash-s shell '{"command":"echo created-after"}')
check "session works after crash mid-creation" contains <(echo "$out") 'created-after'
check "one sandbox per session" [ "$(sandboxes | wc -l)" = 2 ]

# --- reconcile: an unlabelled orphan is removed, a lost sandbox is fixed ---
mkdir -p "$ORCH_STATE/s-orphan0000"
echo '{"image":"host","labels":{}}' > "$ORCH_STATE/s-orphan0000/meta.json"
wait_for 10 bash -c "[ ! -d $ORCH_STATE/s-orphan0000 ]"
check "unlabelled orphan removed by periodic reconcile" [ ! -d "$ORCH_STATE/s-orphan0000" ]
check "orphan removal logged" contains "$ORCH_LOG" "sandbox=s-orphan0000 session=- destroyed reason=orphan"
lost=$(grep -l '"session":"crash-s"' "$ORCH_STATE"/*/meta.json | head -1 | xargs dirname)
for pid in $(grep -lx --null-data "FAKE_SANDBOX_ID=$(basename "$lost")" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do kill -9 "$pid"; done
rm -rf "$lost"
wait_for 10 grep -q "session=crash-s sandbox=$(basename "$lost") fixed" "$ORCH_LOG"
check "record without sandbox fixed" contains "$ORCH_LOG" "session=crash-s sandbox=$(basename "$lost") fixed"
out=$(mcp_tool crash-s shell '{"command":"echo recreated"}')
check "session gets a new sandbox after loss" contains <(echo "$out") recreated

# --- SIGTERM drains: in-flight call finishes, sandboxes keep running ---
( mcp_tool job-s shell '{"command":"sleep 2; echo drained-ok"}' > "$T/drain-out" ) &
dpid=$!
sleep 0.7
nrun=$(running_sandboxes)
kill -TERM "$ORCH_PID"
sleep 0.3
st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$ORCH_URL/healthz")
check "no new connections while draining" [ "$st" = 000 ]
wait $dpid
check "in-flight call finished during drain" contains "$T/drain-out" drained-ok
wait_for 10 bash -c "! kill -0 $ORCH_PID 2>/dev/null"
check "daemon exited after drain" bash -c "! kill -0 $ORCH_PID 2>/dev/null"
ORCH_PID=
check "sandboxes keep running after SIGTERM" [ "$(running_sandboxes)" = "$nrun" ]
check "drain logged" contains "$ORCH_LOG" "drained"
check "orch restarts after drain" orch_start
out=$(mcp_tool job-s shell '{"command":"echo $KEEP"}')
check "state kept across drain and restart" contains <(echo "$out") still-here
