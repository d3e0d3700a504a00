# tests/k8s/lib.sh: shared setup for the kubernetes runtime's e2e tests
# (tests/e2e/6*-k8s-*.sh). Source after tests/lib/common.sh. Gives:
#   k8s_setup [fake args...]  test PKI, tokens, the fake API server (real
#                             agent for sandbox pods, fake proxy admin for
#                             proxy pods), $CFG for k8sctl
#   kctl ARGS...              build/orchestrator/k8sctl -c $CFG ARGS
#   fake OP [JSON]            fake API server control (/_fake/OP)
#   kapi METHOD PATH [JSON]   raw API call with the valid token
#   jq_py EXPR < json         tiny JSON query (python): EXPR uses `d`
#   k8s_no_violations         "ok" line: the fake recorded no violation
K8SCTL=$BIN/orchestrator/k8sctl
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
