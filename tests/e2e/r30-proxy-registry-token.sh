# r30-proxy-registry-token: a container registry with the Docker registry
# token flow (Debian's real docker-registry, auth: token, its realm
# tests/fixtures/regtoken.py) through the proxy with the registry form of a
# named credential (issue 30): skopeo in the "sandbox" holds no token and no
# password and is given no credentials at all; the proxy derives each
# request's scope, gets a token at the realm with the real Basic pair and
# sends the request with it, so skopeo never sees a 401 and never talks to
# the realm. The realm stays https://localhost:PORT (the proxy, not skopeo,
# reaches it); the registry is reg.test, resolved by the proxy.
. "$(dirname "$0")/../lib/common.sh"
PY=/usr/bin/python3
FX=$TOP/tests/fixtures
command -v skopeo >/dev/null && command -v docker-registry >/dev/null ||
	{ skip "r30-proxy-registry-token" "skopeo or docker-registry missing (scripts/install-deps.sh)"; exit 0; }

# ---- a test CA, the registry's and the realm's leaf (reg.test, bad.test, localhost) ----
mkdir -p "$T/pki"
. "$TOP/tests/lib/upca.sh"
upca_mk "$T/pki/ca.pem" "$T/pki/ca.key" "$T/pki/reg.pem" "$T/pki/reg.key" reg.test bad.test priv.test localhost 127.0.0.1
REG_PKI=$T/pki REG_CERT=$T/pki/reg.pem REG_KEY=$T/pki/reg.key
. "$TOP/tests/lib/registry.sh"

RP=$(free_port); TP=$(free_port); PP=$(free_port)
REAL_PW=carol-REAL-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
reg_start_token "$RP" "$TP" "carol:$REAL_PW:acme/*=pull,push,delete;*=pull" ||
	{ fail "registry start" "$(tail -5 "$T/registry-token.log")"; exit 1; }
printf '%s\n' "$REAL_PW" >"$T/reg.pw"
printf 'not-the-password\n' >"$T/bad.pw"
chmod 600 "$T/reg.pw" "$T/bad.pw"

cat >"$T/reg.lua" <<EOF
return {
  name = "reg",
  credentials = {
    { name = "registry", form = "registry", realm = "https://localhost:$TP/token",
      service = "registry.test", user = "carol", secret = "file:$T/reg.pw",
      hosts = { "reg.test" }, default = true },
    { name = "regbad", form = "registry", realm = "https://localhost:$TP/token",
      service = "registry.test", user = "carol", secret = "file:$T/bad.pw",
      hosts = { "bad.test" } },
    { name = "regpriv", form = "registry", realm = "https://realm.priv.test/token",
      service = "registry.test", user = "carol", secret = "file:$T/reg.pw",
      hosts = { "priv.test" } },
  },
}
EOF
px_yaml() {	# px_yaml ADDON
	cat <<EOF
listen: 127.0.0.1:$PP
workers: 2
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key, export: $T/export/ca.crt}
upstream:
  ca_bundle: $T/pki/ca.pem
  allow_cidrs: [127.0.0.0/8]
resolve:
  "reg.test:443": "127.0.0.1:$RP"
  "bad.test:443": "127.0.0.1:$RP"
  "priv.test:443": "127.0.0.1:$RP"
  "realm.priv.test:443": "10.255.255.1:443"
  "localhost:$TP": "127.0.0.1:$TP"
addons: [$1]
audit:
  log: $T/audit.jsonl
log:
  file: $T/proxy.log
EOF
}
mkdir -p "$T/export"
px_yaml "$T/reg.lua" >"$T/p.yaml"
. "$TOP/tests/lib/pxsolo.sh"
px_solo
adm '{"op":"register","id":"sb-r","secret":"s-r"}' >"$T/reg-r.json"
adm '{"op":"register","id":"sb-b","secret":"s-b","policy":{"credentials":["regbad","regpriv"]}}' >"$T/reg-b.json"
check "register: the registry credential with a placeholder and its user, no value" "$PY" -c '
import json,sys; c=json.load(open(sys.argv[1]))["credentials"]["registry"]
assert c["form"] == "registry" and c["user"] == "carol" and c["placeholder"].startswith("PXC"), c
assert sys.argv[2] not in open(sys.argv[1]).read()' "$T/reg-r.json" "$REAL_PW"
PH=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["credentials"]["registry"]["placeholder"])' "$T/reg-r.json")
PHB=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["credentials"]["regbad"]["placeholder"])' "$T/reg-b.json")

# The sandbox's side: the proxy's CA only, the proxy in HTTPS_PROXY, no credentials at all.
mkdir -p "$T/sbcerts"
cp "$T/export/ca.crt" "$T/sbcerts/ca.crt"
layer=$(reg_oci_image "$T/img" v1)
sbk() { HTTPS_PROXY="http://sb-r:s-r@127.0.0.1:$PP" NO_PROXY= reg_skopeo "$@"; }
sbk copy --dest-cert-dir "$T/sbcerts" "oci:$T/img:v1" docker://reg.test/acme/tiny:v1 >"$T/push.out" 2>&1
check "skopeo push through the proxy, no credentials: the image is in the registry" \
	test -n "$(find "$T/registry-token" -path "*blobs/sha256/*/${layer#sha256:}*" 2>/dev/null | head -1)"
sbk copy --src-cert-dir "$T/sbcerts" docker://reg.test/acme/tiny:v1 "oci:$T/back:v1" >"$T/pull.out" 2>&1
check "skopeo pull through the proxy: the layer arrived" test -f "$T/back/blobs/sha256/${layer#sha256:}"
sbk inspect --cert-dir "$T/sbcerts" docker://reg.test/acme/tiny:v1 >"$T/inspect.out" 2>&1
check "skopeo inspect through the proxy: the manifest" grep -q '"Layers"' "$T/inspect.out"
# A client that insists on a credential: the placeholder pair is replaced by the token.
sbk inspect --creds "carol:$PH" --cert-dir "$T/sbcerts" docker://reg.test/acme/tiny:v1 >"$T/inspect2.out" 2>&1
check "skopeo inspect with carol:PLACEHOLDER: the manifest" grep -q '"Layers"' "$T/inspect2.out"
code=$(curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-r:s-r@127.0.0.1:$PP" \
	-u "carol:$PH" -o "$T/tags.out" -w '%{http_code}' https://reg.test/v2/acme/tiny/tags/list 2>&1)
check "curl -u carol:PLACEHOLDER tags/list: 200, the tag listed" bash -c "[ '$code' = 200 ] && grep -q '\"v1\"' '$T/tags.out'"
code=$(curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-r:s-r@127.0.0.1:$PP" \
	-o "$T/cat.out" -w '%{http_code}' https://reg.test/v2/_catalog 2>&1)
check "catalog (registry:catalog:*): 200, the repository listed" bash -c "[ '$code' = 200 ] && grep -q 'acme/tiny' '$T/cat.out'"
code=$(curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-r:s-r@127.0.0.1:$PP" \
	-u "carol:$PH" -o "$T/v1.out" -w '%{http_code}' https://reg.test/v1/_ping 2>&1)
check "outside /v2/ (the v1 ping) with the placeholder pair: forwarded without it, the registry's 404" test "$code" = 404
check "the registry authenticated carol (the token's subject) on the proxied requests" \
	grep -q 'auth.user.name="\?carol' "$T/registry-token.log"
check "the registry never challenged the client: no 401 in the proxy's audit for reg.test" \
	bash -c "! grep '\"host\":\"reg.test:443\"' '$T/audit.jsonl' | grep -q '\"status\":401'"

# ---- the realm's side: the proxy's requests, the real user, the right scopes ----
rl() { "$PY" -c '
import json,sys
recs=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
exec(sys.argv[2])' "$REGTOKEN_LOG" "$1"; }
check "realm: every request is the proxy's (its user agent), GET with Basic" rl '
assert recs
for r in recs:
    h=dict((k.lower(),v) for k,v in r["headers"])
    assert r["method"] == "GET" and h.get("user-agent") == "egress-proxy", r
    assert h.get("authorization","").startswith("Basic "), r'
check "realm: the real user carol got tokens (200)" rl '
assert any(r["user"] == "carol" and r["status"] == 200 for r in recs)'
check "realm: scopes asked: push (pull,push) and pull of acme/tiny, the ping without one, the catalog" rl '
s=set(x for r in recs for x in r.get("scopes") or [])
assert "repository:acme/tiny:pull,push" in s and "repository:acme/tiny:pull" in s, s
assert "registry:catalog:*" in s, s
assert any(r.get("scopes") == [] and r["status"] == 200 for r in recs), "no ping token"'
check "realm: every granted token has what its scope asked for" rl '
for r in recs:
    if r["status"] == 200 and r["user"] == "carol":
        for sc in r["scopes"]:
            t,_,rest=sc.partition(":"); n,_,a=rest.rpartition(":")
            assert any(x["name"] == n for x in r["access"]), r'
nreal=$("$PY" -c 'import sys; print(sum(1 for l in open(sys.argv[1]) if l.strip()))' "$REGTOKEN_LOG")
nreg=$(grep -c '"credentials":"registry:registry"' "$T/audit.jsonl")
check "tokens cached: $nreal realm requests for $nreg registry requests" test "$nreal" -lt "$nreg"
check "audit: token exchanges with grant registry and the scope" \
	grep -q '"type":"token".*"grant":"registry".*"credentials":"registry".*"scope":"repository:acme/tiny:pull,push"' "$T/audit.jsonl"

# ---- a repository carol may only read, pushed to: the registry's 401 reaches
# the client; the token the realm has just granted lacks the push, so it is
# kept (CREDTOK_REFUSED_MS, 10 s) rather than asked for again per request ----
nd0=$("$PY" -c 'import sys; print(sum(1 for l in open(sys.argv[1]) if "repository:other/x:pull,push" in l))' "$REGTOKEN_LOG")
for i in 1 2 3 4; do
	curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-r:s-r@127.0.0.1:$PP" \
		-X POST -o "$T/denied$i.out" -w '%{http_code}\n' https://reg.test/v2/other/x/blobs/uploads/ >>"$T/denied.codes" 2>&1
done
check "a push the realm grants no push for: the registry's 401 reaches the client ($(sort -u "$T/denied.codes" | tr "\n" " "); $(head -c 300 "$T/denied1.out"))" \
	test "$(sort -u "$T/denied.codes")" = 401
nd=$("$PY" -c 'import sys; print(sum(1 for l in open(sys.argv[1]) if "repository:other/x:pull,push" in l))' "$REGTOKEN_LOG")
check "the refused scope cost one realm request, not one per push ($((nd - nd0)) for 4)" test "$((nd - nd0))" = 1
check "the proxy logged why the token stays" grep -q 'credential=registry: the API answered 401, the token just granted lacks the access' "$T/proxy.log" "$T/stderr"

# ---- hostile names: refused by the proxy, nothing fetched or forwarded ----
hcode() { curl -sS --path-as-is --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-r:s-r@127.0.0.1:$PP" \
	-o "$T/h.out" -w '%{http_code}' "$@" 2>&1; }
n0=$(wc -l <"$REGTOKEN_LOG")
check "a name with .. : 400" test "$(hcode https://reg.test/v2/acme/../other/manifests/v1)" = 400
check "a name with upper case: 400" test "$(hcode https://reg.test/v2/Acme/tiny/manifests/v1)" = 400
check "an encoded dot: 400" test "$(hcode 'https://reg.test/v2/acme/%2e%2e/manifests/v1')" = 400
check "a mount from a hostile repository: 400" test "$(hcode -X POST 'https://reg.test/v2/acme/tiny/blobs/uploads/?mount=sha256:00&from=..%2Fx')" = 400
check "the 400 names the reason" grep -q 'repository name\|from' "$T/h.out"
check "no realm request for the refused ones" test "$(wc -l <"$REGTOKEN_LOG")" = "$n0"

# ---- a realm outside upstream.allow_cidrs: refused before any socket ----
n0=$(wc -l <"$REGTOKEN_LOG")
code=$(curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-b:s-b@127.0.0.1:$PP" \
	-o "$T/priv.out" -w '%{http_code}' https://priv.test/v2/acme/tiny/manifests/v1 2>&1)
check "a realm at a private address (10/8): 502" test "$code" = 502
check "a realm at a private address: the log says why" \
	grep -q "proxy's own call to 10.255.255.1 refused: private (upstream.allow_cidrs)" "$T/proxy.log"
check "a realm at a private address: no realm request, no password in the reply" \
	bash -c "[ \$(wc -l <'$REGTOKEN_LOG') = $n0 ] && ! grep -qF '$REAL_PW' '$T/priv.out'"

# ---- a wrong secret: 502 token_endpoint, nothing reaches the registry ----
sbb() { HTTPS_PROXY="http://sb-b:s-b@127.0.0.1:$PP" NO_PROXY= reg_skopeo "$@"; }
sleep 1	# the registry's access lines of what came before are written
nl0=$(wc -l <"$T/registry-token.log")
sbb inspect --cert-dir "$T/sbcerts" docker://bad.test/acme/tiny:v1 >"$T/bad.out" 2>&1
rc=$?
check "wrong secret: skopeo fails" test "$rc" != 0
check "wrong secret: skopeo reports the proxy's 502" grep -q '502' "$T/bad.out"
code=$(curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-b:s-b@127.0.0.1:$PP" \
	-u "carol:$PHB" -o "$T/bad2.out" -w '%{http_code}' https://bad.test/v2/acme/tiny/manifests/v1 2>&1)
check "wrong secret, the placeholder sent: 502 token_endpoint" test "$code" = 502
check "the 502 says the realm refused, no value" bash -c "grep -q 'UNAUTHORIZED\|401\|backing off\|failing' '$T/bad2.out' && ! grep -q '$PHB\|not-the-password' '$T/bad2.out'"
sleep 1
# skopeo falls back to the v1 ping (/v1/_ping): outside the registry API, it
# goes as the client sent it, with no credential; nothing under /v2/ may arrive.
tail -n +$((nl0 + 1)) "$T/registry-token.log" | grep 'HTTP/1.1"' | grep -v '"GET /v1/_ping ' >"$T/reg-new.log"
check "wrong secret: nothing of the registry API reached the registry (no new /v2/ access line)" \
	bash -c "! test -s '$T/reg-new.log' || { cat '$T/reg-new.log'; false; }"
check "wrong secret: the realm refused carol (401), logged by regtoken" rl '
assert any(r["user"] == "carol" and r["status"] == 401 for r in recs)'
check "audit: the failed exchange is a token_failed line" \
	grep -q '"type":"token".*"credentials":"regbad".*"reason":"token_failed"' "$T/audit.jsonl"

# ---- metrics ----
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
check "metrics: token exchanges ok counted" test "$(metric 'egress_proxy_oauth_token_requests_total{result="ok"}')" -ge 3
check "metrics: the failed exchange counted" test "$(metric 'egress_proxy_oauth_token_requests_total{result="failed"}')" -ge 1

# ---- nothing secret where the sandbox looks ----
check "no token (a JWT) or password in what skopeo and curl got or wrote (outputs, auth file, home, register reply)" \
	bash -c "! grep -rqE -- 'eyJ[A-Za-z0-9_-]{8,}|$REAL_PW' '$T'/push.out '$T'/pull.out '$T'/inspect*.out '$T'/tags.out '$T'/cat.out '$T'/v1.out '$T'/denied*.out '$T'/h.out '$T'/bad*.out '$T'/reg-r.json '$T'/reg-b.json '$T/reg-home' '$T/reg-auth.json' '$T/back' 2>/dev/null"
check "no token or password in the proxy's log, stderr or audit log" \
	bash -c "! grep -qE -- 'eyJ[A-Za-z0-9_-]{8,}\.|$REAL_PW' '$T/proxy.log' '$T/stderr' '$T/audit.jsonl'"
check "the proxy still runs" kill -0 "$PX_PID"
check "no sanitizer report in the proxy's stderr" bash -c "! grep -q 'AddressSanitizer\|runtime error' '$T/stderr'"

# ---- hostile declarations, refused at load ----
bad_decl() {	# bad_decl NAME LUA-ENTRY EXPECTED
	printf 'return { name = "bad", credentials = { %s } }\n' "$2" >"$T/bad.lua"
	px_yaml "$T/bad.lua" | sed "s/^listen: .*/listen: 127.0.0.1:$(free_port)/; s|socket: .*|socket: $T/bad.sock|" >"$T/bad.yaml"
	if "$BIN/egress-proxy/egress-proxy" -n -f "$T/bad.yaml" >"$T/bad-decl.out" 2>&1; then
		fail "declaration refused: $1" "the config was taken"
	elif grep -qF -- "$3" "$T/bad-decl.out"; then
		ok "declaration refused: $1"
	else
		fail "declaration refused: $1" "$(tail -n 3 "$T/bad-decl.out")"
	fi
}
R="form = \"registry\", secret = \"file:$T/reg.pw\", hosts = { \"a.test\" }, user = \"carol\""
bad_decl "realm over http" "{ name = \"x\", $R, realm = \"http://auth.test/token\", service = \"s\" }" "realm must be an https://"
bad_decl "realm with user info" "{ name = \"x\", $R, realm = \"https://u:p@auth.test/token\", service = \"s\" }" "realm must be"
bad_decl "realm with a CR LF" "{ name = \"x\", $R, realm = \"https://auth.test/t\\r\\nX: y\", service = \"s\" }" "realm must be"
bad_decl "no realm" "{ name = \"x\", $R, service = \"s\" }" "needs realm, service and user"
bad_decl "no service" "{ name = \"x\", $R, realm = \"https://auth.test/token\" }" "needs realm, service and user"
bad_decl "a service with a space" "{ name = \"x\", $R, realm = \"https://auth.test/token\", service = \"a b\" }" "service must be"
bad_decl "a user with ':'" "{ name = \"x\", form = \"registry\", secret = \"file:$T/reg.pw\", hosts = { \"a.test\" }, user = \"a:b\", realm = \"https://auth.test/token\", service = \"s\" }" "user must be"
bad_decl "realm on another form" "{ name = \"x\", form = \"bearer\", secret = \"file:$T/reg.pw\", hosts = { \"a.test\" }, realm = \"https://auth.test/token\" }" "form registry's"
