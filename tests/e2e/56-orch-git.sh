#!/usr/bin/env bash
# 56-orch-git.sh: end to end. Inside a sandbox created over MCP, git clone
# and git push to the local fake github.com succeed through the egress
# proxy (which injects the token), and the token appears nowhere in the
# sandbox. The sandbox is on the fake runtime (the agent on the host, which
# has git; the busybox test image has none), registered with the proxy by
# the orchestrator with a per-sandbox secret.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"

fx_all || { fail "fixtures start"; exit 1; }
px_config && px_start || { fail "proxy start"; exit 1; }
ok "proxy start"
ORCH_TEST_RUNTIME=fake
. "$TOP/tests/mcp/orch-lib.sh"
ORCH_FAKE_EXTRA="proxy_admin: $PX_ADMIN
  proxy_addr: 127.0.0.1:$PX_PORT
  proxy_ca: $PX_CA" orch_config
check "orch starts" orch_start

out=$(mcp_tool git-s shell '{"command":"env | grep -c _PROXY; git --version"}')
check "sandbox has proxy settings" contains <(echo "$out") 'git version'
cmd='cd "$HOME" && git clone -q https://github.com/e2e-org/repo.git repo && cd repo && cat README && echo from-mcp >> README && git -c user.email=agent@example.com -c user.name=agent commit -qam "change from mcp" && git push -q origin main && echo pushed-ok'
out=$(mcp_tool git-s shell "$(jq -cn --arg c "$cmd" '{command: $c, timeout: 120}')")
echo "$out"
check "git clone over MCP" contains <(echo "$out") 'hello from e2e-org/repo.git'
check "git push over MCP" contains <(echo "$out") 'pushed-ok'
check "push landed upstream" bash -c "git -C $T/git/github/e2e-org/repo.git log -1 --format=%s main | grep -qx 'change from mcp'"
check "registered with the proxy under its session" contains "$ORCH_LOG" "session=git-s sandbox="

# The token is nowhere in the sandbox: not in its environment, files,
# git config or process environments.
out=$(mcp_tool git-s shell '{"command":"env; cat ~/repo/.git/config; git -C ~/repo config -l"}')
check "no token in the sandbox env or git config" not_contains <(echo "$out") "$GH_TOKEN_REAL"
sb=$(sbx_of git-s)
check "no token in the sandbox files" bash -c "! grep -rqF -- '$GH_TOKEN_REAL' '$ORCH_STATE/$sb'"
leak=0
for p in $(grep -lx --null-data "FAKE_SANDBOX_ID=$sb" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
	grep -qF -- "$GH_TOKEN_REAL" "/proc/$p/environ" 2>/dev/null && leak=1
done
check "no token in any sandbox process environment" [ $leak = 0 ]
check "orchestrator key not in the sandbox" not_contains <(echo "$out") "$ORCH_KEY"
out=$(mcp_tool git-s shell '{"command":"git ls-remote https://github.com/e2e-org/repo.git main"}')
check "later calls keep working through the proxy" bash -c "grep -q refs/heads/main <<<'$out'"
