#!/usr/bin/env bash
# Kubernetes runtime: the egress-proxy fleet. The proxy Deployment is scaled
# through the scale subresource (one replica per sandboxes_per_proxy running
# sandboxes, 0 when none), each sandbox is registered (authenticated admin
# call) at the least-loaded ready proxy pod, its policy lets it reach that
# pod only, and sandboxes are re-assigned when their proxy pod goes away.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup
k8s_write_config 'sandboxes_per_proxy: 2'

replicas() { obj deployments sandbox-system egress-proxy | jq_py 'd["spec"]["replicas"]'; }
ready_proxies() {
	fake_get state | jq_py 'len([o for o in d["items"] if o["kind"]=="Pod" and o["metadata"]["namespace"]=="sandbox-system" and not o["metadata"].get("deletionTimestamp") and any(c["type"]=="Ready" and c["status"]=="True" for c in o["status"].get("conditions",[]))])'
}
# last registration of a sandbox: "pod ip secret peer"
reg_of() {
	python3 -c '
import json, sys
last = None
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("id") == sys.argv[2] and e["op"] in ("register", "deregister"):
        last = e
if last and last["op"] == "register":
    print(last["pod"], last["ip"], last["secret"], last["peer"], last["attrs"].get("org"), last["attrs"].get("labels", {}).get("repo"))
else:
    print("none")' "$T/proxy-record.jsonl" "$1"
}
pod_ip() { obj pods sandboxes "sbx-$1" | jq_py 'd["status"]["podIP"]'; }

# deploy/30-egress-proxy.yaml sets no replicas (the orchestrator owns the
# scale): the API defaults it to 1 until the first sweep.
check "the applied Deployment sets no replicas" bash -c "! grep -q '^  replicas:' '$TOP/deploy/30-egress-proxy.yaml'"
check "as applied: the API's default, 1 replica" test "$(replicas)" = 1
kctl fleet-sync
check "the first sweep scales it to 0 (nothing runs)" test "$(replicas)" = 0
kctl create a1 >/dev/null
check "one running sandbox (not a warm-pool member): 1 replica" test "$(replicas)" = 1
kctl attach a1 acme alice sess-a1 repo=acme/app >"$T/env1" 2>"$T/err" || fail "attach a1" "$(cat "$T/err")"
check "scaled up to 1 for one running sandbox" test "$(replicas)" = 1
read -r p1 ip1 sec1 peer1 org1 repo1 <<<"$(reg_of a1)"
check "registered at a proxy pod with its identity" test "$org1/$repo1" = acme/acme/app
check "registration names the sandbox's pod IP" test "$peer1" = "$(pod_ip a1)"
check "proxy URL carries the registered credential and proxy pod IP" \
    grep -qx "HTTPS_PROXY=http://a1:$sec1@$ip1:3128" "$T/env1"
check "env has the proxy CA paths" grep -qx 'SSL_CERT_FILE=/etc/sandbox-proxy/ca.crt' "$T/env1"
np=$(obj networkpolicies sandboxes sbx-a1)
check "policy egress: only the assigned proxy pod's port" test "$(echo "$np" | jq_py \
    '[len(d["spec"]["egress"]), d["spec"]["egress"][0]["to"][0]["podSelector"]["matchLabels"]["sandbox.dev/proxy-pod"], d["spec"]["egress"][0]["to"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"], d["spec"]["egress"][0]["ports"]]')" \
    = "[1, \"$p1\", \"sandbox-system\", [{\"protocol\": \"TCP\", \"port\": 3128}]]"
check "proxy pod labelled with its own name" test "$(obj pods sandbox-system "$p1" | jq_py 'd["metadata"]["labels"]["sandbox.dev/proxy-pod"]')" = "$p1"
check "admin calls authenticated" not_contains "$T/proxy-record.jsonl" unauthorized
kctl attach a1 acme alice sess-a1 repo=acme/app >"$T/env1b"
check "attaching again keeps the same proxy pod and URL" cmp -s "$T/env1" "$T/env1b"

kctl create a2 >/dev/null
kctl attach a2 acme bob sess-a2 >/dev/null
kctl create a3 >/dev/null
check "3 running / 2 per proxy: scaled to 2" test "$(replicas)" = 2
two_ready() { test "$(ready_proxies)" = 2; }
check "second proxy pod becomes ready" wait_for 30 two_ready
wait_for 30 bash -c "[ \"\$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(len([o for o in d[\"items\"] if o[\"kind\"]==\"Pod\" and o[\"metadata\"][\"namespace\"]==\"sandbox-system\" and any(c[\"type\"]==\"Ready\" and c[\"status\"]==\"True\" for c in o[\"status\"].get(\"conditions\",[]))]))' < <(curl -sS --cacert $T/pki/ca.crt https://127.0.0.1:$API_PORT/_fake/state))\" = 2 ]"
kctl attach a3 acme carol sess-a3 >/dev/null
read -r p3 _ <<<"$(reg_of a3)"
check "third sandbox goes to the least-loaded (other) proxy pod" test -n "$p3" -a "$p3" != "$p1"

# --- re-assignment when a proxy pod disappears ---
fake vanish "{\"ns\":\"sandbox-system\",\"name\":\"$p1\"}" >/dev/null
check "fleet sync after a proxy pod vanished" kctl fleet-sync
read -r n1 nip1 nsec1 _ <<<"$(reg_of a1)"
check "a1 re-assigned to another proxy pod" test -n "$n1" -a "$n1" != "$p1" -a "$n1" != none
check "a1 keeps its credential" test "$nsec1" = "$sec1"
check "a1's policy now names the new pod" test "$(obj networkpolicies sandboxes sbx-a1 | jq_py 'd["spec"]["egress"][0]["to"][0]["podSelector"]["matchLabels"]["sandbox.dev/proxy-pod"]')" = "$n1"
check "a1's shell got the new proxy URL" test "$(agent_sh a1 'echo $HTTPS_PROXY')" = "http://a1:$sec1@$nip1:3128"
read -r n2 _ <<<"$(reg_of a2)"
check "a2 re-assigned too" test "$n2" != "$p1" -a "$n2" != none
check "replacement proxy pod created by the Deployment" wait_for 20 two_ready

# --- stop deregisters; start registers again ---
kctl stop a3
check "stop deregisters from the proxy" test "$(reg_of a3)" = none
kctl start a3
check "start registers again (identity kept on the claim)" test "$(reg_of a3 | cut -d' ' -f5)" = acme

# --- down to zero ---
kctl destroy a3
check "destroy deregisters" test "$(reg_of a3)" = none
kctl destroy a2
check "scale-down removes the least-loaded proxy pod (pod-deletion-cost)" test "$(reg_of a1 | cut -d' ' -f1)" = "$n1"
check "a1's proxy pod survived the scale-down" test "$(obj pods sandbox-system "$n1" | jq_py 'd["metadata"].get("deletionTimestamp")')" = None
kctl destroy a1
kctl fleet-sync
check "scaled to 0 with no sandbox running" test "$(replicas)" = 0
check "scale subresource used (GET + merge PATCH)" bash -c "curl -sS --cacert $T/pki/ca.crt https://127.0.0.1:$API_PORT/_fake/log | grep -q 'PATCH\", \"/apis/apps/v1/namespaces/sandbox-system/deployments/egress-proxy/scale?fieldValidation=Strict\", 200'"

# --- warm-pool members hold no proxy replica: the fleet reaches zero
# with a warm pool, and a claim gets its proxy at attach ---
kctl create w1 --label pool=1 >/dev/null
kctl create w2 --label pool=1 >/dev/null
kctl fleet-sync
check "warm pool: two warm members, the fleet stays at 0" test "$(replicas)" = 0
check "no proxy pod runs for warm members only" test "$(ready_proxies)" = 0
t0=$(date +%s%N)
check "a claim of a warm member scales up and registers it" bash -c "'$K8SCTL' -c '$CFG' attach w1 acme alice sess-w1 >/dev/null"
echo "# claim with the fleet at zero: attach took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
check "the claimed member is registered at a proxy pod" test "$(reg_of w1)" != none
check "one claimed, one warm: 1 replica" test "$(replicas)" = 1
kctl fleet-sync
check "the sweep keeps 1 (the warm one still counts for nothing)" test "$(replicas)" = 1
kctl destroy w1
kctl fleet-sync
check "only a warm member left: back to 0" test "$(replicas)" = 0
kctl destroy w2
# proxy.min_replicas keeps a warm proxy for the next claim.
sed -i "s|^    wait: 20s|    wait: 20s\n    min_replicas: 1|" "$CFG"
kctl fleet-sync
check "proxy.min_replicas: 1 keeps one proxy with nothing running" test "$(replicas)" = 1
k8s_write_config 'sandboxes_per_proxy: 2'
kctl fleet-sync
check "min_replicas 0 again: back to 0" test "$(replicas)" = 0

# --- a scale-down between two pods serving one sandbox each (a tie in
# sandboxes served): the runtime picks the pod to remove (the one with the
# younger sandbox), moves that sandbox first, marks the pod with the lowest
# pod-deletion-cost and only then scales, so no sandbox loses its proxy ---
kctl create c1 >/dev/null
kctl attach c1 acme alice sess-c1 >/dev/null
kctl create c2 >/dev/null
kctl create c3 >/dev/null
check "tie: 3 running / 2 per proxy: 2 replicas" test "$(replicas)" = 2
check "tie: both proxy pods ready" wait_for 30 two_ready
kctl attach c2 acme bob sess-c2 >/dev/null
read -r pc1 _ <<<"$(reg_of c1)"
read -r pc2 _ <<<"$(reg_of c2)"
check "tie: c1 and c2 on different proxy pods" test -n "$pc1" -a -n "$pc2" -a "$pc1" != "$pc2"
kctl destroy c3
check "tie: scaled down to 1" test "$(replicas)" = 1
read -r mc2 mip2 msec2 _ <<<"$(reg_of c2)"
check "tie: c2 moved to c1's proxy pod before the scale-down" test "$mc2" = "$pc1"
check "tie: c1's proxy pod survived" test "$(obj pods sandbox-system "$pc1" | jq_py 'd["metadata"].get("deletionTimestamp")')" = None
c2_pod_gone() { test "$(obj pods sandbox-system "$pc2" | jq_py 'd and d["metadata"].get("deletionTimestamp") is not None')" != False; }
check "tie: the pod c2 left is the one removed" wait_for 20 c2_pod_gone
check "tie: c2's policy names its new pod" test "$(obj networkpolicies sandboxes sbx-c2 | jq_py 'd["spec"]["egress"][0]["to"][0]["podSelector"]["matchLabels"]["sandbox.dev/proxy-pod"]')" = "$pc1"
check "tie: c2's shell got the new proxy URL" test "$(agent_sh c2 'echo $HTTPS_PROXY')" = "http://c2:$msec2@$mip2:3128"
kctl destroy c2
kctl destroy c1
check "tie: back to 0" test "$(replicas)" = 0

# --- a proxy admin token the proxy refuses: attach fails clearly ---
echo wrong >"$T/admin-token.bad"
sed -i "s|admin_token_file: .*|admin_token_file: $T/admin-token.bad|" "$CFG"
kctl create b1 >/dev/null
check "bad admin token: attach fails with the proxy's answer" fails_with "answered 401" kctl attach b1 o u s
k8s_write_config 'sandboxes_per_proxy: 2'
kctl destroy b1
k8s_no_violations
