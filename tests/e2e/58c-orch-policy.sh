#!/usr/bin/env bash
# 58c-orch-policy.sh: a session's credential policy (issue 16) through the
# real orchestrator and the real egress proxy: the operator's policy file
# (checked at start), POST /v1/sessions with a policy (combined with the
# operator's, 400 naming the member when wrong or wider), the session JSON
# and the record label, the register op the proxy gets, a restart, MCP
# that can neither set nor widen it (arguments, headers, create_sandbox,
# clear_session), PUT /v1/sessions/{id}/policy that only narrows and
# registers the sandbox again at once.
#
# The proxy shows a sandbox's policy in its admin stats only with issue
# 16's proxy side; without it those checks are skipped (named "proxy
# stats: ..."), everything else runs.
. "$(dirname "$0")/../lib/common.sh"

# The kubernetes runtime's part (run as a child: its own $T and daemons):
# the fake API server, its stand-in proxy admin recording each register.
if [ "${1:-}" = --k8s ]; then
	. "$TOP/tests/k8s/lib.sh"
	k8s_setup
	printf '%s\n' '{"orgs":{"acme":{"github":{"repositories":["acme/*"],"push":["refs/heads/agent/**"]}}}}' >"$T/policy.json"
	k8s_orch_setup "credentials:
  policy_file: $T/policy.json"
	check "k8s: orchestrator starts with a policy file" k8s_orch_start
	# last_reg ID: the policy of the last register of sandbox ID the proxy pod saw
	last_reg() { python3 -c 'import json,sys
p = None
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("op") == "register" and e.get("id") == sys.argv[2]: p = json.dumps(e.get("policy"), sort_keys=True, separators=(",", ":"))
print(p)' "$T/proxy-record.jsonl" "$1"; }
	nregs() { grep -c "\"op\": \"register\", \"id\": \"$1\"" "$T/proxy-record.jsonl"; }
	out=$(orch_rest POST /v1/sessions -d '{"id":"kp-1","org":"acme","policy":{"github":{"repositories":["acme/app"],"push":["refs/heads/agent/**"]}}}')
	sb=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["sandbox_id"])' "$out" 2>/dev/null)
	check "k8s: REST create with a policy" test -n "$sb"
	W='{"github":{"push":["refs/heads/agent/**"],"repositories":["acme/app"]}}'
	reg_is() { [ "$(last_reg "$1")" = "$2" ]; }
	wait_fn() {	# wait_fn SECONDS FUNCTION ARGS...: in this shell
		local i
		for ((i = 0; i < $1 * 10; i++)); do "${@:2}" && return 0; sleep 0.1; done
		return 1
	}
	check "k8s: the proxy pod got the policy at registration" wait_fn 20 reg_is "$sb" "$W"
	no_policy_label() { ! grep -F "\"id\": \"$sb\"" "$T/proxy-record.jsonl" | grep -q '"labels": {[^}]*"policy"'; }
	check "k8s: ... and not as a label" no_policy_label
	n=$(nregs "$sb")
	out=$(orch_rest PUT /v1/sessions/kp-1/policy -w '\n%{http_code}' -d '{"github":{"repositories":["acme/app"],"push":["refs/heads/agent/t1"]}}')
	check "k8s: PUT a narrower policy: 200" test "$(tail -n1 <<<"$out")" = 200
	W2='{"github":{"push":["refs/heads/agent/t1"],"repositories":["acme/app"]}}'
	check "k8s: the pod was registered again at once" test "$(nregs "$sb")" -gt "$n"
	check "k8s: ... with the narrowed policy" test "$(last_reg "$sb")" = "$W2"
	out=$(orch_rest PUT /v1/sessions/kp-1/policy -w '\n%{http_code}' -d '{"github":{"repositories":["acme/*"],"push":["refs/heads/agent/t1"]}}')
	check "k8s: PUT a wider one: 409" test "$(tail -n1 <<<"$out")" = 409
	check "k8s: ... the proxy pod still has the narrowed one" test "$(last_reg "$sb")" = "$W2"
	in_record() { kapi GET "/apis/networking.k8s.io/v1/namespaces/sandboxes/networkpolicies/sbx-$sb" | grep -qF 'refs/heads/agent/t1'; }
	check "k8s: the policy is in the sandbox's record (its NetworkPolicy)" in_record
	orch_rest DELETE /v1/sessions/kp-1 >/dev/null
	k8s_no_violations
	exit 0
fi

if [ -z "${E2E_NETNS:-}" ] && [ "$(id -u)" = 0 ]; then
	unshare --net env E2E_NETNS=1 bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@" &
	child=$!
	on_exit "kill $child 2>/dev/null; wait $child 2>/dev/null"
	wait "$child"
	exit $?
fi
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"

# The proxy needs its PKI and tokens, not the git fixtures (no traffic).
fx_pki && fx_tokens || { fail "fixtures"; exit 1; }
GH_PORT=$(free_port) API_PORT=$(free_port) GL_PORT=$(free_port)
# One named credential (issue 30) the policies below may name.
printf 'sk-58c-REAL-%s\n' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" >"$T/model.key"
printf 'return { name = "creds58c", credentials = { { name = "model", form = "bearer",\n  secret = "file:%s", hosts = { "model.test" }, env = { "MODEL_API_KEY" } } } }\n' "$T/model.key" >"$T/creds.lua"
PX_ADDONS="[$TOP/addons/github.lua, $TOP/addons/gitlab.lua, $T/creds.lua]" px_config && px_start ||
	{ fail "proxy start"; exit 1; }
ok "proxy start"
. "$TOP/tests/mcp/orch-lib.sh"

j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(eval(sys.argv[1], {"d": d}), sort_keys=True, separators=(",", ":")))' "$1"; }
eq() { [ "$1" = "$2" ] || { echo "# got:  $1" >&2; echo "# want: $2" >&2; return 1; }; }

# Does this proxy keep policies (issue 16's proxy side)? Probe it.
px_admin '{"op":"register","id":"policy-probe","secret":"0123456789abcdef","policy":{"github":{}}}' >/dev/null
PX_POLICY=1
probe_policy() { px_admin '{"op":"stats","id":"policy-probe"}' | grep -q '"policy"'; }
check "the proxy shows a registration's policy in stats" probe_policy || PX_POLICY=0
px_admin '{"op":"deregister","id":"policy-probe"}' >/dev/null
# px_policy SANDBOX: the policy the proxy has for it (canonical), or null.
px_policy() {
	px_admin "{\"op\":\"stats\",\"id\":\"$1\"}" | j '[s for s in d["sandboxes"] if s["id"] == "'"$1"'"][0].get("policy")'
}
# stats_check NAME SANDBOX WANT: the proxy's policy for SANDBOX is WANT.
stats_check() {
	if [ $PX_POLICY = 1 ]; then
		check "proxy stats: $1" eq "$(px_policy "$2")" "$3"
	else
		skip "proxy stats: $1" "the proxy has no policy support"
	fi
}

# The operator's policies: a default, and one for org acme.
OPS='{"default":{"github":{"api":"repositories","protect":["refs/heads/main"]}},
 "orgs":{"acme":{"github":{"repositories":["acme/*"],"permissions":{"contents":"write","pull_requests":"write"},
   "push":["refs/heads/agent/**"],"protect":["refs/heads/main","refs/tags/**"],"api":"repositories"},
  "gitlab":{"projects":["acme/**"],"push":["refs/heads/agent/**"]}}}}'
printf '%s\n' "$OPS" > "$T/policy.json"
DEF='{"github":{"api":"repositories","protect":["refs/heads/main"]}}'
ACME_GL='{"projects":["acme/**"],"push":["refs/heads/agent/**"]}'

base_yaml() {
	if [ "$ORCH_RT" = local ]; then
		ORCH_LOCAL_YAML="$ORCH_LOCAL_YAML
  proxy_admin_socket: $PX_ADMIN
  proxy_ca_cert: $PX_CA"
		printf '%s\n' "$ORCH_LOCAL_YAML" > "$T/rt.yaml"
		orch_config "credentials:" "  policy_file: $1" "pool:" "  min_idle: 1"
	else
		ORCH_FAKE_EXTRA="proxy_admin: $PX_ADMIN
  proxy_addr: 127.0.0.1:$PX_PORT
  proxy_ca: $PX_CA" orch_config "credentials:" "  policy_file: $1" "pool:" "  min_idle: 1"
	fi
}

# --- a bad policy file stops start-up with the member named ---
printf '%s\n' '{"default":{},"orgs":{"acme":{"github":{"push":["refs/heads/a","has space"]}}}}' > "$T/bad.json"
base_yaml "$T/bad.json"
out=$("$ORCH_BIN" -n -f "$T/orch.yaml" 2>&1); rc=$?
check "a bad policy file is refused at start" [ $rc -ne 0 ]
check "... naming the file and the member" contains <(echo "$out") "credentials.policy_file: $T/bad.json: orgs.acme.github.push[1]: must be a string"
printf '%s\n' '{"default":{"github":{"api":"repos"}}}' > "$T/bad2.json"
sed -i "s#policy_file: .*#policy_file: $T/bad2.json#" "$T/orch.yaml"
out=$("$ORCH_BIN" -n -f "$T/orch.yaml" 2>&1)
check "... an unknown api mode too" contains <(echo "$out") 'default.github.api: must be "repositories" or "all"'
sed -i "s#policy_file: .*#policy_file: $T/missing.json#" "$T/orch.yaml"
out=$("$ORCH_BIN" -n -f "$T/orch.yaml" 2>&1)
check "... and a missing one" contains <(echo "$out") "$T/missing.json: No such file or directory"
sed -i "s#policy_file: .*#policy_file: $T/policy.json#" "$T/orch.yaml"
check "the good policy file passes -n" "$ORCH_BIN" -n -f "$T/orch.yaml"
check "orch starts ($ORCH_RT runtime)" orch_start
check "... and logs the policies it read" contains "$ORCH_LOG" "credential policies from $T/policy.json: default set, 1 orgs"
# The warm pool's member: sessions below claim it (the record and the
# registration are made at the claim, with the session's policy).
pool_ready() { grep -q "warm pool member ready" "$ORCH_LOG"; }
check "a warm sandbox is ready" wait_until 60 pool_ready

post() { local b=$1; shift; rest POST /v1/sessions -H "Content-Type: application/json" "$@" -d "$b"; }
put() { rest PUT "/v1/sessions/$1/policy" -H 'Content-Type: application/json' -d "$2" -w '\n%{http_code}'; }
code_of() { tail -n1 <<<"$1"; }
# answered OUT CODE [TEXT]: OUT (body, then the status line) has CODE and
# its body holds TEXT.
answered() {
	[ "$(tail -n1 <<<"$1")" = "$2" ] || { echo "# status $(tail -n1 <<<"$1"): $1" >&2; return 1; }
	[ -z "${3:-}" ] || sed '$d' <<<"$1" | grep -qF -- "$3" || { echo "# body: $1" >&2; return 1; }
}
body_of() { sed '$d' <<<"$1"; }
label_of() {	# label_of SESSION: the policy label of its sandbox's record
	if [ "$ORCH_RT" = local ]; then
		sbx list --json | python3 -c 'import json,sys
for s in json.load(sys.stdin):
    if s["labels"].get("session")==sys.argv[1]: print(s["labels"].get("policy"))' "$1"
	else
		python3 -c 'import json,sys,glob
for f in glob.glob(sys.argv[2] + "/*/meta.json"):
    l = json.load(open(f)).get("labels", {})
    if l.get("session") == sys.argv[1]: print(l.get("policy"))' "$1" "$ORCH_STATE"
	fi
}
canon() { python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]), sort_keys=True, separators=(",", ":")))' "$1"; }
# registrations the proxy logged for sandbox ID ("registered" or "updated")
nreg() { grep -cE "sandbox=$1 (registered|updated)" "$PX_DIR/proxy.log"; }

# --- REST create with a policy: combined with the operator's (org acme) ---
P1='{"github":{"repositories":["acme/app"],"permissions":{"contents":"write"},"push":["refs/heads/agent/task-1"],"protect":["refs/heads/main","refs/tags/**"],"api":"repositories"}}'
W1=$(canon '{"github":{"api":"repositories","permissions":{"contents":"write"},"protect":["refs/heads/main","refs/tags/**"],"push":["refs/heads/agent/task-1"],"repositories":["acme/app"]},"gitlab":'"$ACME_GL"'}')
out=$(post '{"id":"pol-1","org":"acme","policy":'"$P1"'}')
check "REST create with a policy" eq "$(j 'd["state"]' <<<"$out")" '"running"'
check "the session JSON shows it, with the operator's gitlab section" eq "$(j 'd["policy"]' <<<"$out")" "$W1"
check "GET shows it" eq "$(rest GET /v1/sessions/pol-1 | j 'd["policy"]')" "$W1"
check "the list shows it" eq "$(rest GET '/v1/sessions?org=acme' | j '[s["policy"] for s in d["sessions"] if s["id"] == "pol-1"][0]')" "$W1"
check "the record holds it as the label policy" eq "$(canon "$(label_of pol-1)")" "$W1"
check "... the sandbox was a warm one, claimed" contains "$ORCH_LOG" "session=pol-1 sandbox=$(sbx_of pol-1) claimed from pool"
sb1=$(sbx_of pol-1)
check "the sandbox is registered at the real proxy" wait_until 10 test "$(nreg "$sb1")" -ge 1
stats_check "the sandbox's policy" "$sb1" "$W1"

# --- refused creates: the message names the member; nothing is made ---
n0=$(nsandboxes)
out=$(post '{"id":"pol-bad","org":"acme","policy":{"github":{"push":["refs/heads/agent/x","a b"]}}}' -w '\n%{http_code}')
check "a malformed policy: 400" eq "$(code_of "$out")" 400
check "... naming the member" contains <(body_of "$out") 'policy.github.push[1]: must be a string of 1-200 printable ASCII'
out=$(post '{"id":"pol-bad","org":"acme","policy":{"github":{"pushh":[]}}}' -w '\n%{http_code}')
check "an unknown member: 400 naming it" answered "$out" 400 "policy.github: unknown member 'pushh'"
out=$(post '{"id":"pol-bad","org":"acme","policy":{"github":{"repositories":["evil/app"]}}}' -w '\n%{http_code}')
check "wider than the operator's: 400" eq "$(code_of "$out")" 400
check "... naming the member and whose" contains <(body_of "$out") "policy.github.repositories[0]: \\\"evil/app\\\" is not within the repositories of the operator's policy"
out=$(post '{"id":"pol-bad","org":"acme","policy":{"github":{"repositories":["acme/app"],"permissions":{"contents":"write"},"push":["refs/heads/main"],"protect":["refs/heads/main","refs/tags/**"],"api":"repositories"}}}' -w '\n%{http_code}')
check "a push pattern wider than the operator's: 400" answered "$out" 400 'policy.github.push[0]'
out=$(post '{"id":"pol-bad","policy":"all"}' -w '\n%{http_code}')
check "a policy that is not an object: 400" answered "$out" 400 'policy: must be an object'
out=$(post '{"id":"pol-bad","policy":{"github":{"push":["a\u0000b"]}}}' -w '\n%{http_code}')
check "a NUL in an entry: 400" answered "$out" 400 'policy.github.push[0]: must be'
check "no session or sandbox came of them" bash -c "[ $(nsandboxes) = $n0 ] && [ \"\$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $ORCH_KEY' $ORCH_URL/v1/sessions/pol-bad)\" = 404 ]"

# A create that fails (no such image) keeps nothing of its policy: a
# second create may ask for a wider one (within the operator's).
out=$(post '{"id":"pol-fail","org":"acme","image":"no-such-image","policy":'"$P1"'}' -w '\n%{http_code}')
check "a create that fails: 4xx" test "$(code_of "$out")" -ge 400
ACME_GH=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["orgs"]["acme"]["github"]))' "$T/policy.json")
out=$(post '{"id":"pol-fail","org":"acme","policy":{"github":'"$ACME_GH"'}}' -w '\n%{http_code}')
check "... then a create with a wider policy (within the operator's): 201" answered "$out" 201 '"acme/*"'
rest DELETE /v1/sessions/pol-fail >/dev/null

# --- without a policy, the operator's applies: org, else default ---
out=$(post '{"id":"pol-org","org":"acme"}')
check "no policy, org acme: the org's" eq "$(j 'd["policy"]' <<<"$out")" "$(canon "$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["orgs"]["acme"]))' "$T/policy.json")")"
out=$(post '{"id":"pol-def","org":"other"}')
check "no policy, another org: the default" eq "$(j 'd["policy"]' <<<"$out")" "$(canon "$DEF")"
out=$(mcp_post -H "X-Session-Id: pol-mcp" -H "X-Org-Id: acme" -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo hi"}}}')
check "a session made over MCP gets its org's policy" eq "$(rest GET /v1/sessions/pol-mcp | j 'd["policy"]')" "$(rest GET /v1/sessions/pol-org | j 'd["policy"]')"
check "... in its record" eq "$(canon "$(label_of pol-mcp)")" "$(rest GET /v1/sessions/pol-org | j 'd["policy"]')"
stats_check "an MCP session's policy" "$(sbx_of pol-mcp)" "$(rest GET /v1/sessions/pol-org | j 'd["policy"]')"
out=$(post '{"id":"pol-def2","org":"other","policy":{"github":{"api":"repositories","protect":["refs/heads/*"]}}}')
check "a narrower policy under the default" eq "$(j 'd["policy"]' <<<"$out")" '{"github":{"api":"repositories","protect":["refs/heads/*"]}}'

# --- MCP cannot set or widen it ---
before=$(rest GET /v1/sessions/pol-1 | j 'd["policy"]')
mcp_session() {	# mcp_session SID ARGS...: POST /mcp with the key and session
	local sid=$1; shift
	mcp_post -H "X-Session-Id: $sid" "$@"
}
out=$(mcp_tool pol-1 create_sandbox '{"policy":{"github":{}}}')
check "create_sandbox refuses a policy argument" contains <(echo "$out") "ERROR"
check "... and the policy is unchanged" eq "$(rest GET /v1/sessions/pol-1 | j 'd["policy"]')" "$before"
out=$(mcp_session pol-1 -H 'X-Policy: {"github":{}}' -H 'X-Credential-Policy: {}' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo hi"}}}')
check "a shell call with X-Policy headers works" contains <(echo "$out") 'hi'
out=$(mcp_tool pol-1 shell '{"command":"echo hi","policy":{"github":{}}}')
check "shell refuses a policy argument" contains <(echo "$out") "ERROR"
check "... the policy is unchanged" eq "$(rest GET /v1/sessions/pol-1 | j 'd["policy"]')" "$before"
n1=$(nreg "$sb1")
out=$(mcp_tool pol-1 create_sandbox '{"fresh_workspace":true}')
check "create_sandbox (a new sandbox)" not_contains <(echo "$out") "ERROR"
sb1b=$(sbx_of pol-1)
check "... it is a new sandbox" [ "$sb1b" != "$sb1" ]
check "... with the same policy" eq "$(rest GET /v1/sessions/pol-1 | j 'd["policy"]')" "$before"
check "... in its record" eq "$(canon "$(label_of pol-1)")" "$before"
stats_check "the new sandbox's policy" "$sb1b" "$before"
out=$(mcp_tool pol-1 clear_session '{}')
check "clear_session" contains <(echo "$out") 'cleared'
out=$(mcp_tool pol-1 shell '{"command":"echo again"}')
check "the session is used again" contains <(echo "$out") 'again'
check "... and kept its policy (not the operator's)" eq "$(rest GET /v1/sessions/pol-1 | j 'd["policy"]')" "$before"
sb1=$(sbx_of pol-1)
check "... in the new sandbox's record" eq "$(canon "$(label_of pol-1)")" "$before"

out=$(mcp_session pol-1 -H 'MCP-Protocol-Version: 2025-06-18' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_status","arguments":{}}}')
check "sandbox_status shows the policy to the model (read only)" eq "$(j 'd["result"]["structuredContent"]["policy"]' <<<"$out")" "$before"
check "... within its outputSchema" not_contains "$ORCH_LOG" "does not match its outputSchema"

# --- PUT narrows, and registers the sandbox again at once ---
P2='{"github":{"repositories":["acme/app"],"permissions":{"contents":"read"},"push":[],"protect":["refs/heads/main","refs/tags/**"],"api":"repositories"}}'
W2=$(canon '{"github":{"api":"repositories","permissions":{"contents":"read"},"protect":["refs/heads/main","refs/tags/**"],"push":[],"repositories":["acme/app"]},"gitlab":'"$ACME_GL"'}')
n1=$(nreg "$sb1")
out=$(put pol-1 "$P2")
check "PUT a narrower policy: 200" eq "$(code_of "$out")" 200
check "... the session JSON shows it" eq "$(body_of "$out" | j 'd["policy"]')" "$W2"
check "... the record holds it" eq "$(canon "$(label_of pol-1)")" "$W2"
check "... the sandbox was registered again at its proxy" wait_until 5 test "$(nreg "$sb1")" -gt "$n1"
check "... the orchestrator logged it" contains "$ORCH_LOG" "session=pol-1 policy narrowed"
stats_check "the narrowed policy" "$sb1" "$W2"
out=$(put pol-1 "$P1")
check "PUT the wider one back: 409" eq "$(code_of "$out")" 409
check "... would_widen" answered "$out" 409 '"code":"would_widen"'
check "... naming the member" answered "$out" 409 'policy.github.permissions.contents: \"write\" is more than the \"read\" of the current policy'
out=$(put pol-1 '{"gitlab":{"projects":["acme/**"],"push":["refs/heads/agent/**"],"delete":true}}')
check "PUT a delete the current policy refuses: 409" answered "$out" 409 'policy.gitlab.delete'
out=$(put pol-1 '{"github":{"repositories":["acme/app"]}}')
check "PUT that leaves out permissions (all of them): 409" answered "$out" 409 'policy.github.permissions: absent'
out=$(put pol-1 '{"github":{"nope":1}}')
check "PUT a malformed policy: 400 naming it" answered "$out" 400 "policy.github: unknown member 'nope'"
out=$(put pol-1 'not json')
check "PUT a body that is not JSON: 400" eq "$(code_of "$out")" 400
check "... the policy is still the narrowed one" eq "$(rest GET /v1/sessions/pol-1 | j 'd["policy"]')" "$W2"
out=$(rest PUT /v1/sessions/pol-1/policy -H 'Content-Type: text/plain' -d "$P2" -w '\n%{http_code}')
check "PUT without a JSON Content-Type: 415" answered "$out" 415
out=$(rest PUT /v1/sessions/pol-1/policy -H 'Content-Type: application/json' -d "$(printf '{"github":{"push":["\xff"]}}')" -w '\n%{http_code}')
check "PUT with bytes that are not UTF-8: 400" answered "$out" 400
big=$(python3 -c 'import json; print(json.dumps({"github": {"push": ["refs/heads/" + "x" * 180 + str(i) for i in range(60)]}}))')
out=$(put pol-1 "$big")
check "PUT of more than 8 KiB: 400 saying so" answered "$out" 400 'more than the 8192 a policy may have'
out=$(put nosuch "$P2")
check "PUT on no session: 404" eq "$(code_of "$out")" 404
check "GET /policy: 405" eq "$(rest GET /v1/sessions/pol-1/policy -o /dev/null -w '%{http_code}')" 405
out=$(put pol-1 "$P2")
check "PUT the same policy again: 200" answered "$out" 200
# --- the narrowed policy holds across every lifecycle event of the sandbox ---
held() {	# held WHAT: the session, its record and its proxy registration hold W2
	local sb
	sb=$(sbx_of pol-1)
	check "$1: the session keeps the narrowed policy" eq "$(rest GET /v1/sessions/pol-1 | j 'd["policy"]')" "$W2"
	check "$1: ... in its sandbox's record" eq "$(canon "$(label_of pol-1)")" "$W2"
	stats_check "$1: ... at its proxy" "$sb" "$W2"
}
check "REST stop" eq "$(rest POST /v1/sessions/pol-1/stop -o /dev/null -w '%{http_code}')" 200
check "... a call resumes the stopped sandbox" contains <(mcp_tool pol-1 shell '{"command":"echo resumed"}') resumed
held "stop and resume"
out=$(mcp_tool pol-1 create_sandbox '{"fresh_workspace":true}')
check "create_sandbox after the narrowing" not_contains <(echo "$out") "ERROR"
held "create_sandbox"
check "clear_session after the narrowing" contains <(mcp_tool pol-1 clear_session '{}') cleared
check "... the session is used again" contains <(mcp_tool pol-1 shell '{"command":"echo again2"}') again2
held "clear_session"
out=$(post '{"id":"pol-1","org":"acme","memory":"768MiB"}' -w '\n%{http_code}')
check "a REST create of the session with other options (the sandbox replaced): 200" eq "$(code_of "$out")" 200
held "REST re-create with other options"
out=$(post '{"id":"pol-1","org":"acme","policy":'"$P2"'}' -w '\n%{http_code}')
check "a REST create of the session with the same policy: 200" eq "$(code_of "$out")" 200
held "REST create with the same policy"
kill "$PX_PID"; wait "$PX_PID" 2>/dev/null
check "the proxy restarts (it forgets every registration)" px_start
px_knows() { px_admin "{\"op\":\"stats\",\"id\":\"$(sbx_of pol-1)\"}" | grep -q '"policy"'; }
check "... the orchestrator registers the sandbox again" wait_until 15 px_knows
held "a proxy restart"
sb1=$(sbx_of pol-1)
out=$(put pol-def '{"github":{"api":"repositories","protect":["refs/heads/main"],"delete":false}}')
check "PUT narrows a session that had the operator's default" answered "$out" 200 '"delete":false'
# A REST create of an existing session narrows too (409 when wider).
out=$(post '{"id":"pol-org","org":"acme","policy":{"github":{"repositories":["other/x"]}}}' -w '\n%{http_code}')
check "REST create of an existing session with a wider policy: 409" eq "$(code_of "$out")" 409

# --- an orchestrator restart keeps every policy ---
pol_org=$(rest GET /v1/sessions/pol-org | j 'd["policy"]')
orch_kill9
check "orch restarts" orch_start
check "after the restart: the narrowed policy" eq "$(rest GET /v1/sessions/pol-1 | j 'd["policy"]')" "$W2"
check "after the restart: the org's policy" eq "$(rest GET /v1/sessions/pol-org | j 'd["policy"]')" "$pol_org"
n1=$(nreg "$sb1")
out=$(mcp_tool pol-1 shell '{"command":"echo after"}')
check "the session works after the restart" contains <(echo "$out") after
stats_check "after the restart" "$sb1" "$W2"
out=$(put pol-1 "$P1")
check "after the restart PUT still refuses to widen" eq "$(code_of "$out")" 409

# --- named credentials (issue 30): the list travels to the proxy, which knows the names ---
out=$(post '{"id":"pol-cred","policy":{"credentials":["model"]}}')
check "a policy naming a credential: the session runs" eq "$(j 'd["state"]' <<<"$out")" '"running"'
check "... its JSON lists the credential in force, never a value" eq "$(j 'd["policy"]["credentials"]' <<<"$out")" '["model"]'
check "... no value anywhere in the reply" not_contains <(echo "$out") "$(cat "$T/model.key")"
stats_check "the credentials list reached the proxy" "$(sbx_of pol-cred)" "$(j 'd["policy"]' <<<"$out")"
ph1=$(mcp_tool pol-cred shell '{"command":"echo ph=$MODEL_API_KEY"}' | grep -o 'ph=[A-Z0-9]*' | head -n 1)
check "the sandbox's shell has the credential's variable, set to a placeholder" \
	bash -c "grep -Eq '^ph=PXC[A-Z2-7]{29}\$' <<<'$ph1'"
check "... never the value" bash -c "! grep -qF '$(cat "$T/model.key")' <<<'$ph1'"
post '{"id":"pol-cred4","policy":{"credentials":["model"]}}' >/dev/null
ph4=$(mcp_tool pol-cred4 shell '{"command":"echo ph=$MODEL_API_KEY"}' | grep -o 'ph=[A-Z0-9]*' | head -n 1)
check "another session's sandbox gets another placeholder" bash -c "[ -n '$ph4' ] && [ '$ph4' != '$ph1' ]"
rest DELETE /v1/sessions/pol-cred4 >/dev/null
ph0=$(mcp_tool pol-1 shell '{"command":"echo ph=${MODEL_API_KEY:-none}"}' | grep -o 'ph=[A-Za-z0-9]*' | head -n 1)
check "a session without the credential has no such variable" eq "$ph0" "ph=none"
out=$(post '{"id":"pol-cred2","policy":{"credentials":["nosuch"]}}')
# The proxy refuses the register: the sandbox gets no egress at all (closed,
# as for any failed attach), and the log says why.
check "a credential no addon declares: the proxy refuses the register, the log says why" \
	contains "$ORCH_LOG" "refused register: register: policy.credentials names nosuch, which no addon declares"
check "... and that sandbox is not registered at the proxy" \
	bash -c "! grep -qE 'sandbox=$(sbx_of pol-cred2) (registered|updated) .*policy=yes' '$PX_DIR/proxy.log'"
rest DELETE /v1/sessions/pol-cred2 >/dev/null
out=$(post '{"id":"pol-cred3","policy":{"credentials":["Model"]}}' -w '\n%{http_code}')
check "a malformed credential name: 400 naming the member" answered "$out" 400 'policy.credentials[0]: a credential name'
rest DELETE /v1/sessions/pol-cred >/dev/null

# --- REST DELETE ends it: the record goes with its policy ---
out=$(rest DELETE /v1/sessions/pol-1 -o /dev/null -w '%{http_code}')
check "REST DELETE" eq "$out" 200
gone_at_proxy() { ! px_admin "{\"op\":\"stats\",\"id\":\"$sb1\"}" | grep -qF "\"$sb1\""; }
check "REST DELETE deregisters the sandbox at its proxy (which revokes its App token: 25)" wait_until 10 gone_at_proxy
out=$(post '{"id":"pol-1","org":"acme"}')
check "the same id again is a new session with the org's policy" eq "$(j 'd["policy"]' <<<"$out")" "$pol_org"
for s in pol-1 pol-org pol-def pol-def2 pol-mcp; do rest DELETE "/v1/sessions/$s" >/dev/null; done
no_session_sandbox() { local x; for x in pol-1 pol-org pol-def pol-def2 pol-mcp pol-fail; do [ -z "$(sbx_of $x)" ] || return 1; done; }
check "no session's sandbox left (the warm one stays)" wait_until 20 no_session_sandbox
orch_stop

# --- the kubernetes runtime: the same register op and re-registration ---
if [ -f "$TOP/tests/k8s/lib.sh" ] && [ -x "$BIN/orchestrator/k8sctl" ]; then
	bash "$0" --k8s || fail "k8s part" "see the lines above"
else
	skip "k8s part" "no kubernetes runtime in this build"
fi
