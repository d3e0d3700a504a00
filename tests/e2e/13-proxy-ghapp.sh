# 13-proxy-ghapp: the shipped github.lua with GitHub App credentials. The
# proxy signs an RS256 JWT, mints an installation token at the local token
# endpoint (which verifies the JWT), caches it, and injects it; failures
# (endpoint redirects, JWT refused) fail closed with nothing forwarded.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"

fx_all || { fail "fixtures start"; exit 1; }
APPCONF="  github_app_id: \"$APP_ID\"
  github_app_installation_id: \"$APP_INST\"
  github_app_private_key: $PKI/app.key"
PX_ADDON_CONFIG=$APPCONF px_config && px_start && px_sandbox || { fail "proxy start"; exit 1; }
ok "proxy start"
fx_client_home
px_client_env sb-e2e "$SECRET"

check "git clone with an App token" git clone -q https://github.com/e2e-org/repo.git "$T/w/c1"
check "one token minted" test "$(cat "$T/minted" 2>/dev/null)" = 1
check "the token endpoint verified an RS256 JWT from the app key" \
	test "$(fx_api_q "r['role']=='app-token' and r['auth_ok'] and r['method']=='POST' and r['path']=='/app/installations/$APP_INST/access_tokens'")" = 1
check "no JWT was refused" test "$(fx_api_q "r['role']=='app-token' and not r['auth_ok']")" = 0
TOK=$(head -1 "$T/minted.tokens")
check "git requests carried the minted token" test "$(fx_api_q "r['role']=='git-auth-github' and h.get('authorization')==['Basic $(b64 "x-access-token:$TOK")']")" -ge 2
(cd "$T/w/c1" && echo app >>README && git commit -qam "app push")
check "git push with the App token" git -C "$T/w/c1" push -q origin main
check "API call with the App token" bash -c "curl -sf https://api.github.com/user | grep -q e2e-octocat"
check "API got Bearer <minted>" test "$(fx_api_q "r['role']=='github-api' and h.get('authorization')==['Bearer $TOK']")" -ge 1
# Cached: many more requests, some in parallel, mint nothing new.
cp=()
for i in 1 2 3 4 5 6; do curl -sf -o /dev/null https://api.github.com/repos/e2e-org/repo & cp+=($!); done
wait "${cp[@]}"
git ls-remote https://github.com/e2e-org/repo.git >/dev/null 2>&1
check "token cached: still one mint after 8 more requests" test "$(cat "$T/minted")" = 1
check "minted token never in the client" fx_no_token_in_client
check "minted token never in proxy logs" bash -c "! grep -qF -- '$TOK' $PX_DIR/proxy.log $PX_DIR/stderr $PX_DIR/audit.jsonl"
check "audit names the App rule" grep -q '"rule":"github-app' "$PX_DIR/audit.jsonl"

# A sandbox label narrows the token to repositories: a separate, down-scoped mint.
px_register sb-narrow narrow-secret '{"org":"e2e-org","user":"u2","labels":{"github_repositories":"repo"}}'
check "narrowed sandbox works" bash -c "curl -sf --proxy http://sb-narrow:narrow-secret@127.0.0.1:$PX_PORT https://api.github.com/user | grep -q e2e-octocat"
check "narrowed sandbox got its own mint" test "$(cat "$T/minted")" = 2
check "the mint asked for repositories [repo]" test "$(fx_api_q "r['role']=='app-token' and r['auth_ok'] and '\"repositories\":[\"repo\"]' in r['body'].replace(' ', '')")" = 1

# Failure 1: the token endpoint answers with a redirect (to evil.test): never followed, fail closed.
: >"$T/api2.log"
API2_PORT=$(free_port)
"$PY" "$FX/fakeapi.py" --listen "$API2_PORT:$PKI/evil.test.pem:$PKI/evil.test.key" --log "$T/api2.log" \
	--app-id "$APP_ID" --app-pub "$PKI/app.pub" --app-mode redirect --ready "$T/api2.ready" >>"$T/api2.out" 2>&1 &
track_pid $!
wait_for 20 test -f "$T/api2.ready" && wait_port "$API2_PORT" || { fail "api2 start"; exit 1; }
n_api=$(wc -l <"$T/api.log")
PX_RESOLVE="  \"evil.test:443\": \"127.0.0.1:$API2_PORT\"" PX_ADDON_CONFIG="$APPCONF
  github_app_api: https://evil.test" px_config px-redir && px_start px-redir && px_sandbox || { fail "px-redir start"; exit 1; }
code=$(curl -s -o "$T/redir.body" -w '%{http_code}' --proxy "http://sb-e2e:$SECRET@127.0.0.1:$PX_PORT" --cacert "$PX_CA" https://api.github.com/user)
check "endpoint redirect: request refused (502), got $code" test "$code" = 502
check "endpoint redirect: the redirect was not followed" test "$("$PY" -c "import json; print(sum(1 for l in open('$T/api2.log')))")" = 1
check "endpoint redirect: nothing forwarded to the API" test "$(wc -l <"$T/api.log")" = "$n_api"
px_client_env sb-e2e "$SECRET"	# now through px-redir
git clone -q https://github.com/e2e-org/repo.git "$T/w/c-redir" >/dev/null 2>&1 &&
	fail "endpoint redirect: git clone must fail" || ok "endpoint redirect: git clone fails closed"
kill "$PX_PID"

# Failure 2: the proxy holds the wrong key: the endpoint refuses the JWT, nothing is forwarded.
openssl genrsa -out "$T/wrong-app.key" 2048 2>/dev/null
n_api=$(fx_api_q "r['role']!='app-token'")
PX_ADDON_CONFIG="  github_app_id: \"$APP_ID\"
  github_app_installation_id: \"$APP_INST\"
  github_app_private_key: $T/wrong-app.key" px_config px-badkey && px_start px-badkey && px_sandbox || { fail "px-badkey start"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' --proxy "http://sb-e2e:$SECRET@127.0.0.1:$PX_PORT" --cacert "$PX_CA" https://api.github.com/user)
check "wrong app key: request refused (502), got $code" test "$code" = 502
check "wrong app key: the endpoint refused a JWT" test "$(fx_api_q "r['role']=='app-token' and r['jwt_error']=='bad signature'")" -ge 1
check "wrong app key: nothing forwarded" test "$(fx_api_q "r['role']!='app-token'")" = "$n_api"
check "mint count unchanged by failures" test "$(cat "$T/minted")" = 2
check "no sanitizer report from the proxy" px_san_clean
