#!/usr/bin/env bash
# 42-runtime-network: a sandbox has only loopback and reaches nothing but its
# proxy listener (direct TCP to a host service, an external address, UDP/DNS
# and IPv6 all fail); with the real egress proxy, the 127.0.0.1:3128
# listener made in the sandbox's network namespace is handed over SCM_RIGHTS,
# a request goes through to a local upstream and is attributed to the right
# sandbox; stop/destroy deregister; attach re-registers; the proxy CA is in
# the sandbox's trust store and the proxy variables are set.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/runtime.sh"
PROXY=$BIN/egress-proxy/egress-proxy
[ -x "$PROXY" ] || { fail "egress-proxy-built" "$PROXY missing (make)"; exit 1; }
lacks() { ! grep -q -- "$1" <<<"$2"; }

# ---- a host service, a recording upstream and the real proxy ----
HP=$(free_port); UP=$(free_port); PP=$(free_port)
python3 -m http.server --bind 127.0.0.1 "$HP" --directory "$T" >/dev/null 2>&1 & track_pid $!
python3 "$TOP/tests/fixtures/upstream.py" "$UP" --log "$T/up.jsonl" & track_pid $!
cat >"$T/p.yaml" <<YAML
listen: 127.0.0.1:$PP
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key}
upstream:
  allow_cidrs: [127.0.0.0/8]
resolve:
  "plain.example:80": "127.0.0.1:$UP"
addon_watch: 0
audit: {log: $T/audit.jsonl}
YAML
"$PROXY" -d -f "$T/p.yaml" >"$T/proxy.log" 2>&1 & track_pid $!
wait_port "$PP" 20 && wait_for 10 test -S "$T/admin.sock" || { fail "proxy-start" "$(tail -5 "$T/proxy.log")"; exit 1; }
wait_port "$HP" 10 && wait_port "$UP" 10

RT_EXTRA_CONF="proxy_admin_socket: $T/admin.sock
  proxy_ca_cert: $T/ca.crt"
rt_setup
admin() { "$PROXY" --admin "$T/admin.sock" "$1"; }

sbx create --label org=acme --label session=sess-a sb-a >/dev/null &&
	sbx create sb-b >/dev/null || { fail "create" "$(cat "$RT_STATE"/*/log 2>/dev/null | tail -5)"; exit 1; }

# ---- only loopback; nothing reachable directly ----
out=$(rt_sh sb-a 'ip -o link | cut -d: -f2 | tr -d " "')
check "only-loopback" [ "$out" = "lo" ]
out=$(rt_sh sb-a "exec 3<>/dev/tcp/127.0.0.1/$HP && echo CONNECTED; echo rc=\$?" 2>&1)
check "no-host-loopback-service" lacks CONNECTED "$out"
out=$(rt_sh sb-a "wget -Y off -q -O- http://127.0.0.1:$HP/ 2>&1; echo rc=\$?")
check "no-host-http" grep -q 'rc=[1-9]' <<<"$out"
t0=$(date +%s)
out=$(rt_sh sb-a 'exec 3<>/dev/tcp/192.0.2.1/80 && echo CONNECTED' 2>&1)
check "no-external-tcp" grep -q 'unreachable' <<<"$out"
check "external-fails-fast" [ $(( $(date +%s) - t0 )) -lt 10 ]
out=$(rt_sh sb-a 'echo x > /dev/udp/192.0.2.1/53 && echo SENT; nslookup -timeout=2 example.com 192.0.2.1 2>&1; echo end' 2>&1)
check "no-udp" lacks SENT "$out"
check "no-dns" lacks 'Address.*[0-9]\+\.[0-9]\+\.[0-9]\+\.[0-9]\+$' "$(grep -A3 'Name:' <<<"$out")"
out=$(rt_sh sb-a 'exec 3<>/dev/tcp/2001:db8::1/80 && echo CONNECTED' 2>&1)
check "no-ipv6-external" lacks CONNECTED "$out"
out=$(rt_sh sb-a "exec 3<>/dev/tcp/::1/$HP && echo CONNECTED" 2>&1)
check "no-ipv6-host" lacks CONNECTED "$out"

# ---- the proxy listener ----
out=$(rt_sh sb-a 'echo $HTTP_PROXY $HTTPS_PROXY $http_proxy $https_proxy $NO_PROXY; echo $SSL_CERT_FILE $GIT_SSL_CAINFO $REQUESTS_CA_BUNDLE $NODE_EXTRA_CA_CERTS $CURL_CA_BUNDLE')
check "proxy-env" grep -q '^http://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1$' <<<"$out"
check "ca-env" grep -q '^\(/etc/ssl/certs/ca-certificates.crt \?\)\{5\}$' <<<"$out"
out=$(rt_sh sb-a 'cat /etc/ssl/certs/ca-certificates.crt; ls /usr/local/share/ca-certificates/')
check "proxy-ca-in-bundle" grep -qF "$(sed -n 2p "$T/ca.crt")" <<<"$out"
check "proxy-ca-in-trust-dir" grep -q 'egress-proxy-ca.crt' <<<"$out"
check "image-bundle-untouched" [ ! -s "$RT_BB/etc/ssl/certs/ca-certificates.crt" ]
r=$(admin '{"op":"stats"}')
check "registered-both" python3 -c "
import json,sys; ids={s['id'] for s in json.loads(sys.argv[1])['sandboxes']}; assert {'sb-a','sb-b'} <= ids, ids" "$r"
out=$(rt_sh sb-a 'wget -q -O- http://plain.example/from-a 2>&1')
check "through-proxy" [ "$out" = "upstream-ok" ]
check "upstream-got-it" grep -q '"path": "/from-a"' "$T/up.jsonl"
stats() { admin "{\"op\":\"stats\",\"id\":\"$1\"}" | python3 -c 'import json,sys; s=json.load(sys.stdin)["sandboxes"][0]; print(s["requests"])'; }
check "attributed-to-a" [ "$(stats sb-a)" -ge 1 ]
check "not-attributed-to-b" [ "$(stats sb-b)" = 0 ]
out=$(rt_sh sb-b 'wget -q -O- http://plain.example/from-b 2>&1')
check "b-through-proxy" [ "$out" = "upstream-ok" ]
check "attributed-to-b" [ "$(stats sb-b)" -ge 1 ]
if grep -q '"sandbox"' "$T/audit.jsonl" 2>/dev/null; then
	check "audit-names-sandbox" grep -q '"sandbox":"sb-b".*from-b' "$T/audit.jsonl"
fi

# ---- attach re-registers with new attributes; the listener keeps working ----
env=$(sbx attach sb-a --org acme --user u1 --session s-9)
check "attach-env" grep -q '^HTTPS_PROXY=http://127.0.0.1:3128$' <<<"$env"
out=$(rt_sh sb-a 'wget -q -O- http://plain.example/after-attach 2>&1')
check "after-attach-through-proxy" [ "$out" = "upstream-ok" ]
check "after-attach-attributed" grep -q '"path": "/after-attach"' "$T/up.jsonl"
# The identity is the labels: attach keeps those the sandbox lacked (so a
# restart registers the same identity) and changes none it has.
labels_are() { python3 -c "
import json,sys; l=json.loads(sys.argv[1])['labels']; assert l==json.loads(sys.argv[2]), l" "$(sbx get sb-a)" "$1"; }
check "attach-keeps-identity-labels" \
    labels_are '{"org":"acme","session":"sess-a","user":"u1"}'
sbx attach sb-a --org other >/dev/null
check "attach-changes-no-label" \
    labels_are '{"org":"acme","session":"sess-a","user":"u1"}'

# ---- stop deregisters, start registers again, destroy deregisters ----
sbx stop sb-b
r=$(admin '{"op":"stats","id":"sb-b"}')
check "stop-deregisters" lacks '"id":"sb-b"' "$r"
sbx start sb-b
r=$(admin '{"op":"stats","id":"sb-b"}')
check "start-registers" grep -q '"id":"sb-b"' <<<"$r"
out=$(rt_sh sb-b 'wget -q -O- http://plain.example/after-start 2>&1')
check "after-start-through-proxy" [ "$out" = "upstream-ok" ]
sbx destroy sb-b
r=$(admin '{"op":"stats","id":"sb-b"}')
check "destroy-deregisters" lacks '"id":"sb-b"' "$r"

# ---- proxy down: create fails clearly, leaves nothing ----
out=$("$SBX" -c "$T/rt.yaml" create sb-c 2>&1 </dev/null; true)
check "proxy-up-create-ok" grep -q 'sb-c	running' <<<"$out"
sed -i "s|proxy_admin_socket: .*|proxy_admin_socket: $T/nothing.sock|" "$T/rt.yaml"
out=$(sbx create sb-d 2>&1); rc=$?
check "proxy-down-create-fails" [ $rc -ne 0 ]
check "proxy-down-message" grep -q 'egress proxy' <<<"$out"
check "proxy-down-no-leftover" [ ! -e "$RT_STATE/sb-d" ]
