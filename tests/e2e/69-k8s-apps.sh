#!/usr/bin/env bash
# Kubernetes runtime: published apps (docs/kubernetes.md, "Publishing apps").
# app_ports rewrites the sandbox's NetworkPolicy so that only the app-gateway
# pods reach exactly the exposed TCP ports (the body the fake API received
# is checked, and validated against the real schemas); the ports survive a
# fleet move, a stop/start and a new process (they live in the policy's
# annotation); none removes the rule. app_connect gives the Running pod's
# IP and the port (a real HTTP server on that address answers), "stopped"
# for a sandbox without a running pod, "not found" for none; hostile ports
# are refused before anything is written.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup
SHARED=${K8S_SHARED_DIR:-$TOP/../shared/k8s}

NPPATH=/apis/networking.k8s.io/v1/namespaces/sandboxes/networkpolicies
# np_writes ID: how many writes of sandbox ID's policy the fake received.
np_writes() {
	fake_get bodies | python3 -c '
import json, sys
n = 0
for m, p, c, b in json.load(sys.stdin)["bodies"]:
    if p == sys.argv[1] + "/sbx-" + sys.argv[2] or (p == sys.argv[1] and
            isinstance(b, dict) and b["metadata"]["name"] == "sbx-" + sys.argv[2]):
        n += 1
print(n)' "$NPPATH" "$1"
}
# np_last ID: the last policy body written for ID, as sent.
np_last() {
	fake_get bodies | python3 -c '
import json, sys
last = None
for m, p, c, b in json.load(sys.stdin)["bodies"]:
    if p == sys.argv[1] + "/sbx-" + sys.argv[2] or (p == sys.argv[1] and
            isinstance(b, dict) and b["metadata"]["name"] == "sbx-" + sys.argv[2]):
        last = b
print(json.dumps(last))' "$NPPATH" "$1"
}
# gw_rules JSON: the ingress rules other than the orchestrator's, as
# [[peer], [ports]] lists.
gw_rules() {
	jq_py '[[r["from"], [(p["protocol"], p["port"]) for p in r["ports"]]] for r in d["spec"]["ingress"] if r["ports"][0]["port"] != '"$AGENT_PORT"']'
}
pod_ip() { obj pods sandboxes "sbx-$1" | jq_py 'd["status"]["podIP"]'; }
proxy_of() { obj networkpolicies sandboxes "sbx-$1" | jq_py 'd["spec"]["egress"][0]["to"][0]["podSelector"]["matchLabels"]["sandbox.dev/proxy-pod"]'; }
ann_of() { obj networkpolicies sandboxes "sbx-$1" | jq_py 'd["metadata"].get("annotations", {}).get("sandbox.dev/app-ports")'; }
GWPEER='[{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "app-gateway"}}, "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "sandbox-system"}}}]'

kctl create a1 >/dev/null || { fail "create a1"; exit 1; }
kctl attach a1 acme alice sess-a1 >/dev/null 2>"$T/err" || fail "attach a1" "$(cat "$T/err")"
p1=$(proxy_of a1)
check "before any app: only the orchestrator's ingress rule, no annotation" \
    test "$(obj networkpolicies sandboxes sbx-a1 | jq_py 'len(d["spec"]["ingress"])')/$(ann_of a1)" = 1/None

# --- app_ports sets the policy ---
n0=$(np_writes a1)
check "app-ports a1 8080 3000" kctl app-ports a1 8080 3000
np_last a1 >"$T/np1.json"
check "one policy write" test "$(np_writes a1)" = $((n0 + 1))
check "the body names the gateway pods (labels + namespace) and exactly the two ports, sorted" \
    test "$(gw_rules <"$T/np1.json")" = "[[$GWPEER, [[\"TCP\", 3000], [\"TCP\", 8080]]]]"
check "the orchestrator's rule is unchanged (agent port only)" \
    test "$(jq_py '[r["ports"] for r in d["spec"]["ingress"] if r["ports"][0]["port"] == '"$AGENT_PORT"']' <"$T/np1.json")" \
    = "[[{\"protocol\": \"TCP\", \"port\": $AGENT_PORT}]]"
check "the body keeps the egress to the assigned proxy pod" \
    test "$(jq_py 'd["spec"]["egress"][0]["to"][0]["podSelector"]["matchLabels"]["sandbox.dev/proxy-pod"]' <"$T/np1.json")" = "$p1"
check "the body records the ports in its annotation" \
    test "$(jq_py 'd["metadata"]["annotations"]["sandbox.dev/app-ports"]' <"$T/np1.json")" = 3000,8080
check "the body passes validate.py (1.35)" bash -c "python3 '$SHARED/validate.py' --k8s-version 1.35 '$T/np1.json' >/dev/null 2>&1"
check "the body passes validate.py (1.30)" bash -c "python3 '$SHARED/validate.py' --k8s-version 1.30 '$T/np1.json' >/dev/null 2>&1"
check "the stored policy is what was sent" test "$(obj networkpolicies sandboxes sbx-a1 | gw_rules)" = "$(gw_rules <"$T/np1.json")"

# --- the same set again: nothing written (reconcile calls it often) ---
kctl app-ports a1 3000 8080
check "the same set in another order writes nothing" test "$(np_writes a1)" = $((n0 + 1))

# --- a changed set replaces it ---
check "app-ports a1 5173" kctl app-ports a1 5173
check "the new body has exactly the new port" \
    test "$(np_last a1 | gw_rules)" = "[[$GWPEER, [[\"TCP\", 5173]]]]"
check "annotation follows" test "$(ann_of a1)" = 5173

# --- the ports survive what rewrites the policy, each in a new process ---
fake vanish "{\"ns\":\"sandbox-system\",\"name\":\"$p1\"}" >/dev/null
kctl fleet-sync
p2=$(proxy_of a1)
check "a fleet move re-assigned a1 to another proxy pod" test -n "$p2" -a "$p2" != "$p1" -a "$p2" != None
check "the moved policy still admits the gateway to 5173" \
    test "$(obj networkpolicies sandboxes sbx-a1 | gw_rules)" = "[[$GWPEER, [[\"TCP\", 5173]]]]"
kctl stop a1
check "app-connect on a stopped sandbox: stopped" fails_with "stopped" kctl app-connect a1 5173
check "the stopped sandbox's policy keeps its ports" test "$(ann_of a1)" = 5173
kctl start a1 >/dev/null
check "after start the policy still admits the gateway to 5173" \
    test "$(obj networkpolicies sandboxes sbx-a1 | gw_rules)" = "[[$GWPEER, [[\"TCP\", 5173]]]]"
check "after start the policy again allows egress to a proxy pod" test "$(proxy_of a1)" != None

# --- what reaches whom, under every policy there is: the manifests', the
# namespace default-deny and the two sandboxes' policies as the fake holds
# them (a1 exposes 5173, b1 nothing) ---
kctl create b1 >/dev/null || fail "create b1"
for id in a1 b1; do obj networkpolicies sandboxes "sbx-$id" >"$T/np-$id.json"; done
lbl() { obj pods "$1" "$2" | jq_py '",".join(k + "=" + v for k, v in sorted(d["metadata"]["labels"].items()))'; }
A1="sandboxes:$(lbl sandboxes sbx-a1)"
B1="sandboxes:$(lbl sandboxes sbx-b1)"
PX="sandbox-system:$(lbl sandbox-system "$(proxy_of a1)")"
GW=sandbox-system:app.kubernetes.io/name=app-gateway,pod-template-hash=5d9f
OR=sandbox-system:app.kubernetes.io/name=sandbox-orchestrator
IC=ingress-nginx:app.kubernetes.io/name=ingress-nginx
DNS=kube-system:k8s-app=kube-dns
AP=$AGENT_PORT
python3 "$K8S_DIR/netpol_eval.py" "$TOP/netpol/default-deny.yaml" "$TOP/netpol/egress-proxy.yaml" \
    "$TOP/deploy/40-app-gateway.yaml" "$T/np-a1.json" "$T/np-b1.json" >"$T/eval.out" <<EOF
allow|$IC|$GW|8081|reach: the Ingress controller -> gateway:8081
allow|$GW|$A1|5173|reach: gateway -> a1's exposed port
deny|$GW|$A1|8080|reach: gateway -> a1's port that is not exposed
deny|$GW|$A1|$AP|reach: gateway -> a1's agent port
deny|$GW|$A1|5173/UDP|reach: gateway -> a1's exposed port over UDP
deny|$GW|$B1|5173|reach: gateway -> b1 (exposes nothing)
deny|$B1|$A1|5173|reach: another sandbox -> a1's exposed port
deny|$IC|$A1|5173|reach: the Ingress controller -> a1's exposed port (only the gateway)
deny|$OR|$A1|5173|reach: orchestrator -> a1's exposed port
allow|$OR|$A1|$AP|reach: orchestrator -> a1's agent port
allow|$GW|$OR|7443|reach: gateway -> orchestrator control port
deny|$GW|$OR|8080|reach: gateway -> orchestrator API port
deny|$B1|$OR|7443|reach: a sandbox -> orchestrator control port
deny|$IC|$OR|7443|reach: the Ingress controller -> orchestrator control port
deny|$GW|$PX|3128|reach: gateway -> proxy port
deny|$GW|$PX|9091|reach: gateway -> proxy admin port
deny|$GW|ip:93.184.216.34|443|reach: gateway -> the Internet
deny|$GW|ip:169.254.169.254|80|reach: gateway -> cloud metadata
allow|$GW|$DNS|53/UDP|reach: gateway -> kube-dns
deny|$A1|$GW|8081|reach: a1 -> gateway
allow|$A1|$PX|3128|reach: a1 -> its proxy pod (unchanged)
EOF
cat "$T/eval.out"
check "all 21 reachability checks ran" test "$(grep -cE '^(not )?ok ' "$T/eval.out")" = 21
# The evaluator is not blind: without the gateway's own policy the gateway
# reaches the Internet, and a1's policy as if it exposed 8080 admits 8080.
check "evaluator: no gateway policy, the gateway gets out" bash -c "echo 'allow|$GW|ip:93.184.216.34|443|x' |
    python3 '$K8S_DIR/netpol_eval.py' '$TOP/netpol/default-deny.yaml' >/dev/null"
sed 's/"port":\s*5173/"port": 8080/' "$T/np-a1.json" >"$T/np-a1-8080.json"
check "evaluator: a policy exposing 8080 admits 8080" bash -c "echo 'allow|$GW|$A1|8080|x' |
    python3 '$K8S_DIR/netpol_eval.py' '$TOP/netpol/default-deny.yaml' '$TOP/deploy/40-app-gateway.yaml' '$T/np-a1-8080.json' >/dev/null"

# --- app_connect ---
ip=$(pod_ip a1)
APP_PORT=$(free_port)
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = b"app in sbx-a1\n"
        self.send_response(200); self.send_header("Content-Length", str(len(b)))
        self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
http.server.HTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()' "$ip" "$APP_PORT" &
track_pid $!
kctl app-connect a1 "$APP_PORT" >"$T/addr" 2>"$T/err"
check "app-connect gives podIP:port" test "$(cat "$T/addr")" = "$ip:$APP_PORT"
wait_for 10 curl -sf "http://$(cat "$T/addr")/" >/dev/null
check "an HTTP server at that address answers" test "$(curl -sS "http://$(cat "$T/addr")/")" = "app in sbx-a1"
check "app-connect on a missing sandbox: not found" fails_with "not found" kctl app-connect nosuch 8080
check "app-connect on an invalid id: not found" fails_with "not found" kctl app-connect '../x' 8080
check "app-connect to the agent port is refused" fails_with "is the agent's" kctl app-connect a1 "$AGENT_PORT"
check "app-connect to port 0 is refused" fails_with "out of range" kctl app-connect a1 0
check "app-connect to port 65536 is refused" fails_with "out of range" kctl app-connect a1 65536
fake fail-pod '{"ns":"sandboxes","name":"sbx-a1","reason":"Error"}' >/dev/null
check "app-connect on a failed pod: stopped" fails_with "stopped" kctl app-connect a1 8080
kctl start a1 >/dev/null

# --- zero ports: no gateway rule at all ---
check "app-ports a1 (none)" kctl app-ports a1
check "the body has only the orchestrator's ingress rule" \
    test "$(np_last a1 | jq_py '[len(d["spec"]["ingress"]), d["spec"]["ingress"][0]["ports"][0]["port"]]')" = "[1, $AGENT_PORT]"
check "no app-ports annotation left" test "$(ann_of a1)" = None
check "egress untouched by it" test "$(proxy_of a1)" != None

# --- hostile input: refused, nothing written ---
n1=$(np_writes a1)
check "port 0 refused" fails_with "port 0 out of range" kctl app-ports a1 8080 0
check "port 65536 refused" fails_with "port 65536 out of range" kctl app-ports a1 65536
check "negative port refused" fails_with "port -1 out of range" kctl app-ports a1 -1
check "duplicates refused" fails_with "port 8080 is given twice" kctl app-ports a1 8080 3000 8080
check "the agent port refused" fails_with "is the agent's" kctl app-ports a1 "$AGENT_PORT"
# shellcheck disable=SC2046
check "10,000 ports refused" fails_with "too many app ports (10000; at most 256)" kctl app-ports a1 $(seq 10001 20000)
check "not a number: usage error (exit 2)" bash -c "'$K8SCTL' -c '$CFG' app-ports a1 80x 2>/dev/null; [ \$? -eq 2 ]"
check "nothing was written for any of them" test "$(np_writes a1)" = "$n1"
check "the maximum (256 ports) is accepted" kctl app-ports a1 $(seq 20001 20256)
check "and all 256 are in the policy" test "$(obj networkpolicies sandboxes sbx-a1 | jq_py 'sum(len(r["ports"]) for r in d["spec"]["ingress"]) - 1')" = 256
check "app-ports on a missing sandbox: not found" fails_with "not found" kctl app-ports nosuch 8080
kapi PATCH "$NPPATH/sbx-a1?fieldValidation=Strict" '{"metadata":{"annotations":{"sandbox.dev/app-ports":"80,junk"}}}' >/dev/null
kctl stop a1 && kctl start a1 >/dev/null
check "a policy whose annotation does not read is rewritten with no app ports (fail closed)" \
    test "$(obj networkpolicies sandboxes sbx-a1 | jq_py 'len(d["spec"]["ingress"])')/$(ann_of a1)" = 1/None
kctl destroy a1

# --- the policy is made again if it went missing ---
kctl create a2 >/dev/null
kapi DELETE "$NPPATH/sbx-a2" >/dev/null
check "app-ports recreates a missing policy" kctl app-ports a2 8080
check "with the gateway rule" test "$(obj networkpolicies sandboxes sbx-a2 | gw_rules)" = "[[$GWPEER, [[\"TCP\", 8080]]]]"
check "and no egress (a2 was never attached)" test "$(obj networkpolicies sandboxes sbx-a2 | jq_py 'len(d["spec"]["egress"])')" = 0

# --- the gateway's namespace and labels are settings ---
k8s_write_config 'gateway_namespace: apps-edge' 'gateway_labels: app=gw,tier=edge'
check "app-ports with configured gateway selector" kctl app-ports a2 8080 9000
check "the body names the configured namespace and labels" \
    test "$(np_last a2 | gw_rules)" = '[[[{"podSelector": {"matchLabels": {"app": "gw", "tier": "edge"}}, "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "apps-edge"}}}], [["TCP", 8080], ["TCP", 9000]]]]'
k8s_write_config 'gateway_labels: junk'
check "malformed gateway_labels: a clear startup error" fails_with "kubernetes.gateway_labels: expected k=v" kctl app-ports a2 8080
k8s_write_config 'gateway_namespace: Not_A_Label'
check "a gateway namespace that is no DNS label: refused" fails_with "namespaces must be DNS labels" kctl app-ports a2 8080
k8s_write_config
kctl destroy a2

# --- the defaults match the manifests ---
check "deploy/40-app-gateway.yaml: gateway pods carry the default labels in the orchestrator's namespace" \
    python3 - "$TOP" <<'PY'
import sys, yaml
top = sys.argv[1]
orch = [d for d in yaml.safe_load_all(open(top + "/deploy/20-orchestrator.yaml")) if d]
cm = [d for d in orch if d["kind"] == "ConfigMap"][0]
ons = yaml.safe_load(cm["data"]["orchestrator.yaml"])["kubernetes"]["orchestrator_namespace"]
gw = [d for d in yaml.safe_load_all(open(top + "/deploy/40-app-gateway.yaml")) if d]
dep = [d for d in gw if d["kind"] == "Deployment"][0]
lbl = dep["spec"]["template"]["metadata"]["labels"]
sys.exit(not (dep["metadata"]["namespace"] == ons and
              lbl.get("app.kubernetes.io/name") == "app-gateway"))
PY

# --- the renderer's example with apps ---
"$K8SCTL" render-netpol egress-proxy-7d9c5-x2k4q 3000 8080 >"$T/npx.json"
check "rendered apps policy equals netpol/sandbox-policy-apps.example.json" \
    python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
    "$T/npx.json" "$TOP/netpol/sandbox-policy-apps.example.json"

# --- the ConfigMaps' configurations load in the real programs ---
mkdir -p "$T/keys"
for k in api-key agent-key proxy-admin-token gateway-control-token token; do
	head -c 48 /dev/urandom | base64 >"$T/keys/$k"
done
python3 - "$TOP" "$T" <<'PY'
import sys, yaml
top, t = sys.argv[1], sys.argv[2]
def data(f, key):
    for d in yaml.safe_load_all(open(top + "/deploy/" + f)):
        if d and d["kind"] == "ConfigMap" and key in d.get("data", {}):
            return d["data"][key]
open(t + "/orch.yaml", "w").write(data("20-orchestrator.yaml", "orchestrator.yaml")
                                  .replace("/etc/orchestrator/keys/", t + "/keys/"))
open(t + "/gw.yaml", "w").write(data("40-app-gateway.yaml", "gateway.yaml")
                                .replace("/etc/app-gateway/control/", t + "/keys/"))
PY
ORCH=$BIN/orchestrator/orchestrator
if "$ORCH" --print-docs 2>/dev/null | grep -qF '`apps.control_listen`'; then
	check "the orchestrator accepts deploy/20-orchestrator.yaml's configuration (-n)" \
	    bash -c "'$ORCH' -n -f '$T/orch.yaml' >/dev/null"
else
	skip "the orchestrator accepts deploy/20-orchestrator.yaml's configuration" \
	    "(this orchestrator has no apps.* keys)"
fi
if [ -x "$BIN/gateway/app-gateway" ]; then
	check "the app gateway accepts deploy/40-app-gateway.yaml's configuration (-n)" \
	    bash -c "'$BIN/gateway/app-gateway' -n -f '$T/gw.yaml' >/dev/null"
else
	skip "the app gateway accepts deploy/40-app-gateway.yaml's configuration" "(no app-gateway built)"
fi
k8s_no_violations
