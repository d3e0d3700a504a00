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

# --- a job past the agent's spool cap (64 MiB) says so, in text and structure ---
out=$(mcp_tool job-s shell_async '{"command":"head -c 70000000 /dev/zero | tr \\\\0 x; echo"}')
cjid=$(echo "$out" | sed -n 's/^Started job \([^ ]*\).*/\1/p')
check "capped job started" [ -n "$cjid" ]
out=$(mcp_tool job-s shell_wait "{\"job_id\":\"$cjid\",\"timeout\":60}")
check "capped job: the text says output was capped" contains <(echo "$out") 'output capped, 2891137 bytes dropped'

# --- kill -9 during sandbox creation ---
orch_stop
ORCH_FAKE_EXTRA="create_delay: 3s" orch_config "reconcile:" "  interval: 1s"
check "orch restarts with slow creation" orch_start
( mcp_tool crash-s shell '{"command":"echo created"}' > "$T/crash-out" 2>&1 ) &
cpid=$!
n0=$(nsandboxes)
wait_for 10 bash -c "[ \$(ls -d $ORCH_SBX_DIR/*/ 2>/dev/null | wc -l) -gt $n0 ]"
[ "$ORCH_RT" = fake ] && sleep 0.3
orch_kill9
wait $cpid 2>/dev/null
check "orch restarts after crash mid-creation" orch_start
if [ "$ORCH_RT" = fake ]; then
	# the kill surely hit the 3 s window: the half-made sandbox is removed
	check "interrupted creation removed at start" [ "$(nsandboxes)" = "$n0" ]
	check "removal logged" contains "$ORCH_LOG" "reason=interrupted creation"
fi
check "at most one sandbox for the crashed creation" [ "$(nsandboxes)" -le $((n0 + 1)) ]
orch_stop
orch_config "reconcile:" "  interval: 1s" "reap:" "  interval: 500ms" "drain_timeout: 20s"
check "orch restarts (normal)" orch_start
out=$(mcp_tool crash-s shell '{"command":"echo created-after"}')
check "session works after crash mid-creation" contains <(echo "$out") 'created-after'
check "one sandbox per session, nothing leaked" [ "$(nsandboxes)" = 2 ]

# --- reconcile: an unlabelled orphan is removed, a lost sandbox is fixed ---
sbx_orphan s-orphan0000
wait_for 15 grep -q "sandbox=s-orphan0000 session=- destroyed reason=orphan" "$ORCH_LOG"
check "unlabelled orphan removed by periodic reconcile" eval '! sbx_exists s-orphan0000'
check "orphan removal logged" contains "$ORCH_LOG" "sandbox=s-orphan0000 session=- destroyed reason=orphan"
lost=$(sbx_of crash-s)
sbx_kill "$lost"
wait_for 15 grep -q "session=crash-s sandbox=$lost fixed" "$ORCH_LOG"
check "record without sandbox fixed" contains "$ORCH_LOG" "session=crash-s sandbox=$lost fixed"
out=$(mcp_tool crash-s shell '{"command":"echo recreated"}')
if echo "$out" | grep -q recreated; then ok "session gets a new sandbox after loss"; else fail "session gets a new sandbox after loss" "$out"; fi

# --- SIGTERM drains: in-flight call finishes, sandboxes keep running ---
( mcp_tool job-s shell '{"command":"sleep 2.517; echo drained-ok"}' > "$T/drain-out" ) &
dpid=$!
# SIGTERM only once the call is really running in the sandbox (its sleep
# is visible from the host), however slow the client is to start.
wait_for 20 pgrep -fx "sleep 2.517" || true
nrun=$(running_sandboxes)
kill -TERM "$ORCH_PID"
sleep 0.3
# The listener stays open while draining: /readyz and new calls get 503
# with Retry-After, in each route's JSON shape.
hdr=$(curl -s -D - -o "$T/ready-body" --max-time 3 "$ORCH_URL/readyz" | tr -d '\r')
check "draining: /readyz answers 503" grep -q '^HTTP/1.1 503' <<<"$hdr"
check "draining: /readyz carries Retry-After" grep -qi '^retry-after: [0-9]' <<<"$hdr"
check "draining: /readyz body is the REST error" jq -e '.error.code == "draining"' "$T/ready-body"
hdr=$(mcp_post -D - -o "$T/drain-new" -H 'X-Session-Id: drain-new' --max-time 3 \
    -d '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo no"}}}' | tr -d '\r')
check "draining: a new call gets 503 with Retry-After" bash -c "grep -q '^HTTP/1.1 503' <<<'$hdr' && grep -qi '^retry-after:' <<<'$hdr'"
check "draining: the new call's 503 is a JSON-RPC error" jq -e '.jsonrpc == "2.0" and .error.code == -32000' "$T/drain-new"
st=$(curl -s -o "$T/drain-rest" -w '%{http_code}' --max-time 3 -H "Authorization: Bearer $ORCH_KEY" \
    -H 'Content-Type: application/json' -d '{"id":"drain-rest"}' "$ORCH_URL/v1/sessions")
check "draining: REST create gets 503 in the REST shape" bash -c "[ $st = 503 ] && jq -e '.error.code == \"draining\"' $T/drain-rest"
check "draining: /healthz still answers" curl -sf --max-time 3 "$ORCH_URL/healthz"
wait $dpid
if grep -q drained-ok "$T/drain-out"; then ok "in-flight call finished during drain"
else fail "in-flight call finished during drain" "$(head -c 600 "$T/drain-out"; grep -i 'drain\|job-s' "$ORCH_LOG" | tail -5)"; fi
wait_for 10 bash -c "! kill -0 $ORCH_PID 2>/dev/null"
check "daemon exited after drain" bash -c "! kill -0 $ORCH_PID 2>/dev/null"
ORCH_PID=
check "sandboxes keep running after SIGTERM" [ "$(running_sandboxes)" = "$nrun" ]
check "drain logged" contains "$ORCH_LOG" "drained"
check "orch restarts after drain" orch_start
out=$(mcp_tool job-s shell '{"command":"echo $KEEP"}')
check "state kept across drain and restart" contains <(echo "$out") still-here
