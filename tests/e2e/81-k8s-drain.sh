#!/usr/bin/env bash
# Drain on Kubernetes (docs/kubernetes.md, "Drain and rollouts"): SIGTERM
# to the real orchestrator on the kubernetes runtime, against the fake API,
# as the kubelet sends it at a rollout. The listener stays open: /readyz
# answers 503 (so the pod leaves the Service's endpoints), new calls get
# 503 with Retry-After, /healthz still answers (the liveness probe does not
# kill a draining pod); a call in flight finishes with its result; a call
# still waiting for its pod to start at drain_timeout gets an error reply;
# the daemon exits. While draining and after, no sandbox object is deleted
# or made and the proxy fleet is not scaled: sandboxes keep running. The
# next orchestrator adopts them, the half-started one included, and leaks
# none. The manifest's grace period covers the drain.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
ORCH_BIN=$BIN/orchestrator/orchestrator
k8s_setup
DRAIN=6
k8s_orch_setup "drain_timeout: ${DRAIN}s
pool:
  min_idle: 0
reconcile:
  interval: 1s"
U=$ORCH_URL
orch_start() { k8s_orch_start; }
# mcp_call SESSION COMMAND [curl args...]: the tool result's text, or
# "HTTP <code>" when the answer is no 200 JSON-RPC result.
mcp_call() {
	local sid=$1 cmd=$2 body code
	shift 2
	body=$(curl -s --max-time 60 -w '\n%{http_code}' -H "Authorization: Bearer $ORCH_KEY" \
	    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	    -H "X-Session-Id: $sid" "$@" \
	    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"$cmd\"}}}" \
	    "$U/mcp")
	code=$(tail -n1 <<<"$body")
	body=$(sed '$d' <<<"$body")
	[ "$code" = 200 ] || { echo "HTTP $code $body"; return 0; }
	mcp_text <<<"$body"
}
pods() { fake_get state | jq_py '" ".join(sorted(o["metadata"]["name"] for o in d["items"] if o["kind"] == "Pod" and o["metadata"]["namespace"] == "sandboxes" and not o["metadata"].get("deletionTimestamp")))'; }
nlog() { fake_get log | jq_py 'len(d["log"])'; }
# The fake's requests from index $1 on that change sandbox objects or the
# fleet's scale: "METHOD path" lines.
writes_since() {
	fake_get log | python3 -c 'import json, sys
n = int(sys.argv[1])
for e in json.load(sys.stdin)["log"][n:]:
    m, p = e[0], e[1].split("?")[0]
    if m in ("POST", "PUT", "PATCH", "DELETE") and ("/namespaces/sandboxes/" in p or p.endswith("/scale")):
        print(m, p)' "$1"
}

check "orchestrator starts on the kubernetes runtime" orch_start || { tail -20 "$T/orch.log"; exit 1; }
# (the fake kubelet's agent runs on the host in the claim's directory:
# relative paths are its /workspace)
out=$(mcp_call d-1 'echo kept >k; echo made')
check "session d-1 has a sandbox" grep -qx made <<<"$out"
pods0=$(pods)
# d-1: a call in flight; d-2: a call waiting for a pod that stays Pending.
( mcp_call d-1 'sleep 3; echo finished-in-drain' >"$T/inflight" ) &
P1=$!
fake hold '{"on":true}' >/dev/null
( mcp_call d-2 'echo never' >"$T/waiting" ) &
P2=$!
two_pods() { [ "$(wc -w <<<"$(pods)")" = 2 ]; }
check "d-2's pod is made and held Pending" wait_for 20 two_pods
sleep 0.5
mark=$(nlog)
t0=$(date +%s%N)
kill -TERM "$ORCH_PID"
sleep 0.3
hdr=$(curl -s -D - -o "$T/ready-body" --max-time 3 "$U/readyz")
check "draining: /readyz answers 503 (the pod leaves the endpoints)" grep -q '^HTTP/1.1 503' <<<"$hdr"
check "draining: /readyz says draining" python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["error"]["code"] != "draining")' "$T/ready-body"
check "draining: /healthz still answers (liveness keeps the pod)" curl -sf -o /dev/null --max-time 3 "$U/healthz"
out=$(mcp_call d-3 'echo new')
check "draining: a new session's call gets 503" grep -q '^HTTP 503' <<<"$out"
hdr=$(curl -s -D - -o /dev/null --max-time 3 -H "Authorization: Bearer $ORCH_KEY" \
    -H 'Content-Type: application/json' -H 'X-Session-Id: d-1' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo x"}}}' "$U/mcp")
check "draining: a new call of a live session gets 503 with Retry-After" \
    bash -c "grep -q '^HTTP/1.1 503' <<<'$hdr' && grep -qi '^retry-after:' <<<'$hdr'"
exited() { ! kill -0 "$ORCH_PID" 2>/dev/null; }
check "the daemon exits once drained (within drain_timeout + 5 s)" wait_for $((DRAIN + 5)) exited
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "# exited ${ms} ms after SIGTERM (drain_timeout ${DRAIN}s)"
wait "$P1" "$P2"
check "the call in flight finished with its result" grep -qx finished-in-drain "$T/inflight" ||
	cat "$T/inflight" >&2
check "the call waiting for its pod got an error reply at the deadline" grep -q "shut down" "$T/waiting" ||
	cat "$T/waiting" >&2
check "the drain deadline is logged with the call it cut off" grep -q "drain deadline passed with 1 calls in flight" "$T/orch.log"
w=$(writes_since "$mark")
check "no sandbox object deleted or made and no scale change while draining" test -z "$w" ||
	printf '  writes: %s\n' "$w" >&2
check "the sandboxes keep running (both pods there)" test "$(wc -w <<<"$(pods)")" = 2

# The next orchestrator (a rollout's new pod) adopts them.
fake hold '{"on":false}' >/dev/null
check "the next orchestrator starts" orch_start
out=$(mcp_call d-1 'cat k')
check "d-1 goes on in the same sandbox (its workspace intact)" grep -qx kept <<<"$out"
check "d-1's pod is the one from before" grep -qw "$pods0" <<<"$(pods)"
out=$(mcp_call d-2 'echo back')
check "d-2 works after the restart" grep -qx back <<<"$out"
nsess() { curl -s -H "Authorization: Bearer $ORCH_KEY" "$U/v1/sessions" | jq_py 'len([s for s in d["sessions"] if s.get("sandbox_id")])'; }
no_leak() { [ "$(wc -w <<<"$(pods)")" = "$(nsess)" ]; }
check "no pod leaked: one per session with a sandbox" wait_for 15 no_leak ||
	printf '  pods: %s; sessions: %s\n' "$(pods)" "$(nsess)" >&2

# The manifest gives a drain its time: the grace period covers
# drain_timeout (default 30 s) and the 2 s the exit waits for replies.
grace=$(python3 - "$TOP/deploy/20-orchestrator.yaml" <<'PY'
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d.get("kind") == "Deployment":
        print(d["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30))
PY
)
dt=$(python3 - "$TOP/deploy/20-orchestrator.yaml" <<'PY'
import re, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d.get("kind") == "ConfigMap":
        c = yaml.safe_load(d["data"]["orchestrator.yaml"])
        v = str(c.get("drain_timeout", "30s"))
        m = re.fullmatch(r"(\d+)(ms|s|m)", v)
        print(int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)])
PY
)
check "deploy/20: terminationGracePeriodSeconds ($grace) > drain_timeout ($dt s) + 2 s" \
    python3 -c "import sys; sys.exit(not $grace > $dt + 2)"
kill "$ORCH_PID" 2>/dev/null
wait "$ORCH_PID" 2>/dev/null
check "no sanitizer report in the orchestrator's log" bash -c "! grep -q 'runtime error\|AddressSanitizer\|LeakSanitizer' '$T/orch.log'"
k8s_no_violations
