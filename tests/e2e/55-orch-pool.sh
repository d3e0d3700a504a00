#!/usr/bin/env bash
# 55-orch-pool.sh: the warm pool: kept at min_idle, a new session claims a
# warm sandbox (relabelled and personalised, fast), the pool refills in the
# background, a restart adopts pool members, a smaller pool drops extras.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

pool_idle() { rest GET /metrics | awk '$1 == "orch_pool_idle" {print $2}'; }
orch_config "pool:" "  min_idle: 3" "reap:" "  interval: 300ms"
check "orch starts" orch_start
wait_for 60 bash -c "curl -s -H 'Authorization: Bearer $ORCH_KEY' $ORCH_URL/metrics | grep -qx 'orch_pool_idle 3'"
check "pool filled to min_idle" [ "$(pool_idle)" = 3 ]
check "three warm sandboxes" [ "$(nsandboxes)" = 3 ]

ms=$(mcp_post -H 'X-Session-Id: warm-1' -H 'X-Org-Id: acme' -o "$T/first" -w '%{time_total}' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo warm-ok"}}}')
check "first call on a new session answered" grep -q warm-ok "$T/first"
echo "first call with a warm pool: ${ms}s"
sid=$(rest GET /v1/sessions/warm-1 | jq -r .sandbox_id)
check "session got a pool sandbox" [ "${sid#w-}" != "$sid" ]
check "claim relabelled the sandbox" [ "$(sbx_of warm-1)" = "$sid" ]
check "claim logged" contains "$ORCH_LOG" "session=warm-1 sandbox=$sid claimed from pool"
wait_for 60 bash -c "curl -s -H 'Authorization: Bearer $ORCH_KEY' $ORCH_URL/metrics | grep -qx 'orch_pool_idle 3'"
check "pool refilled in the background" [ "$(pool_idle)" = 3 ]
check "four sandboxes now" [ "$(nsandboxes)" = 4 ]
out=$(mcp_tool warm-1 create_sandbox '{"run_as_root":true}')
check "create_sandbox with options builds a new one" contains <(echo "$out") 'new sandbox is ready'
nsid=$(rest GET /v1/sessions/warm-1 | jq -r .sandbox_id)
check "custom sandbox is not from the pool" [ "${nsid#s-}" != "$nsid" ]
check "old sandbox destroyed" eval "! sbx_exists $sid"

orch_kill9
check "orch restarts" orch_start
check "pool members adopted after restart" contains "$ORCH_LOG" "adopted into warm pool"
check "pool still full" [ "$(pool_idle)" = 3 ]
check "nothing leaked or lost" [ "$(nsandboxes)" = 4 ]
out=$(mcp_tool warm-1 shell '{"command":"echo still-mine"}')
check "session kept across restart" contains <(echo "$out") still-mine

orch_stop
orch_config "pool:" "  min_idle: 1" "reap:" "  interval: 300ms"
check "orch restarts with a smaller pool" orch_start
check "stale pool members removed" [ "$(nsandboxes)" = 2 ]
check "stale removal logged" contains "$ORCH_LOG" "reason=stale pool member"
out=$(rest GET /metrics)
check "claims counted" bash -c "grep -q '^orch_pool_claims_total' <<<'$out'"
