#!/usr/bin/env bash
# Kubernetes runtime with the real egress-proxy as the proxy Deployment's
# pods (the fake kubelet runs build/egress-proxy/egress-proxy on each proxy
# pod IP with its HTTP admin port, admin.listen + admin.token_file): attach
# registers the sandbox there (token-authenticated, client_ips = its pod
# IP), the proxy's own stats list it, re-assignment moves it, destroy
# deregisters it.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup_real_proxy

proxy_ip_of() { obj networkpolicies sandboxes "sbx-$1" | jq_py 'd["metadata"]["annotations"]["sandbox.dev/proxy-ip"]'; }

kctl create rp1 >/dev/null
check "attach registers at the real egress-proxy" kctl attach rp1 acme alice s-1 repo=acme/app >"$T/env"
pip=$(proxy_ip_of rp1)
check "the proxy's own stats list the sandbox" bash -c "curl -s -H 'Authorization: Bearer $(cat "$T/admin-token")' -d '{\"op\":\"stats\"}' http://$pip:$ADMIN_PORT/v1/admin | grep -q '\"id\":\"rp1\"'"
check "env points at that proxy's listener" grep -qx "HTTPS_PROXY=http://rp1:[0-9a-f]\{64\}@$pip:$PROXY_PORT" "$T/env"
check "the admin port refuses a wrong token" test "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' -d '{"op":"stats"}' "http://$pip:$ADMIN_PORT/v1/admin")" = 401
# Without the credential the proxy answers 407 (identity required).
check "proxy demands the sandbox credential" test "$(curl -s -o /dev/null -w '%{http_code}' -x "http://$pip:$PROXY_PORT" http://example.invalid/)" = 407
pod1=$(obj networkpolicies sandboxes sbx-rp1 | jq_py 'd["metadata"]["annotations"]["sandbox.dev/proxy-pod"]')
fake vanish "{\"ns\":\"sandbox-system\",\"name\":\"$pod1\"}" >/dev/null
check "replacement proxy pod ready" wait_for 30 bash -c "'$K8SCTL' -c '$CFG' fleet-sync && [ \"\$(curl -sS --cacert $T/pki/ca.crt https://127.0.0.1:$API_PORT/_fake/state | python3 -c 'import json,sys; d=json.load(sys.stdin); print([o[\"metadata\"][\"annotations\"].get(\"sandbox.dev/proxy-pod\") for o in d[\"items\"] if o[\"kind\"]==\"NetworkPolicy\" and o[\"metadata\"][\"name\"]==\"sbx-rp1\"][0])')\" != '$pod1' ]"
pip2=$(proxy_ip_of rp1)
check "re-assigned sandbox registered at the new real proxy" bash -c "curl -s -H 'Authorization: Bearer $(cat "$T/admin-token")' -d '{\"op\":\"stats\"}' http://$pip2:$ADMIN_PORT/v1/admin | grep -q '\"id\":\"rp1\"'"
kctl destroy rp1
check "destroy deregistered it from the real proxy" bash -c "! curl -s -H 'Authorization: Bearer $(cat "$T/admin-token")' -d '{\"op\":\"stats\"}' http://$pip2:$ADMIN_PORT/v1/admin | grep -q '\"id\":\"rp1\"'"
k8s_no_violations
