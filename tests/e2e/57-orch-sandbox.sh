#!/usr/bin/env bash
# 57-orch-sandbox.sh: create_sandbox never loses work by mistake and
# sandbox_status tells what a sandbox has and uses (tests/mcp/sandbox-test.mjs,
# the MCP SDK client: refused creates leave /workspace as it was, a good one
# carries it or starts empty, a per-sandbox memory limit OOM-kills and is
# reported as OOM); then REST: POST /v1/sessions twice does not wipe, unknown
# fields are refused, other options replace the sandbox with the files kept,
# GET shows limits and usage; a warm-pool claim refills the pool at once.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ ! -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	bash "$TOP/scripts/deps-npm.sh" >/dev/null 2>&1
fi
jq_() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(json.dumps(eval(sys.argv[2], {"d": d})))' "$1" "$2"; }
IMAGE2=busybox
if [ "$ORCH_RT" = local ]; then
	# a second image name: the same tree, registered again
	IMAGE2=busybox-two
	sbx image add "$IMAGE2" "$(cd "$ORCH_BB" && pwd)" >/dev/null || { fail "image add"; exit 1; }
fi
orch_config "sandbox:" "  max_memory: 1GiB" "  max_cpu_millis: 2000" \
    "reap:" "  max_lifetime: 24h" "pool:" "  min_idle: 1" "  max_parallel: 1"
check "orch starts" orch_start
if [ "$ORCH_RT" = local ]; then
	(cd "$TOP/tests/mcp" && timeout 600 node sandbox-test.mjs "$ORCH_URL/mcp" "$ORCH_KEY" "$IMAGE2")
	check "sdk sandbox tests" test $? -eq 0
else
	skip "sdk sandbox tests" "needs the local runtime (root, bwrap)"
fi

# --- the agent dies: the next call restarts the sandbox with /workspace ---
# (local: the agent is killed from the host; the sandbox cannot reach it)
if [ "$ORCH_RT" = local ]; then
	agent_pid() {
		local id
		id=$(rest GET "/v1/sessions/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])')
		pgrep -P "$(awk '{print $3}' "$ORCH_SBX_DIR/$id/pid")" | head -n1
	}
	mcp_tool lost-1 shell '{"command":"echo kept > /workspace/k; export V=1"}' >/dev/null
	kill -9 "$(agent_pid lost-1)"
	sleep 0.5
	out=$(mcp_tool lost-1 shell '{"command":"cat /workspace/k; echo v=$V"}')
	echo "after the agent was killed: $out"
	check "dead agent: the call runs in the restarted sandbox" contains <(echo "$out") kept
	check "dead agent: the shell is a fresh one" contains <(echo "$out") 'v='
	check "dead agent: the model is told what happened" contains <(echo "$out") 'The sandbox had stopped'
	check "dead agent: no advice that destroys work" eval '! grep -q "create_sandbox\|clear_session" <<<"$out"'
	( mcp_tool lost-1 shell '{"command":"sleep 20; echo late"}' >"$T/lost-mid" 2>&1 ) &
	mid=$!
	sleep 1.5
	kill -9 "$(agent_pid lost-1)"
	wait "$mid"
	echo "killed mid-call: $(cat "$T/lost-mid")"
	check "agent dies mid-call: said plainly" contains "$T/lost-mid" 'Whether this call'"'"'s command finished is unknown'
	check "agent dies mid-call: no advice that destroys work" eval '! grep -q "create_sandbox\|clear_session" "$T/lost-mid"'
	out=$(mcp_tool lost-1 shell '{"command":"cat /workspace/k"}')
	check "agent dies mid-call: next call has /workspace" contains <(echo "$out") kept
fi

# --- REST: the same create twice changes nothing ---
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' \
    -d '{"id":"rs-1","org":"o1","memory":"256MiB","lifetime":"2h"}' -w ' %{http_code}')
check "rest create with options: 201" contains <(echo "$out") ' 201'
sb1=$(jq_ "${out% *}" 'd["sandbox_id"]')
check "rest create: limits in the session" test "$(jq_ "${out% *}" '[d["limits"]["memory_bytes"], d["limits"]["lifetime_ms"]]')" = "[268435456, 7200000]"
mcp_tool rs-1 shell '{"command":"echo rest-file > /workspace/r.txt"}' >/dev/null
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' \
    -d '{"id":"rs-1","org":"o1","memory":"256MiB","lifetime":"2h"}' -w ' %{http_code}')
check "rest create again: 200, same sandbox" test "$(jq_ "${out% *}" 'd["sandbox_id"]') ${out##* }" = "$sb1 200"
check "rest create again: nothing wiped" test "$(mcp_tool rs-1 shell '{"command":"cat /workspace/r.txt"}' | head -1)" = rest-file
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' \
    -d '{"id":"rs-1","fresh_workspace":true}' -w ' %{http_code}')
check "rest create with only fresh_workspace on an existing session: kept" test "$(jq_ "${out% *}" 'd["sandbox_id"]') ${out##* }" = "$sb1 200"
check "rest: still not wiped" test "$(mcp_tool rs-1 shell '{"command":"cat /workspace/r.txt"}' | head -1)" = rest-file
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"rs-1","memroy":"1GiB"}' -w ' %{http_code}')
check "rest create: unknown field refused (400)" contains <(echo "$out") "unknown field 'memroy'"
check "rest create: unknown field is a 400" contains <(echo "$out") ' 400'
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"rs-1","memory":"4GiB"}' -w ' %{http_code}')
check "rest create beyond the maximum: 400 naming it, unchanged" contains <(echo "$out") 'above the maximum of 1GiB (sandbox.max_memory). Your sandbox and its /workspace are unchanged.'
check "rest create beyond the maximum: a 400" contains <(echo "$out") ' 400'
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"rs-1","memory":"300MiB"}' -w ' %{http_code}')
sb2=$(jq_ "${out% *}" 'd["sandbox_id"]')
check "rest create with other options: replaced (200)" test "${out##* } $([ "$sb2" != "$sb1" ] && echo new)" = "200 new"
check "rest replace keeps /workspace" test "$(mcp_tool rs-1 shell '{"command":"cat /workspace/r.txt"}' | head -1)" = rest-file
old_gone() { ! sandboxes | grep -qx "$(echo "$sb1" | tr -d '"')"; }
wait_until 20 old_gone
check "rest replace: the old sandbox is destroyed" old_gone
out=$(rest GET /v1/sessions/rs-1)
check "rest get: limits, usage and jobs" python3 -c "
import json,sys; d=json.loads(sys.argv[1])
assert d['limits']['memory_bytes'] == 300 << 20, d
assert d['org'] == 'o1' and d['state'] == 'running', d
assert 'usage' in d and 'jobs' in d and d['running_jobs'] == 0, d
assert d['lifetime_left_ms'] > 0 and d['idle_left_ms'] > 0, d" "$out"
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"rs-1","image":"no-such"}' -w ' %{http_code}')
check "rest create with a missing image: refused, unchanged" contains <(echo "$out") 'Your sandbox and its /workspace are unchanged.'
check "rest: files still there after the refused create" test "$(mcp_tool rs-1 shell '{"command":"cat /workspace/r.txt"}' | head -1)" = rest-file

# --- the warm pool refills at once after a claim (reap.interval is 15s) ---
pool_ready() { grep -c 'warm pool member ready' "$ORCH_LOG"; }
wait_until 60 test "$(pool_ready)" -ge 1
n0=$(pool_ready)
mcp_tool pool-1 shell '{"command":"true"}' >/dev/null
check "a claim from the pool" grep -q 'session=pool-1 sandbox=w-.* claimed from pool' "$ORCH_LOG"
wait_until 10 test "$(pool_ready)" -gt "$n0"
check "the pool refilled within seconds of the claim" test "$(pool_ready)" -gt "$n0"
check "daemon still up" kill -0 "$ORCH_PID"
