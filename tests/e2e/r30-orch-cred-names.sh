#!/usr/bin/env bash
# r30-orch-cred-names.sh: the named credentials in force for a session
# (issue 30), listed by name in sandbox_status (structuredContent, checked
# by the official SDK client against the outputSchema, and its text) and
# in the REST session JSON, through the real orchestrator and egress proxy
# with local sandboxes:
#   - a session whose policy names credentials lists exactly those, a
#     session without a list the proxy's defaults, one with an empty list
#     none: each with its name, form, hosts, the variables set to its
#     placeholder and the client files written for it, and whether the
#     policy or the defaults chose them;
#   - no secret value and no placeholder anywhere in those outputs (the
#     placeholders are in the sandboxes' environment: the scan would
#     find them);
#   - a policy change (PUT .../policy, running: registered again) replaces
#     the list; on a stopped session the list is dropped until the start
#     registers it again, then it is the new policy's;
#   - the fake and kubernetes runtimes (child runs, --fake and --k8s; for
#     kubernetes the fake API server and the stand-in proxy admin) list
#     the same.
. "$(dirname "$0")/../lib/common.sh"

PH_RE='PXC[A-Z2-7]{29}'
# no_leak LABEL FILE SECRETS...: FILE holds no placeholder and no secret.
no_leak() {
	local label=$1 f=$2 s
	shift 2
	if grep -qE "$PH_RE" "$f"; then
		fail "$label: no placeholder" "$(grep -oE "$PH_RE" "$f" | head -n 1)"
		return
	fi
	for s in "$@"; do
		if grep -qF -- "$s" "$f"; then
			fail "$label: no secret value" "${s:0:8}... found"
			return
		fi
	done
	ok "$label: no secret value, no placeholder"
}
# creds JSON: the credentials list, sorted by name, env sorted (canonical)
creds() { jq -rc 'if has("credentials") then [.credentials[] | .env |= sort] | sort_by(.name) else "absent" end' 2>/dev/null; }
from() { jq -r '.credentials_from // "absent"' 2>/dev/null; }

# ---- the kubernetes runtime (child run): the stand-in proxy admin ----
if [ "${1:-}" = --k8s ]; then
	. "$TOP/tests/k8s/lib.sh"
	printf '%s\n' '{"npm":{"form":"bearer","hosts":["npm.acme.test"],"env":["NPM_TOKEN"],"client":{"npm":"https://npm.acme.test/","scope":"@acme"}},"s3":{"form":"sigv4","hosts":["s3.test"],"env":["AWS_SECRET_ACCESS_KEY"],"client":{"aws":"default","region":"eu-west-1"},"default":true},"openai":{"form":"bearer","hosts":["api.openai.test"],"env":["OPENAI_API_KEY"],"default":true}}' >"$T/k8s-creds.json"
	K8S_POD_CMD="exec python3 $K8S_DIR/fake_proxy_admin.py \$ADMIN_PORT $T/admin-token $T/proxy-record.jsonl $T/k8s-creds.json" k8s_setup
	k8s_orch_setup
	check "k8s: orchestrator starts" k8s_orch_start
	V='-H MCP-Protocol-Version:2025-06-18'
	orch_rest POST /v1/sessions -d '{"id":"cn-k","policy":{"credentials":["npm","s3"]}}' >"$T/k-create.json"
	orch_rest GET /v1/sessions/cn-k >"$T/k-get.json"
	# shellcheck disable=SC2086
	mcp_raw cn-k sandbox_status '{}' $V >"$T/k-status.json"
	want='[{"name":"npm","form":"bearer","hosts":["npm.acme.test"],"env":["NPM_TOKEN"],"files":[".npmrc"]},{"name":"s3","form":"sigv4","hosts":["s3.test"],"env":["AWS_SECRET_ACCESS_KEY"],"files":[".aws/credentials",".aws/config"]}]'
	check "k8s: REST lists the policy's credentials" test "$(creds <"$T/k-get.json")" = "$want"
	check "k8s: ... from the policy" test "$(from <"$T/k-get.json")" = policy
	check "k8s: sandbox_status lists the same" \
		test "$(jq -c '.result.structuredContent' "$T/k-status.json" | creds)" = "$want"
	orch_rest POST /v1/sessions -d '{"id":"cn-kd"}' >/dev/null
	orch_rest GET /v1/sessions/cn-kd >"$T/kd-get.json"
	want='[{"name":"openai","form":"bearer","hosts":["api.openai.test"],"env":["OPENAI_API_KEY"],"files":[]},{"name":"s3","form":"sigv4","hosts":["s3.test"],"env":["AWS_SECRET_ACCESS_KEY"],"files":[".aws/credentials",".aws/config"]}]'
	check "k8s: a session without a list: the defaults" test "$(creds <"$T/kd-get.json")" = "$want"
	check "k8s: ... said so" test "$(from <"$T/kd-get.json")" = defaults
	orch_rest PUT /v1/sessions/cn-k/policy -d '{"credentials":["npm"]}' >"$T/k-put.json"
	orch_rest GET /v1/sessions/cn-k >"$T/k-get2.json"
	# shellcheck disable=SC2086
	mcp_raw cn-k sandbox_status '{}' $V >"$T/k-status2.json"
	check "k8s: after a policy change the list follows (REST)" \
		test "$(creds <"$T/k-get2.json" | jq -c '[.[].name]')" = '["npm"]'
	check "k8s: ... and sandbox_status" \
		test "$(jq -c '.result.structuredContent' "$T/k-status2.json" | creds | jq -c '[.[].name]')" = '["npm"]'
	check "k8s: the stand-in saw the narrowed policy registered" test "$(jq -sc \
		'[.[] | select(.op == "register" and .attrs.session == "cn-k")] | last | .policy.credentials' \
		"$T/proxy-record.jsonl")" = '["npm"]'
	cat "$T"/k-*.json "$T"/kd-*.json >"$T/k-all.out"
	no_leak "k8s: the outputs" "$T/k-all.out"
	orch_rest DELETE /v1/sessions/cn-k >/dev/null
	orch_rest DELETE /v1/sessions/cn-kd >/dev/null
	k8s_no_violations
	exit 0
fi

# The proxy with four named credentials, two of them defaults.
proxy_up() {
	. "$TOP/tests/lib/fakegit.sh"
	. "$TOP/tests/lib/proxy.sh"
	fx_pki && fx_tokens || { fail "fixtures"; exit 1; }
	GH_PORT=$(free_port) API_PORT=$(free_port) GL_PORT=$(free_port)
	rnd() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
	NPM_SEC=npm-REAL-$(rnd) PYPI_SEC=pypi-REAL-$(rnd) OAI_SEC=sk-REAL-$(rnd)
	AWS_KID=AKIA$(rnd | tr a-f A-F | cut -c1-16) AWS_SEC=aws-REAL-$(rnd)
	SECRETS=("$NPM_SEC" "$PYPI_SEC" "$OAI_SEC" "$AWS_KID" "$AWS_SEC")
	printf '%s\n' "$NPM_SEC" >"$T/npm.sec"
	printf '%s\n' "$PYPI_SEC" >"$T/pypi.sec"
	printf '%s\n' "$OAI_SEC" >"$T/oai.sec"
	printf '%s\n' "$AWS_KID" >"$T/aws.kid"
	printf '%s\n' "$AWS_SEC" >"$T/aws.sec"
	cat >"$T/creds.lua" <<EOF
return { name = "credlist", credentials = {
  { name = "npm", form = "bearer", secret = "file:$T/npm.sec", hosts = { "npm.acme.test" },
    env = { "NPM_TOKEN" }, client = { npm = "https://npm.acme.test/", scope = "@acme" } },
  { name = "pypi", form = "basic", user = "ci-bot", secret = "file:$T/pypi.sec",
    hosts = { "pypi.acme.test" }, client = { pip = "https://pypi.acme.test/simple/" } },
  { name = "openai", form = "bearer", secret = "file:$T/oai.sec", hosts = { "api.openai.test" },
    default = true, env = { "OPENAI_API_KEY" } },
  { name = "aws-dev", form = "sigv4", key_id = "file:$T/aws.kid", secret = "file:$T/aws.sec",
    hosts = { "s3.amazonaws.test", "*.s3.amazonaws.test" }, regions = { "us-east-1" },
    services = { "s3" }, default = true,
    env = { "AWS_ACCESS_KEY_ID=key_id", "AWS_SECRET_ACCESS_KEY" }, client = { aws = "default" } },
} }
EOF
	PX_ADDONS="[$T/creds.lua]" px_config && px_start || { fail "proxy start"; exit 1; }
	ok "proxy start (four named credentials, two defaults)"
}
W_NPM='{"name":"npm","form":"bearer","hosts":["npm.acme.test"],"env":["NPM_TOKEN"],"files":[".npmrc"]}'
W_PYPI='{"name":"pypi","form":"basic","hosts":["pypi.acme.test"],"env":[],"files":[".config/pip/pip.conf"]}'
W_OAI='{"name":"openai","form":"bearer","hosts":["api.openai.test"],"env":["OPENAI_API_KEY"],"files":[]}'
W_AWS='{"name":"aws-dev","form":"sigv4","hosts":["s3.amazonaws.test","*.s3.amazonaws.test"],"env":["AWS_ACCESS_KEY_ID","AWS_SECRET_ACCESS_KEY"],"files":[".aws/credentials",".aws/config"]}'

# both_list LABEL SID WANT FROM: REST GET and sandbox_status list WANT
# (canonical, "absent" for none) from FROM; outputs kept in $T/out-*.
both_list() {
	local label=$1 sid=$2 want=$3 wfrom=$4 n
	n=$(ls "$T"/out-* 2>/dev/null | wc -l)
	rest GET "/v1/sessions/$sid" >"$T/out-$n-get.json"
	mcp_call2 "$sid" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_status","arguments":{}}}' >"$T/out-$n-mcp.json"
	jq -c '.result.structuredContent' "$T/out-$n-mcp.json" >"$T/out-$n-sc.json"
	check "$label: REST lists them" test "$(creds <"$T/out-$n-get.json")" = "$want" ||
		{ sed 's/^/# /' "$T/out-$n-get.json"; echo; } >&2
	check "$label: sandbox_status lists them" test "$(creds <"$T/out-$n-sc.json")" = "$want" ||
		{ sed 's/^/# /' "$T/out-$n-mcp.json"; echo; } >&2
	check "$label: chosen by: $wfrom (REST, sandbox_status)" \
		test "$(from <"$T/out-$n-get.json") $(from <"$T/out-$n-sc.json")" = "$wfrom $wfrom"
}

# ---- the fake runtime (child run) ----
if [ "${1:-}" = --fake ]; then
	export ORCH_TEST_RUNTIME=fake
	proxy_up
	. "$TOP/tests/mcp/orch-lib.sh"
	ORCH_FAKE_EXTRA="proxy_admin: $PX_ADMIN
  proxy_addr: 127.0.0.1:$PX_PORT
  proxy_ca: $PX_CA" orch_config
	check "fake: orch starts" orch_start
	rest POST /v1/sessions -H 'Content-Type: application/json' \
		-d '{"id":"cn-f","policy":{"credentials":["npm","pypi"]}}' >"$T/out-f-create.json"
	both_list "fake: policy [npm, pypi]" cn-f "[$W_NPM,$W_PYPI]" policy
	rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"cn-fd"}' >/dev/null
	both_list "fake: no list (defaults)" cn-fd "[$W_AWS,$W_OAI]" defaults
	ph=$(mcp_tool cn-fd shell '{"command":"echo $OPENAI_API_KEY"}' | grep -oE "$PH_RE")
	check "fake: the default's variable is a placeholder in the sandbox" test -n "$ph"
	rest PUT /v1/sessions/cn-f/policy -H 'Content-Type: application/json' \
		-d '{"credentials":["pypi"]}' >"$T/out-f-put.json"
	check "fake: the PUT's answer lists the new policy's" test "$(creds <"$T/out-f-put.json")" = "[$W_PYPI]"
	both_list "fake: after the policy change" cn-f "[$W_PYPI]" policy
	cat "$T"/out-* >"$T/f-all.out"
	no_leak "fake: the outputs" "$T/f-all.out" "${SECRETS[@]}"
	rest DELETE /v1/sessions/cn-f >/dev/null
	rest DELETE /v1/sessions/cn-fd >/dev/null
	exit 0
fi

if [ "$(id -u)" != 0 ] || ! command -v bwrap >/dev/null 2>&1; then
	skip "credential names (local runtime)" "the local runtime needs root and bwrap"
	bash "$0" --fake; rc=$?
	bash "$0" --k8s || rc=1
	exit $rc
fi
if [ -z "${E2E_NETNS:-}" ]; then
	unshare --net env E2E_NETNS=1 bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@" &
	child=$!
	on_exit "kill $child 2>/dev/null; wait $child 2>/dev/null"
	wait "$child"
	exit $?
fi
export ORCH_TEST_RUNTIME=local
command -v jq >/dev/null 2>&1 || { fail "missing jq" "install it (make deps)"; exit 1; }
PY=/usr/bin/python3
proxy_up
reg=$(px_admin '{"op":"register","id":"cn-probe","secret":"0123456789abcdef"}')
check "the proxy's register reply carries placeholders (what must not be listed)" \
	grep -qE "$PH_RE" <<<"$reg"
px_admin '{"op":"deregister","id":"cn-probe"}' >/dev/null

. "$TOP/tests/mcp/orch-lib.sh"
ORCH_LOCAL_YAML="$ORCH_LOCAL_YAML
  proxy_admin_socket: $PX_ADMIN
  proxy_ca_cert: $PX_CA"
printf '%s\n' "$ORCH_LOCAL_YAML" >"$T/rt.yaml"
orch_config "pool:" "  min_idle: 1"
check "orch starts (local runtime)" orch_start || tail -n 20 "$T/orch.stderr" "$ORCH_LOG" | sed "s/^/# /" >&2
pool_ready() { grep -q "warm pool member ready" "$ORCH_LOG"; }
check "a warm sandbox is ready" wait_until 60 pool_ready

# ---- a policy naming two; the defaults; an empty list ----
rest POST /v1/sessions -H 'Content-Type: application/json' \
	-d '{"id":"cn-pol","policy":{"credentials":["npm","pypi"]}}' >"$T/out-create-pol.json"
check "the policy session's create answer lists them" \
	test "$(creds <"$T/out-create-pol.json")" = "[$W_NPM,$W_PYPI]"
check "... (claimed from the warm pool: the claim's register)" \
	grep -q "session=cn-pol sandbox=.* claimed from pool" "$ORCH_LOG"
both_list "policy [npm, pypi]" cn-pol "[$W_NPM,$W_PYPI]" policy
rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"cn-def"}' >"$T/out-create-def.json"
both_list "no list: the proxy's defaults" cn-def "[$W_AWS,$W_OAI]" defaults
rest POST /v1/sessions -H 'Content-Type: application/json' \
	-d '{"id":"cn-none","policy":{"credentials":[]}}' >"$T/out-create-none.json"
both_list "an empty list: none" cn-none "[]" policy

txt=$(mcp_tool cn-pol sandbox_status '{}')
printf '%s\n' "$txt" >"$T/out-text-pol.txt"
check "sandbox_status's text names them" grep -qF \
	"npm (bearer; hosts npm.acme.test; env NPM_TOKEN; files .npmrc); pypi (basic; hosts pypi.acme.test; env -; files .config/pip/pip.conf)" \
	<<<"$txt"
check "... and that the policy named them" grep -qF "named by the session's policy" <<<"$txt"
mcp_tool cn-def sandbox_status '{}' >"$T/out-text-def.txt"
check "the defaults' text says so" grep -qF "(the proxy's defaults; the sandbox holds no value, only stand-ins): " "$T/out-text-def.txt"
check "... and names the sigv4 one with its two variables and files" grep -qF \
	"aws-dev (sigv4; hosts s3.amazonaws.test, *.s3.amazonaws.test; env AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; files .aws/credentials, .aws/config)" \
	"$T/out-text-def.txt"
mcp_tool cn-none sandbox_status '{}' >"$T/out-text-none.txt"
check "an empty list: the text says none" grep -qF "policy; the sandbox holds no value, only stand-ins): none." "$T/out-text-none.txt"
rest GET "/v1/sessions" >"$T/out-list.json"
check "the session list carries them too" \
	test "$(jq -c '[.sessions[] | select(.id == "cn-def") | .credentials[].name] | sort' "$T/out-list.json")" = '["aws-dev","openai"]'

# The placeholders are in the sandboxes (so the scan below can find one).
env_pol=$(mcp_tool cn-pol shell '{"command":"echo npm=$NPM_TOKEN; cat $HOME/.npmrc"}')
env_def=$(mcp_tool cn-def shell '{"command":"echo oai=$OPENAI_API_KEY aws=$AWS_ACCESS_KEY_ID"}')
check "the policy session's sandbox has the npm placeholder" grep -qE "^npm=$PH_RE\$" <<<"$env_pol"
check "the defaults session's sandbox has the openai and aws placeholders" \
	grep -qE "^oai=$PH_RE aws=$PH_RE\$" <<<"$env_def"

# The official SDK client validates structuredContent against the
# outputSchema (callTool throws on a mismatch).
sdk_status() {
	(cd "$TOP/tests/mcp" && timeout 60 node --input-type=module -e '
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
const [url, key, sid] = process.argv.slice(1);
const t = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: {
  Authorization: `Bearer ${key}`, "X-Session-Id": sid } } });
const c = new Client({ name: "r30-cred-names", version: "1.0.0" });
await c.connect(t);
await c.listTools();
const r = await c.callTool({ name: "sandbox_status", arguments: {} });
console.log(JSON.stringify(r.structuredContent.credentials.map((x) => x.name).sort()));
await c.close();' "$ORCH_URL/mcp" "$ORCH_KEY" "$1")
}
if command -v node >/dev/null 2>&1 && [ -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	out=$(sdk_status cn-def 2>&1)
	check "the SDK client takes sandbox_status with credentials (outputSchema)" \
		test "$out" = '["aws-dev","openai"]' || printf '# %s\n' "$out" >&2
else
	skip "SDK client check" "node or tests/mcp/node_modules missing (make deps)"
fi

# ---- a policy change follows ----
nw0=$(grep -c "session=cn-pol .*client files written=" "$ORCH_LOG")
mcp_tool cn-pol shell '{"command":"printf stale > $HOME/.npmrc"}' >/dev/null
rest PUT /v1/sessions/cn-pol/policy -H 'Content-Type: application/json' \
	-d '{"credentials":["npm"]}' >"$T/out-put-pol.json"
check "the PUT's answer lists the narrowed policy's" test "$(creds <"$T/out-put-pol.json")" = "[$W_NPM]"
check "the PUT wrote the client files again (the policy's)" \
	test "$(grep -c "session=cn-pol .*client files written=" "$ORCH_LOG")" -gt "$nw0"
npmrc=$(mcp_tool cn-pol shell '{"command":"cat $HOME/.npmrc"}')
check "... ~/.npmrc has the npm placeholder again" grep -qE "_authToken=$PH_RE" <<<"$npmrc"
both_list "after narrowing to [npm]" cn-pol "[$W_NPM]" policy
reg=$(px_admin '{"op":"stats"}')
check "the proxy has it registered" grep -qF "$(sbx_of cn-pol)" <<<"$reg"
rest PUT /v1/sessions/cn-def/policy -H 'Content-Type: application/json' \
	-d '{"credentials":["openai"]}' >"$T/out-put-def.json"
both_list "the defaults session given a list [openai]" cn-def "[$W_OAI]" policy
# stopped: dropped (not known) until the start registers it again
rest POST /v1/sessions/cn-pol/stop >/dev/null
rest PUT /v1/sessions/cn-pol/policy -H 'Content-Type: application/json' \
	-d '{"credentials":[]}' >"$T/out-put-stopped.json"
check "a policy change while stopped: the session is stopped" \
	test "$(jq -r .state "$T/out-put-stopped.json")" = stopped
both_list "stopped, policy changed: not listed" cn-pol absent absent
rest POST /v1/sessions/cn-pol/start >"$T/out-start.json"
both_list "started again: the new policy's (none)" cn-pol "[]" policy

# ---- nothing secret in any of it ----
cat "$T"/out-* >"$T/all.out"
check "the outputs were collected ($(wc -c <"$T/all.out") bytes)" test -s "$T/all.out"
no_leak "REST and MCP outputs" "$T/all.out" "${SECRETS[@]}"
for s in cn-pol cn-def cn-none; do rest DELETE "/v1/sessions/$s" >/dev/null; done

# ---- the fake and kubernetes runtimes ----
bash "$0" --fake || fail "fake runtime part" "see the lines above"
bash "$0" --k8s || fail "kubernetes runtime part" "see the lines above"
exit 0
