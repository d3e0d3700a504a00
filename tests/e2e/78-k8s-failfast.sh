#!/usr/bin/env bash
# The kubernetes runtime fails a start fast with the cluster's reason
# (docs/kubernetes.md, "Failing fast"), through the orchestrator's MCP
# tools against the fake API server: an image that cannot be pulled or
# named, a container config that cannot be made, a missing runtime handler
# (FailedCreatePodSandBox event), a claim that cannot be provisioned
# (ProvisioningFailed event), an Unschedulable pod (after its grace) each
# fail the tool call within seconds, not the ready timeout, with that reason
# in the tool error, and leave no pod, claim, Secret or policy behind. A
# long image pull is logged, sent as MCP progress to a client that asked
# for it, and the create succeeds. Scheduling
# ("Scheduling"): on a tainted node the RuntimeClass's toleration and
# kubernetes.sandbox.tolerations/node_selector are in the pod spec (bodies
# validated), and a taint nothing tolerates fails fast as Unschedulable.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
ORCH_BIN=$BIN/orchestrator/orchestrator
[ -x "$ORCH_BIN" ] || { fail "orchestrator binary" "not built"; exit 1; }
k8s_setup
ORCH_PORT=$(free_port)
ORCH_URL=http://127.0.0.1:$ORCH_PORT
ORCH_KEY=k-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$ORCH_KEY" >"$T/key"
chmod 600 "$T/key"
FAIL_AFTER=2
GRACE=4
# A create that hangs would take ready_timeout (120 s): the bound is far
# below it and below an MCP client's 60 s, with room for a loaded machine.
BOUND=25

# orch_config [extra lines under kubernetes:]
orch_config() {
	k8s_write_config 'ready_timeout: 120s' "$@"
	{
		cat <<YAML
listen: 127.0.0.1:$ORCH_PORT
key_file: $T/key
runtime: kubernetes
pool:
  min_idle: 0
tools:
  progress_interval: 1s
YAML
		cat "$CFG"
		cat <<YAML
  sandbox:
    fail_after: ${FAIL_AFTER}s
    unschedulable_grace: ${GRACE}s
YAML
		[ -n "${SCHED:-}" ] && printf '%s\n' "$SCHED"
	} >"$T/orch.yaml"
}
orch_start() {
	"$ORCH_BIN" -d -f "$T/orch.yaml" >>"$T/orch.log" 2>&1 &
	ORCH_PID=$!
	track_pid $ORCH_PID
	wait_for 60 curl -sf "http://127.0.0.1:$ORCH_PORT/readyz"
}
orch_stop() { kill "$ORCH_PID" 2>/dev/null; wait "$ORCH_PID" 2>/dev/null; }
# mcp_tool SID TOOL ARGS: tests/k8s/lib.sh's, with a longer timeout and
# X-User-Id: $MCP_USER when that is set
mcp_tool() { mcp_raw "$1" "$2" "$3" --max-time 150 ${MCP_USER:+-H "X-User-Id: $MCP_USER"} | mcp_text; }
# What the runtime made in the sandbox namespace and has not deleted.
leftovers() {
	fake_get state | jq_py '" ".join(sorted(o["kind"] + "/" + o["metadata"]["name"] for o in d["items"] if o["kind"] in ("Pod", "PersistentVolumeClaim", "Secret", "NetworkPolicy") and o["metadata"].get("namespace") == "sandboxes" and not o["metadata"].get("deletionTimestamp") and not o["metadata"]["name"].startswith("home-")))'
}
nothing_left() { test -z "$(leftovers)"; }

# failcase NAME SESSION WANT... : the session's first tool call fails
# within BOUND seconds, its error holding every WANT; nothing is left.
failcase() {
	local name=$1 sid=$2 out t0 dt w ok=1
	shift 2
	t0=$(date +%s.%N)
	out=$(mcp_tool "$sid" shell '{"command":"echo hi"}')
	dt=$(python3 -c "import sys; print(round($(date +%s.%N) - $t0, 1))")
	case "$out" in ERROR:*) ;; *) ok=0 ;; esac
	for w in "$@"; do
		case "$out" in *"$w"*) ;; *) ok=0 ;; esac
	done
	check "$name: the tool error names it" test "$ok" = 1 || printf '  got (%ss): %s\n' "$dt" "$out" >&2
	check "$name: within ${BOUND}s (took ${dt}s)" python3 -c "import sys; sys.exit(not $dt < $BOUND)"
	check "$name: nothing left (pod, claim, Secret, policy)" wait_for 15 nothing_left || printf '  left: %s\n' "$(leftovers)" >&2
	LAST_DT=$dt
}
stick() { fake stick "$1" >/dev/null; }
unstick() { fake unstick '{}' >/dev/null; }

orch_config
check "orchestrator starts on the kubernetes runtime" orch_start || { tail -20 "$T/orch.log"; exit 1; }
out=$(mcp_tool ok-1 shell '{"command":"echo hi"}')
check "a healthy create works (the cases below are the cluster's, not ours)" grep -qx hi <<<"$out"
mcp_tool ok-1 clear_session '{}' >/dev/null
check "and is cleared" wait_for 15 nothing_left

stick '{"what":"waiting","pod":"sbx-*","reason":"ErrImagePull","message":"rpc error: code = NotFound desc = failed to pull and unpack image \"docker.io/library/debian:12\": not found"}'
failcase "ErrImagePull" s-pull "ErrImagePull" "failed to pull and unpack image"
check "ErrImagePull: not before fail_after (${FAIL_AFTER}s)" python3 -c "import sys; sys.exit(not $LAST_DT >= $FAIL_AFTER)"
unstick
stick '{"what":"waiting","pod":"sbx-*","reason":"ImagePullBackOff","message":"Back-off pulling image \"debian:12\""}'
failcase "ImagePullBackOff" s-backoff "ImagePullBackOff" "Back-off pulling image"
unstick
stick '{"what":"waiting","pod":"sbx-*","reason":"InvalidImageName","message":"Failed to apply default image tag \"debian:12\": couldn'"'"'t parse image name"}'
failcase "InvalidImageName" s-name "InvalidImageName" "couldn't parse image name"
unstick
stick '{"what":"waiting","pod":"sbx-*","reason":"CreateContainerConfigError","message":"configmap \"egress-proxy-ca\" not found"}'
failcase "CreateContainerConfigError" s-config "CreateContainerConfigError" 'configmap "egress-proxy-ca" not found'
unstick
stick '{"what":"sandbox","pod":"sbx-*"}'
failcase "FailedCreatePodSandBox (no runsc handler)" s-handler "FailedCreatePodSandBox" 'no runtime for "runsc" is configured'
unstick
stick '{"what":"provision","claim":"sbx-*-ws"}'
failcase "ProvisioningFailed claim" s-prov "ProvisioningFailed" "quota exceeded"
unstick
# The same for a user's home claim: the error names that claim; the home
# claim itself stays (a home outlives sandboxes), the rest goes.
stick '{"what":"provision","claim":"home-*"}'
MCP_USER=u-prov failcase "ProvisioningFailed home claim" s-hprov "ProvisioningFailed" "quota exceeded" "(claim home-"
check "ProvisioningFailed home claim: the home claim is kept" \
    python3 -c 'import json, sys; d = json.load(sys.stdin); sys.exit(not any(o["kind"] == "PersistentVolumeClaim" and o["metadata"]["name"].startswith("home-") for o in d["items"]))' <<<"$(fake_get state)"
unstick
stick '{"what":"unschedulable","pod":"sbx-*","message":"0/3 nodes are available: 3 Insufficient cpu."}'
failcase "Unschedulable" s-unsched "cannot be scheduled" "Insufficient cpu"
check "Unschedulable: only after its grace (${GRACE}s)" python3 -c "import sys; sys.exit(not $LAST_DT >= $GRACE)"
unstick

# A long pull is progress, not a failure (it outlasts fail_after).
stick '{"what":"pull","pod":"sbx-*","seconds":4}'
out=$(mcp_tool s-slow shell '{"command":"echo pulled"}')
check "a long image pull (longer than fail_after) ends in a working sandbox" grep -qx pulled <<<"$out"
check "the pull is reported while it lasts" grep -q 'starting: Pulling image "debian:12"' "$T/orch.log"
mcp_tool s-slow clear_session '{}' >/dev/null
check "cleared" wait_for 15 nothing_left
# The same pull for a client that asked for progress (a progressToken,
# SSE): its notifications name the pull while it lasts; once the sandbox
# is up they no longer speak of its start; the result comes last.
curl -s --max-time 150 -H "Authorization: Bearer $ORCH_KEY" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H "X-Session-Id: s-prog" \
    -d '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 2.5; echo pulled"},"_meta":{"progressToken":"tok-1"}}}' \
    "http://127.0.0.1:$ORCH_PORT/mcp" >"$T/prog.sse"
# prog_ok EXPR: EXPR over msgs (the notifications' messages in order, each
# with its token) and res (the final result's text)
prog_ok() {
	python3 - "$T/prog.sse" "$1" <<'PY'
import json, sys
msgs, res = [], None
for ev in open(sys.argv[1]).read().split("\n\n"):
    for line in ev.split("\n"):
        if line.startswith("data: "):
            d = json.loads(line[6:])
            if d.get("method") == "notifications/progress":
                msgs.append((d["params"]["progressToken"], d["params"].get("message", "")))
            elif "result" in d:
                res = "".join(c.get("text", "") for c in d["result"]["content"])
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
check "progress: the call ends in its result" prog_ok 'res is not None and "pulled" in res.splitlines()' ||
    sed -n '1,40p' "$T/prog.sse" >&2
check "progress: a notification names the pull while it lasts" \
    prog_ok 'any(t == "tok-1" and "sandbox starting: Pulling image \"debian:12\"" in m for t, m in msgs)'
check "progress: later ones no longer speak of the start (the sandbox is up)" \
    prog_ok 'not msgs[-1][1].count("sandbox starting") if msgs else False'
mcp_tool s-prog clear_session '{}' >/dev/null
unstick
check "cleared" wait_for 15 nothing_left

# Scheduling: a node tainted for the runtime and for a dedicated pool.
fake node '{"labels":{"sandbox.dev/runtime-gvisor":"true","pool":"agents"},"taints":[{"key":"sandbox.dev/runtime","value":"gvisor","effect":"NoSchedule"},{"key":"dedicated","value":"agents","effect":"NoSchedule"}]}' >/dev/null
failcase "a taint nothing tolerates" s-taint "cannot be scheduled" "untolerated taint {dedicated: agents}"
orch_stop
SCHED='    tolerations: ["dedicated=agents:NoSchedule", "example.com/maintenance"]
    node_selector:
      pool: agents'
orch_config
check "orchestrator restarts with sandbox.tolerations and node_selector" orch_start
out=$(mcp_tool s-sched shell '{"command":"echo scheduled"}')
check "with them the pod lands on the tainted node" grep -qx scheduled <<<"$out"
pod=$(fake_get state | jq_py '[o for o in d["items"] if o["kind"] == "Pod" and o["metadata"]["namespace"] == "sandboxes" and not o["metadata"].get("deletionTimestamp")][0]["spec"]')
sent=$(fake_get bodies | jq_py '[b[3]["spec"] for b in d["bodies"] if b[0] == "POST" and b[1] == "/api/v1/namespaces/sandboxes/pods"][-1]')
check "the pod as sent: our tolerations (Equal with a value, Exists without)" test "$(echo "$sent" | jq_py 'd.get("tolerations")')" = '[{"key": "dedicated", "operator": "Equal", "value": "agents", "effect": "NoSchedule"}, {"key": "example.com/maintenance", "operator": "Exists"}]'
check "the pod as sent: our nodeSelector" test "$(echo "$sent" | jq_py 'd.get("nodeSelector")')" = '{"pool": "agents"}'
check "the pod as admitted: the RuntimeClass's toleration merged in" bash -c "echo '$pod' | grep -q '\"key\": \"sandbox.dev/runtime\", \"operator\": \"Equal\", \"value\": \"gvisor\"'"
check "the pod as admitted: the RuntimeClass's nodeSelector merged in" test "$(echo "$pod" | jq_py 'd.get("nodeSelector")')" = '{"pool": "agents", "sandbox.dev/runtime-gvisor": "true"}'
mcp_tool s-sched clear_session '{}' >/dev/null
check "cleared" wait_for 15 nothing_left
orch_stop
fake node '{}' >/dev/null

# Hostile settings are refused at start, naming the key.
SCHED='    tolerations: ["dedicated=agents:Sometimes"]'
orch_config
check "a toleration with an unknown effect is refused at start" fails_with "kubernetes.sandbox.tolerations" timeout 30 "$ORCH_BIN" -d -f "$T/orch.yaml"
SCHED='    node_selector:
      "bad key!": x'
orch_config
check "a node_selector key that is no label key is refused at start" fails_with "kubernetes.sandbox.node_selector" timeout 30 "$ORCH_BIN" -d -f "$T/orch.yaml"
SCHED=
check "no sanitizer report in the orchestrator's log" bash -c "! grep -q 'ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer' '$T/orch.log'"
k8s_no_violations
