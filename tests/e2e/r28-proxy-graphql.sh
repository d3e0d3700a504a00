# r28-proxy-graphql: issue 28, through the real proxy against the fake
# GitHub/GitLab (nginx + fakeapi.py), asserting on what the upstream got:
#   1. GraphQL judged as the server parses it (the shipped github.lua's
#      req:refuse_graphql_mutations): duplicate keys, a case-variant member,
#      URL parameters, a persisted query whose hash is not its query's, a
#      NUL in the query, escapes spelling "mutation", operationName;
#   2. req:graphql_rules (a fixture addon): an allow-list of mutations, as
#      under push rules, on GitHub's /graphql and GitLab's /api/graphql:
#      ref-moving mutations refused through aliases, fragments, inline
#      fragments and @skip, in each forge's error shape;
#   3. GitHub App tokens for globbed repositories: minted for exactly the
#      installation's matching repositories (listed page by page with a
#      metadata-only token, revoked after), refused when nothing or too
#      much matches; the upstream refuses the token elsewhere.
# Part 3 runs github.lua with the two-line token_scope change of
# docs/addons.md ("GitHub App tokens"), made on a copy unless the shipped
# addon already has it.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"

fx_all || { fail "fixtures start"; exit 1; }
fx_client_home
fx_bare "$T/git/github/e2e-org/lib-core.git"

GHL=$TOP/addons/github.lua
if ! grep -q 'the proxy resolves them' "$GHL"; then
	GHL=$T/github-globs.lua
	"$PY" - "$TOP/addons/github.lua" "$GHL" <<'PY' || { fail "github.lua: token_scope not found to change"; exit 1; }
import sys
s = open(sys.argv[1]).read()
old = "        repos = nil\n        break"
assert s.count(old) == 1
open(sys.argv[2], "w").write(s.replace(old, "        repos = { table.unpack(list) }  -- globs or several owners: the proxy resolves them\n        break"))
PY
fi
PX_ADDONS="[$FX/addons/graphql_rules.lua, $GHL, $TOP/addons/gitlab.lua]" \
PX_ADDON_CONFIG="  github_app_id: \"$APP_ID\"
  github_app_installation_id: \"$APP_INST\"
  github_app_private_key: $PKI/app.key" px_config && px_start || { fail "proxy start"; exit 1; }

GH=https://api.github.com/graphql
GL=https://gitlab.com/api/graphql
# gq SANDBOX:SECRET URL BODY [curl args]: POSTs BODY as JSON, prints the status; the answer in $T/gq.out
gq() {
	local who=$1 u=$2 b=$3; shift 3
	curl -s -o "$T/gq.out" -w '%{http_code}' --proxy "http://$who@127.0.0.1:$PX_PORT" \
		--cacert "$PX_CA" -H 'Content-Type: application/json' --data-binary "$b" "$@" "$u"
}
says() { grep -qF -- "$1" "$T/gq.out"; }
upstream_got() { fx_api_q "r['path'].endswith('graphql') and '$1' in r['body']"; }

# ---- 1. the shipped addon's mutation check, as the server parses the body ----
check "register sb-q (a github policy: mutations refused)" px_admin '{"op":"register","id":"sb-q","secret":"s","policy":{"github":{}}}'
Q=sb-q:s
check "a query passes" test "$(gq $Q $GH '{"query":"query { viewer { login okQuery1 } }","variables":{},"operationName":null}')" = 200
check "... and reached the upstream" test "$(upstream_got okQuery1)" = 1
code=$(gq $Q $GH '{"query":"{ viewer { login } }","query":"mutation { addStar(input:{starrableId:\"hostile1\"}) { clientMutationId } }"}')
check "a duplicated \"query\" key (a query first, a mutation last): 400 ($code)" test "$code" = 400
check "... saying why, in GitHub's shape" bash -c "grep -qF 'key \\\"query\\\" twice in one object' $T/gq.out && grep -q documentation_url $T/gq.out"
code=$(gq $Q $GH '{"query":"{ viewer { login } }","Query":"mutation { addStar(input:{starrableId:\"hostile2\"}) { x } }"}')
check "a \"Query\" member beside \"query\": 400 ($code)" test "$code" = 400
code=$(gq $Q "$GH?query=mutation%7BaddStar%28input%3A%7B%7D%29%7Bx%7D%7D" '{"query":"{ viewer { login } }","variables":{"m":"hostile3"}}')
check "a query in the URL (Rails takes it over the body's): 400 ($code)" test "$code" = 400
check "... saying why" says "parameters in the URL"
code=$(gq $Q $GH '{"query":"{ viewer { login } }","variables":{"m":"hostile4"},"extensions":{"persistedQuery":{"version":1,"sha256Hash":"1120365fae92499c3380a103a07c2101518ed4cc60bbdbe28ad6f4ff174a32be"}}}')
check "a persisted query whose hash is not its query's: 400 ($code)" test "$code" = 400
code=$(gq $Q $GH '{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"1120365fae92499c3380a103a07c2101518ed4cc60bbdbe28ad6f4ff174a32be"}},"variables":{"m":"hostile5"}}')
check "a persisted query without its query: 400 ($code)" test "$code" = 400
code=$(gq $Q $GH '{"query":"{ viewer { login } }\u0000mutation { addStar(input:{starrableId:\"hostile6\"}) { x } }"}')
check "a NUL escape before a mutation: 400 ($code)" test "$code" = 400
code=$(gq $Q $GH '[{"query":"{ a }"},{"query":"{ a }","variables":{"m":"hostile7"},"variables":{}}]')
check "a duplicated key in a batch's second request: 400 ($code)" test "$code" = 400
code=$(gq $Q $GH '{"query":"\u006dutation { \u0061ddStar(input:{starrableId:\"hostile8\"}) { x } }"}')
check "escapes spelling \"mutation addStar\": 403 ($code)" test "$code" = 403
check "... naming the mutation" says 'denied by policy: GraphQL mutations are not allowed for this session (mutation addStar)'
code=$(gq $Q $GH '{"query":"query A { viewer { login } } mutation B { removeStar(input:{starrableId:\"hostile9\"}) { x } }","operationName":"A"}')
check "operationName naming the query beside a mutation: 403 ($code)" bash -c "test $code = 403 && grep -q 'mutation removeStar' $T/gq.out"
check "audit: the refusal names the field" bash -c "grep '\"reason\":\"graphql\"' $PX_DIR/audit.jsonl | grep -q 'mutation removeStar'"
check "none of the refused requests reached the upstream" test "$(upstream_got hostile)" = 0

# ---- 2. req:graphql_rules: an allow-list, GitHub and GitLab ----
check "register sb-gh: mutations allowed, only addComment and createIssue" px_admin '{"op":"register","id":"sb-gh","secret":"s","policy":{"gql":{"mutations":true,"allow":["addComment","createIssue"]}}}'
A=sb-gh:s
check "an allowed mutation (addComment) passes" test "$(gq $A $GH '{"query":"mutation { addComment(input:{subjectId:\"okAllowed1\",body:\"hi\"}) { clientMutationId } }"}')" = 200
check "... reached the upstream, the gate armed" test "$(fx_api_q "'okAllowed1' in r['body'] and h.get('x-test-armed')==['true']")" = 1
check "createCommitOnBranch: 403" test "$(gq $A $GH '{"query":"mutation { createCommitOnBranch(input:{branch:{branchName:\"main\"},message:{headline:\"hostileB1\"},expectedHeadOid:\"0\"}) { commit { oid } } }"}')" = 403
check "... in GitHub's shape, naming the field" bash -c "$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d[\"message\"]==\"denied by policy: GraphQL mutation createCommitOnBranch is not allowed for this session\" and d[\"documentation_url\"].startswith(\"https://docs.github.com\"), d' $T/gq.out"
code=$(gq $A $GH '{"query":"mutation { addComment: updateRef(input:{refId:\"hostileB2\",oid:\"0\"}) { clientMutationId } }"}')
check "updateRef behind an allowed alias (addComment: updateRef): 403 ($code)" bash -c "test $code = 403 && grep -q 'mutation updateRef' $T/gq.out"
code=$(gq $A $GH '{"query":"mutation { addComment(input:{}) { x } ...F } fragment F on Mutation { mergePullRequest(input:{pullRequestId:\"hostileB3\"}) { clientMutationId } }"}')
check "mergePullRequest in a fragment spread: 403 ($code)" bash -c "test $code = 403 && grep -q 'mutation mergePullRequest' $T/gq.out"
code=$(gq $A $GH '{"query":"mutation { ... on Mutation @skip(if: true) { deleteRef(input:{refId:\"hostileB4\"}) { clientMutationId } } }"}')
check "deleteRef in an inline fragment under @skip: 403 ($code)" bash -c "test $code = 403 && grep -q 'mutation deleteRef' $T/gq.out"
check "a query passes the allow-list's gate" test "$(gq $A $GH '{"query":"{ repository(owner:\"e2e-org\",name:\"repo\") { okAllowed2: id } }"}')" = 200
check "register sb-gl: GitLab, only createNote" px_admin '{"op":"register","id":"sb-gl","secret":"s","policy":{"gql":{"mutations":true,"allow":["createNote"],"forge":"gitlab"}}}'
B=sb-gl:s
check "gitlab: createNote passes" test "$(gq $B $GL '{"query":"mutation { createNote(input:{noteableId:\"gid://gitlab/Issue/1\",body:\"okAllowed3\"}) { errors } }"}')" = 200
check "... reached GitLab's /api/graphql with the GitLab token" test "$(fx_api_q "r['role']=='gitlab-graphql' and r['auth_ok'] and 'okAllowed3' in r['body']")" = 1
check "gitlab: commitCreate: 403" test "$(gq $B $GL '{"query":"mutation { commitCreate(input:{projectPath:\"e2e-group/repo\",branch:\"main\",commitMessage:\"hostileB5\",actions:[]}) { errors } }"}')" = 403
check "... in GitLab's shape, naming the field" bash -c "$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d==({\"message\":\"403 Forbidden - denied by policy: GraphQL mutation commitCreate is not allowed for this session\"}), d' $T/gq.out"
code=$(gq $B $GL '{"query":"mutation { createNote(input:{}) { errors } mergeRequestAccept(input:{projectPath:\"hostileB6\",iid:\"1\"}) { errors } }"}')
check "gitlab: mergeRequestAccept after an allowed field: 403 ($code)" bash -c "test $code = 403 && grep -q 'mutation mergeRequestAccept' $T/gq.out"
code=$(gq $B $GL '{"query":"{ currentUser { name } }","query":"mutation { commitCreate(input:{commitMessage:\"hostileB7\"}) { errors } }"}')
check "gitlab: a duplicated key: 400 in GitLab's shape ($code)" bash -c "test $code = 400 && grep -qF '\"message\":\"400 Bad request - GraphQL request refused by the proxy: JSON: key' $T/gq.out"
check "register sb-gn: GitLab, no mutation" px_admin '{"op":"register","id":"sb-gn","secret":"s","policy":{"gql":{"mutations":false,"forge":"gitlab"}}}'
check "gitlab, mutations = false: createNote refused (403)" test "$(gq sb-gn:s $GL '{"query":"mutation { createNote(input:{body:\"hostileB8\"}) { errors } }"}')" = 403
check "gitlab, mutations = false: a query passes" test "$(gq sb-gn:s $GL '{"query":"{ currentUser { okAllowed4: name } }"}')" = 200
check "register sb-ga: every mutation allowed (no list)" px_admin '{"op":"register","id":"sb-ga","secret":"s","policy":{"gql":{"mutations":true}}}'
code=$(gq sb-ga:s $GH '{"query":"mutation { updateRef(input:{refId:\"okAllowed5\"}) { x } }"}')
check "mutations = true without a list: nothing armed, the mutation passes ($code)" test "$code" = 200
check "... and reached the upstream" test "$(fx_api_q "'okAllowed5' in r['body'] and h.get('x-test-armed')==['false']")" = 1
check "register sb-gx: an allow-list entry that is not a GraphQL name" px_admin '{"op":"register","id":"sb-gx","secret":"s","policy":{"gql":{"mutations":true,"allow":["add-Comment"]}}}'
check "... fails closed (502), the log says why" bash -c "test \$(curl -s -o /dev/null -w '%{http_code}' --proxy http://sb-gx:s@127.0.0.1:$PX_PORT --cacert $PX_CA --data-binary '{\"query\":\"{ a }\"}' $GH) = 502 && grep -q 'graphql_rules: allow\[1\] must be a GraphQL name' $PX_DIR/proxy.log"
check "register sb-gy: an allow-list with mutations = false" px_admin '{"op":"register","id":"sb-gy","secret":"s","policy":{"gql":{"mutations":false,"allow":["addComment"]}}}'
check "... fails closed (502), the log says why" bash -c "test \$(curl -s -o /dev/null -w '%{http_code}' --proxy http://sb-gy:s@127.0.0.1:$PX_PORT --cacert $PX_CA --data-binary '{\"query\":\"{ a }\"}' $GH) = 502 && grep -q 'graphql_rules: allow needs mutations = true' $PX_DIR/proxy.log"
check "none of the refused requests reached the upstream" test "$(upstream_got hostileB)" = 0

# ---- 3. App tokens for globbed repositories ----
mints() { cat "$T/minted" 2>/dev/null || echo 0; }
scope_n() { sed -n "${1}p" "$T/minted.scopes"; }
lists() { fx_api_q "r['role']=='app-list'"; }
m0=$(mints)
l0=$(lists)
check "register sb-glob: repositories e2e-org/lib-*, E2E-ORG/ZZ-*, acme/*" px_admin '{"op":"register","id":"sb-glob","secret":"s","policy":{"github":{"repositories":["e2e-org/lib-*","E2E-ORG/ZZ-*","acme/*"],"permissions":{"contents":"read"}}}}'
code=$(curl -s -o "$T/gq.out" -w '%{http_code}' --proxy "http://sb-glob:s@127.0.0.1:$PX_PORT" --cacert "$PX_CA" https://api.github.com/repos/e2e-org/lib-core)
check "sb-glob: the API of a matching repository ($code)" test "$code" = 200
check "two mints: the listing token, then sb-glob's" test "$(mints)" = $((m0 + 2))
check "the listing token was asked for metadata:read only, no repositories" bash -c "$PY -c 'import json,sys; d=json.loads(sys.argv[1]); assert d[\"permissions\"]=={\"metadata\":\"read\"} and d[\"repositories\"] is None, d' '$(scope_n $((m0 + 1)))'"
check "the token endpoint was asked for exactly lib-core, lib-util, zz-late (contents:read)" bash -c "$PY -c 'import json,sys; d=json.loads(sys.argv[1]); assert sorted(d[\"repositories\"])==[\"lib-core\",\"lib-util\",\"zz-late\"] and d[\"permissions\"]=={\"contents\":\"read\"}, d' '$(scope_n $((m0 + 2)))'"
LT=$(sed -n "$((m0 + 1))p" "$T/minted.tokens")
TG=$(sed -n "$((m0 + 2))p" "$T/minted.tokens")
check "the installation was listed in two pages of 100 (zz-late is on the second), with the listing token" test "$(fx_api_q "r['role']=='app-list' and r['auth_ok'] and r['per_page']==100 and h.get('authorization')==['Bearer $LT']")" = 2
check "the listing token was revoked" wait_for 10 grep -qxF -- "$LT" "$T/minted.revoked"
check "proxy log: listing token revoked" wait_for 5 grep -q 'github app listing token for sandbox=sb-glob revoked' "$PX_DIR/proxy.log"
api_tok() {	# api_tok TOKEN PATH: the fake API's status for PATH with TOKEN, straight (no proxy)
	curl -s -o /dev/null -w '%{http_code}' --noproxy '*' --cacert "$PKI/ca.pem" \
		--resolve "api.github.com:$API_PORT:127.0.0.1" -H "Authorization: Bearer $1" "https://api.github.com:$API_PORT$2"
}
check "with sb-glob's token the upstream serves e2e-org/zz-late" test "$(api_tok "$TG" /repos/e2e-org/zz-late)" = 200
check "... and refuses e2e-org/other, outside the globs (404)" test "$(api_tok "$TG" /repos/e2e-org/other)" = 404
check "... and e2e-org/repo (404)" test "$(api_tok "$TG" /repos/e2e-org/repo)" = 404
check "sb-glob: git clone of e2e-org/lib-core with that token" bash -c "HTTPS_PROXY=http://sb-glob:s@127.0.0.1:$PX_PORT GIT_SSL_CAINFO=$PX_CA git clone -q https://github.com/e2e-org/lib-core.git $T/w/lc"
check "... which git carried" test "$(fx_api_q "r['role']=='git-auth-github' and r['auth_ok'] and h.get('authorization')==['Basic $(b64 "x-access-token:$TG")']")" -ge 1
check "sb-glob: cached, no new mint or listing for more requests" bash -c "curl -sf --proxy http://sb-glob:s@127.0.0.1:$PX_PORT --cacert $PX_CA https://api.github.com/repos/e2e-org/lib-util >/dev/null && test \$(cat $T/minted) = $((m0 + 2)) && test \$(grep -c '\"app-list\"' $T/api.log) = $((l0 + 2))"
m1=$(mints)
check "register sb-none: a glob that matches nothing" px_admin '{"op":"register","id":"sb-none","secret":"s","policy":{"github":{"repositories":["e2e-org/nothing-*"]}}}'
check "sb-none: refused (502), nothing minted for it" bash -c "test \$(curl -s -o /dev/null -w '%{http_code}' --proxy http://sb-none:s@127.0.0.1:$PX_PORT --cacert $PX_CA https://api.github.com/user) = 502 && test \$(cat $T/minted) = $((m1 + 1))"
check "... the proxy log says why" grep -q 'github app token for sandbox=sb-none not minted: no repository of the installation matches the repositories \[e2e-org/nothing-\*\]' "$PX_DIR/proxy.log"
l1=$(lists)
check "... and a second request does not list the installation again" bash -c "test \$(curl -s -o /dev/null -w '%{http_code}' --proxy http://sb-none:s@127.0.0.1:$PX_PORT --cacert $PX_CA https://api.github.com/user) = 502 && test \$(grep -c '\"app-list\"' $T/api.log) = $l1 && test \$(cat $T/minted) = $((m1 + 1))"
curl -s --noproxy '*' -X POST "http://127.0.0.1:$API_PLAIN/_control/app-repos?n=600" >/dev/null
m2=$(mints)
check "register sb-many: e2e-org/* over 605 repositories" px_admin '{"op":"register","id":"sb-many","secret":"s","policy":{"github":{"repositories":["e2e-org/*"]}}}'
check "sb-many: more than 500 matches: refused (502), no token but the listing one" bash -c "test \$(curl -s -o /dev/null -w '%{http_code}' --proxy http://sb-many:s@127.0.0.1:$PX_PORT --cacert $PX_CA https://api.github.com/user) = 502 && test \$(cat $T/minted) = $((m2 + 1))"
check "... the proxy log says why" grep -q 'sandbox=sb-many not minted: 605 repositories of the installation match \[e2e-org/\*\], more than the 500' "$PX_DIR/proxy.log"
curl -s --noproxy '*' -X POST "http://127.0.0.1:$API_PLAIN/_control/app-repos?n=120" >/dev/null
check "every listing token was revoked" wait_for 10 bash -c "test \$(grep -c . $T/minted.revoked) -ge 3"
check "deregister sb-glob revokes its token" px_admin '{"op":"deregister","id":"sb-glob"}'
check "... seen at the endpoint" wait_for 10 grep -qxF -- "$TG" "$T/minted.revoked"
check "minted tokens never in the proxy's logs" bash -c "! grep -qF -- '$TG' $PX_DIR/proxy.log $PX_DIR/stderr $PX_DIR/audit.jsonl"
check "proxy still alive" px_alive
check "no sanitizer report from the proxy" px_san_clean
