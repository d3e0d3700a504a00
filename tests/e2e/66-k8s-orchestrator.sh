#!/usr/bin/env bash
# The orchestrator itself on the kubernetes runtime (runtime: kubernetes)
# against the fake API server: MCP tools run in a sandbox pod through the
# real agent, egress is attached (proxy registration, policy, proxy env),
# the warm pool is claimed without recreating the pod, clear_session purges
# it, the pool refills in the background, a restarted orchestrator finds its
# sandboxes in the cluster, and SIGTERM does not wait for stalled API calls.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup
k8s_orch_setup 'pool:
  min_idle: 1
reconcile:
  interval: 2s' 'fleet_interval: 1s'
k8s_orch_up "orchestrator starts on the kubernetes runtime"
k8s_warm_pod "the warm pod is readied before the first call"

out=$(mcp_tool sess-1 shell '{"command":"echo hi-from-k8s; echo $HTTPS_PROXY"}')
check "MCP shell runs in a sandbox pod" test "$(echo "$out" | grep -c hi-from-k8s)" = 1
check "the shell has the per-sandbox proxy URL" bash -c "echo '$out' | grep -q 'http://[a-z0-9-]*:[0-9a-f]\{64\}@127\.0\.0\.[0-9]*:3128'"
warm=sbx-$(orch_rest GET /v1/sessions/sess-1 | jq_py 'd["sandbox_id"]')
echo "# the session's pod: $warm (warm pods before the call: ${!uid_before[*]})"
check "the warm pod was claimed, not recreated" test -n "${uid_before[$warm]:-}" -a "$(obj pods sandboxes "$warm" | jq_py 'd["metadata"]["uid"]')" = "${uid_before[$warm]:-none}"
check "claim registered the sandbox at a proxy pod" grep -q "\"op\": \"register\", \"id\": \"${warm#sbx-}\"" "$T/proxy-record.jsonl"
check "its policy allows its proxy pod" test "$(obj networkpolicies sandboxes "$warm" | jq_py 'len(d["spec"]["egress"])')" = 1
refilled() { test "$(k8s_pods | jq_py "len([p for p in d if p != '$warm'])")" -ge 1; }
check "the pool refills in the background after the claim (a new warm pod)" wait_for 90 refilled
# A warm pod is readied ahead (agent connection, first command), but the
# env of the last claim names that sandbox's proxy credential: the new warm
# pod must not get it (it would hold another sandbox's id:secret).
new_warm=$(k8s_pods | jq_py "[p for p in d if p != '$warm'][0]")
warm_ready() { grep -q "sandbox=${new_warm#sbx-} warm pool member ready" "$T/orch.log"; }
check "the new warm pod is readied" wait_for 60 warm_ready
check "a warm pod holds no other sandbox's proxy credential" \
    test "$(agent_sh "${new_warm#sbx-}" 'echo "[$HTTPS_PROXY]"')" = "[]"
# (The fake kubelet runs the agent on the host with the PVC directory as
# its workdir, so paths stay relative here.)
mcp_tool sess-1 str_replace_based_edit_tool '{"command":"create","path":"a.txt","file_text":"k8s file\n"}' >/dev/null
check "file tool on the PVC-backed workspace" test -f "$T/fake/pvc/sandboxes/$warm-ws/a.txt"
check "shell sees the file" bash -c "grep -q '^k8s file' <<<\"\$(cat)\"" <<<"$(mcp_tool sess-1 shell '{"command":"cat a.txt"}')"

# Restart: the orchestrator rebuilds sessions from the cluster.
k8s_orch_stop
check "restarted orchestrator is ready" k8s_orch_start
check "session survives the restart" bash -c "grep -q '^k8s file' <<<\"\$(cat)\"" <<<"$(mcp_tool sess-1 shell '{"command":"cat a.txt"}')"

out=$(mcp_tool sess-1 clear_session '{}')
claim_gone() { test "$(obj persistentvolumeclaims sandboxes "$warm-ws")" = null; }
check "clear_session removes the sandbox's pod and claim" wait_for 30 claim_gone

# Health: /readyz names the Kubernetes API when it stops answering our lists.
readyz() { curl -s -o "$T/readyz" -w '%{http_code}' "$ORCH_URL/readyz"; }
check "readyz lists a passing kubernetes_api check" jq -e '.checks[] | select(.name == "kubernetes_api") | .ok' <(curl -s "$ORCH_URL/readyz")
fake fail '{"method":"GET","path":"/pods","status":403,"count":100000}' >/dev/null
api_down() { [ "$(readyz)" = 503 ] && jq -e '.failing == "kubernetes_api"' "$T/readyz" >/dev/null; }
check "readyz: 503 naming kubernetes_api while the API refuses our lists" wait_for 20 api_down
fake clear >/dev/null
check "readyz: 200 again once the API answers" wait_for 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' $ORCH_URL/readyz)\" = 200 ]"

# Shutdown with API requests in flight (the API server stalls them): the
# SIGTERM drain ends the event loop without waiting for them.
fake delay '{"path":"/pods","seconds":30,"count":1000}' >/dev/null
stalled() { test "$(fake_get stalled | jq_py 'd["stalled"]')" -ge 1; }
check "API requests in flight (stalled by the API server)" wait_for 30 stalled
kill -TERM "$ORCH_PID"
gone() { ! kill -0 "$ORCH_PID" 2>/dev/null; }
check "SIGTERM with API requests in flight: exits promptly" wait_for 10 gone
wait "$ORCH_PID" 2>/dev/null
fake clear >/dev/null
k8s_no_violations
