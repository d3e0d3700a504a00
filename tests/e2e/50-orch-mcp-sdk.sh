#!/usr/bin/env bash
# 50-orch-mcp-sdk.sh: the official MCP TypeScript SDK client drives the real
# orchestrator with real sandboxes (list tools, shell, state, async jobs,
# file edits, two sessions isolated, wrong key rejected), then REST.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ ! -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	bash "$TOP/scripts/deps-npm.sh" >/dev/null 2>&1
fi
orch_config
check "orch starts" orch_start
(cd "$TOP/tests/mcp" && timeout 300 node sdk-test.mjs "$ORCH_URL/mcp" "$ORCH_KEY")

# REST over the sessions the SDK made.
out=$(rest GET "/v1/sessions?org=acme")
check "rest list filters by org" python3 -c "import json,sys; s=json.loads(sys.argv[1])['sessions']; sys.exit(0 if len(s)>=2 and all(x['org']=='acme' for x in s) else 1)" "$out"
out=$(rest GET "/v1/sessions?org=nobody")
check "rest list empty for other org" python3 -c "import json,sys; sys.exit(0 if json.loads(sys.argv[1])['sessions']==[] else 1)" "$out"
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"rest-1","org":"o2","user":"u2"}' -w ' %{http_code}')
check "rest create 201" contains <(echo "$out") '"state":"running"'
check "rest create status" contains <(echo "$out") ' 201'
out=$(rest GET /v1/sessions/rest-1)
check "rest get" contains <(echo "$out") '"id":"rest-1"'
out=$(rest POST /v1/sessions/rest-1/stop -H 'Content-Type: application/json' -d '{"force":true}' -w ' %{http_code}')
check "rest stop with a field refused (400)" contains <(echo "$out") 'takes no fields'
out=$(rest POST /v1/sessions/rest-1/stop -H 'Content-Type: application/json' -d ' {} ' -w ' %{http_code}')
check "rest stop" contains <(echo "$out") '"state":"stopped"'
out=$(mcp_tool rest-1 shell '{"command":"echo resumed"}')
check "stopped session resumes on next call" contains <(echo "$out") 'resumed'
out=$(rest DELETE /v1/sessions/rest-1 -w ' %{http_code}')
check "rest delete" contains <(echo "$out") '"deleted":"rest-1"'
out=$(rest GET /v1/sessions/rest-1 -w ' %{http_code}')
check "rest get after delete 404" contains <(echo "$out") '"code":"not_found"'
out=$(rest GET /v1/sessions/bad%2Fid -w ' %{http_code}')
check "rest bad id 400" contains <(echo "$out") ' 400'
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":5}' -w ' %{http_code}')
check "rest create bad body 400" contains <(echo "$out") '"code":"bad_request"'
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d '{nope' -w ' %{http_code}')
check "rest create bad json 400" contains <(echo "$out") '"code":"bad_json"'
out=$(curl -s -w ' %{http_code}' "$ORCH_URL/v1/sessions")
check "rest without key 401" contains <(echo "$out") '"code":"unauthorized"'
out=$(rest PUT /v1/sessions -w ' %{http_code}')
check "rest wrong method 405" contains <(echo "$out") ' 405'
out=$(rest GET /metrics)
check "metrics prometheus text" contains <(echo "$out") 'orch_tool_calls_total{tool="shell",outcome="ok"}'
check "healthz" curl -sf "$ORCH_URL/healthz"
check "readyz" curl -sf "$ORCH_URL/readyz"
check "daemon still up" kill -0 "$ORCH_PID"
