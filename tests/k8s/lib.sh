# tests/k8s/lib.sh: shared setup for the kubernetes runtime's e2e tests
# (tests/e2e/*-k8s-*.sh, 58c, 74) and benchmarks (tests/bench/k8s-*).
# Source after tests/lib/common.sh. Gives:
#   k8s_setup [fake args...]  test PKI, tokens, the fake API server (real
#                             agent for sandbox pods, fake proxy admin for
#                             proxy pods), $CFG for k8sctl
#   kctl ARGS...              build/orchestrator/k8sctl -c $CFG ARGS
#   fake OP [JSON]            fake API server control (/_fake/OP)
#   kapi METHOD PATH [JSON]   raw API call with the valid token
#   jq_py EXPR < json         tiny JSON query (python): EXPR uses `d`
#   k8s_no_violations         "ok" line: the fake recorded no violation
#   k8s_setup_real_proxy [fake args...]  k8s_setup with the real egress-proxy
#                             as the proxy pods ($PX, listening on $PROXY_PORT)
#   proxy_pod_admin IP JSON   a proxy pod's admin op (its admin token)
# The orchestrator on this runtime, against the fake (after k8s_setup):
#   k8s_orch_setup [TOP] [KEY: VALUE...]  $ORCH_PORT (a free port),
#                             $ORCH_URL, $ORCH_KEY (in $T/key), then
#                             k8s_orch_config TOP KEY...; exits when the
#                             binary is not built
#   k8s_orch_config [TOP] [KEY: VALUE...]  writes $T/orch.yaml: listen,
#                             key_file, runtime: kubernetes, TOP (YAML text:
#                             other top-level sections), then $CFG's
#                             kubernetes: section with each KEY: VALUE added
#                             (a one-line key of $CFG so named is dropped; a
#                             VALUE may go on over lines, indented under KEY)
#   k8s_orch_start            starts it (log: $T/orch.log, pid $ORCH_PID),
#                             waits for /readyz (60 s); fails if it is not
#   k8s_orch_up NAME          check NAME k8s_orch_start; on failure the
#                             log's tail goes with the "not ok" and exits
#   k8s_orch_stop             SIGTERM, then waits for it to exit
#   mcp_raw SID TOOL ARGS [curl args...]  tools/call in session SID (ARGS
#                             a JSON object); prints the JSON-RPC answer
#   mcp_tool SID TOOL ARGS [curl args...]  the same; prints its text
#                             ("ERROR: " first if isError; "RPCERROR: {..}")
#   mcp_text < answer         that text of a JSON-RPC tools/call answer
#   orch_rest METHOD PATH [curl args...]  the REST API with the key
#   k8s_pods                  the live sandbox pods' names (sorted JSON list)
#   k8s_warm_pod READY_NAME   checks the warm pool's pod is made and readied;
#                             sets uid_before[POD] for every live sandbox pod
K8SCTL=$BIN/orchestrator/k8sctl
ORCH_BIN=$BIN/orchestrator/orchestrator
AGENT=$BIN/agent/sandbox-agent
K8S_DIR=$TOP/tests/k8s

k8s_pki() {
	local d=$T/pki
	mkdir -p "$d"
	(
	cd "$d" || exit 1
	openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
	openssl req -x509 -new -key ca.key -subj "/CN=fake-k8s-ca" -days 2 -out ca.crt 2>/dev/null
	openssl ecparam -name prime256v1 -genkey -noout -out srv.key 2>/dev/null
	openssl req -new -key srv.key -subj "/CN=kube-apiserver" -out srv.csr 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >srv.ext
	openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
	    -days 2 -extfile srv.ext -out srv.crt 2>/dev/null
	openssl ecparam -name prime256v1 -genkey -noout -out cli.key 2>/dev/null
	openssl req -new -key cli.key -subj "/CN=tester/O=system:masters" -out cli.csr 2>/dev/null
	openssl x509 -req -in cli.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
	    -days 2 -out cli.crt 2>/dev/null
	# A second CA nobody trusts.
	openssl ecparam -name prime256v1 -genkey -noout -out evil.key 2>/dev/null
	openssl req -x509 -new -key evil.key -subj "/CN=evil" -days 2 -out evil.crt 2>/dev/null
	) || return 1
	[ -s "$d/cli.crt" ]
}

k8s_setup() {
	k8s_pki || { fail "pki"; exit 1; }
	mkdir -p "$T/sa" "$T/fake"
	cp "$T/pki/ca.crt" "$T/sa/ca.crt"
	echo sandboxes >"$T/sa/namespace"
	head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$T/sa/token"
	cp "$T/sa/token" "$T/tokens"
	head -c 48 /dev/urandom | base64 >"$T/agent-key"
	head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$T/admin-token"
	: >"$T/proxy-record.jsonl"
	API_PORT=$(free_port)
	AGENT_PORT=$(free_port)
	ADMIN_PORT=$(free_port)
	# Proxy pods' command (run by the fake kubelet with POD_IP, POD_NAME and
	# this environment): the stand-in admin port unless K8S_POD_CMD is set.
	export ADMIN_PORT
	python3 "$K8S_DIR/fake_apiserver.py" --port "$API_PORT" \
	    --cert "$T/pki/srv.crt" --key "$T/pki/srv.key" --ca "$T/pki/ca.crt" \
	    --tokens "$T/tokens" --workdir "$T/fake" --violations "$T/violations" \
	    --agent "$AGENT" \
	    --pod-cmd "${K8S_POD_CMD:-exec python3 $K8S_DIR/fake_proxy_admin.py $ADMIN_PORT $T/admin-token $T/proxy-record.jsonl}" \
	    --pod-cmd-port "$ADMIN_PORT" \
	    --seed "$TOP/deploy/00-namespaces.yaml" \
	    --seed "$TOP/deploy/30-egress-proxy.yaml" \
	    --seed "$TOP/deploy/40-runtimeclasses.yaml" "$@" \
	    2>"$T/fake.log" &
	FAKE_PID=$!
	track_pid $FAKE_PID
	wait_port "$API_PORT" 20 || { fail "fake apiserver starts" "$(tail -5 "$T/fake.log")"; exit 1; }
	CFG=$T/k8s.yaml
	k8s_write_config
}

# k8s_write_config [extra yaml lines under kubernetes:]
k8s_write_config() {
	cat >"$CFG" <<YAML
kubernetes:
  api_server: https://127.0.0.1:$API_PORT
  incluster_dir: $T/sa
  request_timeout: 5s
  retries: 3
  retry_backoff: 50ms
  agent_port: $AGENT_PORT
  agent_key_file: $T/agent-key
  ready_timeout: 30s
  stop_grace: 1
  image: debian:12
  agent_image: sandbox-agent:test
  orchestrator_namespace: sandbox-system
  proxy:
    namespace: sandbox-system
    admin_port: $ADMIN_PORT
    admin_token_file: $T/admin-token
    wait: 20s
YAML
	local a
	for a in "$@"; do
		sed -i "/^  ${a%%:*}: /d" "$CFG"
		printf '  %s\n' "$a" >>"$CFG"
	done
}

kctl() { "$K8SCTL" -c "$CFG" "$@"; }

fake() {
	curl -sS --cacert "$T/pki/ca.crt" -X POST -d "${2:-{\}}" \
	    "https://127.0.0.1:$API_PORT/_fake/$1"
}

fake_get() { curl -sS --cacert "$T/pki/ca.crt" "https://127.0.0.1:$API_PORT/_fake/$1"; }

kapi() {
	local ct=application/json
	[ "$1" = PATCH ] && ct=application/merge-patch+json
	curl -sS --cacert "$T/pki/ca.crt" -H "Authorization: Bearer $(cat "$T/sa/token")" \
	    -H "Content-Type: $ct" -X "$1" ${3:+-d "$3"} "https://127.0.0.1:$API_PORT$2"
}

# Object from the fake's store: obj KIND-PLURAL NS NAME -> JSON or "null".
obj() {
	fake_get state | python3 -c '
import json, sys
kinds = {"pods": "Pod", "persistentvolumeclaims": "PersistentVolumeClaim",
         "secrets": "Secret", "networkpolicies": "NetworkPolicy",
         "deployments": "Deployment"}
d = json.load(sys.stdin)
for o in d["items"]:
    m = o["metadata"]
    if o.get("kind") == kinds[sys.argv[1]] and m.get("namespace") == sys.argv[2] \
            and m["name"] == sys.argv[3]:
        print(json.dumps(o)); break
else:
    print("null")' "$@"
}

# jq_py EXPR: evaluates a python expression over d = the JSON on stdin.
jq_py() { python3 -c 'import json,sys; d=json.load(sys.stdin); r=eval(sys.argv[1]); print(r if not isinstance(r,(dict,list)) else json.dumps(r))' "$1"; }

k8s_no_violations() {
	if [ -s "$T/violations" ]; then
		fail "fake API server recorded no violations" "$(head -c 2000 "$T/violations")"
	else
		ok "fake API server recorded no violations"
	fi
}

# agent_sh ID COMMAND: runs COMMAND in the sandbox's persistent shell
# through the address the runtime gives; prints the output.
agent_sh() {
	local body
	body=$(python3 -c 'import json,sys; print(json.dumps({"command": sys.argv[1], "timeout_ms": 20000}))' "$2")
	kctl agent "$1" POST /v1/shell "$body" | jq_py 'd["output"]'
}

# fails_with TEXT cmd...: cmd exits non-zero and its stderr contains TEXT.
fails_with() {
	local want=$1 rc
	shift
	"$@" >"$T/fw.out" 2>"$T/fw.err"
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "  expected failure, got success: $*" >&2
		return 1
	fi
	if ! grep -qF -- "$want" "$T/fw.err"; then
		echo "  stderr lacks \"$want\": $(head -c 500 "$T/fw.err")" >&2
		return 1
	fi
}

# k8s_setup_real_proxy [fake args...]: k8s_setup with the real egress-proxy
# as the proxy Deployment's pods: the fake kubelet runs $PX on each proxy
# pod's IP ($PROXY_PORT, the admin port $ADMIN_PORT with the admin token;
# its CA in $T/pxca), its output in $T/fake/podcmd-POD.log;
# kubernetes.proxy.port is $PROXY_PORT and proxy.wait 30s in $CFG.
k8s_setup_real_proxy() {
	PX=$BIN/egress-proxy/egress-proxy
	[ -x "$PX" ] || { fail "egress-proxy binary" "not built"; exit 1; }
	mkdir -p "$T/pxca"
	openssl ecparam -name prime256v1 -genkey -noout -out "$T/pxca/ca.key" 2>/dev/null
	openssl req -x509 -new -key "$T/pxca/ca.key" -subj "/CN=test egress CA" -days 2 -out "$T/pxca/ca.crt" 2>/dev/null
	PROXY_PORT=$(free_port)
	cat >"$T/px.tmpl" <<YAML
listen: POD_IP:$PROXY_PORT
admin:
  listen: POD_IP:ADMIN_PORT_
  token_file: $T/admin-token
ca:
  cert: $T/pxca/ca.crt
  key: $T/pxca/ca.key
YAML
	K8S_POD_CMD="sed -e \"s/POD_IP/\$POD_IP/\" -e \"s/ADMIN_PORT_/\$ADMIN_PORT/\" $T/px.tmpl >$T/px-\$POD_NAME.yaml && exec $PX -d -f $T/px-\$POD_NAME.yaml"
	k8s_setup "$@"
	sed -i "s|^    wait: 20s|    wait: 30s\n    port: $PROXY_PORT|" "$CFG"
}

proxy_pod_admin() { curl -s --max-time 5 -H "Authorization: Bearer $(cat "$T/admin-token")" -d "$2" "http://$1:$ADMIN_PORT/v1/admin"; }

k8s_orch_setup() {
	[ -x "$ORCH_BIN" ] || { fail "orchestrator binary" "not built"; exit 1; }
	ORCH_PORT=$(free_port)
	ORCH_URL=http://127.0.0.1:$ORCH_PORT
	ORCH_KEY=k-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	printf '%s\n' "$ORCH_KEY" >"$T/key"
	chmod 600 "$T/key"
	ORCH_PID=
	k8s_orch_config "$@"
}

k8s_orch_config() {
	local top=${1:-} a
	[ $# -gt 0 ] && shift
	cp "$CFG" "$T/orch-k8s.yaml"
	for a in "$@"; do
		sed -i "/^  ${a%%:*}: /d" "$T/orch-k8s.yaml"
		printf '%s\n' "$a" | sed 's/^/  /' >>"$T/orch-k8s.yaml"
	done
	{
		printf 'listen: 127.0.0.1:%s\nkey_file: %s\nruntime: kubernetes\n' "$ORCH_PORT" "$T/key"
		[ -n "$top" ] && printf '%s\n' "$top"
		cat "$T/orch-k8s.yaml"
	} >"$T/orch.yaml"
}

k8s_orch_start() {
	"$ORCH_BIN" -d -f "$T/orch.yaml" >>"$T/orch.log" 2>&1 &
	ORCH_PID=$!
	track_pid "$ORCH_PID"
	wait_for 60 curl -sf "$ORCH_URL/readyz"
}

k8s_orch_up() {
	if k8s_orch_start; then
		ok "$1"
	else
		fail "$1" "$(tail -20 "$T/orch.log")"
		exit 1
	fi
}

k8s_orch_stop() {
	[ -n "$ORCH_PID" ] && kill "$ORCH_PID" 2>/dev/null && wait "$ORCH_PID" 2>/dev/null
	return 0
}

mcp_raw() {
	local sid=$1 tool=$2 args=$3
	shift 3
	curl -s --max-time 120 -H "Authorization: Bearer $ORCH_KEY" -H 'Content-Type: application/json' \
	    -H 'Accept: application/json, text/event-stream' -H "X-Session-Id: $sid" "$@" \
	    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$tool\",\"arguments\":$args}}" \
	    "$ORCH_URL/mcp"
}

mcp_tool() { mcp_raw "$@" | mcp_text; }

mcp_text() {
	python3 -c '
import json, sys
d = json.load(sys.stdin)
r = d.get("result")
if r is None:
    print("RPCERROR: " + json.dumps(d.get("error")))
else:
    print(("ERROR: " if r.get("isError") else "") + "".join(c.get("text", "") for c in r["content"]))'
}

orch_rest() {
	local m=$1 p=$2
	shift 2
	curl -s --max-time 120 -H "Authorization: Bearer $ORCH_KEY" -H 'Content-Type: application/json' \
	    -X "$m" "$@" "$ORCH_URL$p"
}

k8s_pods() { fake_get state | jq_py 'sorted(o["metadata"]["name"] for o in d["items"] if o["kind"]=="Pod" and o["metadata"]["namespace"]=="sandboxes" and not o["metadata"].get("deletionTimestamp"))'; }

# k8s_warm_pod READY_NAME (pool.min_idle 1): checks "warm pool: one idle
# sandbox pod" and READY_NAME, that it is readied (agent answered, first
# command run). A claim takes only a ready pool member; a call before that
# gets a new pod of its own, which is right but not what a test of claims
# is about (calling too early made such checks fail now and then). Then
# uid_before[POD] is the uid of every live sandbox pod: which one a claim
# takes is the orchestrator's choice.
_k8s_one_pod() { test "$(k8s_pods | jq_py 'len(d)')" -ge 1; }
k8s_warm_pod() {
	local p
	check "warm pool: one idle sandbox pod" wait_for 60 _k8s_one_pod
	check "$1" wait_for 60 grep -q "warm pool member ready" "$T/orch.log"
	declare -gA uid_before=()
	for p in $(k8s_pods | jq_py '" ".join(d)'); do
		uid_before[$p]=$(obj pods sandboxes "$p" | jq_py 'd["metadata"]["uid"]')
	done
}
