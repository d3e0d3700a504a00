# r30-proxy-oauth: form oauth2 (issue 30): the proxy obtains access tokens
# from a token endpoint (tests/fixtures/oauthfake.py, strict RFC 6749:
# rotation, reuse detection, short lifetimes, revocation) by a refresh
# token or client credentials, caches, refreshes and coalesces them, puts
# them in Authorization: Bearer, and fails closed (502) when the endpoint
# refuses, is down or is slow. Every case is asserted on what oauthfake
# recorded; no token, refresh token or client secret may reach the client,
# the proxy's log or its audit log.
. "$(dirname "$0")/../lib/common.sh"
PY=/usr/bin/python3
FX=$TOP/tests/fixtures

# ---- a test CA and the TLS servers ----
. "$TOP/tests/lib/upca.sh"
upca_mk "$T/upca.crt" "$T/upca.key" "$T/srv.crt" "$T/srv.key" auth.test auth2.test api.test api2.test api3.test rv.test down.test slow.test api.down.test api.slow.test api.priv.test api.self.test

rnd() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
APP_SECRET="s3cr%t+$(rnd)"	# needs form-encoding in the Basic pair (RFC 6749 2.3.1)
CC_SECRET=cc-$(rnd)
RT_SEED=rt-seed-$(rnd)
OAP=$(free_port); OAP2=$(free_port); PP=$(free_port); DOWNP=$(free_port); SLOWP=$(free_port)
"$PY" "$FX/oauthfake.py" --listen "$OAP" --cert "$T/srv.crt" --key "$T/srv.key" \
	--client "app:$APP_SECRET" --client "cc:$CC_SECRET:read,write" --refresh "app:$RT_SEED" \
	--access-ttl 1 --log "$T/oauth.log" >"$T/oauth.out" 2>&1 & track_pid $!
"$PY" "$FX/oauthfake.py" --listen "$OAP2" --cert "$T/srv.crt" --key "$T/srv.key" \
	--client "cc:$CC_SECRET:read" --access-ttl 60 --log "$T/oauth2.log" >"$T/oauth2.out" 2>&1 &
track_pid $!
# slow.test: accepts and never answers
"$PY" -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); c=[]
while True: c.append(s.accept()[0])' "$SLOWP" & track_pid $!
wait_port "$OAP" 20 && wait_port "$OAP2" 20 && wait_port "$SLOWP" 20 ||
	{ fail "oauthfake start" "$(tail -5 "$T/oauth.out")"; exit 1; }

printf '%s\n' "$APP_SECRET" >"$T/app.secret"
printf '%s\n' "$RT_SEED" >"$T/app.rt"
chmod 600 "$T/app.secret" "$T/app.rt"
# rv: a refresh-token family of its own, revoked later
RV_RT=$(curl -sS --cacert "$T/upca.crt" --resolve "auth.test:$OAP:127.0.0.1" \
	-d client_id=app "https://auth.test:$OAP/_control/issue" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["refresh_token"])')
printf '%s\n' "$RV_RT" >"$T/rv.rt"

cat >"$T/oauth.lua" <<EOF
return {
  name = "oauth",
  credentials = {
    { name = "rt", form = "oauth2", token_url = "https://auth.test/token", client_id = "app",
      secret = "file:$T/app.secret", refresh = "file:$T/app.rt", refresh_write = true,
      hosts = { "api.test" }, default = true, env = { "API_TOKEN" } },
    { name = "cc", form = "oauth2", token_url = "https://auth.test/token", client_id = "cc",
      secret = "env:R30_CC_SECRET", scope = "read", hosts = { "api2.test" }, default = true },
    { name = "cc3", form = "oauth2", token_url = "https://auth2.test/token", client_id = "cc",
      secret = "env:R30_CC_SECRET", hosts = { "api3.test" }, default = true },
    { name = "rv", form = "oauth2", token_url = "https://auth.test/token", client_id = "app",
      secret = "file:$T/app.secret", refresh = "file:$T/rv.rt", hosts = { "rv.test" },
      default = true },
    { name = "down", form = "oauth2", token_url = "https://down.test/token", client_id = "cc",
      secret = "env:R30_CC_SECRET", hosts = { "api.down.test" }, default = true },
    { name = "slow", form = "oauth2", token_url = "https://slow.test/token", client_id = "cc",
      secret = "env:R30_CC_SECRET", hosts = { "api.slow.test" }, default = true },
    { name = "priv", form = "oauth2", token_url = "https://priv.test/token", client_id = "cc",
      secret = "env:R30_CC_SECRET", hosts = { "api.priv.test" }, default = true },
    { name = "self", form = "oauth2", token_url = "https://self.test/token", client_id = "cc",
      secret = "env:R30_CC_SECRET", hosts = { "api.self.test" }, default = true },
  },
}
EOF

px_yaml() {	# px_yaml ADDON-FILE
	cat <<EOF
listen: 127.0.0.1:$PP
workers: 2
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key, export: $T/export/ca.crt}
upstream:
  ca_bundle: $T/upca.crt
  allow_cidrs: [127.0.0.0/8]
timeouts:
  hook: 2s
resolve:
  "auth.test:443": "127.0.0.1:$OAP"
  "api.test:443": "127.0.0.1:$OAP"
  "api2.test:443": "127.0.0.1:$OAP"
  "rv.test:443": "127.0.0.1:$OAP"
  "auth2.test:443": "127.0.0.1:$OAP2"
  "api3.test:443": "127.0.0.1:$OAP2"
  "down.test:443": "127.0.0.1:$DOWNP"
  "api.down.test:443": "127.0.0.1:$OAP"
  "slow.test:443": "127.0.0.1:$SLOWP"
  "api.slow.test:443": "127.0.0.1:$OAP"
  "priv.test:443": "10.255.255.1:443"
  "api.priv.test:443": "127.0.0.1:$OAP"
  "self.test:443": "127.0.0.1:$PP"
  "api.self.test:443": "127.0.0.1:$OAP"
addons: [$1]
audit:
  log: $T/audit.jsonl
log:
  file: $T/proxy.log
EOF
}
mkdir -p "$T/export"
px_yaml "$T/oauth.lua" >"$T/p.yaml"
. "$TOP/tests/lib/pxsolo.sh"
px_solo "R30_CC_SECRET=$CC_SECRET"
metric() {	# metric NAME-AND-LABELS: its value (0 when absent)
	adm '{"op":"metrics"}' | "$PY" -c '
import re,sys
t=sys.stdin.read()
try:
    import json; t=json.loads(t)["text"]
except Exception: pass
m=re.search("^" + re.escape(sys.argv[1]) + " ([0-9]+)", t, re.M)
print(m.group(1) if m else 0)' "$1"
}
adm '{"op":"register","id":"sb-a","secret":"s-a"}' >"$T/reg-a.json"
check "register: the oauth2 credentials with their placeholders, no value" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1])); c=d["credentials"]
assert c["rt"]["form"] == "oauth2" and c["rt"]["placeholder"].startswith("PXC"), c
assert c["rt"]["env"] == {"API_TOKEN": c["rt"]["placeholder"]}, c' "$T/reg-a.json"
PH=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["credentials"]["rt"]["placeholder"])' "$T/reg-a.json")

C=(curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-a:s-a@127.0.0.1:$PP")
# jq-free log queries: ol FILE PYTHON (r: each record; prints what PYTHON yields)
ol() { local f=$1 p=$2; shift 2; "$PY" -c '
import json,sys
recs=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
'"$p" "$f" "$@"; }

# ---- 1. a refresh token, rotated, over many expiries ----
: >"$T/resp.all"
okn=0
start=$(date +%s.%N)
for i in $(seq 1 100); do
	if [ $((i % 2)) = 0 ]; then h=(-H "Authorization: Bearer $PH"); else h=(); fi
	code=$("${C[@]}" "${h[@]}" -o "$T/r.json" -w '%{http_code}' "https://api.test/api/data/$i" 2>>"$T/curl.err")
	cat "$T/r.json" >>"$T/resp.all"; echo >>"$T/resp.all"
	[ "$code" = 200 ] && grep -q '"client_id": *"app"' "$T/r.json" && okn=$((okn + 1))
	[ $((i % 25)) = 0 ] && sleep 0.8	# let tokens expire on the way
done
end=$(date +%s.%N)
check "100 requests (half with the placeholder, half without) all 200 with the app's token" test "$okn" = 100
ngr=$(ol "$T/oauth.log" 'print(sum(1 for r in recs if r.get("grant_type") == "refresh_token" and r.get("outcome") == "ok" and r["form"].get("refresh_token") != sys.argv[2]))' "$RV_RT")
check "several refreshes over the run (expiries crossed): $ngr" test "$ngr" -ge 4
check "the first refresh presented the declared refresh token" ol "$T/oauth.log" '
g=[r for r in recs if r.get("grant_type") == "refresh_token"]
assert g[0]["form"]["refresh_token"] == sys.argv[2], "first"' "$RT_SEED"
check "each refresh presented the token the previous one returned (rotation followed)" ol "$T/oauth.log" '
chain=[r for r in recs if r.get("grant_type") == "refresh_token" and r["form"]["refresh_token"] != sys.argv[3]]
assert all(r["outcome"] == "ok" for r in chain), [r["outcome"] for r in chain]
assert chain[0]["form"]["refresh_token"] == sys.argv[2]
for a, b in zip(chain, chain[1:]):
    assert b["form"]["refresh_token"] == a["issued"]["refresh_token"], "not the rotated one"
assert len(chain) >= 4, len(chain)' "$RT_SEED" "$RV_RT"
check "no refresh token was ever presented twice (no reuse detection)" bash -c \
	"curl -sS --cacert '$T/upca.crt' --resolve 'auth.test:$OAP:127.0.0.1' https://auth.test:$OAP/_control/state | $PY -c 'import json,sys; d=json.load(sys.stdin); assert d.get(\"reuse_detected\", d.get(\"reuse_detections\", 0)) == 0, d'"
check "the client authenticated by Basic with the form-encoded secret" ol "$T/oauth.log" '
import base64,urllib.parse
g=[r for r in recs if r.get("grant_type") == "refresh_token"]
a=[v for k,v in g[0]["headers"] if k.lower() == "authorization"][0]
u,p=base64.b64decode(a.split()[1]).decode().split(":",1)
assert urllib.parse.unquote_plus(p) == open(sys.argv[1].rsplit("/",1)[0]+"/app.secret").read().strip(), "bad"'
last_rt=$(ol "$T/oauth.log" 'print([r for r in recs if r.get("grant_type") == "refresh_token" and r.get("outcome") == "ok" and r["form"]["refresh_token"] != sys.argv[2]][-1]["issued"]["refresh_token"])' "$RV_RT")
check "refresh_write: the file holds the newest rotated refresh token" test "$(cat "$T/app.rt")" = "$last_rt"
check "the API saw only bearer tokens the endpoint issued, never the placeholder" ol "$T/oauth.log" '
iss={r["issued"]["access_token"] for r in recs if "issued" in r}
api=[r for r in recs if r["path"].startswith("/api/")]
for r in api:
    a=[v for k,v in r["headers"] if k.lower() == "authorization"]
    assert len(a) == 1 and a[0].startswith("Bearer ") and a[0][7:] in iss, a'

# ---- 2. coalescing: concurrent first requests share one exchange ----
for i in $(seq 1 12); do
	"${C[@]}" -o "$T/co-$i.json" -w '%{http_code}\n' "https://api3.test/api/co/$i" >"$T/co-$i.code" 2>&1 &
done
wait_for 25 bash -c "[ \$(cat $T/co-*.code 2>/dev/null | grep -c .) -ge 12 ]"
check "12 concurrent requests: all 200" test "$(cat "$T"/co-*.code | grep -c '^200$')" = 12
check "12 concurrent requests: one token exchange (coalesced, across workers)" test \
	"$(ol "$T/oauth2.log" 'print(sum(1 for r in recs if r.get("grant_type") == "client_credentials"))')" = 1

# ---- 3. a 401 from the API drops the token; the next request gets a new one ----
AT3=$(ol "$T/oauth2.log" 'print([r for r in recs if "issued" in r][-1]["issued"]["access_token"])')
curl -sS --cacert "$T/upca.crt" --resolve "auth2.test:$OAP2:127.0.0.1" -u "cc:$CC_SECRET" \
	-d "token=$AT3" "https://auth2.test:$OAP2/revoke" >/dev/null
c1=$("${C[@]}" -o "$T/u1.json" -w '%{http_code}' https://api3.test/api/after-revoke 2>&1)
c2=$("${C[@]}" -o "$T/u2.json" -w '%{http_code}' https://api3.test/api/after-revoke2 2>&1)
check "a revoked access token: the client sees the API's 401 ($c1)" test "$c1" = 401
check "the next request gets a new token: 200 ($c2)" test "$c2" = 200
check "exactly one more exchange after the 401" test \
	"$(ol "$T/oauth2.log" 'print(sum(1 for r in recs if r.get("grant_type") == "client_credentials"))')" = 2

# ---- 4. client credentials with a scope ----
code=$("${C[@]}" -o "$T/cc.json" -w '%{http_code}' https://api2.test/api/scoped/read/x 2>&1)
check "client credentials (scope read): 200" test "$code" = 200
check "the exchange asked for the declared scope" ol "$T/oauth.log" '
g=[r for r in recs if r.get("grant_type") == "client_credentials"]
assert g and g[-1]["form"].get("scope") == "read" and g[-1]["outcome"] == "ok", g[-1:]'
code=$("${C[@]}" -o "$T/cc2.json" -w '%{http_code}' https://api2.test/api/scoped/write/x 2>&1)
check "a scope the token lacks: the API's 403 passes through" test "$code" = 403

# ---- 5. a revoked refresh token fails closed ----
code=$("${C[@]}" -o "$T/rv1.txt" -w '%{http_code}' https://rv.test/api/one 2>&1)
check "rv: first request 200" test "$code" = 200
curl -sS --cacert "$T/upca.crt" --resolve "auth.test:$OAP:127.0.0.1" -d "refresh_token=$RV_RT" \
	"https://auth.test:$OAP/_control/revoke" >/dev/null
sleep 1.3
n_api=$(ol "$T/oauth.log" 'print(sum(1 for r in recs if r["path"].startswith("/api/")))')
code=$("${C[@]}" -o "$T/rv2.txt" -w '%{http_code}' https://rv.test/api/two 2>&1)
check "revoked refresh token: 502" test "$code" = 502
check "the 502 says why (invalid_grant), and names the credential" bash -c \
	"grep -q 'invalid_grant' '$T/rv2.txt' && grep -q 'oauth2 credential rv' '$T/rv2.txt'"
check "nothing went to the API (not forwarded unauthenticated)" test \
	"$(ol "$T/oauth.log" 'print(sum(1 for r in recs if r["path"].startswith("/api/")))')" = "$n_api"
code=$("${C[@]}" -o "$T/rv3.txt" -w '%{http_code}' https://rv.test/api/three 2>&1)
check "right after: 502 at once, backing off" bash -c "[ '$code' = 502 ] && grep -q 'backing off\|token endpoint failing' '$T/rv3.txt'"

# ---- 6. endpoint down, endpoint slow ----
t0=$(date +%s%N)
code=$("${C[@]}" -o "$T/down.txt" -w '%{http_code}' https://api.down.test/api/x 2>&1)
t1=$(date +%s%N)
check "token endpoint down: 502" test "$code" = 502
check "token endpoint down: fast ($(( (t1 - t0) / 1000000 )) ms)" test $(( (t1 - t0) / 1000000 )) -lt 1500
check "token endpoint down: the reason" grep -q "oauth2 credential down: token request failed" "$T/down.txt"
code=$("${C[@]}" -o "$T/down2.txt" -w '%{http_code}' https://api.down.test/api/x 2>&1)
check "again: 502 without a request (back-off)" bash -c "[ '$code' = 502 ] && grep -q 'token endpoint failing' '$T/down2.txt'"
t0=$(date +%s%N)
code=$("${C[@]}" -o "$T/slow.txt" -w '%{http_code}' https://api.slow.test/api/x 2>&1)
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
check "token endpoint slow: 502 within the hook timeout (${ms} ms)" bash -c "[ '$code' = 502 ] && [ $ms -lt 4500 ]"
check "token endpoint slow: the reason is a timeout" grep -qi "timed out\|timeout" "$T/slow.txt"
check "while a token was awaited, other requests were served (loop not blocked)" test \
	"$("${C[@]}" -o /dev/null -w '%{http_code}' https://api.test/api/alive 2>&1)" = 200
# A token endpoint is reached only where the proxy's own connections may
# go: one outside upstream.allow_cidrs (10/8, refused before any socket is
# opened) and one at the proxy's own listener (refused even inside them).
for w in priv:private self:proxy-listener; do
	h=${w%%:*}; why=${w#*:}
	code=$("${C[@]}" -o "$T/$h.txt" -w '%{http_code}' "https://api.$h.test/api/x" 2>&1)
	check "token endpoint at a refused address ($why): 502" test "$code" = 502
	check "token endpoint at a refused address ($why): the log says why" \
		grep -q "proxy's own call to [0-9.]* refused: $why (upstream.allow_cidrs)" "$T/proxy.log"
done
check "nothing went to the API for them" test \
	"$(ol "$T/oauth.log" 'print(sum(1 for r in recs if dict(r["headers"]).get("Host") in ("api.priv.test", "api.self.test")))')" = 0

# ---- 7. metrics and audit ----
check "metrics: exchanges ok counted" test "$(metric 'egress_proxy_oauth_token_requests_total{result="ok"}')" -ge 5
check "metrics: failures counted" test "$(metric 'egress_proxy_oauth_token_requests_total{result="failed"}')" -ge 3
check "metrics: back-off refusals counted" test "$(metric egress_proxy_oauth_token_backoff_total)" -ge 2
sleep 0.5
check "audit: each exchange is a token line (name, host, grant, status)" ol "$T/audit.jsonl" '
t=[r for r in recs if r.get("type") == "token"]
ok=[r for r in t if r["credentials"] == "rt" and r["host"] == "auth.test" and r["grant"] == "refresh_token" and r["status"] == 200 and r["reason"] is None]
bad=[r for r in t if r["credentials"] == "rv" and r["status"] == 400 and r["reason"] == "token_failed" and "invalid_grant" in r["detail"]]
down=[r for r in t if r["credentials"] == "down" and r["host"] == "down.test" and r["reason"] == "token_failed"]
cc=[r for r in t if r["credentials"] == "cc" and r["grant"] == "client_credentials"]
assert len(ok) >= 4 and bad and down and cc, (len(ok), bad, down, cc)'
check "audit: requests name the credential applied (oauth2 added, placeholder swapped)" bash -c \
	"grep -q '\"credentials\":\"rt:oauth2\"' '$T/audit.jsonl' && grep -q '\"credentials\":\"rt:swap\"' '$T/audit.jsonl'"

# ---- 8. no token, refresh token or secret anywhere the client or the logs see ----
ol "$T/oauth.log" '
for r in recs:
    for v in (r.get("issued") or {}).values():
        if v: print(v)' >"$T/secrets.txt"
ol "$T/oauth2.log" '
for r in recs:
    for v in (r.get("issued") or {}).values():
        if v: print(v)' >>"$T/secrets.txt"
printf '%s\n%s\n%s\n%s\n' "$APP_SECRET" "$CC_SECRET" "$RT_SEED" "$RV_RT" >>"$T/secrets.txt"
check "the secrets list is not empty ($(wc -l <"$T/secrets.txt"))" test "$(wc -l <"$T/secrets.txt")" -ge 20
check "no token or secret in any response the client got" bash -c \
	"! grep -qF -f '$T/secrets.txt' '$T/resp.all' '$T'/co-*.json '$T'/u?.json '$T'/cc*.json '$T'/rv?.txt '$T/down.txt' '$T/slow.txt' '$T/reg-a.json'"
check "no token or secret in the proxy's log, stderr or audit log" bash -c \
	"! grep -qF -f '$T/secrets.txt' '$T/proxy.log' '$T/stderr' '$T/audit.jsonl'"

# ---- 9. hostile declarations ----
bad_decl() {	# bad_decl NAME LUA-ENTRY EXPECTED
	printf 'return { name = "bad", credentials = { %s } }\n' "$2" >"$T/bad.lua"
	px_yaml "$T/bad.lua" | sed "s/^listen: .*/listen: 127.0.0.1:$(free_port)/; s|socket: .*|socket: $T/bad.sock|" >"$T/bad.yaml"
	if R30_CC_SECRET=x "$BIN/egress-proxy/egress-proxy" -n -f "$T/bad.yaml" >"$T/bad.out" 2>&1; then
		fail "declaration refused: $1" "the config was taken"
	elif grep -qF -- "$3" "$T/bad.out"; then
		ok "declaration refused: $1"
	else
		fail "declaration refused: $1" "$(tail -n 3 "$T/bad.out")"
	fi
}
O='form = "oauth2", secret = "env:R30_CC_SECRET", hosts = { "a.test" }'
bad_decl "token_url over http" "{ name = \"x\", $O, token_url = \"http://auth.test/t\", client_id = \"c\" }" "token_url must be an https://"
bad_decl "token_url with user info" "{ name = \"x\", $O, token_url = \"https://u:p@auth.test/t\", client_id = \"c\" }" "no user info"
bad_decl "token_url with a CR LF" "{ name = \"x\", $O, token_url = \"https://auth.test/t\\r\\nX: y\", client_id = \"c\" }" "token_url must be"
bad_decl "no token_url" "{ name = \"x\", $O, client_id = \"c\" }" "needs token_url and client_id"
bad_decl "no client_id" "{ name = \"x\", $O, token_url = \"https://auth.test/t\" }" "needs token_url and client_id"
bad_decl "a client_id with a newline" "{ name = \"x\", $O, token_url = \"https://auth.test/t\", client_id = \"c\\nd\" }" "client_id must be"
bad_decl "a scope with a quote" "{ name = \"x\", $O, token_url = \"https://auth.test/t\", client_id = \"c\", scope = 'a\"b' }" "scope must be"
bad_decl "refresh_write without a refresh file" "{ name = \"x\", $O, token_url = \"https://auth.test/t\", client_id = \"c\", refresh = \"env:R30_CC_SECRET\", refresh_write = true }" "refresh_write needs"
bad_decl "a refresh file that does not exist" "{ name = \"x\", $O, token_url = \"https://auth.test/t\", client_id = \"c\", refresh = \"file:$T/none\" }" "refresh:"
printf 'a b\n' >"$T/space.rt"
bad_decl "a refresh token with a space" "{ name = \"x\", $O, token_url = \"https://auth.test/t\", client_id = \"c\", refresh = \"file:$T/space.rt\" }" "visible ASCII"
bad_decl "token_url on a bearer credential" "{ name = \"x\", form = \"bearer\", secret = \"env:R30_CC_SECRET\", hosts = { \"a.test\" }, token_url = \"https://auth.test/t\" }" "form oauth2's"
bad_decl "refresh_write not a boolean" "{ name = \"x\", $O, token_url = \"https://auth.test/t\", client_id = \"c\", refresh_write = \"yes\" }" "refresh_write a boolean"
check "the proxy still runs" kill -0 "$PX_PID"
check "no sanitizer report in the proxy's stderr" bash -c "! grep -q 'AddressSanitizer\|runtime error' '$T/stderr'"
