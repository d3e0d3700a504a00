# 12-proxy-git: real git clone/push, curl and gh through the egress proxy to
# the fake github.com / gitlab.com / api.github.com, with NO token anywhere
# on the client side; the token is injected by the shipped addons.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"

fx_all || { fail "fixtures start"; exit 1; }
px_config && px_start || { fail "proxy start"; exit 1; }
ok "proxy start"
SECRET=sec-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
check "register sandbox" px_register sb-e2e "$SECRET"
fx_client_home
px_client_env sb-e2e "$SECRET"

# --- git over HTTPS: github.com
check "github clone through proxy" git clone -q https://github.com/e2e-org/repo.git "$T/w/gh"
check "github cloned content" contains "$T/w/gh/README" "hello from e2e-org/repo.git"
(cd "$T/w/gh" && echo "agent change" >>README && git commit -qam "agent change")
check "github push through proxy" git -C "$T/w/gh" push -q origin main
check "github push landed" bash -c "git -C $T/git/github/e2e-org/repo.git log -1 --format=%s main | grep -qx 'agent change'"
check "github fetch after push" git -C "$T/w/gh" fetch -q origin
git -C "$T/w/gh" checkout -q -b feature && echo f >"$T/w/gh/f" && git -C "$T/w/gh" add f &&
	git -C "$T/w/gh" commit -qm feature
check "github push new branch" git -C "$T/w/gh" push -q origin feature
check "github branch landed" git -C "$T/git/github/e2e-org/repo.git" rev-parse -q --verify refs/heads/feature

# --- gitlab.com
check "gitlab clone through proxy" git clone -q https://gitlab.com/e2e-group/repo.git "$T/w/gl"
(cd "$T/w/gl" && echo "gl change" >>README && git commit -qam "gl change")
check "gitlab push through proxy" git -C "$T/w/gl" push -q origin main
check "gitlab push landed" bash -c "git -C $T/git/gitlab/e2e-group/repo.git log -1 --format=%s main | grep -qx 'gl change'"

# --- what the upstream saw: exactly one credential, the real one, no proxy credential
n_gh=$(fx_api_q "r['role']=='git-auth-github'")
check "github saw git requests" test "$n_gh" -ge 4
check "every github git request carried exactly the real token" test "$(fx_api_q "r['role']=='git-auth-github' and r['auth_ok'] and len(h.get('authorization',[]))==1")" = "$n_gh"
n_gl=$(fx_api_q "r['role']=='git-auth-gitlab'")
check "every gitlab git request carried exactly the real token" test "$(fx_api_q "r['role']=='git-auth-gitlab' and r['auth_ok'] and len(h.get('authorization',[]))==1")" = "$n_gl"
check "gitlab requests got oauth2 Basic" test "$n_gl" -ge 3
check "no Proxy-Authorization upstream" test "$(fx_api_q "'proxy-authorization' in h")" = 0
check "proxy secret never upstream" not_contains "$T/api.log" "$SECRET"
check "nginx saw Host github.com (canonical)" grep -q "^$GH_PORT github.com \"GET /e2e-org/repo.git/info/refs" "$T/nginx/access.log"

# --- API hosts
check "curl api.github.com /user" bash -c "curl -sf https://api.github.com/user | grep -q e2e-octocat"
check "curl with a dummy token: replaced" bash -c "curl -sf -H 'Authorization: token dummy-in-sandbox' https://api.github.com/repos/e2e-org/repo | grep -q e2e-org/repo"
check "upstream got one Authorization, the real one" test "$(fx_api_q "r['path']=='/repos/e2e-org/repo' and h.get('authorization')==['token $GH_TOKEN_REAL'] or h.get('authorization')==['Bearer $GH_TOKEN_REAL'] and r['path']=='/repos/e2e-org/repo'")" -ge 1
check "dummy never upstream" not_contains "$T/api.log" "dummy-in-sandbox"
check "POST pulls" bash -c "curl -sf -X POST -H 'Content-Type: application/json' -d '{\"title\":\"t\",\"head\":\"feature\",\"base\":\"main\"}' https://api.github.com/repos/e2e-org/repo/pulls | grep -q '\"number\": 7'"
check "POST body arrived intact" test "$(fx_api_q "r['method']=='POST' and r['body']=='{\"title\":\"t\",\"head\":\"feature\",\"base\":\"main\"}'")" = 1
for h in uploads.github.com codeload.github.com raw.githubusercontent.com; do
	check "curl $h" bash -c "curl -sf https://$h/o/r/x | grep -q '$h ok'"
done
check "gitlab api" bash -c "curl -sf https://gitlab.com/api/v4/user | grep -q e2e-gl-user"
check "gitlab api with dummy PRIVATE-TOKEN/JOB-TOKEN: stripped, one credential" bash -c "curl -sf -H 'PRIVATE-TOKEN: dummy-pt' -H 'JOB-TOKEN: dummy-jt' https://gitlab.com/api/v4/user?m=strip | grep -q e2e-gl-user"
check "addon-named headers never upstream" bash -c "! grep -q 'dummy-pt\|dummy-jt' $T/api.log"

# --- gh with a dummy token
mkdir -p "$HOME/.config/gh"
check "gh api /user with GH_TOKEN=dummy" bash -c "GH_TOKEN=dummy-gh GH_HOST=github.com GH_NO_UPDATE_NOTIFIER=1 GH_PROMPT_DISABLED=1 timeout 60 gh api /user --jq .login > $T/gh.out 2>&1; grep -qx e2e-octocat $T/gh.out"
check "gh's dummy replaced upstream" not_contains "$T/api.log" "dummy-gh"

# --- the client side never held a token
check "no token in client env or HOME" fx_no_token_in_client
check "no token in clone configs" bash -c "! grep -rqF -- '$GH_TOKEN_REAL' $T/w"
check "audit log has injected lines" grep -q '"injected":true' "$PX_DIR/audit.jsonl"
check "audit log never holds a token" bash -c "! grep -qF -- '$GH_TOKEN_REAL' $PX_DIR/audit.jsonl && ! grep -qF -- '$GL_TOKEN_REAL' $PX_DIR/audit.jsonl"
check "proxy log never holds a token" bash -c "! grep -qF -- '$GH_TOKEN_REAL' $PX_DIR/proxy.log $PX_DIR/stderr && ! grep -qF -- '$(b64 "x-access-token:$GH_TOKEN_REAL")' $PX_DIR/proxy.log $PX_DIR/stderr"

# --- the CA and the minted leaves
check "CA key kept private (0600)" test "$(stat -c %a "$PX_DIR/ca.key")" = 600
check "exported CA holds no private key" bash -c "! grep -q PRIVATE $PX_CA && openssl x509 -in $PX_CA -noout"
"$PY" "$FX/pclient.py" --proxy "127.0.0.1:$PX_PORT" --proxy-auth "sb-e2e:$SECRET" --cafile "$PX_CA" \
	--connect github.com:443 --tls --sni github.com --dump-cert "$T/leaf.pem" --wait 1 >/dev/null 2>&1
check "leaf is P-256, for github.com, signed by the proxy CA" bash -c "openssl x509 -in $T/leaf.pem -noout -text | grep -q 'NIST CURVE: P-256' && openssl x509 -in $T/leaf.pem -noout -checkhost github.com | grep -q 'does match' && openssl verify -CAfile $PX_CA $T/leaf.pem >/dev/null"
check "leaf validity is short (valid now, expired within 25 h)" bash -c "openssl x509 -in $T/leaf.pem -noout -checkend 0 >/dev/null && ! openssl x509 -in $T/leaf.pem -noout -checkend 90000 >/dev/null"
check "leaf is not a CA" bash -c "! openssl x509 -in $T/leaf.pem -noout -ext basicConstraints 2>/dev/null | grep -q 'CA:TRUE'"

# --- identity
p407() { curl -sv --proxy "$1" https://api.github.com/user 2>&1 | grep -q '< HTTP/1.1 407'; }
check "no proxy credential: 407" p407 "http://127.0.0.1:$PX_PORT"
check "wrong secret: 407" p407 "http://sb-e2e:wrong@127.0.0.1:$PX_PORT"
check "unknown sandbox: 407" p407 "http://sb-nope:$SECRET@127.0.0.1:$PX_PORT"
check "407 carries a Basic challenge" bash -c "curl -sv --proxy http://127.0.0.1:$PX_PORT https://api.github.com/user 2>&1 | grep -qi '< Proxy-Authenticate: Basic'"
n_before=$(wc -l <"$T/api.log")
curl -s --proxy "http://127.0.0.1:$PX_PORT" https://api.github.com/user >/dev/null 2>&1
check "unidentified requests reached no upstream" test "$(wc -l <"$T/api.log")" = "$n_before"
check "stats count the sandbox's requests" bash -c "px_admin() { $PY $FX/padmin.py $PX_ADMIN \"\$@\"; }; px_admin '{\"op\":\"stats\",\"id\":\"sb-e2e\"}' | $PY -c 'import json,sys; d=json.load(sys.stdin); s=d[\"sandboxes\"][0]; assert s[\"id\"]==\"sb-e2e\" and s[\"requests\"]>=10, s'"
check "deregister" px_admin '{"op":"deregister","id":"sb-e2e"}'
check "deregistered sandbox: 407" p407 "http://sb-e2e:$SECRET@127.0.0.1:$PX_PORT"
check "proxy still alive" px_alive
check "no sanitizer report from the proxy" px_san_clean
