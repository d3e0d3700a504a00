# 25-proxy-policy: per-session credential policies in the proxy (issue 16):
# the admin register op's "policy" (stored, bounded, shown in stats, read
# by addons as ctx.sandbox.policy), proxy.glob, and the shipped addons'
# enforcement with real git and curl: repository/project scope, push rules
# answered in git's report-status format, GraphQL mutations, and
# down-scoped, revoked GitHub App tokens.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"

fx_all || { fail "fixtures start"; exit 1; }
fx_client_home

# jq-like helper: run python on the JSON read from stdin (d).
pyj() { "$PY" -c "import json,sys; d=json.load(sys.stdin); $1"; }

# ---- 1. the admin op: policy stored, bounded, shown; ctx.sandbox.policy ----
PX_ADDONS="[$FX/addons/policy_inspect.lua]" px_config px-inspect && px_start px-inspect ||
	{ fail "inspect proxy start"; exit 1; }
POL='{"github":{"repositories":["acme/app","acme/lib-*"],"permissions":{"contents":"write","pull_requests":"read"},"delete":false},"deep":{"a":{"b":7}}}'
check "register with a policy" px_admin "{\"op\":\"register\",\"id\":\"sb-i\",\"secret\":\"s-i\",\"policy\":$POL}"
check "stats show the policy as given" bash -c "px_admin() { $PY $FX/padmin.py $PX_ADMIN \"\$@\"; }; px_admin '{\"op\":\"stats\",\"id\":\"sb-i\"}' | $PY -c 'import json,sys; d=json.load(sys.stdin); assert d[\"sandboxes\"][0][\"policy\"]==json.loads(sys.argv[1]), d' '$POL'"
check "register without a policy" px_admin '{"op":"register","id":"sb-none","secret":"s-n"}'
check "stats: no policy member without a policy" bash -c "$PY $FX/padmin.py $PX_ADMIN '{\"op\":\"stats\",\"id\":\"sb-none\"}' | $PY -c 'import json,sys; d=json.load(sys.stdin); assert \"policy\" not in d[\"sandboxes\"][0], d'"
check "policy null means none" px_admin '{"op":"register","id":"sb-null","secret":"s-n","policy":null}'
bad_reg() {	# bad_reg WHAT JSON-POLICY EXPECTED-ERROR-SUBSTRING
	local out
	out=$(px_admin "{\"op\":\"register\",\"id\":\"sb-bad\",\"secret\":\"s-b\",\"policy\":$2}")
	case $out in *'"ok":false'*"$3"*) ok "register refuses $1";; *) fail "register refuses $1" "$out";; esac
}
bad_reg "a string policy" '"x"' "policy must be an object"
bad_reg "an array policy" '[1]' "policy must be an object"
bad_reg "a number policy" '5' "policy must be an object"
bad_reg "a policy 9 levels deep" '{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{}}}}}}}}}' "deeper than 8"
check "a policy 8 levels deep is taken" px_admin '{"op":"register","id":"sb-deep8","secret":"s","policy":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{}}}}}}}}}'
big=$("$PY" -c 'import json; print(json.dumps({"github":{"push":["refs/heads/"+"x"*190+str(i) for i in range(90)]}}))')
bad_reg "a policy over 16 KiB" "$big" "larger than 16384"
check "the refused sandbox was not registered" bash -c "! $PY $FX/padmin.py $PX_ADMIN '{\"op\":\"stats\",\"id\":\"sb-bad\"}'"

ins() { curl -s --proxy "http://$1@127.0.0.1:$PX_PORT" --cacert "$PX_CA" https://github.com/x; }
out=$(ins sb-i:s-i)
check "ctx.sandbox.policy: arrays (# and ipairs)" contains <(echo "$out") "n=2 repos=acme/app,acme/lib-*"
check "ctx.sandbox.policy: objects (pairs)" contains <(echo "$out") "perms=contents:write,pull_requests:read"
check "ctx.sandbox.policy: booleans and nesting" contains <(echo "$out") "delete=false deep=7"
check "ctx.sandbox.policy is read-only at every level" contains <(echo "$out") "writes=falsefalsefalse werr=read-only after=false"
check "proxy.glob: ** crosses /, * does not, ci folds case" contains <(echo "$out") "glob=true,false,true,false"
check "no policy: ctx.sandbox.policy is nil" contains <(ins sb-none:s-n) "policy=nil"
# Re-registering with another policy: new connections see the new one.
check "re-register with a narrower policy" px_admin '{"op":"register","id":"sb-i","secret":"s-i","policy":{"github":{"repositories":["acme/app"],"permissions":{}}}}'
check "the next connection sees the new policy" contains <(ins sb-i:s-i) "n=1 repos=acme/app perms= "
check "re-register without a policy drops it" px_admin '{"op":"register","id":"sb-i","secret":"s-i"}'
check "then ctx.sandbox.policy is nil" contains <(ins sb-i:s-i) "policy=nil"
kill "$PX_PID"

# ---- 2. push rules and repository scope with real git (PAT) ----
fx_bare "$T/git/github/e2e-org/other.git"
fx_bare "$T/git/gitlab/e2e-group/other.git"
px_config && px_start || { fail "proxy start"; exit 1; }
GHPOL='{"repositories":["e2e-org/repo","e2e-org/lib-*"],"push":["refs/heads/agent/**"],"protect":["refs/heads/main","refs/tags/**"],"delete":false,"api":"repositories"}'
GLPOL='{"projects":["e2e-group/repo"],"push":["refs/heads/agent/**"],"protect":["refs/heads/main"],"api":"projects"}'
check "register sb-p with github and gitlab policies" px_admin "{\"op\":\"register\",\"id\":\"sb-p\",\"secret\":\"s-p\",\"attrs\":{\"org\":\"e2e-org\"},\"policy\":{\"github\":$GHPOL,\"gitlab\":$GLPOL}}"
px_client_env sb-p s-p
GHR=$T/git/github/e2e-org/repo.git
main0=$(git -C "$GHR" rev-parse main)
# receive-pack POSTs nginx saw so far (the pack reaching the upstream)
rp() { grep -c "POST /e2e-org/$1.git/git-receive-pack" "$T/nginx/access.log"; }

check "clone of an allowed repository" git clone -q https://github.com/e2e-org/repo.git "$T/w/p"
W=$T/w/p
(cd "$W" && echo one >>README && git commit -qam one)
check "push to an allowed ref (agent/**)" git -C "$W" push -q origin HEAD:refs/heads/agent/t1
check "the allowed push landed" test "$(git -C "$GHR" rev-parse refs/heads/agent/t1)" = "$(git -C "$W" rev-parse HEAD)"
check "the allowed push's pack reached the upstream" test "$(rp repo)" -ge 1
push_refused() {	# push_refused NAME EXPECTED-LINE-REGEX git-push-args...
	local name=$1 want=$2 n0; shift 2
	n0=$(rp repo)
	if git -C "$W" push "$@" >"$T/push.out" 2>&1; then
		fail "$name: push refused" "it succeeded"; return
	fi
	if grep -Eq -- "$want" "$T/push.out"; then ok "$name: git says $(grep -Eo -- "$want" "$T/push.out" | head -1)"
	else fail "$name: git's remote rejected line" "$(tr '\n' '|' <"$T/push.out")"; fi
	check "$name: the pack never reached the upstream" test "$(rp repo)" = "$n0"
}
push_refused "push to a protected ref" '! \[remote rejected\] HEAD -> main \(denied by policy: protected ref\)' origin HEAD:main
check "main is unchanged" test "$(git -C "$GHR" rev-parse main)" = "$main0"
push_refused "push outside push" '! \[remote rejected\] HEAD -> feature \(denied by policy: ref outside push\)' origin HEAD:refs/heads/feature
check "no feature branch upstream" bash -c "! git -C $GHR rev-parse -q --verify refs/heads/feature"
push_refused "delete of an allowed ref" '! \[remote rejected\] agent/t1 \(denied by policy: delete\)' origin :refs/heads/agent/t1
check "agent/t1 still exists" git -C "$GHR" rev-parse -q --verify refs/heads/agent/t1
git -C "$W" tag v1
push_refused "push of a tag (protected refs/tags/**)" '! \[remote rejected\] v1 -> v1 \(denied by policy: protected ref\)' origin v1
push_refused "two refs, one protected: both refused" 'agent/t2 \(not pushed: another ref of this push was denied by policy\)' origin HEAD:refs/heads/agent/t2 HEAD:main
check "... and each refused ref has its line" grep -q 'HEAD -> main (denied by policy: protected ref)' "$T/push.out"
check "... and agent/t2 was not created" bash -c "! git -C $GHR rev-parse -q --verify refs/heads/agent/t2"
check "audit: the refusal names the rule" bash -c "grep '\"reason\":\"push_rules\"' $PX_DIR/audit.jsonl | grep -q 'denied by policy: protected ref refs/heads/main'"
check "proxy log: the refusal names the rule" grep -q 'reason=push_rules detail="denied by policy: protected ref refs/heads/main' "$PX_DIR/proxy.log"
# A big push: over http.postBuffer git probes with "0000" first, then streams chunked.
head -c 8000000 /dev/urandom >"$W/big.bin"
(cd "$W" && git add big.bin && git commit -qm big)
check "an 8 MB push to an allowed ref (probe, then chunked)" git -C "$W" push -q origin HEAD:refs/heads/agent/big
check "the big push landed" test "$(git -C "$GHR" rev-parse refs/heads/agent/big)" = "$(git -C "$W" rev-parse HEAD)"
# Another repository: no credential, refused with a message git shows.
if git clone -q https://github.com/e2e-org/other.git "$T/w/o" >"$T/clone.out" 2>&1; then
	fail "clone of another repository refused"
else
	check "clone of another repository refused, git shows why" grep -q 'denied by policy: repository e2e-org/other is not allowed' "$T/clone.out"
fi
git -C "$W" remote add other https://github.com/e2e-org/other.git
n_other=$(rp other)
check "push to another repository refused" bash -c "! git -C $W push -q other HEAD:refs/heads/agent/x 2>$T/po.out && grep -q 'denied by policy: repository e2e-org/other' $T/po.out"
check "... nothing reached it" test "$(rp other)" = "$n_other"
check "case does not open another repository: E2E-ORG/OTHER refused" bash -c "! git ls-remote https://github.com/E2E-ORG/OTHER.git 2>/dev/null"
check "case-insensitive names: E2E-Org/Repo allowed" bash -c "git ls-remote https://github.com/E2E-Org/Repo.git >/dev/null 2>&1 || git ls-remote https://github.com/E2E-Org/Repo.git 2>&1 | grep -vq 'denied by policy'"

# Hostile receive-pack bodies (curl): refused with a reason, nothing upstream.
RPU=https://github.com/e2e-org/repo.git/git-receive-pack
rpc() { curl -s -o "$T/rpc.out" -w '%{http_code}' -H 'Content-Type: application/x-git-receive-pack-request' "$@" "$RPU"; }
n0=$(rp repo)
code=$(printf 'PACKgzipped' | gzip | rpc -H 'Content-Encoding: gzip' --data-binary @-)
check "gzip body on a gated receive-pack: 415 ($code)" test "$code" = 415
code=$(printf '00zzjunk' | rpc --data-binary @-)
check "malformed pkt-line: 400 ($code)" test "$code" = 400
check "... with the reason" grep -q 'push refused by the proxy: bad pkt-line length' "$T/rpc.out"
"$PY" -c 'import sys
for i in range(2000):
    s = ("1"*40 + " " + "2"*40 + " refs/heads/agent/b%d\n" % i).encode()
    sys.stdout.buffer.write(b"%04x" % (len(s) + 4) + s)' >"$T/huge.cmds"
code=$(rpc --data-binary @"$T/huge.cmds")
check "command list over 64 KiB: 400 ($code)" test "$code" = 400
check "... with the reason" grep -q 'longer than 64 KiB' "$T/rpc.out"
code=$(printf '0000' | rpc --data-binary @-)
check "a probe body (0000) passes to the upstream ($code)" test "$code" = 200
check "nothing but the probe reached the upstream" test "$(rp repo)" = "$((n0 + 1))"
# without report-status: a plain 403
"$PY" -c 'import sys; s = ("1"*40 + " " + "2"*40 + " refs/heads/main\0side-band-64k\n").encode(); sys.stdout.buffer.write(b"%04x" % (len(s) + 4) + s + b"0000")' >"$T/norep.cmds"
code=$(rpc --data-binary @"$T/norep.cmds")
check "no report-status capability: 403 text ($code)" bash -c "test $code = 403 && grep -q 'push denied by policy: protected ref refs/heads/main' $T/rpc.out"

# Expect: 100-continue on a gated push: the proxy answers 100 itself, then decides.
"$PY" -c 'import sys; s = ("1"*40 + " " + "2"*40 + " refs/heads/main\0report-status\n").encode(); sys.stdout.buffer.write(b"%04x" % (len(s) + 4) + s + b"0000PACK")' >"$T/exp.cmds"
code=$(rpc -H 'Expect: 100-continue' --data-binary @"$T/exp.cmds")
check "Expect: 100-continue on a gated push: answered, refused in report-status ($code)" bash -c "test $code = 200 && grep -q 'ng refs/heads/main denied by policy: protected ref' $T/rpc.out"
check "... nothing reached the upstream" test "$(rp repo)" = "$((n0 + 1))"
# A policy member of the wrong type fails closed.
check "register sb-bt: repositories is a string" px_admin '{"op":"register","id":"sb-bt","secret":"s","policy":{"github":{"repositories":"e2e-org/repo"}}}'
check "wrong-typed policy: 502, nothing forwarded" bash -c "test \$(curl -s -o /dev/null -w '%{http_code}' --proxy http://sb-bt:s@127.0.0.1:$PX_PORT https://api.github.com/repos/e2e-org/repo) = 502"
check "register sb-bt: push is a number" px_admin '{"op":"register","id":"sb-bt","secret":"s","policy":{"github":{"push":5}}}'
check "wrong-typed push rules: the push fails closed (502)" bash -c "test \$(curl -s -o /dev/null -w '%{http_code}' --proxy http://sb-bt:s@127.0.0.1:$PX_PORT -X POST --data-binary 0000 $RPU) = 502"

# Re-registration with a narrower policy: the next push sees it.
check "re-register sb-p: push only agent/only" px_admin "{\"op\":\"register\",\"id\":\"sb-p\",\"secret\":\"s-p\",\"policy\":{\"github\":{\"repositories\":[\"e2e-org/repo\"],\"push\":[\"refs/heads/agent/only\"]}}}"
push_refused "after narrowing, agent/t3 is outside push" 'agent/t3 \(denied by policy: ref outside push\)' origin HEAD:refs/heads/agent/t3
check "after narrowing, agent/only works" git -C "$W" push -q origin HEAD:refs/heads/agent/only

# GitLab: the same push rules and project scope.
check "re-register sb-p with the gitlab policy" px_admin "{\"op\":\"register\",\"id\":\"sb-p\",\"secret\":\"s-p\",\"policy\":{\"gitlab\":$GLPOL}}"
check "gitlab: clone of the allowed project" git clone -q https://gitlab.com/e2e-group/repo.git "$T/w/gl"
(cd "$T/w/gl" && echo gl >>README && git commit -qam gl)
check "gitlab: push to agent/** works" git -C "$T/w/gl" push -q origin HEAD:refs/heads/agent/gl
check "gitlab: push to main refused (remote rejected)" bash -c "! git -C $T/w/gl push origin HEAD:main >$T/glp.out 2>&1 && grep -q 'remote rejected. HEAD -> main (denied by policy: protected ref)' $T/glp.out"
check "gitlab: main unchanged upstream" test "$(git -C "$T/git/gitlab/e2e-group/repo.git" log -1 --format=%s main)" = seed
check "gitlab: clone of another project refused with the reason" bash -c "! git clone -q https://gitlab.com/e2e-group/other.git $T/w/glo >$T/glo.out 2>&1 && grep -q 'denied by policy: project e2e-group/other is not allowed' $T/glo.out"
# Without a policy nothing changes: a push to main works.
check "register sb-free without a policy" px_admin '{"op":"register","id":"sb-free","secret":"s-f"}'
px_client_env sb-free s-f
check "no policy: push to main works" git -C "$W" push -q origin HEAD:main
check "no policy: clone of another repository works" git clone -q https://github.com/e2e-org/other.git "$T/w/o2"
px_client_env sb-p s-p

# ---- 3. API scope: GitHub's and GitLab's error shapes, nothing upstream ----
check "re-register sb-p with both policies again" px_admin "{\"op\":\"register\",\"id\":\"sb-p\",\"secret\":\"s-p\",\"policy\":{\"github\":$GHPOL,\"gitlab\":$GLPOL}}"
px_client_env sb-p s-p
api() {	# api URL [curl args]: prints STATUS, body in $T/api.out
	local u=$1; shift
	curl -s -o "$T/api.out" -w '%{http_code}' "$@" "$u"
}
upstream_saw() { fx_api_q "r['path'].startswith('$1')"; }
check "API read of an allowed repository" test "$(api https://api.github.com/repos/e2e-org/repo)" = 200
check "API read of a glob-allowed repository (lib-*)" test "$(api https://api.github.com/repos/e2e-org/lib-core/issues)" = 200
check "API read of another repository: 403" test "$(api https://api.github.com/repos/e2e-org/other)" = 403
check "... a JSON error in GitHub's shape" bash -c "$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert \"denied by policy: repository e2e-org/other is not allowed\" in d[\"message\"] and d[\"documentation_url\"].startswith(\"https://docs.github.com\"), d' $T/api.out"
check "... Content-Type application/json" bash -c "curl -sI https://api.github.com/repos/e2e-org/other | grep -qi '^content-type: application/json'"
check "... never reached the upstream" test "$(upstream_saw /repos/e2e-org/other)" = 0
check "API write to another repository refused" test "$(api https://api.github.com/repos/e2e-org/other/pulls -X POST -d '{}')" = 403
check "owner case does not escape the scope" test "$(api https://api.github.com/repos/E2E-ORG/OTHER)" = 403
check "an encoded name does not escape it" test "$(api 'https://api.github.com/repos/e2e-org/repo%2F..%2Fother')" = 403
check "dot segments are refused" test "$(api https://api.github.com/repos/e2e-org/repo/../other --path-as-is)" = 403
check "encoded dot segments are refused" test "$(api 'https://api.github.com/repos/e2e-org/repo/%2e%2e/%2e%2e/e2e-org/other' --path-as-is)" = 403
# REST calls that move refs are held to the push rules too.
check "REST: PATCH git/refs/heads/main refused (protected)" bash -c "test \$(curl -s -o $T/api.out -w '%{http_code}' -X PATCH -d '{}' https://api.github.com/repos/e2e-org/repo/git/refs/heads/main) = 403 && grep -q 'denied by policy: protected ref' $T/api.out"
check "REST: DELETE git/refs/heads/agent/x refused (delete)" test "$(api https://api.github.com/repos/e2e-org/repo/git/refs/heads/agent/x -X DELETE)" = 403
check "REST: PATCH git/refs/heads/agent/x allowed (push)" test "$(api https://api.github.com/repos/e2e-org/repo/git/refs/heads/agent/x -X PATCH -d '{}')" = 200
check "REST: PATCH an encoded ref refused" test "$(api 'https://api.github.com/repos/e2e-org/repo/git/refs/heads%2Fmain' -X PATCH -d '{}')" = 403
check "REST: PUT contents refused under push rules" test "$(api https://api.github.com/repos/e2e-org/repo/contents/README -X PUT -d '{"branch":"main"}')" = 403
check "REST: merging a pull request refused under push rules" test "$(api https://api.github.com/repos/e2e-org/repo/pulls/7/merge -X PUT -d '{}')" = 403
check "REST: reading refs still works" test "$(api https://api.github.com/repos/e2e-org/repo/git/refs/heads/main)" = 200
check "api=repositories: /user passes (allow-list)" test "$(api https://api.github.com/user)" = 200
check "api=repositories: /rate_limit?x passes" bash -c "test \$(curl -s -o /dev/null -w '%{http_code}' 'https://api.github.com/rate_limit?x=1') != 403"
check "api=repositories: /orgs/e2e-org refused" test "$(api https://api.github.com/orgs/e2e-org)" = 403
check "api=repositories: /search/code refused" test "$(api 'https://api.github.com/search/code?q=x')" = 403
check "api=repositories: /graphql refused" test "$(api https://api.github.com/graphql -X POST -d '{"query":"{viewer{login}}"}')" = 403
check "codeload of the allowed repository" test "$(api https://codeload.github.com/e2e-org/repo/tar.gz/main)" = 200
check "codeload of another repository refused" test "$(api https://codeload.github.com/e2e-org/other/tar.gz/main)" = 403
check "raw content of another repository refused" test "$(api https://raw.githubusercontent.com/e2e-org/other/main/README)" = 403
check "uploads to another repository refused" test "$(api https://uploads.github.com/repos/e2e-org/other/releases/1/assets -X POST -d x)" = 403
# GitLab, api = projects
check "gitlab API: the allowed project by path" test "$(api https://gitlab.com/api/v4/projects/e2e-group%2Frepo)" = 200
check "gitlab API: another project refused" test "$(api https://gitlab.com/api/v4/projects/e2e-group%2Fother/merge_requests)" = 403
check "... in GitLab's shape" bash -c "$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d[\"message\"].startswith(\"403 Forbidden - denied by policy: project e2e-group/other\"), d' $T/api.out"
check "gitlab API: a numeric project id refused" test "$(api https://gitlab.com/api/v4/projects/42)" = 403
check "gitlab API: lower-case %2f works too" test "$(api https://gitlab.com/api/v4/projects/e2e-group%2frepo/issues)" = 200
check "gitlab REST: creating a commit refused under push rules" test "$(api https://gitlab.com/api/v4/projects/e2e-group%2Frepo/repository/commits -X POST -d '{"branch":"main"}')" = 403
check "gitlab REST: deleting branch main refused (protected)" bash -c "test \$(curl -s -o $T/api.out -w '%{http_code}' -X DELETE https://gitlab.com/api/v4/projects/e2e-group%2Frepo/repository/branches/main) = 403 && grep -q 'protected ref' $T/api.out"
check "gitlab REST: merging an MR refused under push rules" test "$(api https://gitlab.com/api/v4/projects/e2e-group%2Frepo/merge_requests/3/merge -X PUT)" = 403
check "gitlab REST: reading branches still works" test "$(api https://gitlab.com/api/v4/projects/e2e-group%2Frepo/repository/branches)" = 200
check "gitlab API: /api/v4/user passes" test "$(api https://gitlab.com/api/v4/user)" = 200
check "gitlab API: /api/v4/groups refused (api=projects)" test "$(api https://gitlab.com/api/v4/groups)" = 403
check "gitlab: nothing refused reached the upstream" test "$(fx_api_q "'other' in r['path'] and r['role']=='gitlab-api' or r['path']=='/api/v4/projects/42' or r['path']=='/api/v4/groups'")" = 0
# api absent = "all": only the repository scope applies
check "re-register sb-p: repositories only" px_admin '{"op":"register","id":"sb-p","secret":"s-p","policy":{"github":{"repositories":["e2e-org/repo"]},"gitlab":{"projects":["e2e-group/*"]}}}'
check "api absent: /orgs/e2e-org reaches the upstream" test "$(api https://api.github.com/orgs/e2e-org)" = 404
check "api absent: /repos/e2e-org/other still refused" test "$(api https://api.github.com/repos/e2e-org/other)" = 403
check "gitlab projects glob: e2e-group/* allows e2e-group/other" test "$(api https://gitlab.com/api/v4/projects/e2e-group%2Fother)" = 200
check "gitlab projects glob: * does not cross /" test "$(api https://gitlab.com/api/v4/projects/e2e-group%2Fsub%2Fp)" = 403

# ---- 4. GraphQL mutations ----
gql() { api https://api.github.com/graphql -X POST -H 'Content-Type: application/json' --data-binary "$1"; }
check "GraphQL query passes" test "$(gql '{"query":"query { viewer { login } }"}')" = 200
check "GraphQL shorthand query passes" test "$(gql '{"query":"{ viewer { login } }","variables":{}}')" = 200
check "GraphQL mutation refused (403)" test "$(gql '{"query":"mutation { addStar(input:{starrableId:\"x\"}) { clientMutationId } }"}')" = 403
check "... with GitHub's error shape" bash -c "grep -q '\"message\":\"denied by policy: GraphQL mutations' $T/api.out && grep -q documentation_url $T/api.out"
check "named mutation after a query refused" test "$(gql '{"query":"query A { viewer { login } } mutation B { x }"}')" = 403
check "mutation inside a batch refused" test "$(gql '[{"query":"{ a }"},{"query":"mutation { b }"}]')" = 403
check "mutation after comments and commas refused" test "$(gql '{"query":"# hi\n,, mutation{b}"}')" = 403
check "'mutation' in a string or comment or a field passes" test "$(gql '{"query":"# mutation\nquery { search(q: \"mutation {\") { mutation } }"}')" = 200
check "'mutation' as a variable name passes" test "$(gql '{"query":"query($mutation: Int) { a(x: $mutation) }"}')" = 200
check "non-JSON GraphQL body refused (400)" test "$(gql 'mutation { x }')" = 400
check "refused GraphQL never reached the upstream" test "$(fx_api_q "r['path']=='/graphql' and 'mutation {' in r['body'] and 'search' not in r['body']")" = 0
head -c 300000 /dev/zero | tr '\0' ' ' >"$T/big.gql"
check "GraphQL body over 256 KiB refused (413)" test "$(api https://api.github.com/graphql -X POST --data-binary @"$T/big.gql")" = 413
check "graphql_mutations true: mutations pass" px_admin '{"op":"register","id":"sb-p","secret":"s-p","policy":{"github":{"graphql_mutations":true}}}'
check "... the mutation reached the upstream" test "$(gql '{"query":"mutation { allowed }"}')" = 200
check "no policy: mutations pass" bash -c "HTTPS_PROXY=http://sb-free:s-f@127.0.0.1:$PX_PORT curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary '{\"query\":\"mutation { free }\"}' https://api.github.com/graphql | grep -qx 200"

check "proxy still alive" px_alive
kill "$PX_PID"

# ---- 5. GitHub App tokens: down-scoped per sandbox, revoked at deregister ----
PX_ADDON_CONFIG="  github_app_id: \"$APP_ID\"
  github_app_installation_id: \"$APP_INST\"
  github_app_private_key: $PKI/app.key" px_config px-app && px_start px-app || { fail "px-app start"; exit 1; }
scope_of() {	# scope_of N: the Nth mint's requested scope, as compact JSON
	"$PY" -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2])-1]); print(json.dumps({"repositories": d["repositories"], "permissions": d["permissions"]}, sort_keys=True, separators=(",", ":")))' "$T/minted.scopes" "$1"
}
# scopes_since N: the distinct scopes of the mints after the Nth (two workers may race to mint)
scopes_since() {
	local i n; n=$(cat "$T/minted")
	for i in $(seq $(($1 + 1)) "$n"); do scope_of "$i"; done | sort -u | tr '\n' ' '
}
tok_of() { sed -n "${1}p" "$T/minted.tokens"; }
m0=$(cat "$T/minted" 2>/dev/null || echo 0)
check "register sb-a: one repository, two permissions" px_admin '{"op":"register","id":"sb-a","secret":"s-a","policy":{"github":{"repositories":["e2e-org/repo"],"permissions":{"contents":"write","pull_requests":"read"},"push":["refs/heads/agent/**"]}}}'
px_client_env sb-a s-a
check "sb-a: clone with a down-scoped App token" git clone -q https://github.com/e2e-org/repo.git "$T/w/a"
check "sb-a: minted" test "$(cat "$T/minted")" -gt "$m0"
check "the token endpoint was asked for repositories [repo] and exactly those permissions" \
	test "$(scopes_since "$m0")" = '{"permissions":{"contents":"write","pull_requests":"read"},"repositories":["repo"]} '
ma=$(cat "$T/minted")
TOK_A=$(tok_of "$ma")
check "sb-a's git requests carried its token" test "$(fx_api_q "r['role']=='git-auth-github' and h.get('authorization')==['Basic $(b64 "x-access-token:$TOK_A")']")" -ge 1
(cd "$T/w/a" && echo a >>README && git commit -qam a)
check "sb-a: push to agent/** with its token" git -C "$T/w/a" push -q origin HEAD:refs/heads/agent/app
ma=$(cat "$T/minted")
check "sb-a: API with its token, cached (no new mint over 4 requests)" bash -c "for i in 1 2 3 4; do curl -sf https://api.github.com/repos/e2e-org/repo >/dev/null || exit 1; done; test \$(cat $T/minted) = $ma"
n1=$ma
check "register sb-g: globbed repositories" px_admin '{"op":"register","id":"sb-g","secret":"s-g","policy":{"github":{"repositories":["e2e-org/*"]}}}'
check "sb-g: API through its own token" bash -c "curl -sf --proxy http://sb-g:s-g@127.0.0.1:$PX_PORT https://api.github.com/repos/e2e-org/repo >/dev/null"
# globs: a metadata-only listing token, then sb-g's own for exactly the matching repositories
# mints_since N PY-EXPR: PY-EXPR holds for the list m of the scopes minted after the Nth
mints_since() {
	"$PY" -c 'import json,sys
m=[json.loads(l) for l in open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]]
sys.exit(0 if eval(sys.argv[3]) else 1)' "$T/minted.scopes" "$1" "$2"
}
check "sb-g: a listing token (metadata read), then its own for the 125 e2e-org repositories the glob matches, no permissions" \
	mints_since "$n1" 'len(m) == 2 and m[0]["permissions"] == {"metadata": "read"} and m[0]["repositories"] is None and m[1]["permissions"] is None and len(m[1]["repositories"]) == 125 and {"repo", "other", "lib-core", "zz-late"} <= set(m[1]["repositories"])'
TOK_G=$(tok_of "$(cat "$T/minted")")
n1=$(cat "$T/minted")
check "register sb-m: two owners" px_admin '{"op":"register","id":"sb-m","secret":"s-m","policy":{"github":{"repositories":["e2e-org/repo","acme/app"],"permissions":{"contents":"read"}}}}'
check "sb-m: API" bash -c "curl -sf --proxy http://sb-m:s-m@127.0.0.1:$PX_PORT https://api.github.com/repos/e2e-org/repo >/dev/null"
check "sb-m: two owners: the token names only what the installation (e2e-org) holds of them" test "$(scope_of "$(cat "$T/minted")")" = '{"permissions":{"contents":"read"},"repositories":["repo"]}'
check "register sb-n without a policy" px_admin '{"op":"register","id":"sb-n","secret":"s-n"}'
check "sb-n: API with the shared token" bash -c "curl -sf --proxy http://sb-n:s-n@127.0.0.1:$PX_PORT https://api.github.com/user >/dev/null"
n1=$(cat "$T/minted")
check "a second sandbox with sb-a's exact policy gets its own token" bash -c "$PY $FX/padmin.py $PX_ADMIN '{\"op\":\"register\",\"id\":\"sb-a2\",\"secret\":\"s\",\"policy\":{\"github\":{\"repositories\":[\"e2e-org/repo\"],\"permissions\":{\"contents\":\"write\",\"pull_requests\":\"read\"},\"push\":[\"refs/heads/agent/**\"]}}}' >/dev/null && curl -sf --proxy http://sb-a2:s@127.0.0.1:$PX_PORT https://api.github.com/user >/dev/null && test \$(cat $T/minted) -gt $n1"
# The token request's body is part of the cache key: it must read the same in
# every worker's Lua state, whose tables iterate in different orders; else each
# worker mints its own token for one scope.
n1=$(cat "$T/minted")
check "register sb-p: eight permissions" px_admin '{"op":"register","id":"sb-p","secret":"s-p","policy":{"github":{"repositories":["e2e-org/repo"],"permissions":{"contents":"read","issues":"write","pull_requests":"read","metadata":"read","actions":"read","checks":"write","statuses":"read","deployments":"read"}}}}'
# (the proxy hands a connection to the least loaded worker: one request alone
# lands on the first, then an idle connection held on it sends the rest to the second)
check "sb-p: API on the first worker, then 4 on the second" bash -c "curl -sf --proxy http://sb-p:s-p@127.0.0.1:$PX_PORT https://api.github.com/repos/e2e-org/repo >/dev/null && exec 3<>/dev/tcp/127.0.0.1/$PX_PORT && sleep 0.2 && for i in 1 2 3 4; do curl -sf --proxy http://sb-p:s-p@127.0.0.1:$PX_PORT https://api.github.com/repos/e2e-org/repo >/dev/null || exit 1; done"
check "... minted once: one scope, one token, whichever worker asks" test "$(cat "$T/minted")" = $((n1 + 1))
check "... and its body names the permissions in name order" bash -c "tail -n 1 $T/minted.scopes | grep -q '\"actions\": \"read\", \"checks\": \"write\", \"contents\": \"read\", \"deployments\": \"read\", \"issues\": \"write\", \"metadata\": \"read\", \"pull_requests\": \"read\", \"statuses\": \"read\"'"
# Deregistering sb-a revokes its token (asynchronously) and nobody else's.
check "before: the upstream takes sb-a's token" test "$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' --cacert "$PKI/ca.pem" --resolve "api.github.com:$API_PORT:127.0.0.1" -H "Authorization: Bearer $TOK_A" "https://api.github.com:$API_PORT/user")" = 200
t0=$(date +%s%N)
check "deregister sb-a" px_admin '{"op":"deregister","id":"sb-a"}'
check "the deregister reply did not wait for the revocation (< 1 s)" test $(( ($(date +%s%N) - t0) / 1000000 )) -lt 1000
check "sb-a's token revoked at DELETE /installation/token" wait_for 20 grep -qxF -- "$TOK_A" "$T/minted.revoked"
check "... with that token as the Bearer, answered 204" test "$(fx_api_q "r['role']=='app-revoke' and r['auth_ok'] and r['revoked']=='$TOK_A'")" = 1
check "... after which the upstream refuses it" test "$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' --cacert "$PKI/ca.pem" --resolve "api.github.com:$API_PORT:127.0.0.1" -H "Authorization: Bearer $TOK_A" "https://api.github.com:$API_PORT/user")" = 401
check "proxy log: revoked" grep -q "github app token for sandbox=sb-a revoked" "$PX_DIR/proxy.log"
check "deregister sb-n (no policy)" px_admin '{"op":"deregister","id":"sb-n"}'
sleep 1
# the listing tokens of globbed mints are revoked as soon as the listing ends
"$PY" -c 'import json,sys
s=open(sys.argv[1]).read().splitlines(); t=open(sys.argv[2]).read().splitlines()
for i, l in enumerate(s):
    if json.loads(l)["permissions"] == {"metadata": "read"}: print(t[i])' "$T/minted.scopes" "$T/minted.tokens" >"$T/listing.tokens"
check "only sb-a's tokens and the listing tokens were revoked (not sb-g's, sb-a2's or the shared one)" bash -c "test \$(grep -cvxF -f <(sed -n '$((m0 + 1)),${ma}p' $T/minted.tokens; cat $T/listing.tokens) $T/minted.revoked) = 0"
check "the shared token still works" bash -c "curl -sf --proxy http://sb-g:s-g@127.0.0.1:$PX_PORT https://api.github.com/repos/e2e-org/repo >/dev/null"
check "deregister sb-g revokes its token" bash -c "$PY $FX/padmin.py $PX_ADMIN '{\"op\":\"deregister\",\"id\":\"sb-g\"}' >/dev/null"
check "... seen at the endpoint" wait_for 20 grep -qxF -- "$TOK_G" "$T/minted.revoked"
# A failing revocation is retried (1, 2, 4 s apart) and, failing 4 times, given up and logged.
check "register sb-r" px_admin '{"op":"register","id":"sb-r","secret":"s-r","policy":{"github":{"repositories":["e2e-org/repo"]}}}'
check "sb-r: API with its own token" bash -c "curl -sf --proxy http://sb-r:s-r@127.0.0.1:$PX_PORT https://api.github.com/repos/e2e-org/repo >/dev/null"
TOK_R=$(tail -1 "$T/minted.tokens")
curl -s --noproxy "*" -X POST "http://127.0.0.1:$API_PLAIN/_control/revoke-fail?n=2" >/dev/null
check "deregister sb-r while the endpoint fails twice" px_admin '{"op":"deregister","id":"sb-r"}'
check "... revoked at the third attempt" wait_for 20 grep -qxF -- "$TOK_R" "$T/minted.revoked"
check "... the failed attempts were logged as retried" test "$(grep -c 'github app token for sandbox=sb-r: revocation attempt [12] failed (HTTP 500), retrying' "$PX_DIR/proxy.log")" = 2
check "register sb-r2" px_admin '{"op":"register","id":"sb-r2","secret":"s-r","policy":{"github":{"repositories":["e2e-org/repo"],"permissions":{"issues":"read"}}}}'
check "sb-r2: API with its own token" bash -c "curl -sf --proxy http://sb-r2:s-r@127.0.0.1:$PX_PORT https://api.github.com/repos/e2e-org/repo >/dev/null"
curl -s --noproxy "*" -X POST "http://127.0.0.1:$API_PLAIN/_control/revoke-fail?n=10" >/dev/null
check "deregister sb-r2 while the endpoint keeps failing" px_admin '{"op":"deregister","id":"sb-r2"}'
check "... given up after 4 attempts, logged" wait_for 20 grep -q 'github app token for sandbox=sb-r2: revocation failed after 4 attempts' "$PX_DIR/proxy.log"
check "... counted as failed in metrics" test "$(px_admin '{"op":"metrics"}' | grep -o 'egress_proxy_token_revocations_total{result=\\"failed\\"} [0-9]*' | awk '{print $2}')" = 1
curl -s --noproxy "*" -X POST "http://127.0.0.1:$API_PLAIN/_control/revoke-fail?n=0" >/dev/null
check "metrics count the revocations" test "$(px_admin '{"op":"metrics"}' | grep -o 'egress_proxy_token_revocations_total{result=\\"ok\\"} [0-9]*' | awk '{print $2}')" -ge 3
# A full token cache (GH_CACHE_MAX, 256) never forgets a sandbox's token: one
# pushed out is revoked at once, and the rest at their deregister.
n1=$(cat "$T/minted")
nr0=$(wc -l <"$T/minted.revoked")
seq 1 260 | sed 's|.*|{"op":"register","id":"ev-&","secret":"s","policy":{"github":{"repositories":["e2e-org/repo"]}}}|' >"$T/ev.reg"
check "register 260 sandboxes with policies" bash -c "\"$PY\" \"$FX/padmin.py\" \"$PX_ADMIN\" - <$T/ev.reg >/dev/null"
for i in $(seq 1 260); do	# one transfer each, its own proxy credentials
	[ "$i" -gt 1 ] && echo next
	printf 'url = "https://api.github.com/repos/e2e-org/repo"\nproxy = "http://ev-%d:s@127.0.0.1:%s"\noutput = "/dev/null"\nfail\n' "$i" "$PX_PORT"
done >"$T/ev.curl"
check "260 sandboxes: API with a token each (curl --parallel, 8 at once)" curl -s --no-progress-meter --parallel --parallel-max 8 -K "$T/ev.curl"
check "... 260 tokens minted" test $(($(cat "$T/minted") - n1)) -ge 260
check "... those pushed out of the full cache were revoked at once, without a deregister" \
	wait_for 20 bash -c "test \$((\$(wc -l <$T/minted.revoked) - $nr0)) -ge 4"
"$PY" -c 'import json,sys
s=open(sys.argv[1]).read().splitlines(); t=open(sys.argv[2]).read().splitlines()
for i, l in enumerate(s):
    d = json.loads(l)
    if d["repositories"] is None and d["permissions"] is None: print(t[i])' "$T/minted.scopes" "$T/minted.tokens" >"$T/shared.tokens"
check "... none of them a shared (no-policy) token" bash -c "test -s $T/shared.tokens && ! tail -n +$((nr0 + 1)) $T/minted.revoked | grep -qxF -f $T/shared.tokens"
sed 's|"op":"register","id":"\(ev-[0-9]*\)".*|"op":"deregister","id":"\1"}|' "$T/ev.reg" >"$T/ev.dereg"
check "deregister the 260" bash -c "\"$PY\" \"$FX/padmin.py\" \"$PX_ADMIN\" - <$T/ev.dereg >/dev/null"
check "... every one of their 260 tokens revoked (none forgotten by the cache)" \
	wait_for 60 bash -c "test \$(tail -n +$((n1 + 1)) $T/minted.tokens | grep -cvxF -f $T/minted.revoked) = 0"
check "minted tokens never in the proxy's logs" bash -c "! grep -qF -- '$TOK_A' $PX_DIR/proxy.log $PX_DIR/stderr $PX_DIR/audit.jsonl"
check "proxy still alive" px_alive
check "no sanitizer report from the proxy" px_san_clean
