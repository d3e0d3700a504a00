#!/usr/bin/env bash
# 35-agent-posix-sh: images without bash: the agent drives a POSIX sh
# (busybox ash here, dash if present) with the same semantics, and a
# missing --shell falls back.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/agent.sh"

shells=()
[ -x /bin/busybox ] && shells+=(/bin/busybox)
[ -x /bin/dash ] && shells+=(/bin/dash)
if [ ${#shells[@]} -eq 0 ]; then
	skip "POSIX sh" "neither busybox nor dash is installed"
	exit 0
fi
for SH in "${shells[@]}"; do
	n=$(basename "$SH")
	rm -f "$SOCK"
	check "$n: agent starts" start_agent --shell "$SH"
	api GET /v1/health
	check "$n: health names the shell" test "$(j .shell)" = "$SH"
	sh_run 'cd /tmp; K=kept; f() { echo "fn:$1"; }'
	sh_run 'echo "$PWD $K"; f 1; echo err >&2'
	check "$n: state persists" out_is "$(printf '/tmp kept\nfn:1\nerr')"
	sh_run 'echo "unterminated'
	check "$n: syntax error returned" test "$(j '.exit_code != 0 and .shell_restarted == false')" = true
	sh_run 'echo "$K"'
	check "$n: state survives a syntax error" out_is kept
	sh_run 'while :; do :; done; echo not-here' 500
	check "$n: builtin loop timed out" test "$(j '.timed_out == true and (.output | test("not-here") | not)')" = true
	sh_run '(sleep 321) & sleep 322; echo not-here' 500
	check "$n: timeout kills the tree" test "$(j '.timed_out == true and (.output | test("not-here") | not)')" = true
	sleep 0.2
	check "$n: no sleeper left" bash -c '! pgrep -f "sleep 32[12]" >/dev/null'
	sh_run 'sleep 331 & echo $! >'"$T"'/bg.pid'
	sh_run 'sleep 332; echo not-here' 500
	check "$n: an earlier background process survives a timeout" \
	    test "$(j .timed_out)" = true -a -e "/proc/$(cat "$T/bg.pid")"
	kill -9 "$(cat "$T/bg.pid")" 2>/dev/null
	sh_run 'echo "$K"'
	check "$n: state kept after timeouts" out_is kept
	sh_run 'read x; echo "[$x]"'
	check "$n: stdin is EOF" out_is "[]"
	sh_run 'export JV=shell-env'
	id=$(job_start 'echo "$JV $PWD"')
	job_wait "$id"; job_output "$id"
	check "$n: job gets env and cwd" test "$(cat "$T/jobout")" = "shell-env /tmp"
	sh_run 'exit 3'
	check "$n: exit restarts" test "$(j '.shell_restarted == true and .exit_code == 3')" = true
	sh_run 'echo "[${K-}]"'
	check "$n: fresh shell after exit" out_is "[]"
	stop_agent TERM
done

rm -f "$SOCK"
check "missing --shell falls back" start_agent --shell /nonexistent/bash
api GET /v1/health
check "fallback shell is bash or sh" test "$(j '.shell == "/bin/bash" or .shell == "/bin/sh"')" = true
sh_run 'echo fallback-ok'
check "fallback shell works" out_is fallback-ok
stop_agent TERM
