# r28-proxy-routes: credential policy routes (issue 28). Every request of a
# sandbox with a policy is judged on its canonical target, which is also
# what goes upstream (egress-proxy/reqcanon.c); push rules make writes an
# allow-list; the repository scope covers the id alias and the content
# hosts; a narrowed policy reaches connections already open. Real git
# (packs made by git pack-objects, run by git-http-backend behind nginx,
# which decodes and normalises paths as GitHub's and GitLab's fronts do),
# curl, and the fake APIs that record what reached them.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"

fx_all || { fail "fixtures start"; exit 1; }
fx_client_home
fx_bare "$T/git/github/e2e-org/other.git"
px_config && px_start || { fail "proxy start"; exit 1; }

GHPOL='{"repositories":["e2e-org/repo"],"push":["refs/heads/agent/**"],"protect":["refs/heads/main","refs/tags/**"]}'
GLPOL='{"projects":["e2e-group/repo"],"push":["refs/heads/agent/**"],"protect":["refs/heads/main"]}'
check "register sb-r: repositories and push rules" px_admin "{\"op\":\"register\",\"id\":\"sb-r\",\"secret\":\"s-r\",\"policy\":{\"github\":$GHPOL,\"gitlab\":$GLPOL}}"
px_client_env sb-r s-r
GHR=$T/git/github/e2e-org/repo.git
GLR=$T/git/gitlab/e2e-group/repo.git
gh0=$(git -C "$GHR" rev-parse main)
gl0=$(git -C "$GLR" rev-parse main)
LOG=$T/nginx/access.log

# nginx_saw PYTHON-EXPR: nginx access.log lines from line $NL0 on whose
# request (method m, target fully percent-decoded and lower-cased u, host h)
# match; prints the count.
nginx_saw() {
	"$PY" - "$LOG" "$NL0" "$1" <<'PY'
import sys, urllib.parse
n = 0
for i, line in enumerate(open(sys.argv[1], encoding="latin-1")):
    if i < int(sys.argv[2]):
        continue
    parts = line.split('"')
    if len(parts) < 2 or " " not in parts[1]:
        continue
    h = parts[0].split()[1]
    m, u = parts[1].split(" ")[0], parts[1].split(" ")[1]
    for _ in range(4):
        u = urllib.parse.unquote(u)
    u = u.lower()
    if eval(sys.argv[3], {"m": m, "u": u, "h": h, "line": line}):
        n += 1
print(n)
PY
}

# saw_eq PYTHON-EXPR N: nginx_saw says N (nginx writes its line after the response went out).
saw_eq() { [ "$(nginx_saw "$1")" = "$2" ]; }

# ---- 1. the git service path, every spelling an nginx upstream routes ----
# A push of a new commit to the protected main: the command list and a pack
# made by real git, POSTed by curl at each spelling of the service path.
mkpush() {	# mkpush WORKDIR OLD NEW REF [HAVE]: a receive-pack request body on stdout
	"$PY" -c 'import sys; s = ("%s %s %s\0report-status side-band-64k agent=git/e2e\n" % tuple(sys.argv[1:4])).encode(); sys.stdout.buffer.write(b"%04x" % (len(s) + 4) + s + b"0000")' "$2" "$3" "$4"
	printf '%s\n^%s\n' "$3" "${5:-$2}" | git -C "$1" pack-objects --revs --stdout -q
}
check "clone github e2e-org/repo" git clone -q https://github.com/e2e-org/repo.git "$T/w/gh"
check "clone gitlab e2e-group/repo" git clone -q https://gitlab.com/e2e-group/repo.git "$T/w/gl"
for w in gh gl; do (cd "$T/w/$w" && echo "r28 $w" >>README && git commit -qam r28); done
mkpush "$T/w/gh" "$gh0" "$(git -C "$T/w/gh" rev-parse HEAD)" refs/heads/main >"$T/push-gh.body"
mkpush "$T/w/gl" "$gl0" "$(git -C "$T/w/gl" rev-parse HEAD)" refs/heads/main >"$T/push-gl.body"
SPELLINGS='.git/git%2Dreceive-pack .git/git-receive-pac%6b .git/git%2dreceive-pack .git/git%252Dreceive-pack
.git//git-receive-pack .git/./git-receive-pack .git/x/../git-receive-pack .git/git-receive-pack/
/git-receive-pack .git/GIT-RECEIVE-PACK %2Egit/git-receive-pack .git/git-receive-pack%0A'
NL0=$(wc -l <"$LOG")
for host in github.com gitlab.com; do
	case $host in github.com) base=/e2e-org/repo f=push-gh.body;; *) base=/e2e-group/repo f=push-gl.body;; esac
	for sp in $SPELLINGS; do
		code=$(curl -s -o "$T/rp.out" -w '%{http_code}' --path-as-is -H 'Content-Type: application/x-git-receive-pack-request' \
			--data-binary @"$T/$f" "https://$host$base$sp")
		if grep -aq 'denied by policy\|push refused by the proxy' "$T/rp.out"; then
			ok "$host$base$sp: refused ($code, $(grep -ao 'denied by policy[^"]*\|push refused[^"]*' "$T/rp.out" | head -1 | cut -c1-70))"
		else
			fail "$host$base$sp: refused" "status $code: $(head -c 200 "$T/rp.out" | tr -d '\0' | tr '\n' '|')"
		fi
	done
done
check "github: main did not move" test "$(git -C "$GHR" rev-parse main)" = "$gh0"
check "gitlab: main did not move" test "$(git -C "$GLR" rev-parse main)" = "$gl0"
check "no receive-pack POST reached nginx, in any spelling" test "$(nginx_saw "m == 'POST' and 'receive-pack' in u")" = 0
# The spellings that canonicalise to the service went to the push gate (report-status):
check "git%2Dreceive-pack was judged by the push rules (ng main)" bash -c "curl -s --path-as-is -H 'Content-Type: application/x-git-receive-pack-request' --data-binary @$T/push-gh.body 'https://github.com/e2e-org/repo.git/git%2Dreceive-pack' | grep -aq 'ng refs/heads/main denied by policy: protected ref'"
check "audit: the line names the canonical path and what the client sent" grep -q '"path":"/e2e-org/repo.git/git-receive-pack","client_path":"/e2e-org/repo.git/git%2Dreceive-pack","status":200' "$PX_DIR/audit.jsonl"
# An allowed push through an odd spelling lands, sent upstream in its canonical form.
ahead=$(git -C "$T/w/gh" rev-parse HEAD)
mkpush "$T/w/gh" "0000000000000000000000000000000000000000" "$ahead" refs/heads/agent/r28 "$gh0" >"$T/push-ok.body"
NL0=$(wc -l <"$LOG")
check "an allowed push through git-receive-pac%6b/ lands" bash -c "curl -sf --path-as-is -H 'Content-Type: application/x-git-receive-pack-request' --data-binary @$T/push-ok.body 'https://github.com/e2e-org/repo.git//git-receive-pac%6b/' | grep -aq 'ok refs/heads/agent/r28'"
check "... agent/r28 is there upstream" test "$(git -C "$GHR" rev-parse refs/heads/agent/r28)" = "$ahead"
check "... nginx got the canonical path" wait_for 5 saw_eq "m == 'POST' and '\"POST /e2e-org/repo.git/git-receive-pack HTTP/1.1\"' in line" 1

# ---- 2. repository scope: the id alias and the content hosts ----
api() {	# api URL [curl args]: prints STATUS, body in $T/api.out
	local u=$1; shift
	curl -s -o "$T/api.out" -w '%{http_code}' --path-as-is "$@" "$u"
}
json403() {	# json403 URL [curl args]: 403 with a JSON message naming the policy
	test "$(api "$@")" = 403 && "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "denied by policy" in d["message"], d' "$T/api.out"
}
check "GET /repositories/{id}: refused under a repositories list" json403 https://api.github.com/repositories/4242
check "... saying why" grep -q 'a repository id cannot be checked' "$T/api.out"
check "GET /repositories/{id}/contents/README refused" json403 https://api.github.com/repositories/4242/contents/README
check "PATCH /repositories/{id}/git/refs/heads/main refused" json403 https://api.github.com/repositories/4241/git/refs/heads/main -X PATCH -d '{"sha":"x","force":true}'
check "DELETE /repositories/{id} refused" json403 https://api.github.com/repositories/4241 -X DELETE
check "uploads: /repositories/{id}/releases/1/assets refused" json403 https://uploads.github.com/repositories/4242/releases/1/assets -X POST -d x
check "the API never saw /repositories" test "$(fx_api_q "'/repositories' in r['path'].lower()")" = 0
NL0=$(wc -l <"$LOG")
for u in codeload.github.com/e2e-org/other/tar.gz/main codeload.github.com/e2e-org/%6fther/zip/main \
	codeload.github.com/E2E-ORG/OTHER.git/tar.gz/main codeload.github.com//e2e-org/other/tar.gz/main \
	codeload.github.com/e2e-org/repo/../other/tar.gz/main codeload.github.com/e2e-org/other%2Fx/tar.gz/main \
	raw.githubusercontent.com/e2e-org/other/main/README raw.githubusercontent.com/e2e-org/other/refs/heads/main/README \
	raw.githubusercontent.com/e2e-org/repo/../../e2e-org/other/main/README raw.githubusercontent.com/e2e-org/oth%65r/main/README \
	uploads.github.com/repos/e2e-org/other/releases/1/assets uploads.github.com/repos/e2e-org/%6fther/releases/1/assets \
	uploads.github.com/repos/e2e-org/repo/../other/releases/1/assets \
	raw.githubusercontent.com/e2e-org/repo/main/%252e%252e/%252e%252e/%252e%252e/e2e-org/other/main/README \
	codeload.github.com/e2e-org/repo/tar.gz/%252e%252e/%252e%252e/%252e%252e/e2e-org/other/tar.gz/main; do
	check "$u: 403" test "$(api "https://$u")" = 403
done
check "content hosts: nothing of another repository reached them (no request, no credential)" \
	test "$(nginx_saw "h != 'github.com' and h != 'gitlab.com' and ('other' in u or 'repositories' in u)")" = 0
check "codeload of the allowed repository still works" test "$(api https://codeload.github.com/e2e-org/repo/tar.gz/main)" = 200
check "raw of the allowed repository still works" test "$(api https://raw.githubusercontent.com/e2e-org/repo/main/README)" = 200
# Without a repositories list, writes through the id alias are held to the push rules all the same.
check "register sb-n: push rules, no repositories" px_admin '{"op":"register","id":"sb-n","secret":"s-n","policy":{"github":{"push":["refs/heads/agent/**"],"protect":["refs/heads/main"]}}}'
as() {	# as ID URL [curl args]: api as sandbox ID (secret s-ID's suffix)
	local id=$1; shift
	api "$@" --proxy "http://$id:s-${id#sb-}@127.0.0.1:$PX_PORT"
}
check "sb-n: GET /repositories/{id} passes" test "$(as sb-n https://api.github.com/repositories/4241)" = 200
check "sb-n: PATCH /repositories/{id}/git/refs/heads/main refused (protected)" bash -c "test $(as sb-n https://api.github.com/repositories/4241/git/refs/heads/main -X PATCH -d '{}') = 403 && grep -q 'protected ref' $T/api.out"
check "sb-n: DELETE /repositories/{id} refused" test "$(as sb-n https://api.github.com/repositories/4241 -X DELETE)" = 403
check "sb-n: only the GET reached the API" test "$(fx_api_q "'/repositories' in r['path']")" = 1

# ---- 3. push rules: writes are an allow-list (GitHub) ----
R=https://api.github.com/repos/e2e-org/repo
gh_refused() {	# gh_refused NAME METHOD PATH [BODY [curl args]]
	local code body=${4:-'{}'}
	code=$(api "$R$3" -X "$2" -H 'Content-Type: application/json' -d "$body" "${@:5}")
	if [ "$code" = 403 ] && grep -q '"message":"denied by policy' "$T/api.out"; then
		ok "github $1: refused ($(sed 's/.*denied by policy: \([^"]*\).*/\1/' "$T/api.out" | cut -c1-60))"
	else
		fail "github $1: refused" "status $code $(head -c 200 "$T/api.out")"
	fi
}
gh_refused "DELETE the repository" DELETE ""
gh_refused "transfer" POST /transfer '{"new_owner":"evil"}'
gh_refused "DELETE branch protection of main" DELETE /branches/main/protection
gh_refused "PUT branch protection of main" PUT /branches/main/protection
gh_refused "rename a branch with a / in its name" POST /branches/feature/x/rename '{"new_name":"main"}'
gh_refused "create a release (tag)" POST /releases '{"tag_name":"v9","target_commitish":"main"}'
gh_refused "edit a release" PATCH /releases/1 '{"tag_name":"v9"}'
gh_refused "create a ref" POST /git/refs '{"ref":"refs/heads/main","sha":"x"}'
gh_refused "merges/ (trailing slash)" POST /merges/ '{"base":"main","head":"agent/x"}'
gh_refused "pulls/1/merge/ (trailing slash)" PUT /pulls/1/merge/
gh_refused "merge-upstream" POST /merge-upstream '{"branch":"main"}'
gh_refused "PUT contents" PUT /contents/README '{"branch":"main"}'
gh_refused "Git/Refs/heads/main (keyword case)" PATCH /Git/Refs/heads/main
gh_refused "git/refs/heads/agent/../main (dot segments: main)" PATCH /git/refs/heads/agent/../main
gh_refused "git/refs/refs/heads/main (not heads/ or tags/)" PATCH /git/refs/refs/heads/main
gh_refused "PATCH the repository (default branch)" PATCH "" '{"default_branch":"agent/x"}'
gh_refused "dispatches (workflows)" POST /dispatches '{"event_type":"x"}'
gh_refused "statuses" POST /statuses/0123abcd '{"state":"success"}'
gh_refused "a review (may approve)" POST /pulls/1/reviews '{"event":"APPROVE"}'
gh_refused "deploy keys" POST /keys '{"key":"ssh-ed25519 x","read_only":false}'
gh_refused "method override header on an allowed POST" POST /issues '{"title":"x"}' -H 'X-HTTP-Method-Override: DELETE'
check "github: POST /GRAPHQL refused (keyword case)" json403 https://api.github.com/GRAPHQL -X POST -d '{"query":"{ a }"}'
check "github: /api/graphql refused" json403 https://api.github.com/api/graphql -X POST -d '{"query":"mutation { a }"}'
check "github: a mutation on /graphql/ (trailing slash) refused by the mutation check" json403 https://api.github.com/graphql/ -X POST -d '{"query":"mutation { deleteRef }"}'
check "github: REPOS/ (keyword case) refused" json403 https://api.github.com/REPOS/e2e-org/other
check "github: an encoded / refused" json403 "$R/git/refs/heads%2Fmain" -X PATCH -d '{}'
check "github: bad escapes refused with the reason" bash -c "test \$(curl -s -o $T/api.out -w '%{http_code}' --path-as-is '$R/issues%zz') = 403 && grep -q 'request target refused: malformed percent escape' $T/api.out"
check "nothing refused reached the API" test "$(fx_api_q "r['role']=='github-api' and (r['method'] not in ('GET','HEAD') and r['path'] not in ('/repos/e2e-org/repo/git/refs/heads/agent/x',) or 'graphql' in r['path'].lower() or 'REPOS' in r['path'])")" = 0
# known to be harmless: they reach the API, with the credential
gh_ok() {	# gh_ok NAME METHOD PATH [BODY]
	check "github $1: passes" test "$(api "$R$3" -X "$2" -H 'Content-Type: application/json' -d "${4:-'{}'}")" = 200
}
gh_ok "open an issue" POST /issues '{"title":"t"}'
gh_ok "comment on an issue" POST /issues/1/comments '{"body":"b"}'
gh_ok "label an issue" POST /issues/1/labels '{"labels":["x"]}'
gh_ok "edit a pull request" PATCH /pulls/7 '{"title":"t"}'
gh_ok "comment on a pull request's diff" POST /pulls/7/comments '{"body":"b"}'
gh_ok "a blob (objects only)" POST /git/blobs '{"content":"x"}'
gh_ok "PATCH git/refs/heads/agent/x (push rules allow it)" PATCH /git/refs/heads/agent/x '{"sha":"x"}'
check "github: opening a pull request passes (201)" test "$(api "$R/pulls" -X POST -d '{"head":"agent/x","base":"main"}')" = 201
check "github: a GraphQL query passes" test "$(api https://api.github.com/graphql -X POST -d '{"query":"{ viewer { login } }"}')" = 200
check "github: reading branch protection passes" test "$(api "$R/branches/main/protection")" = 200
check "the allowed writes reached the API with the credential" test "$(fx_api_q "r['role']=='github-api' and r['auth_ok'] and r['method'] in ('POST','PATCH') and r['path'].startswith('/repos/e2e-org/repo/')")" = 8
check "register sb-d: a repositories list only (delete not given)" px_admin '{"op":"register","id":"sb-d","secret":"s-d","policy":{"github":{"repositories":["e2e-org/repo"]}}}'
check "sb-d: DELETE the repository refused (it deletes every ref)" bash -c "test $(as sb-d "$R" -X DELETE) = 403 && grep -q 'deletes every ref' $T/api.out"
check "sb-d: without push rules other writes pass (transfer reaches the API)" test "$(as sb-d "$R/transfer" -X POST -d '{}')" = 200

# ---- 3b. the same on GitLab ----
P=https://gitlab.com/api/v4/projects/e2e-group%2Frepo
gl_refused() {	# gl_refused NAME METHOD PATH [BODY [curl args]]
	local code body=${4:-'{}'}
	code=$(api "$P$3" -X "$2" -H 'Content-Type: application/json' -d "$body" "${@:5}")
	if [ "$code" = 403 ] && grep -q '"message":"403 Forbidden - denied by policy' "$T/api.out"; then
		ok "gitlab $1: refused ($(sed 's/.*denied by policy: \([^"]*\).*/\1/' "$T/api.out" | cut -c1-60))"
	else
		fail "gitlab $1: refused" "status $code $(head -c 200 "$T/api.out")"
	fi
}
gl_refused "DELETE the project" DELETE ""
gl_refused "transfer" PUT /transfer '{"namespace":"evil"}'
gl_refused "changelog (commits to the default branch)" POST /repository/changelog '{"version":"1.0.0"}'
gl_refused "a release with a ref (creates a tag)" POST /releases '{"tag_name":"v9","ref":"main"}'
gl_refused "create a tag" POST /repository/tags '{"tag_name":"v9","ref":"main"}'
gl_refused "create a branch" POST /repository/branches '{"branch":"main2","ref":"main"}'
gl_refused "unprotect main" DELETE /protected_branches/main
gl_refused "merge/ (trailing slash)" PUT /merge_requests/1/merge/
gl_refused "MERGE (keyword case)" PUT /merge_requests/1/MERGE
gl_refused "rebase" PUT /merge_requests/1/rebase
gl_refused "approve" POST /merge_requests/1/approve
gl_refused "a commit" POST /repository/commits '{"branch":"main"}'
gl_refused "a file" PUT /repository/files/README '{"branch":"main"}'
gl_refused "delete branch main (protected)" DELETE /repository/branches/main
gl_refused "delete branch agent%2Fx (delete not allowed)" DELETE /repository/branches/agent%2Fx
gl_refused "merged_branches" DELETE /repository/merged_branches
gl_refused "pipeline" POST /pipeline '{"ref":"main"}'
gl_refused "method override header" POST /issues '{"title":"x"}' -H 'X-HTTP-Method-Override: PUT'
check "gitlab: /API/v4 (keyword case) refused" json403 "https://gitlab.com/API/v4/projects/e2e-group%2Frepo/repository/commits" -X POST -d '{}'
check "gitlab: Projects (keyword case) refused" json403 "https://gitlab.com/api/v4/Projects/e2e-group%2Frepo/repository/commits" -X POST -d '{}'
check "gitlab: double-encoded project id refused" json403 "https://gitlab.com/api/v4/projects/e2e-group%252Fother"
check "gitlab: an encoded / into a git route refused" test "$(api "https://gitlab.com/e2e-group%2Frepo.git/info/refs?service=git-upload-pack")" = 403
NL0=$(wc -l <"$LOG")
check "gitlab web: another project's /-/ route refused" test "$(api https://gitlab.com/e2e-group/other/-/raw/main/README)" = 403
check "gitlab web: ... spelled with dot segments" test "$(api https://gitlab.com/e2e-group/repo/../other/-/raw/main/README)" = 403
check "gitlab web: a write on the allowed project's web UI refused" test "$(api https://gitlab.com/e2e-group/repo/-/merge_requests/1/merge -X POST -d x)" = 403
check "gitlab web: none of them reached gitlab.com" test "$(nginx_saw "'/-/' in u")" = 0
check "gitlab: GraphQL POST refused under push rules" json403 https://gitlab.com/api/graphql -X POST -d '{"query":"mutation { x }"}'
check "gitlab: nothing refused reached the API" test "$(fx_api_q "r['role']=='gitlab-api' and r['method'] not in ('GET','HEAD')")" = 0
gl_ok() {	# gl_ok NAME METHOD PATH [BODY]
	check "gitlab $1: passes" test "$(api "$P$3" -X "$2" -H 'Content-Type: application/json' -d "${4:-'{}'}")" = 200
}
gl_ok "open an issue" POST /issues '{"title":"t"}'
gl_ok "open a merge request" POST /merge_requests '{"source_branch":"agent/x","target_branch":"main","title":"t"}'
gl_ok "edit a merge request" PUT /merge_requests/1 '{"title":"t"}'
gl_ok "comment on a merge request" POST /merge_requests/1/notes '{"body":"b"}'
check "gitlab comment on a merge request, id spelled %2f: passes" test "$(api https://gitlab.com/api/v4/projects/e2e-group%2frepo/merge_requests/1/notes -X POST -d '{"body":"b"}')" = 200
check "gitlab: reading branches passes" test "$(api "$P/repository/branches/main")" = 200
check "the allowed writes reached the API with the credential" test "$(fx_api_q "r['role']=='gitlab-api' and r['auth_ok'] and r['method'] in ('POST','PUT')")" = 5

# ---- 3c. graphql_mutations under push rules; GitLab's quick actions ----
check "register sb-q: push rules, graphql_mutations true on both forges" px_admin "{\"op\":\"register\",\"id\":\"sb-q\",\"secret\":\"s-q\",\"policy\":{\"github\":{\"repositories\":[\"e2e-org/repo\"],\"push\":[\"refs/heads/agent/**\"],\"protect\":[\"refs/heads/main\"],\"graphql_mutations\":true},\"gitlab\":{\"projects\":[\"e2e-group/repo\"],\"push\":[\"refs/heads/agent/**\"],\"protect\":[\"refs/heads/main\"],\"graphql_mutations\":true}}}"
q_gql() { as sb-q "$1" -X POST -H 'Content-Type: application/json' --data-binary "$2"; }
GH_GQL=https://api.github.com/graphql GL_GQL=https://gitlab.com/api/graphql
check "github, push rules: createCommitOnBranch refused (403 naming it)" bash -c "test $(q_gql $GH_GQL '{"query":"mutation { createCommitOnBranch(input:{}) { clientMutationId } }"}') = 403 && grep -q 'GraphQL mutation createCommitOnBranch is not allowed' $T/api.out"
check "github, push rules: mergePullRequest behind an alias refused" test "$(q_gql $GH_GQL '{"query":"mutation { addComment: mergePullRequest(input:{}) { clientMutationId } }"}')" = 403
check "github, push rules: addComment passes" test "$(q_gql $GH_GQL '{"query":"mutation { addComment(input:{body:\"x\",subjectId:\"y\"}) { clientMutationId } }"}')" = 200
check "gitlab, push rules: commitCreate refused (GitLab's shape)" bash -c "test $(q_gql $GL_GQL '{"query":"mutation { commitCreate(input:{}) { errors } }"}') = 403 && grep -q '403 Forbidden - denied by policy: GraphQL mutation commitCreate' $T/api.out"
check "gitlab, push rules: createNote refused (its text may hold /merge)" test "$(q_gql $GL_GQL '{"query":"mutation { createNote(input:{body:\"/merge\"}) { errors } }"}')" = 403
check "gitlab, push rules: awardEmojiAdd passes" test "$(q_gql $GL_GQL '{"query":"mutation { awardEmojiAdd(input:{name:\"x\"}) { errors } }"}')" = 200
check "gitlab, no graphql_mutations (sb-r): commitCreate refused" test "$(api $GL_GQL -X POST -H 'Content-Type: application/json' -d '{"query":"mutation { commitCreate(input:{}) { errors } }"}')" = 403
check "gitlab, no graphql_mutations (sb-r): a query passes" test "$(api $GL_GQL -X POST -H 'Content-Type: application/json' -d '{"query":"{ currentUser { username } }"}')" = 200
n_gql=$(fx_api_q "r['path']=='/api/graphql' and ('commitCreate' in r['body'] or 'createNote' in r['body'])")
check "... no refused GraphQL reached GitLab" test "$n_gql" = 0
qa_refused() {	# qa_refused NAME PATH curl-args...: a quick action refused (403 naming it)
	local name=$1 path=$2 code; shift 2
	code=$(api "$P$path" "$@")
	if [ "$code" = 403 ] && grep -q 'denied by policy: .*quick action /' "$T/api.out"; then
		ok "gitlab quick action $name: refused ($(grep -o 'quick action /[a-z_]*' "$T/api.out"))"
	else
		fail "gitlab quick action $name: refused" "status $code $(head -c 200 "$T/api.out")"
	fi
}
qa_refused "/merge in a note (JSON)" /merge_requests/1/notes -X POST -H 'Content-Type: application/json' -d '{"body":"LGTM\n/merge"}'
qa_refused "/merge spelled \\u002f (JSON)" /merge_requests/1/notes -X POST -H 'Content-Type: application/json' -d '{"body":"\u002fmerge"}'
qa_refused "/rebase in a note (form)" /merge_requests/1/notes -X POST -d 'body=ok%0D%0A%2Frebase'
qa_refused "/merge in the URL's query" /merge_requests/1/notes -X POST -H 'Content-Type: application/json' -d '{"body":"ok"}' --url-query 'body=/merge'
qa_refused "/create_merge_request in an issue's description" /issues -X POST -H 'Content-Type: application/json' -d '{"title":"t","description":"/create_merge_request main2"}'
qa_refused "/merge in a merge request's new description" /merge_requests/1 -X PUT -H 'Content-Type: application/json' -d '{"description":"  /merge"}'
qa_refused "/tag on a commit comment" /repository/commits/0123abcd/comments -X POST -H 'Content-Type: application/json' -d '{"note":"/tag v9"}'
qa_refused "/approve in a discussion" /merge_requests/1/discussions -X POST -d 'body=%2Fapprove'
check "gitlab: a note whose JSON has its key twice, /merge first: refused" test "$(api "$P/merge_requests/1/notes" -X POST -H 'Content-Type: application/json' -d '{"body":"/merge","body":"ok"}')" = 403
check "gitlab: a note whose JSON has its key twice: 400 (cannot be judged)" test "$(api "$P/merge_requests/1/notes" -X POST -H 'Content-Type: application/json' -d '{"body":"ok","body":"ok"}')" = 400
check "gitlab: a multipart note cannot be checked: 415" test "$(api "$P/merge_requests/1/notes" -X POST -F 'body=ok')" = 415
check "gitlab: no quick action reached the API" test "$(fx_api_q "r['role']=='gitlab-api' and ('merge' in r['body'].replace('merge_request','') or 'rebase' in r['body'] or 'approve' in r['body'] or '/tag' in r['body'] or 'create_merge_request' in r['body'] or ('?' in r['path'] and 'merge' in r['path'].split('?',1)[1]))")" = 0
check "gitlab: a plain note passes (JSON)" test "$(api "$P/merge_requests/1/notes" -X POST -H 'Content-Type: application/json' -d '{"body":"see /usr/bin mid-line is fine"}')" = 200
check "gitlab: a plain note passes (form)" test "$(api "$P/issues/1/notes" -X POST -d 'body=looks+good')" = 200
check "gitlab: a note without push rules (sb-d has none) is not checked" test "$(as sb-d "$P/merge_requests/1/notes" -X POST -H 'Content-Type: application/json' -d '{"body":"/merge"}')" = 200

# ---- 4. a narrowed policy reaches a connection already open ----
KA="$PY $FX/kaclient.py --proxy 127.0.0.1:$PX_PORT --auth sb-k:s-k --cafile $PX_CA --out $T"
WIDE='{"github":{"repositories":["e2e-org/repo"],"push":["refs/heads/**"]}}'
NARROW='{"github":{"repositories":["e2e-org/repo"],"push":["refs/heads/agent/**"],"protect":["refs/heads/main"]}}'
reg_k() {	# reg_k NAME POLICY: $T/NAME.sh re-registers sb-k with POLICY
	printf '%s %s %s %s\n' "$PY" "$FX/padmin.py" "$PX_ADMIN" "'{\"op\":\"register\",\"id\":\"sb-k\",\"secret\":\"s-k\",\"policy\":$2}'" >"$T/$1.sh"
}
reg_k wide "$WIDE"
reg_k narrow "$NARROW"
check "register sb-k: any ref may be pushed" bash "$T/wide.sh"
NL0=$(wc -l <"$LOG")
mkpush "$T/w/gh" "$gh0" "$(git -C "$T/w/gh" rev-parse HEAD)" refs/heads/main >"$T/push-ka.body"
check "one connection: info/refs, the policy narrowed, then a push to main" bash -c "$KA --host github.com 'req:GET:/e2e-org/repo.git/info/refs?service=git-receive-pack' 'run:bash $T/narrow.sh' 'req:POST:/e2e-org/repo.git/git-receive-pack:$T/push-ka.body:application/x-git-receive-pack-request' >$T/ka.out 2>&1"
check "... the push was refused under the new rules" grep -aq 'ng refs/heads/main denied by policy: protected ref' "$T/2.body"
check "... main did not move" test "$(git -C "$GHR" rev-parse main)" = "$gh0"
check "... the pack never reached nginx" test "$(nginx_saw "m == 'POST' and 'receive-pack' in u")" = 0
check "... and both requests went on one connection" bash -c "test \$(grep -c 'port=' $T/ka.out) = 2"
check "register sb-k: wide again" bash "$T/wide.sh"
check "one API connection: a read, the policy narrowed, then DELETE the repository" bash -c "$KA --host api.github.com 'req:GET:/repos/e2e-org/repo' 'run:bash $T/narrow.sh' 'req:DELETE:/repos/e2e-org/repo' >$T/ka2.out 2>&1"
check "... refused (403)" grep -q '2 DELETE /repos/e2e-org/repo -> 403' "$T/ka2.out"
check "register sb-k: wide once more" bash "$T/wide.sh"
check "one API connection: a read, the policy narrowed, then PATCH git/refs/heads/main" bash -c "$KA --host api.github.com 'req:GET:/repos/e2e-org/repo' 'run:bash $T/narrow.sh' 'req:PATCH:/repos/e2e-org/repo/git/refs/heads/main:$T/push-gh.body' >$T/ka3.out 2>&1"
check "... refused (403, protected ref)" bash -c "grep -q '2 PATCH /repos/e2e-org/repo/git/refs/heads/main -> 403' $T/ka3.out && grep -q 'protected ref' $T/2.body"
check "... neither reached the API" test "$(fx_api_q "r['method'] in ('DELETE','PATCH') and r['path'] in ('/repos/e2e-org/repo','/repos/e2e-org/repo/git/refs/heads/main')")" = 0

check "proxy still alive" px_alive

# ---- 5. GitHub Enterprise forms: the API under /api/v3 and uploads under /api/uploads ----
# A second proxy whose github_api_host is the git host (GHE without an API host of its own).
PX_ADDON_CONFIG="  github_api_host: github.com" px_config px-ghe && px_start px-ghe || { fail "px-ghe start"; exit 1; }
check "px-ghe: register sb-r" px_admin "{\"op\":\"register\",\"id\":\"sb-r\",\"secret\":\"s-r\",\"policy\":{\"github\":$GHPOL}}"
px_client_env sb-r s-r
NL0=$(wc -l <"$LOG")
G=https://github.com
check "GHE: /api/v3/repos/e2e-org/other refused" json403 "$G/api/v3/repos/e2e-org/other"
check "GHE: /api/v3/repositories/{id} refused" json403 "$G/api/v3/repositories/4242"
check "GHE: /api/uploads/repos/e2e-org/other/... refused" json403 "$G/api/uploads/repos/e2e-org/other/releases/1/assets" -X POST -d x
check "GHE: /api/uploads/repositories/{id}/... refused" json403 "$G/api/uploads/repositories/4242/releases/1/assets" -X POST -d x
check "GHE: /api/v3/repos/e2e-org/repo/merges/ refused (push rules)" json403 "$G/api/v3/repos/e2e-org/repo/merges/" -X POST -d '{}'
check "GHE: /api/v3/repos/e2e-org/repo/git/refs/heads/main refused (protected)" json403 "$G/api/v3/repos/e2e-org/repo/git/refs/heads/main" -X PATCH -d '{}'
check "GHE: /API/v3/... (keyword case) refused" json403 "$G/API/v3/repos/e2e-org/repo/issues" -X POST -d '{}'
check "GHE: a mutation on /api/graphql refused" json403 "$G/api/graphql" -X POST -d '{"query":"mutation { deleteRef }"}'
check "GHE: /api/v3/graphql refused (GraphQL only at /api/graphql)" test "$(api "$G/api/v3/graphql/x" -X POST -d '{"query":"mutation { x }"}')" = 403
check "GHE: nothing refused reached the host" test "$(nginx_saw "h == 'github.com' and u.startswith('/api')")" = 0
api "$G/api/v3/repos/e2e-org/repo/issues" -X POST -d '{}' >/dev/null
check "GHE: an allowed write goes out with the API credential (Bearer)" wait_for 5 saw_eq "h == 'github.com' and '\"POST /api/v3/repos/e2e-org/repo/issues HTTP/1.1\"' in line and 'auth=\"Bearer ' in line" 1
check "px-ghe still alive" px_alive
check "no sanitizer report from the proxies" px_san_clean
