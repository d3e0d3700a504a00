#!/usr/bin/env bash
# 10-proxy-basic.sh: a quick end-to-end smoke of the egress proxy with real
# curl, a recording HTTPS upstream (tests/fixtures/upstream.py, own test CA)
# on loopback and the admin socket: config checks, 407, intercept with
# injection seen by the upstream, tunnel with the real certificate, deny, 421,
# SSRF refusal, plain HTTP without credentials, a sandbox listener fd over
# SCM_RIGHTS and deregister, metrics, SIGHUP reload with a broken addon keeping
# the old one.
. "$(dirname "$0")/../lib/common.sh"
PROXY=$BIN/egress-proxy/egress-proxy
TOKEN=ghp_e2eSECRETtoken0123456789

# ---- test PKI for the fake upstream ----
. "$TOP/tests/lib/upca.sh"
upca_mk "$T/upca.crt" "$T/upca.key" "$T/srv.crt" "$T/srv.key" github.com tunnel.example other.example app.example api.github.com

cat >"$T/tokensrv.py" <<'EOF'
# GitHub App token endpoint: verifies the RS256 JWT with the app's public
# key (openssl dgst), logs each call, answers 201 with a token.
import http.server, ssl, sys, json, base64, subprocess, tempfile, time
PUB, LOG = sys.argv[2], sys.argv[3]
def b64d(s): return base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        n = int(self.headers.get('Content-Length') or 0); body = self.rfile.read(n)
        auth = self.headers.get('Authorization', ''); ok = False
        try:
            h, p, s = auth[len('Bearer '):].split('.')
            with tempfile.NamedTemporaryFile() as d, tempfile.NamedTemporaryFile() as sig:
                d.write((h + '.' + p).encode()); d.flush(); sig.write(b64d(s)); sig.flush()
                r = subprocess.run(['openssl', 'dgst', '-sha256', '-verify', PUB, '-signature', sig.name, d.name], capture_output=True)
            c = json.loads(b64d(p)); hd = json.loads(b64d(h))
            ok = r.returncode == 0 and hd['alg'] == 'RS256' and c['iss'] == '4242' and c['iat'] < time.time() < c['exp'] <= time.time() + 600
        except Exception:
            ok = False
        with open(LOG, 'a') as f: f.write(json.dumps({"path": self.path, "ok": ok, "body": body.decode()}) + "\n")
        if not ok or self.path != '/app/installations/77/access_tokens':
            self.send_response(401); self.send_header('Content-Length', '0'); self.end_headers(); return
        exp = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(time.time() + 3600))
        out = json.dumps({"token": "ghs_MINTED_e2e_token", "expires_at": exp}).encode()
        self.send_response(201); self.send_header('Content-Length', str(len(out))); self.end_headers(); self.wfile.write(out)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[4], sys.argv[5])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
EOF
openssl genrsa -out "$T/app.pem" 2048 2>/dev/null
openssl rsa -in "$T/app.pem" -pubout -out "$T/app.pub" 2>/dev/null

UP=$(free_port); PLAIN=$(free_port); PP=$(free_port); SBP=$(free_port); TOK=$(free_port); MP=$(free_port); AP=$(free_port)
python3 "$T/tokensrv.py" "$TOK" "$T/app.pub" "$T/tok.jsonl" "$T/srv.crt" "$T/srv.key" & track_pid $!
# recording upstreams: every request (method, path, headers, body) a JSON line
UPSTREAM=("$TOP/tests/fixtures/upstream.py" --keepalive --body '{"ok":true}' --redirect https://evil.example/steal)
python3 "${UPSTREAM[@]}" "$UP" --log "$T/rec.jsonl" --cert "$T/srv.crt" --key "$T/srv.key" & track_pid $!
python3 "${UPSTREAM[@]}" "$PLAIN" --log "$T/plain.jsonl" & track_pid $!

cat >"$T/addon.lua" <<'EOF'
local M = { name = "e2e" }
function M.on_connect(ctx)
  if ctx.host == "github.com" or ctx.host == "app.example" then return "intercept" end
  if ctx.host == "denied.example" then return "deny", "denied.example is not allowed for " .. ctx.sandbox.id, 403 end
  return nil
end
function M.on_request(req, ctx)
  if ctx.host == "app.example" then
    local t, err = proxy.github_app_token{ app_id = "4242", installation_id = proxy.config.inst,
      private_key_file = proxy.config.app_key, api = "https://api.github.com",
      repositories = { "r1" } }
    if not t then return "deny", "no app token: " .. err, 502 end
    req:inject("Authorization", "Bearer " .. t, "e2e-app")
    return
  end
  local tok = assert(proxy.secret("file:" .. proxy.config.token_file))
  req:inject("Authorization", proxy.github_basic(tok), "e2e-v1")
end
return M
EOF
printf '%s\n' "$TOKEN" >"$T/token"
printf 'admin-token-0123456789abcdef\n' >"$T/admin.token"
chmod 600 "$T/token"

cat >"$T/p.yaml" <<EOF
listen: 127.0.0.1:$PP
workers: 2
admin:
  socket: $T/admin.sock
  listen: 127.0.0.1:$AP
  token_file: $T/admin.token
ca: {cert: $T/ca.crt, key: $T/ca.key, export: $T/export/ca.crt}
upstream:
  ca_bundle: $T/upca.crt
  allow_cidrs: [127.0.0.0/8]
resolve:
  "github.com:443": "127.0.0.1:$UP"
  "tunnel.example:443": "127.0.0.1:$UP"
  "plain.example:80": "127.0.0.1:$PLAIN"
  "app.example:443": "127.0.0.1:$UP"
  "api.github.com:443": "127.0.0.1:$TOK"
addons: [$T/addon.lua]
addon_config:
  token_file: $T/token
  app_key: $T/app.pem
  inst: "77"
addon_watch: 0
audit: {log: $T/audit.jsonl}
metrics: {listen: 127.0.0.1:$MP}
limits: {tunnels_per_sandbox: 4}
EOF
mkdir -p "$T/export"

# ---- configuration checks ----
out=$("$PROXY" -n -f "$T/p.yaml" 2>&1)
check "config-ok" [ "$out" = "configuration OK" ]
bad() {	# name yaml-text expected-substring
	printf '%s\n' "$2" >"$T/bad.yaml"
	out=$("$PROXY" -n -f "$T/bad.yaml" 2>&1); rc=$?
	if [ $rc -eq 1 ] && grep -qF -- "$3" <<<"$out"; then ok "config-bad-$1"; else fail "config-bad-$1" "rc=$rc out=$out"; fi
}
bad unknown-key "listen: 127.0.0.1:1
lisen: x" "bad.yaml:2: lisen: unknown key"
bad listen "listen: nowhere" "listen: expected host:port"
bad workers "workers: -1" "workers: too small"
bad cidr "upstream: {allow_cidrs: [10.0.0.0/33]}" "bad CIDR"
bad resolve "resolve: {\"github.com\": \"127.0.0.1:1\"}" "resolve: key 'github.com': port missing"
bad resolve-addr "resolve: {\"github.com:443\": \"localhost:1\"}" "expected addr:port"
bad action "default_action: allow" "default_action: expected tunnel or deny"
bad admin-listen "admin: {listen: 127.0.0.1:1}" "admin.token_file must be set"
bad duration "timeouts: {idle: forever}" "timeouts.idle: expected a duration"
bad yaml "listen: [" "bad.yaml:"
bad addon-missing "addons: [$T/nope.lua]" "nope.lua: No such file"
printf 'local M = {\n  on_connect = function(ctx) return "intercept" end\n' >"$T/syntax.lua"
bad addon-syntax "addons: [$T/syntax.lua]" "syntax.lua:"
printf 'return 42\n' >"$T/notable.lua"
bad addon-not-table "addons: [$T/notable.lua]" "an addon must return a table"
printf 'while true do end\n' >"$T/loop.lua"
bad addon-budget "addons: [$T/loop.lua]" "instruction budget exceeded"
check "help-lists-keys" bash -c "'$PROXY' --help | grep -q 'upstream.allow_cidrs'"

# ---- start ----
"$PROXY" -d -f "$T/p.yaml" >"$T/proxy.log" 2>&1 & PPID_=$!; track_pid $PPID_
wait_port "$PP" 20 || fail "proxy-start" "$(cat "$T/proxy.log")"
wait_port "$UP" 20; wait_port "$PLAIN" 20
check "ca-exported" [ -s "$T/export/ca.crt" ]
check "ca-key-0600" [ "$(stat -c %a "$T/ca.key")" = 600 ]

admin() {
	# with a port: a listening socket on 127.0.0.1:PORT attached (SCM_RIGHTS)
	if [ $# -gt 1 ]; then python3 "$TOP/tests/fixtures/padmin.py" "$T/admin.sock" "$1" --listen "$2"
	else "$PROXY" --admin "$T/admin.sock" "$1"; fi
}
# raw PORT TEXT: sends TEXT on a fresh connection, prints the status line.
raw() {
	exec 8<>"/dev/tcp/127.0.0.1/$1"
	printf "$2" >&8
	timeout 10 head -n 1 <&8
	exec 8<&-
}
check "admin-ping" bash -c "'$PROXY' --admin '$T/admin.sock' '{\"op\":\"ping\"}' | grep -q '\"ok\":true'"
r=$(admin '{"op":"register","id":"sb-1","secret":"s3cret","attrs":{"org":"acme","user":"u1","labels":{"team":"x"}}}')
check "admin-register" grep -q '"ok":true' <<<"$r"
r=$(admin '{"op":"register","id":"bad id!"}')
check "admin-register-bad-id" grep -q '"ok":false' <<<"$r"
r=$(admin 'not json')
check "admin-bad-json" grep -q '"ok":false' <<<"$r"

check "admin-socket-0600" [ "$(stat -c %a "$T/admin.sock")" = 600 ]
# The HTTP admin API (Kubernetes): bearer token required.
r=$(curl -sS --max-time 10 -X POST -H 'Authorization: Bearer admin-token-0123456789abcdef' \
	--data '{"op":"register","id":"sb-http","secret":"h77p-secret"}' "http://127.0.0.1:$AP/v1/admin")
check "admin-http-register" grep -q '"ok":true' <<<"$r"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST -H 'Authorization: Bearer wrong-token-0123456789abc' \
	--data '{"op":"ping"}' "http://127.0.0.1:$AP/v1/admin")
check "admin-http-401" [ "$code" = 401 ]
# client_ips: the credential only counts from the registered address.
admin '{"op":"register","id":"sb-ip","secret":"ip-secret","client_ips":["10.9.9.9"]}' >/dev/null
line=$(raw "$PP" "CONNECT tunnel.example:443 HTTP/1.1\r\nProxy-Authorization: Basic $(printf sb-ip:ip-secret | base64)\r\n\r\n")
check "client-ip-mismatch-407" grep -q ' 407 ' <<<"$line"
admin '{"op":"register","id":"sb-ip","secret":"ip-secret","client_ips":["10.9.9.9","127.0.0.1"]}' >/dev/null
line=$(raw "$PP" "CONNECT tunnel.example:443 HTTP/1.1\r\nProxy-Authorization: Basic $(printf sb-ip:ip-secret | base64)\r\n\r\n")
check "client-ip-match-200" grep -q ' 200 ' <<<"$line"
line=$(raw "$PP" "CONNECT tunnel.example:443 HTTP/1.1\r\nProxy-Authorization: Basic $(printf sb-http:h77p-secret | base64)\r\n\r\n")
check "http-registered-sandbox" grep -q ' 200 ' <<<"$line"

C=(curl -sS --max-time 20 --cacert "$T/export/ca.crt")
PX="http://sb-1:s3cret@127.0.0.1:$PP"

# ---- 407 ----
code=$(raw "$PP" 'CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n')
check "unidentified-407" grep -q ' 407 ' <<<"$code"
code=$(raw "$PP" "CONNECT github.com:443 HTTP/1.1\r\nProxy-Authorization: Basic $(printf sb-1:wrong | base64)\r\n\r\n")
check "wrong-secret-407" grep -q ' 407 ' <<<"$code"

# ---- intercept + injection ----
body=$("${C[@]}" -x "$PX" -H "Authorization: token DUMMY" https://github.com/o/r.git/info/refs?service=git-upload-pack)
check "intercept-200" grep -q '"ok":true' <<<"$body"
last=$(tail -n 1 "$T/rec.jsonl" 2>/dev/null)
want="Basic $(printf 'x-access-token:%s' "$TOKEN" | base64 -w0)"
check "injected-at-upstream" grep -qF "[\"Authorization\", \"$want\"]" <<<"$last"
check "dummy-never-upstream" not_contains "$T/rec.jsonl" "DUMMY"
check "one-authorization" [ "$(grep -o '"Authorization"' <<<"$last" | wc -l)" -eq 1 ]
check "no-proxy-auth-upstream" not_contains "$T/rec.jsonl" "Proxy-Authorization"
check "host-canonical" grep -qF '["Host", "github.com"]' <<<"$last"
check "audit-line" grep -q '"sandbox":"sb-1","host":"github.com:443","type":"intercept","method":"GET","path":"/o/r.git/info/refs?service=git-upload-pack","status":200' "$T/audit.jsonl"
check "audit-injected-rule" grep -q '"injected":true,"rule":"e2e-v1"' "$T/audit.jsonl"
check "audit-no-secret" not_contains "$T/audit.jsonl" "$TOKEN"
check "log-no-secret" not_contains "$T/proxy.log" "$TOKEN"
# The leaf is minted for the canonical name and signed by the proxy CA.
issuer=$(curl -sS -v --max-time 20 --cacert "$T/export/ca.crt" -x "$PX" https://GitHub.COM./ 2>&1 | grep -i 'issuer:')
check "leaf-by-proxy-ca" grep -q 'egress-proxy CA' <<<"$issuer"
# POST with a body (chunked re-framed upstream) and keep-alive reuse.
"${C[@]}" -x "$PX" -H 'Transfer-Encoding: chunked' --data-binary 'hello-body' https://github.com/post >/dev/null
check "post-body-relayed" grep -q '"body": "hello-body"' <<<"$(tail -n 1 "$T/rec.jsonl")"
n0=$(wc -l <"$T/rec.jsonl")
"${C[@]}" -x "$PX" https://github.com/a https://github.com/b https://github.com/c -o /dev/null -o /dev/null -o /dev/null
check "keepalive-three" [ $(( $(wc -l <"$T/rec.jsonl") - n0 )) -eq 3 ]
# Redirects are relayed, not followed.
code=$("${C[@]}" -o /dev/null -w '%{http_code} %{redirect_url}' -x "$PX" https://github.com/redirect)
check "redirect-relayed" [ "$code" = "302 https://evil.example/steal" ]

# ---- pipelined requests inside the tunnel are answered in order ----
out=$(printf 'GET /pipe1 HTTP/1.1\r\nHost: github.com\r\n\r\nGET /pipe2 HTTP/1.1\r\nHost: github.com\r\nConnection: close\r\n\r\n' |
	timeout 20 openssl s_client -quiet -proxy "127.0.0.1:$PP" -proxy_user sb-1 -proxy_pass pass:s3cret \
	-connect github.com:443 -servername github.com -CAfile "$T/export/ca.crt" -verify_return_error 2>/dev/null)
check "pipelined-two-responses" [ "$(grep -o 'HTTP/1.1 200 OK' <<<"$out" | wc -l)" -eq 2 ]
check "pipelined-in-order" bash -c "grep -o '\"path\": \"/pipe[12]\"' '$T/rec.jsonl' | tr -d '\n' | grep -q 'pipe1.*pipe2'"

# ---- names are resolved by the proxy (evdns, /etc/hosts here) ----
line=$(raw "$PP" "CONNECT LocalHost.:$UP HTTP/1.1\r\nProxy-Authorization: Basic $(printf sb-1:s3cret | base64)\r\n\r\n")
check "resolved-name-tunnel" grep -q ' 200 ' <<<"$line"

# ---- per-sandbox tunnel limit ----
for i in 3 4 5 6; do
	eval "exec $i<>/dev/tcp/127.0.0.1/$PP"
	printf 'CONNECT tunnel.example:443 HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n' "$(printf sb-1:s3cret | base64)" >&$i
	read -r -t 10 line <&$i
done
line=$(raw "$PP" "CONNECT tunnel.example:443 HTTP/1.1\r\nProxy-Authorization: Basic $(printf sb-1:s3cret | base64)\r\n\r\n")
check "tunnel-limit-429" grep -q ' 429 ' <<<"$line"
for i in 3 4 5 6; do eval "exec $i<&-"; done
wait_for 10 bash -c "'$PROXY' --admin '$T/admin.sock' '{\"op\":\"stats\",\"id\":\"sb-1\"}' | grep -q '\"tunnels\":0'"
line=$(raw "$PP" "CONNECT tunnel.example:443 HTTP/1.1\r\nProxy-Authorization: Basic $(printf sb-1:s3cret | base64)\r\n\r\n")
check "tunnel-limit-released" grep -q ' 200 ' <<<"$line"

# ---- 421 ----
n0=$(wc -l <"$T/rec.jsonl")
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -x "$PX" -H 'Host: evil.example' https://github.com/x)
check "host-mismatch-421" [ "$code" = 421 ]
check "421-not-forwarded" [ "$(wc -l <"$T/rec.jsonl")" -eq "$n0" ]

# ---- tunnel: the client sees the real certificate ----
body=$(curl -sS --max-time 20 --cacert "$T/upca.crt" -x "$PX" https://tunnel.example/t)
check "tunnel-real-cert" grep -q '"ok":true' <<<"$body"
check "tunnel-no-injection" bash -c "tail -n 1 '$T/rec.jsonl' | grep -vq Authorization"
if curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "$PX" https://tunnel.example/ >/dev/null 2>&1; then
	fail "tunnel-not-intercepted" "proxy CA accepted on a tunnel"
else ok "tunnel-not-intercepted"; fi

# ---- deny ----
out=$(curl -s --max-time 10 -v -x "$PX" https://denied.example/ 2>&1)
check "deny-403" grep -q '< HTTP/1.1 403' <<<"$out"
check "deny-reason" grep -q 'X-Proxy-Deny-Reason: denied.example is not allowed for sb-1' <<<"$out"

# ---- SSRF: the dialled address is checked ----
for tgt in 169.254.169.254:80 0xa9fea9fe:80 10.1.2.3:443 "[::1]:443" 100.64.0.1:443 192.168.1.1:443; do
	line=$(raw "$PP" "CONNECT $tgt HTTP/1.1\r\nProxy-Authorization: Basic $(printf sb-1:s3cret | base64)\r\n\r\n")
	check "ssrf-refused-$tgt" grep -q ' 403 ' <<<"$line"
done
line=$(raw "$PP" "CONNECT 127.0.0.1:$PP HTTP/1.1\r\nProxy-Authorization: Basic $(printf sb-1:s3cret | base64)\r\n\r\n")
check "ssrf-self-refused" grep -q ' 403 ' <<<"$line"

# ---- plain HTTP: passes through, never a credential ----
body=$(curl -sS --max-time 20 -x "$PX" -H 'X-Test: 1' http://plain.example/p)
check "plain-200" grep -q '"ok":true' <<<"$body"
check "plain-no-credential" not_contains "$T/plain.jsonl" "x-access-token"
check "plain-no-injection" not_contains "$T/plain.jsonl" '"Authorization"'
check "plain-no-proxy-auth" not_contains "$T/plain.jsonl" "Proxy-Authorization"

# ---- blind tunnel with a client half-close: the response still arrives ----
out=$(printf 'CONNECT plain.example:80 HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\nGET /half HTTP/1.0\r\nHost: plain.example\r\n\r\n' \
	"$(printf sb-1:s3cret | base64)" | timeout 20 nc -N 127.0.0.1 "$PP")
check "tunnel-half-close" grep -q '"ok":true' <<<"$out"
check "tunnel-early-bytes-forwarded" grep -q '"path": "/half"' "$T/plain.jsonl"

# ---- sandbox listener fd over SCM_RIGHTS, then deregister ----
r=$(admin '{"op":"register","id":"sb-fd","attrs":{"org":"acme"}}' "$SBP")
check "register-fd" grep -q '"ok":true' <<<"$r"
body=$("${C[@]}" -x "http://127.0.0.1:$SBP" -H "Authorization: token DUMMY" https://github.com/fd-path)
check "fd-listener-intercept" grep -q '"ok":true' <<<"$body"
check "fd-listener-audit" grep -q '"sandbox":"sb-fd".*"path":"/fd-path"' "$T/audit.jsonl"
# an open tunnel belongs to sb-fd; deregister must close it
exec 7<>"/dev/tcp/127.0.0.1/$SBP"
printf 'CONNECT tunnel.example:443 HTTP/1.1\r\n\r\n' >&7
read -r -t 10 line <&7
check "fd-tunnel-open" grep -q ' 200 ' <<<"$line"
r=$(admin '{"op":"stats","id":"sb-fd"}')
check "stats-sb-fd" grep -q '"id":"sb-fd","conns":1,"tunnels":1' <<<"$r"
r=$(admin '{"op":"deregister","id":"sb-fd"}')
check "deregister" grep -q '"ok":true' <<<"$r"
closed=0
for _ in $(seq 1 50); do
	if ! read -r -t 0.2 -n 1 _c <&7; then
		[ $? -gt 128 ] || { closed=1; break; }
	fi
done
exec 7<&-
check "deregister-closes-conns" [ $closed -eq 1 ]
check "deregister-closes-listener" bash -c "! curl -s --max-time 5 -x http://127.0.0.1:$SBP https://github.com/ -o /dev/null"
r=$(admin '{"op":"deregister","id":"sb-fd"}')
check "deregister-unknown" grep -q '"ok":false' <<<"$r"

# ---- metrics ----
r=$(admin '{"op":"metrics"}')
check "metrics" grep -q 'egress_proxy_connect_total{decision=\\"intercept\\"}' <<<"$r"
m=$(curl -sS --max-time 10 "http://127.0.0.1:$MP/metrics")
check "metrics-http" grep -q '^egress_proxy_requests_total{injected="true"} [1-9]' <<<"$m"
check "metrics-http-404" [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$MP/")" = 404 ]

# ---- GitHub App installation token: JWT verified, minted once, cached ----
wait_port "$TOK" 20
"${C[@]}" -x "$PX" https://app.example/one -o /dev/null
"${C[@]}" -x "$PX" https://app.example/two -o /dev/null
check "app-token-injected" grep -q '"path": "/two".*\["Authorization", "Bearer ghs_MINTED_e2e_token"\]' "$T/rec.jsonl"
check "app-jwt-verified" grep -q '"ok": true' "$T/tok.jsonl"
check "app-token-cached" [ "$(grep -c access_tokens "$T/tok.jsonl")" -eq 1 ]
check "app-token-scoped" grep -qF '"body": "{\"repositories\":[\"r1\"]}"' "$T/tok.jsonl"
check "app-token-not-logged" not_contains "$T/proxy.log" "ghs_MINTED"
check "app-token-not-audited" not_contains "$T/audit.jsonl" "ghs_MINTED"

# ---- SIGHUP reload: a broken addon keeps the old one ----
cp "$T/addon.lua" "$T/addon.good"
printf 'local M = {\n' >"$T/addon.lua"
kill -HUP "$PPID_"
wait_for 10 grep -q 'addons reload failed, keeping the previous addons' "$T/proxy.log"
check "reload-broken-logged" grep -q 'reload failed' "$T/proxy.log"
"${C[@]}" -x "$PX" https://github.com/after-broken-reload -o /dev/null
wait_for 5 grep -q '"path":"/after-broken-reload"' "$T/audit.jsonl"
check "old-addon-still-injects" grep -q '"path":"/after-broken-reload".*"injected":true,"rule":"e2e-v1"' "$T/audit.jsonl"
sed 's/e2e-v1/e2e-v2/' "$T/addon.good" >"$T/addon.lua"
r=$(admin '{"op":"reload"}')
check "admin-reload-ok" grep -q '"ok":true' <<<"$r"
"${C[@]}" -x "$PX" https://github.com/after-good-reload -o /dev/null
check "new-addon-applies" grep -q '"path":"/after-good-reload".*"rule":"e2e-v2"' "$T/audit.jsonl"

# ---- an addon error fails closed ----
cat >"$T/addon.lua" <<'EOF'
local M = { name = "broken" }
function M.on_connect(ctx) return "intercept" end
function M.on_request(req, ctx) error("boom") end
return M
EOF
admin '{"op":"reload"}' >/dev/null
n0=$(wc -l <"$T/rec.jsonl")
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -x "$PX" https://github.com/err)
check "addon-error-502" [ "$code" = 502 ]
check "addon-error-not-forwarded" [ "$(wc -l <"$T/rec.jsonl")" -eq "$n0" ]
check "addon-error-traceback" grep -q 'failed closed: .*boom.*stack traceback' "$T/proxy.log"

kill -TERM "$PPID_"
wait_for 10 bash -c "! kill -0 $PPID_ 2>/dev/null"
check "clean-exit" bash -c "! kill -0 $PPID_ 2>/dev/null"
check "no-sanitizer-report" bash -c "! grep -qE 'Sanitizer|runtime error' '$T/proxy.log'"
