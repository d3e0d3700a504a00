#!/usr/bin/env bash
# 74-apps-kubernetes.sh: expose_port on the kubernetes runtime, the whole
# way: the orchestrator against the fake API server (every body validated
# against the real schemas), the real app-gateway connected over TCP with
# the control token, curl through it to an app in a sandbox pod (the fake
# kubelet runs the real agent; a pod's IP is 127.0.0.N), and the sandbox's
# NetworkPolicy admitting the gateway pods to exactly the exposed ports.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
GW=$BIN/gateway/app-gateway
[ -x "$GW" ] || { fail "gateway binary" "not built"; exit 1; }
k8s_setup
CPORT=$(free_port)
GWP=$(free_port)
APP_PORT=$(free_port)
DOMAIN=apps.localhost
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/ctltok"
k8s_orch_setup "apps:
  domain: $DOMAIN
  port: $GWP
  control_listen: 127.0.0.1:$CPORT
  control_token_file: $T/ctltok"
cat >"$T/gw.yaml" <<YAML
listen: 127.0.0.1:$GWP
domain: $DOMAIN
control:
  connect: 127.0.0.1:$CPORT
  token_file: $T/ctltok
YAML

k8s_orch_up "orchestrator starts on the kubernetes runtime with apps on"
"$GW" -f "$T/gw.yaml" >>"$T/gw.log" 2>&1 &
track_pid $!
check "the gateway connects over TCP with the token" wait_for 20 grep -q "gateway=127.0.0.1 connected" "$T/orch.log"

tool_sc() {
	mcp_raw "$1" "$2" "$3" -H 'MCP-Protocol-Version: 2025-06-18' |
	    jq -c 'if .result.isError then {error: ([.result.content[].text] | join(""))} else .result.structuredContent end'
}

# The app: python's http.server in the sandbox pod (on the fake kubelet's
# host, listening on every address: the pod IP is one of them).
r=$(tool_sc k1 shell_async "{\"command\":\"mkdir -p /tmp/k1www && cd /tmp/k1www && echo k8s-app-page > index.html && exec python3 -m http.server $APP_PORT --bind 0.0.0.0\"}")
check "app started in the sandbox pod" [ -n "$(echo "$r" | jq -r '.job_id // empty')" ]
job=$(echo "$r" | jq -r '.job_id // empty')
# The fake kubelet runs a pod's agent on this host, and a job has its own
# process group: the app outlives the pod unless it is stopped here.
app_gone() {
	local p
	[ -n "$job" ] && tool_sc k1 shell_stop "{\"job_id\":\"$job\"}" >/dev/null 2>&1
	for p in $(ss -Hltnp "sport = :$APP_PORT" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2); do
		kill "$p" 2>/dev/null
	done
	return 0
}
on_exit app_gone
sb=$(orch_rest GET /v1/sessions/k1 | jq -r .sandbox_id)
pod=sbx-$sb
r=$(tool_sc k1 expose_port "{\"port\":$APP_PORT,\"name\":\"web\"}")
tok=$(echo "$r" | jq -r .token)
check "expose_port on kubernetes" [ "$(echo "$r" | jq -r .url)" = "http://web-$sb.$DOMAIN:$GWP/" ]

# The ports of the ingress rules that admit the gateway pods (the agent
# port's rule, from the orchestrator, is another one).
ingress_ports() {
	obj networkpolicies sandboxes "$pod" | jq_py '",".join(sorted(str(p["port"]) for r in (d["spec"].get("ingress") or []) if any((f.get("podSelector") or {}).get("matchLabels", {}).get("app.kubernetes.io/name") == "app-gateway" for f in (r.get("from") or [])) for p in (r.get("ports") or [])))'
}
ports_are() { [ "$(ingress_ports)" = "$1" ]; }
check "the sandbox's NetworkPolicy admits the gateway to the exposed port" wait_for 10 ports_are "$APP_PORT" ||
    obj networkpolicies sandboxes "$pod"

U=http://web-$sb.$DOMAIN:$GWP
check "curl through the gateway reaches the app in the pod" wait_for 20 bash -c \
    "curl -s -H 'Authorization: Bearer $tok' $U/index.html | grep -qx k8s-app-page"
check "without the token: 401" [ "$(curl -s -o /dev/null -w '%{http_code}' "$U/")" = 401 ]
r=$(tool_sc k1 unexpose_port '{"name":"web"}')
check "unexpose: 404 at once" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "$U/")" = 404 ]
check "unexpose: the ingress rule is gone" wait_for 10 ports_are ""
k8s_no_violations
