# 11-proxy-fixtures: the fake github.com / gitlab.com / API / recorder used by
# the proxy tests work on their own (direct, token given explicitly), and
# refuse without the token. Guards the other proxy tests from testing a
# broken fixture.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"

fx_all || { fail "fixtures start"; exit 1; }
ok "fixtures start"
fx_client_home

ca=$PKI/ca.pem
gh="https://github.com:$GH_PORT/e2e-org/repo.git"
gl="https://gitlab.com:$GL_PORT/e2e-group/repo.git"
rs() { echo "-c http.curloptResolve=$1:127.0.0.1"; }
export GIT_SSL_CAINFO=$ca

# Without the token: refused with 401 and a Basic challenge.
check "github git refuses without token" \
	bash -c "! git $(rs github.com:$GH_PORT) ls-remote $gh >$T/noauth.out 2>&1"
check "401 was a Basic challenge" bash -c "curl -s -o /dev/null -D - --cacert $ca \
	--resolve github.com:$GH_PORT:127.0.0.1 $gh/info/refs?service=git-upload-pack \
	| grep -qi '^www-authenticate: Basic'"
check "wrong token refused" bash -c "! git $(rs github.com:$GH_PORT) -c http.extraHeader='Authorization: Basic $(b64 x-access-token:nope)' ls-remote $gh >/dev/null 2>&1"
check "gitlab user on github refused" bash -c "! git $(rs github.com:$GH_PORT) -c http.extraHeader='Authorization: Basic $(b64 oauth2:$GH_TOKEN_REAL)' ls-remote $gh >/dev/null 2>&1"

# With the token: clone + push on both hosts.
ghh="Authorization: Basic $(b64 x-access-token:$GH_TOKEN_REAL)"
glh="Authorization: Basic $(b64 oauth2:$GL_TOKEN_REAL)"
check "github clone with token" git $(rs github.com:$GH_PORT) -c "http.extraHeader=$ghh" clone -q "$gh" "$T/c1"
check "github cloned content" contains "$T/c1/README" "hello from e2e-org/repo.git"
(cd "$T/c1" && echo change >>README && git commit -qam change) 
check "github push with token" git -C "$T/c1" $(rs github.com:$GH_PORT) -c "http.extraHeader=$ghh" push -q origin main
check "push arrived" test "$(git -C "$T/git/github/e2e-org/repo.git" log --oneline | wc -l)" -eq 2
check "gitlab clone with token" git $(rs gitlab.com:$GL_PORT) -c "http.extraHeader=$glh" clone -q "$gl" "$T/c2"
check "gitlab refuses github-style user" bash -c "! git $(rs gitlab.com:$GL_PORT) -c http.extraHeader='Authorization: Basic $(b64 x-access-token:$GL_TOKEN_REAL)' ls-remote $gl >/dev/null 2>&1"
check "api log has every header" test "$(fx_api_q "r['role']=='git-auth-github' and r['auth_ok'] and 'x-original-uri' in h")" -ge 1

# API host.
api() { curl -s --cacert "$ca" --resolve "api.github.com:$API_PORT:127.0.0.1" "$@"; }
check "api /user with token" bash -c "$(declare -f api); ca=$ca API_PORT=$API_PORT; api -H 'Authorization: token $GH_TOKEN_REAL' https://api.github.com:$API_PORT/user | grep -q e2e-octocat"
check "api /user with Bearer" bash -c "$(declare -f api); ca=$ca API_PORT=$API_PORT; api -H 'Authorization: Bearer $GH_TOKEN_REAL' https://api.github.com:$API_PORT/user | grep -q e2e-octocat"
check "api /user without token 401" test "$(api -o /dev/null -w '%{http_code}' https://api.github.com:$API_PORT/user)" = 401
check "api /user with two tokens 401" test "$(api -o /dev/null -w '%{http_code}' -H "Authorization: token $GH_TOKEN_REAL" -H "Authorization: token $GH_TOKEN_REAL" https://api.github.com:$API_PORT/user)" = 401
check "gitlab api via nginx" bash -c "curl -s --cacert $ca --resolve gitlab.com:$GL_PORT:127.0.0.1 -H 'PRIVATE-TOKEN: $GL_TOKEN_REAL' https://gitlab.com:$GL_PORT/api/v4/user | grep -q e2e-gl-user"

# GitHub App endpoint: a JWT signed by the app key mints; anything else does not.
jwt() { # $1 key $2 iss $3 iat-offset $4 exp-offset
	"$PY" - "$@" <<'PY'
import base64, json, subprocess, sys, time
key, iss, a, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
e = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=").decode()
now = int(time.time())
si = e(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()) + "." + \
     e(json.dumps({"iss": iss, "iat": now + a, "exp": now + b}).encode())
sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=si.encode(),
                     capture_output=True, check=True).stdout
print(si + "." + e(sig))
PY
}
mint() { api -o "$T/mint.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" \
	"https://api.github.com:$API_PORT/app/installations/$APP_INST/access_tokens"; }
check "app: valid JWT mints" test "$(mint "$(jwt "$PKI/app.key" "$APP_ID" -30 300)")" = 201
check "app: token in reply" contains "$T/mint.out" '"token": "ghs_e2eMINTED0001'
check "app: mint counter" test "$(cat "$T/minted")" = 1
check "app: wrong key refused" test "$(mint "$(jwt "$PKI/bad-ca.key" "$APP_ID" -30 300 2>/dev/null || echo x.y.z)")" = 401
openssl genrsa -out "$T/other.key" 2048 2>/dev/null
check "app: other RSA key refused" test "$(mint "$(jwt "$T/other.key" "$APP_ID" -30 300)")" = 401
check "app: wrong iss refused" test "$(mint "$(jwt "$PKI/app.key" 1 -30 300)")" = 401
check "app: expired JWT refused" test "$(mint "$(jwt "$PKI/app.key" "$APP_ID" -900 -300)")" = 401
check "app: too long JWT refused" test "$(mint "$(jwt "$PKI/app.key" "$APP_ID" -30 3600)")" = 401
check "app: minted token works on API" bash -c "$(declare -f api); ca=$ca API_PORT=$API_PORT; api -H \"Authorization: token \$(head -1 $T/minted.tokens)\" https://api.github.com:$API_PORT/user | grep -q e2e-octocat"
check "app: mint counter unchanged by refusals" test "$(cat "$T/minted")" = 1

# Recorder: TLS and plain, records every byte.
fx_recorder tls --cert "$PKI/evil.test.pem" --key "$PKI/evil.test.key"
check "recorder tls answers" bash -c "curl -s --cacert $ca --resolve evil.test:$REC_PORT:127.0.0.1 -H 'X-Canary: c4n4ry' https://evil.test:$REC_PORT/x | grep -q recorded"
check "recorder recorded the request" contains "$T/rec-tls.bytes" "X-Canary: c4n4ry"
check "recorder logged the handshake" contains "$T/rec-tls.events" "tls-ok"
fx_recorder plain
check "recorder plain answers" bash -c "curl -s -H 'X-Canary: pl41n' http://127.0.0.1:$REC_PORT/y | grep -q recorded"
check "recorder recorded plain bytes" contains "$T/rec-plain.bytes" "X-Canary: pl41n"

# Bad certificates really are bad (the proxy tests rely on it).
check "untrusted cert fails verification" bash -c "! openssl verify -CAfile $PKI/ca.pem $PKI/github.com-untrusted.pem >/dev/null 2>&1"
check "expired cert fails verification" bash -c "! openssl verify -CAfile $PKI/ca.pem $PKI/github.com-expired.pem >/dev/null 2>&1"
check "wrong-host cert lacks github.com" bash -c "! openssl x509 -in $PKI/wronghost.pem -noout -checkhost github.com | grep -q 'does match'"
for h in uploads.github.com codeload.github.com raw.githubusercontent.com; do
	check "$h answers with token" bash -c "curl -s --cacert $ca --resolve $h:$GH_PORT:127.0.0.1 -H 'Authorization: token $GH_TOKEN_REAL' https://$h:$GH_PORT/x | grep -q '$h ok'"
	check "$h 401 without" test "$(curl -s -o /dev/null -w '%{http_code}' --cacert $ca --resolve $h:$GH_PORT:127.0.0.1 https://$h:$GH_PORT/x)" = 401
done
