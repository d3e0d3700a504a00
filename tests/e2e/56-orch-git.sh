#!/usr/bin/env bash
# 56-orch-git.sh: end to end. Inside a sandbox created over MCP, git clone
# and git push to the local fake github.com succeed through the egress
# proxy (which injects the token), and the token appears nowhere in the
# sandbox.
#
# On the local runtime (root with bubblewrap) the sandbox is a real one: its
# image is assembled here from the host's own git, git-remote-https and their
# shared libraries over the busybox test image, its only way out is the
# proxy listener inside its network namespace, and the proxy's CA is the
# bundle the runtime installed. Elsewhere it falls back to the fake runtime
# (the agent on the host). The whole test runs in a network namespace of its
# own holding only loopback (unshare --net, which keeps /sys and so the
# cgroups the local runtime needs).
. "$(dirname "$0")/../lib/common.sh"
if [ -z "${E2E_NETNS:-}" ] && [ "$(id -u)" = 0 ]; then
	unshare --net env E2E_NETNS=1 bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@" &
	child=$!
	on_exit "kill $child 2>/dev/null; wait $child 2>/dev/null"
	wait "$child"
	exit $?
fi
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"

fx_all || { fail "fixtures start"; exit 1; }
px_config && px_start || { fail "proxy start"; exit 1; }
ok "proxy start"
. "$TOP/tests/mcp/orch-lib.sh"

# git_image DIR: the busybox test image plus the host's git (hard links where
# the file system allows: the image is only ever a read-only lower layer),
# its https transport and every shared library they load.
git_image() {
	local d=$1 core libs
	core=$(git --exec-path)
	cp -a "$ORCH_BB" "$d" || return 1
	mkdir -p "$d/usr/bin" "$d/usr/share" "$d$(dirname "$core")"
	cp -L "$(command -v git)" "$d/usr/bin/git" || return 1
	cp -al "$core" "$d$core" 2>/dev/null || cp -a "$core" "$d$core" || return 1
	[ -d /usr/share/git-core ] && cp -a /usr/share/git-core "$d/usr/share/"
	# one process per step: spawning is slow on a loaded machine
	libs=$({
		ldd "$(command -v git)" "$core/git-remote-https" "$core/git-remote-http"
		ls /lib/x86_64-linux-gnu/libnss_files.so.* /lib/x86_64-linux-gnu/libresolv.so.* 2>/dev/null
	} | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && ($2 ~ /^\(/ || (NF == 1 && $1 !~ /:$/)) {print $1}' | sort -u)
	[ -n "$libs" ] || return 1
	# shellcheck disable=SC2086
	cp -lL --parents $libs "$d/" 2>/dev/null || cp -L --parents $libs "$d/"
}

if [ "$ORCH_RT" = local ]; then
	t0=$(date +%s%N)
	check "git image assembled from the host's binaries" git_image "$T/gitimg"
	echo "# git image: $(( ($(date +%s%N) - t0) / 1000000 )) ms, $(du -sh "$T/gitimg" | cut -f1)"
	ORCH_LOCAL_YAML="$ORCH_LOCAL_YAML
  proxy_admin_socket: $PX_ADMIN
  proxy_ca_cert: $PX_CA"
	printf '%s\n' "$ORCH_LOCAL_YAML" > "$T/rt.yaml"
	sbx image add gitimg "$T/gitimg" >/dev/null || { fail "image add"; exit 1; }
	orch_config "sandbox:" "  image: gitimg"
else
	ORCH_FAKE_EXTRA="proxy_admin: $PX_ADMIN
  proxy_addr: 127.0.0.1:$PX_PORT
  proxy_ca: $PX_CA" orch_config
fi
check "orch starts ($ORCH_RT runtime)" orch_start

out=$(mcp_tool git-s shell '{"command":"env | grep -c _PROXY; git --version"}')
check "sandbox has git and proxy settings" contains <(echo "$out") 'git version'
cmd='cd "$HOME" && git clone -q https://github.com/e2e-org/repo.git repo && cd repo && cat README && echo from-mcp >> README && git -c user.email=agent@example.com -c user.name=agent commit -qam "change from mcp" && git push -q origin main && echo pushed-ok'
out=$(mcp_tool git-s shell "$(jq -cn --arg c "$cmd" '{command: $c, timeout: 120}')")
echo "$out"
check "git clone over MCP" contains <(echo "$out") 'hello from e2e-org/repo.git'
check "git push over MCP" contains <(echo "$out") 'pushed-ok'
check "push landed upstream" bash -c "git -C $T/git/github/e2e-org/repo.git log -1 --format=%s main | grep -qx 'change from mcp'"
check "registered with the proxy under its session" contains "$ORCH_LOG" "session=git-s sandbox="
sb=$(sbx_of git-s)
if [ "$ORCH_RT" = local ]; then
	out=$(mcp_tool git-s shell '{"command":"git ls-remote --exit-code https://github.com/e2e-org/repo.git main >/dev/null 2>&1 && echo via-proxy; env -u HTTPS_PROXY -u https_proxy git ls-remote https://github.com/e2e-org/repo.git main >/dev/null 2>&1 || echo direct-fails"}')
	check "a real sandbox: only the proxy gets out" bash -c "grep -q via-proxy <<<'$out' && grep -q direct-fails <<<'$out'"
	out=$(mcp_tool git-s shell '{"command":"tr \"\\0\" \" \" < /proc/1/cmdline; echo; ls /proc | grep -c \"^[0-9]\""}')
	check "a real sandbox: pid 1 is its agent, few processes" bash -c "grep -q sandbox-agent <<<'$out' && [ \$(sed -n 2p <<<'$out') -lt 20 ]"
fi

# The token is nowhere in the sandbox: not in its environment, files,
# git config or process environments.
out=$(mcp_tool git-s shell '{"command":"env; cat ~/repo/.git/config; git -C ~/repo config -l; cat /proc/[0-9]*/environ 2>/dev/null | tr \"\\0\" \"\\n\""}')
check "no token in the sandbox env, git config or its processes' env" not_contains <(echo "$out") "$GH_TOKEN_REAL"
check "no token in the sandbox files" bash -c "[ -n '$sb' ] && ! grep -rqF -- '$GH_TOKEN_REAL' '$ORCH_SBX_DIR/$sb'"
leak=0 n=0
for p in $(grep -l --null-data -e "^SANDBOX_ID=$sb\$" -e "^FAKE_SANDBOX_ID=$sb\$" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
	n=$((n + 1))
	grep -qF -- "$GH_TOKEN_REAL" "/proc/$p/environ" 2>/dev/null && leak=1
done
check "no token in any sandbox process environment (seen from the host: $n processes)" [ $leak = 0 ] && [ $n -gt 0 ]
check "orchestrator key not in the sandbox" not_contains <(echo "$out") "$ORCH_KEY"
out=$(mcp_tool git-s shell '{"command":"git ls-remote https://github.com/e2e-org/repo.git main"}')
check "later calls keep working through the proxy" bash -c "grep -q refs/heads/main <<<'$out'"

# Trace context (issue 32, item 4): the W3C traceparent of a 2026-07-28
# call (its _meta) is in the orchestrator's log line, the agent's, and the
# proxy's audit line of the credentialed request the call caused; a REST
# exec's traceparent header the same; a call without one leaves none.
tp=00-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')-00f067aa0ba902b7-01
nb=$(wc -l < "$PX_DIR/audit.jsonl")
curl -s -o "$T/trace.out" -H "Authorization: Bearer $ORCH_KEY" -H 'Content-Type: application/json' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: shell' -H 'X-Session-Id: git-s' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"git ls-remote https://github.com/e2e-org/repo.git main"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"'"$tp"'"}}}' \
    "$ORCH_URL/mcp"
check "trace: the traced call worked" grep -q refs/heads/main "$T/trace.out"
check "trace: the proxy's audit line of its github.com request carries the call's traceparent" \
	bash -c "tail -n +$((nb + 1)) '$PX_DIR/audit.jsonl' | grep 'github.com' | grep -qF '\"traceparent\":\"$tp\"'"
check "trace: the orchestrator's line of the call carries it" grep -q "session=git-s tool=shell .*traceparent=$tp" "$ORCH_LOG"
if [ "$ORCH_RT" = local ]; then
	check "trace: the agent's line of the command carries it" grep -q "shell started traceparent=$tp" "$ORCH_SBX_DIR/$sb/log"
fi
nb=$(wc -l < "$PX_DIR/audit.jsonl")
mcp_tool git-s shell '{"command":"git ls-remote https://github.com/e2e-org/repo.git main"}' >/dev/null
check "trace: a later call without one: its audit lines have none" \
	bash -c "! tail -n +$((nb + 1)) '$PX_DIR/audit.jsonl' | grep -q traceparent"
tp2=00-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')-b7ad6b7169203331-01
rest POST /v1/sessions/git-s/exec -H 'Content-Type: application/json' -H "traceparent: $tp2" \
    -d '{"command":"git ls-remote https://github.com/e2e-org/repo.git main"}' > "$T/trace2.out"
check "trace: a REST exec's traceparent header reaches the proxy's audit line" \
	grep -qF "\"traceparent\":\"$tp2\"" "$PX_DIR/audit.jsonl"
check "trace: and the orchestrator's log" grep -q "session=git-s rest exec traceparent=$tp2" "$ORCH_LOG"
curl -s -o /dev/null -H "Authorization: Bearer $ORCH_KEY" -H 'Content-Type: application/json' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: shell' -H 'X-Session-Id: git-s' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"true"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-zz-bad"}}}' \
    "$ORCH_URL/mcp"
check "trace: a malformed traceparent is ignored (no line names it)" bash -c "! grep -q 'traceparent=00-zz' '$ORCH_LOG'"

# The proxy keeps registrations in memory only: after a kill -9 and a
# restart it knows no sandbox. The orchestrator registers every running
# sandbox again within a few seconds (HEAL_MS), with no call from the
# session needed; its git works again through the same 127.0.0.1:3128.
if [ "$ORCH_RT" = local ]; then
	kill -9 "$PX_PID"; wait "$PX_PID" 2>/dev/null
	px_start || fail "proxy restart"
	known() { px_admin '{"op":"stats"}' | grep -qF "\"$sb\""; }
	check "after a proxy restart the sandbox is registered again, unasked" wait_for 10 known
	check "the orchestrator logged it" wait_for 5 grep -q "sandbox=$sb egress registered again" "$ORCH_LOG"
	out=$(mcp_tool git-s shell '{"command":"git ls-remote https://github.com/e2e-org/repo.git main"}')
	check "git works again through the restarted proxy" bash -c "grep -q refs/heads/main <<<'$out'"
fi

# A session with a credential policy (issue 16), end to end: a trusted REST
# client creates it; inside its sandbox git may push only to agent/**
# branches of e2e-org/repo: main is refused by the proxy in git's own
# words and never reaches the upstream, another repository is refused
# even for a clone; the session JSON shows the policy and MCP cannot
# change it.
fx_bare "$T/git/github/e2e-org/other.git"
pol='{"github":{"repositories":["e2e-org/repo"],"push":["refs/heads/agent/**"],"protect":["refs/heads/main"]}}'
code=$(rest POST /v1/sessions -H 'Content-Type: application/json' -o "$T/pol.json" -w '%{http_code}' \
    -d "{\"id\":\"pol-s\",\"policy\":$pol}")
check "policy session created over REST" test "$code" = 201
check "its session JSON shows the policy" test "$(rest GET /v1/sessions/pol-s | jq -c '.policy.github.push')" = '["refs/heads/agent/**"]'
before=$(git -C "$T/git/github/e2e-org/repo.git" rev-parse main)
cmd='cd "$HOME" && rm -rf pr && git clone -q https://github.com/e2e-org/repo.git pr && cd pr && echo pol >> README && git -c user.email=a@e.test -c user.name=a commit -qam "policy push" && { git push origin HEAD:main 2>&1; echo "main-rc=$?"; } && { git push -q origin HEAD:refs/heads/agent/t1 2>&1; echo "agent-rc=$?"; }'
out=$(mcp_tool pol-s shell "$(jq -cn --arg c "$cmd" '{command: $c, timeout: 120}')")
echo "$out" | sed 's/^/# /'
check "policy: a push to main is refused in git's words" contains <(echo "$out") 'denied by policy'
check "policy: git says remote rejected" contains <(echo "$out") '[remote rejected]'
check "policy: the refused push failed (git's exit status)" bash -c '! grep -q "main-rc=0" <<<"$1"' _ "$out"
check "policy: main upstream unchanged" test "$(git -C "$T/git/github/e2e-org/repo.git" rev-parse main)" = "$before"
check "policy: a push to agent/t1 works" contains <(echo "$out") 'agent-rc=0'
check "policy: agent/t1 landed upstream" bash -c "git -C '$T/git/github/e2e-org/repo.git' log -1 --format=%s agent/t1 | grep -qx 'policy push'"
out=$(mcp_tool pol-s shell '{"command":"git ls-remote https://github.com/e2e-org/other.git 2>&1; echo rc=$?","timeout":60}')
check "policy: another repository is refused" bash -c 'grep -q "denied by policy" <<<"$1" && ! grep -q "rc=0" <<<"$1"' _ "$out"
out=$(mcp_tool git-s shell '{"command":"git ls-remote https://github.com/e2e-org/other.git main >/dev/null 2>&1 && echo other-ok","timeout":60}')
check "a session without a policy still reaches the other repository" contains <(echo "$out") other-ok
out=$(mcp_tool pol-s create_sandbox '{"policy":{"github":{}}}')
check "MCP cannot set a policy (create_sandbox refuses it)" contains <(echo "$out") 'ERROR'
check "the policy is unchanged after that" test "$(rest GET /v1/sessions/pol-s | jq -c '.policy.github.push')" = '["refs/heads/agent/**"]'
