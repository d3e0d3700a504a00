#!/usr/bin/env bash
# Kubernetes runtime: the REST client. Requests from many threads run at
# once on one event loop over reused connections; 429 retried with Retry-After, 5xx
# retried then surfaced, 403 and 401 Status objects turned into clear
# errors, timeouts, service-account token rotation (the file changes, the
# next request uses the new token, the old one is refused), kubeconfig with
# a client certificate or a token, the CA actually checked.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup

nreq() { fake_get log | jq_py "len([x for x in d['log'] if x[0]=='$1' and '$2' in x[1]])"; }

# 429 twice, then success.
fake fail '{"method":"GET","path":"/persistentvolumeclaims$","status":429,"count":2,"retry_after":1}' >/dev/null
before=$(nreq GET persistentvolumeclaims?)
t0=$(date +%s%N)
check "429 retried until it succeeds" kctl list
dt=$(( ($(date +%s%N) - t0) / 1000000 ))
check "Retry-After honoured (>= 2 s for two 429s)" test "$dt" -ge 1900
check "three attempts were made" test $(( $(nreq GET persistentvolumeclaims?) - before )) -eq 3

# 500 more often than the retries: surfaced with the Status message.
fake fail '{"method":"GET","path":"/pods$","status":500,"count":10}' >/dev/null
check "500 after retries: clear error" fails_with "etcdserver: request timed out (500 InternalError)" kctl list
fake clear >/dev/null

# 403 (RBAC) on create: surfaced, nothing half-made.
fake fail '{"method":"POST","path":"/pods$","status":403,"count":1}' >/dev/null
check "403 surfaced with the RBAC message" fails_with 'cannot create resource "pods" in API group "" in the namespace "sandboxes" (403 Forbidden)' kctl create e1
check "403 is not retried" test "$(nreq POST /pods)" -eq 1
check "failed create cleaned up" test "$(kctl list)" = "[]"

# A create whose answer was lost (500) but which happened: retry sees 409.
kctl create e2 >/dev/null
check "created after transient 5xx elsewhere" test "$(kctl get e2 | jq_py 'd["state"]')" = running

# Timeouts: the server stalls longer than request_timeout.
k8s_write_config 'request_timeout: 1s' 'retries: 1'
fake delay '{"method":"GET","path":"/pods/sbx-e2$","seconds":4,"count":2}' >/dev/null
t0=$(date +%s)
check "timeout surfaced" fails_with "timed out after 1000 ms" kctl get e2
check "bounded by timeout x attempts" test $(( $(date +%s) - t0 )) -lt 8
fake clear >/dev/null
fake delay '{"method":"GET","path":"/pods/sbx-e2$","seconds":3,"count":1}' >/dev/null
check "a timed-out attempt is retried" kctl get e2
k8s_write_config
fake clear >/dev/null

# One client, one event loop (libcurl multi): requests from several threads
# are in flight at once, a stalled one does not hold up the others, and
# connections to the API server are reused.
P=/api/v1/namespaces/sandboxes
ms_of() { sed -n "s/^req $1 .*ms=\([0-9]*\)$/\1/p" "$2"; }
stat_of() { sed -n "s/^stats .*$1=\([0-9]*\).*/\1/p" "$2"; }
fake delay '{"method":"GET","path":"/pods/slow-one$","seconds":3,"count":1}' >/dev/null
kctl requests $P/pods/slow-one $P/persistentvolumeclaims $P/secrets >"$T/par" 2>"$T/par.err"
check "concurrent requests all answered" test "$(grep -c 'status=' "$T/par")" = 3
check "the stalled request took the stall (>= 2.9 s)" test "$(ms_of 0 "$T/par")" -ge 2900
check "the others completed meanwhile, on the same loop" \
    test "$(ms_of 1 "$T/par")" -lt "$(( $(ms_of 0 "$T/par") - 500 ))" -a "$(ms_of 2 "$T/par")" -lt "$(( $(ms_of 0 "$T/par") - 500 ))"
check "several transfers in flight at once" test "$(stat_of max_inflight "$T/par")" -ge 2
fake clear >/dev/null
kctl requests --seq 12 $P/pods >"$T/seq" 2>&1
check "12 requests in a row: all answered" test "$(grep -c 'status=200' "$T/seq")" = 12
check "connections reused (12 requests, at most 2 connects)" test "$(stat_of connects "$T/seq")" -le 2
# A hung API server: three stalled requests time out together, cleanly.
k8s_write_config 'request_timeout: 1s' 'retries: 1'
fake delay '{"method":"GET","path":"/pods/hung-","seconds":20,"count":6}' >/dev/null
t0=$(date +%s%N)
check "hung server: every request fails" fails_with "timed out after 1000 ms" \
    kctl requests $P/pods/hung-1 $P/pods/hung-2 $P/pods/hung-3
dt=$(( ($(date +%s%N) - t0) / 1000000 ))
check "each one timed out (2 attempts of 1 s each)" test "$(grep -c 'timed out after 1000 ms' "$T/fw.out")" = 3
check "timed out concurrently (< 5.5 s; one after another: >= 6 s)" test "$dt" -lt 5500
k8s_write_config
fake clear >/dev/null

# 401: wrong token.
cp "$T/sa/token" "$T/first-token"
echo bogus-token >"$T/sa/token"
check "401 surfaced" fails_with "Unauthorized (401 Unauthorized)" kctl list
cp "$T/first-token" "$T/sa/token"

# Token rotation inside one long-running process (as the orchestrator):
# the kubelet replaces the token file; the server accepts only the new one.
rotate() {
	local new
	new=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
	echo "$new" >"$T/tokens"
	echo "$new" >"$T/sa/token.new" && mv "$T/sa/token.new" "$T/sa/token"
}
# (a) the file is checked every 100 ms: picked up before any 401.
k8s_write_config 'token_check: 100ms'
kctl poll 8 400 >"$T/poll1" 2>"$T/poll1.err" &
pp=$!
wait_for 10 grep -q 'poll 1 ok' "$T/poll1"
rotate
wait $pp
check "rotation picked up by a running client (periodic check)" test "$(grep -c ' ok ' "$T/poll1")" = 8
check "no 401 was needed" not_contains "$T/poll1.err" 401
# (b) checked only hourly: the 401 makes it re-read the file and retry.
k8s_write_config 'token_check: 1h'
before=$(fake_get log | jq_py "len([x for x in d['log'] if x[2]==401])")
kctl poll 6 400 >"$T/poll2" 2>"$T/poll2.err" &
pp=$!
wait_for 10 grep -q 'poll 1 ok' "$T/poll2"
rotate
wait $pp
check "rotation picked up after a 401 (re-read and retry)" test "$(grep -c ' ok ' "$T/poll2")" = 6
check "the server refused the old token once" test $(( $(fake_get log | jq_py "len([x for x in d['log'] if x[2]==401])") - before )) -ge 1
check "old token refused by the server" test "$(curl -s -o /dev/null -w "%{http_code}" --cacert "$T/pki/ca.crt" -H "Authorization: Bearer $(cat "$T/first-token")" https://127.0.0.1:$API_PORT/api/v1/namespaces/sandboxes/pods)" = 401
k8s_write_config

# kubeconfig: client certificate (data fields) + CA data, no token.
b64() { base64 -w0 "$1"; }
cat >"$T/kubeconfig" <<KC
apiVersion: v1
kind: Config
current-context: test
contexts:
- name: test
  context: {cluster: fake, user: cert-user, namespace: sandboxes}
- name: tok
  context: {cluster: fake-file-ca, user: tok-user, namespace: sandboxes}
clusters:
- name: fake
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(b64 "$T/pki/ca.crt")
- name: fake-file-ca
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: pki/ca.crt
users:
- name: cert-user
  user:
    client-certificate-data: $(b64 "$T/pki/cli.crt")
    client-key-data: $(b64 "$T/pki/cli.key")
- name: tok-user
  user:
    tokenFile: sa/token
KC
kcfg() {
	cat >"$T/kc.yaml" <<YAML
kubernetes:
  kubeconfig: $T/kubeconfig
  incluster_dir: $T/nonexistent
  agent_port: $AGENT_PORT
  agent_key_file: $T/agent-key
  image: debian:12
  proxy: {namespace: sandbox-system, admin_port: $ADMIN_PORT, admin_token_file: $T/admin-token}
$(printf '  %s\n' "$@")
YAML
}
kcfg
check "kubeconfig with client certificate: list works" test "$("$K8SCTL" -c "$T/kc.yaml" list | jq_py '[x["id"] for x in d]')" = '["e2"]'
kcfg 'context: tok'
check "kubeconfig context with tokenFile and a relative CA path" "$K8SCTL" -c "$T/kc.yaml" list
kcfg 'context: nope'
check "unknown context: clear error" fails_with 'context "nope" not found' "$K8SCTL" -c "$T/kc.yaml" list
kcfg 'ca_file: '"$T/pki/evil.crt"
check "server certificate checked against the CA" fails_with "certificate" "$K8SCTL" -c "$T/kc.yaml" list
sed -e 's/cert-user, namespace/nouser, namespace/' "$T/kubeconfig" >"$T/kubeconfig.bad"
kcfg; sed -i "s|$T/kubeconfig|$T/kubeconfig.bad|" "$T/kc.yaml"
check "kubeconfig naming a missing user: clear error" fails_with 'user "nouser" not found' "$K8SCTL" -c "$T/kc.yaml" list
printf 'a: [unclosed\n' >"$T/kubeconfig.bad"
check "malformed kubeconfig: error with the line" fails_with "kubeconfig: line" "$K8SCTL" -c "$T/kc.yaml" list

# In-cluster from the environment (KUBERNETES_SERVICE_HOST/PORT).
sed '/api_server:/d' "$CFG" >"$T/incluster.yaml"
check "in-cluster config from KUBERNETES_SERVICE_HOST/PORT and the SA dir" \
    env KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$API_PORT" "$K8SCTL" -c "$T/incluster.yaml" list
check "not in a cluster: clear error" fails_with "not in a cluster" env -u KUBERNETES_SERVICE_HOST "$K8SCTL" -c "$T/incluster.yaml" list
check "http:// API server refused" fails_with "only https:// is supported" env K8S_API_SERVER=http://127.0.0.1:1 "$K8SCTL" -c "$CFG" list

# Connection refused: retried, then a clear error.
k8s_write_config "api_server: https://127.0.0.1:$(free_port)" 'retries: 2'
check "connection refused: clear error after retries" fails_with "Couldn't connect to server" kctl list
k8s_write_config
kctl destroy e2
k8s_no_violations
