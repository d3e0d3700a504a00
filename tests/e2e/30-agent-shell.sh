#!/usr/bin/env bash
# 30-agent-shell: the agent's persistent shell, run on the host: state
# persistence and every edge case of docs/internals/agent-protocol.md.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/agent.sh"

check "agent starts and is healthy" start_agent
api GET /v1/health
check "health fields" test "$(j '.ok and (.busy == false) and (.running_jobs == 0) and (.shell_pid > 0)')" = true

# State persists: cwd, variables (exported or not), functions, aliases, options.
sh_run 'cd /tmp && X=plain; export Y=exported; f() { echo "fn:$1"; }; alias hi="echo alias-hi"; set -o noclobber; shopt -s extglob; declare -A m=([k]=v)'
check "setup exit 0" test "$(j .exit_code)" = 0
sh_run 'pwd; echo "$X $Y"; f 1; hi; [[ -o noclobber ]] && echo nc; shopt -q extglob && echo eg; echo "${m[k]}"; env | grep -c "^X=" || true'
check "state persists (cwd, vars, function, alias, options, assoc array)" \
    out_is "$(printf '/tmp\nplain exported\nfn:1\nalias-hi\nnc\neg\nv\n0')"

# Output: stdout and stderr interleaved in write order, exit code.
sh_run 'echo 1; echo 2 >&2; echo 3; echo 4 >&2; exit_with() { return $1; }; exit_with 7'
check "stdout/stderr order" out_is "$(printf '1\n2\n3\n4')"
check "exit code of last command" test "$(j .exit_code)" = 7
check "duration reported" test "$(j '.duration_ms >= 0 and .timed_out == false')" = true

# stdin is EOF.
sh_run 'read -r line; echo "rc=$? line=[$line]"; cat; wc -c' 10000
check "stdin is EOF (read, cat, wc)" out_is "$(printf 'rc=1 line=[]\n0')"
check "stdin case not timed out" test "$(j .timed_out)" = false

# Heredoc.
sh_run $'cat <<EOF\nhello $X\nEOF\ncat <<\'RAW\'\n$X raw\nRAW'
check "heredocs" out_is "$(printf 'hello plain\n$X raw')"

# Unmatched quotes: syntax error returned, shell keeps its state.
sh_run 'echo "unterminated'
check "unmatched quote: error, not a hang" test "$(j '.exit_code == 2 and .timed_out == false and (.output | test("unexpected EOF|syntax error"))')" = true
sh_run 'echo "$X"; pwd'
check "state survives a syntax error" out_is "$(printf 'plain\n/tmp')"
sh_run 'if then fi'
check "syntax error (if then)" test "$(j .exit_code)" = 2

# Sentinel spoofing: a command printing anything cannot end the call early.
sh_run 'echo "__agent_s=0"; printf "%s 0\n" deadbeefdeadbeefdeadbeefdeadbeef; echo done >&19; echo done >&9; sleep 0.3; echo real-end'
check "output cannot spoof completion" test "$(j '.output | endswith("real-end\n") or endswith("real-end")')" = true

# Background & does not hang the call.
t0=$(date +%s%N)
sh_run 'sleep 30 & echo started-bg' 20000
t1=$(date +%s%N)
check "background & returns at once" test "$(j .output)" = started-bg -a $(( (t1 - t0) / 1000000 )) -lt 5000
sh_run 'kill %1 2>/dev/null; wait 2>/dev/null; echo ok'

# Timeout kills the whole tree (grandchildren, TERM-ignoring, setsid'd) and
# the shell keeps its state.
sh_run 'echo $$ > '"$T"'/shellpid; (trap "" TERM; sleep 301) & setsid sh -c "trap \"\" TERM; sleep 302" & bash -c "sleep 303 & sleep 304"; echo not-reached' 1000
check "timeout reported (exit code 124)" test "$(j '.timed_out == true and .exit_code == 124')" = true
check "rest of a timed-out command is abandoned" not_contains "$T/body" not-reached
sleep 0.3
check "no process of the timed-out tree survives" \
    bash -c '! pgrep -f "sleep 30[1234]" >/dev/null'
sh_run 'echo "$X"; pwd; echo $$'
check "shell keeps its state after a timeout" out_is "$(printf 'plain\n/tmp\n%s' "$(cat "$T/shellpid")")"
sh_run 'while :; do :; done' 500
check "timeout of a builtin loop" test "$(j '.timed_out')" = true
sh_run 'echo "$X"'
check "shell usable after builtin-loop timeout" test "$(j .exit_code)" = 0

# A timeout kills only the timed-out command's tree: background processes of
# earlier commands (and what they start later, orphans included) live on.
: >"$T/a.pids"; : >"$T/b.pids"; : >"$T/a.late"
sh_run 'P='"$T"'; sleep 311 & echo $! >>$P/a.pids
setsid sh -c "echo \$\$ >>$P/a.pids; exec sleep 312" &
(trap "" TERM; sleep 313) & echo $! >>$P/a.pids
(sleep 0.5; sh -c "echo \$\$ >>$P/a.late; exec sleep 314") &
(setsid sh -c "echo \$\$ >>$P/a.pids; exec sleep 315" &)
echo bg-started'
check "earlier background processes started" out_is bg-started
wait_for 10 bash -c "[ \$(wc -l <'$T/a.pids') = 4 ]"
sh_run 'P='"$T"'; sleep 321 & echo $! >>$P/b.pids
setsid sh -c "trap \"\" TERM; echo \$\$ >>$P/b.pids; sleep 322" &
(setsid sh -c "echo \$\$ >>$P/b.pids; exec sleep 323" &)
sleep 0.2; sleep 324' 1500
check "timeout (with earlier background processes) reported" test "$(j .timed_out)" = true
pid_alive() { [ -e "/proc/$1" ] && ! grep -q ') Z' "/proc/$1/stat" 2>/dev/null; }
none_alive() { local p; for p in $(cat "$@"); do pid_alive "$p" && return 1; done; return 0; }
all_alive() { local p; for p in $(cat "$@"); do pid_alive "$p" || return 1; done; return 0; }
check "timed-out command's own tree (setsid, TERM-ignoring, orphaned) killed" \
    wait_for 10 none_alive "$T/b.pids"
check "its pids were recorded" test "$(wc -l <"$T/b.pids")" = 3
check "earlier background processes survive the timeout" all_alive "$T/a.pids"
check "what an earlier background process starts during the call survives" \
    bash -c "[ \$(wc -l <'$T/a.late') = 1 ] && [ -e /proc/\$(cat '$T/a.late') ]"
kill -9 $(cat "$T/a.pids" "$T/a.late") 2>/dev/null
sh_run 'wait 2>/dev/null; true'	# bash reports the killed jobs here
# exit / exec / set -e restart the shell and say so.
sh_run 'exit 5'
check "exit: status and restart" test "$(j '.exit_code == 5 and .shell_restarted == true and (.output | test("new shell"))')" = true
sh_run 'pwd; echo "[$X]"'
check "restarted shell is fresh, in the workdir" out_is "$(printf '%s\n[]' "$(cd "$T/ws" && pwd -P)")"
sh_run 'exec true'
check "exec: restart" test "$(j '.shell_restarted')" = true
sh_run 'set -e; false; echo not-here'
check "set -e failure: restart said so" test "$(j '.shell_restarted == true and .exit_code == 1 and (.output | test("not-here") | not)')" = true
sh_run 'echo alive'
check "shell works after restarts" out_is alive

# Binary output becomes valid UTF-8 JSON.
sh_run 'printf "a\377\376b\000c\xc3\xa9\n"; head -c 2000 /dev/urandom'
check "binary output: valid JSON, U+FFFD" test "$(j '.output | startswith("a\ufffd\ufffdb\u0000cé")')" = true

# Bounded output: head and tail with a marker; 1 GB fast.
sh_run 'seq 1 100000' 60000 1000
check "truncated: head, marker, tail" test "$(j '.truncated == true and (.output | startswith("1\n2\n")) and (.output | endswith("99999\n100000\n")) and (.output | test("\\[\\.\\.\\. [0-9]+ bytes dropped \\.\\.\\.\\]"))')" = true
check "dropped_bytes matches" test "$(j '.dropped_bytes')" = $(( $(seq 1 100000 | wc -c) - 1000 ))
t0=$(date +%s%N)
sh_run 'head -c 1073741824 /dev/zero; echo tail-marker' 120000 65536
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
echo "# 1 GiB of output took ${ms} ms; response $(stat -c %s "$T/body") bytes"
check "1 GiB output: bounded" test "$(j '.truncated == true and .dropped_bytes > 1000000000 and (.output | endswith("tail-marker\n"))')" = true
check "1 GiB output: fast (< 30 s)" test "$ms" -lt 30000
check "1 GiB output: response small" test "$(stat -c %s "$T/body")" -lt 500000

# Concurrency: a second call while one runs gets 409, never interleaved.
curl -s -m 60 --unix-socket "$SOCK" -H 'Content-Type: application/json' \
    -d '{"command":"echo first-start; while [ ! -e '"$T"'/go ]; do sleep 0.05; done; echo first-end"}' http://a/v1/shell >"$T/first" &
cpid=$!
wait_for 10 bash -c "curl -s --unix-socket '$SOCK' http://a/v1/health | grep -q '\"busy\":true'"
api POST /v1/shell '{"command":"echo second"}'
check "concurrent call: 409 busy" test "$(status)" = 409 -a "$(j .error.code)" = busy
api GET /v1/health
check "health answers while the shell is busy" test "$(status)" = 200 -a "$(j .busy)" = true
touch "$T/go"
wait $cpid
check "first call complete, not interleaved" test "$(jq -r .output "$T/first")" = "$(printf 'first-start\nfirst-end')"

# POST /v1/shell/interrupt: stops the running command the way a timeout
# does (its own tree only), the call answers at once with interrupted:true,
# earlier background processes and the shell's state survive.
api POST /v1/shell/interrupt '{}'
check "interrupt when idle: 200 false" test "$(status)" = 200 -a "$(j .interrupted)" = false
sh_run 'cd /tmp; IX=kept; P='"$T"'; sleep 331 & echo $! >$P/i.bg; echo bg'
check "interrupt: earlier background process started" out_is bg
: >"$T/i.pids"
curl -s -m 120 --unix-socket "$SOCK" -H 'Content-Type: application/json' \
    -d '{"command":"P='"$T"'; sleep 332 & echo $! >>$P/i.pids; (setsid sh -c \"trap \\\"\\\" TERM; echo \\$\\$ >>$P/i.pids; sleep 333\" &); bash -c \"echo \\$\\$ >>$P/i.pids; sleep 334\"; echo not-reached","timeout_ms":100000}' \
    http://a/v1/shell >"$T/long" &
cpid=$!
wait_for 20 bash -c "[ \$(wc -l <'$T/i.pids') = 3 ]"
t0=$(date +%s%N)
api POST /v1/shell/interrupt '{}'
check "interrupt while running: 200 true" test "$(status)" = 200 -a "$(j .interrupted)" = true
wait $cpid
t1=$(date +%s%N)
check "interrupted call returns promptly (< 10 s)" test $(( (t1 - t0) / 1000000 )) -lt 10000
check "interrupted call says so" test "$(jq -r '.interrupted == true and .timed_out == false and .exit_code == -1 and (.output | test("not-reached") | not)' "$T/long")" = true
check "interrupted command's tree (setsid, TERM-ignoring) is gone" \
    wait_for 10 none_alive "$T/i.pids"
check "earlier background sleep survives the interrupt" all_alive "$T/i.bg"
sh_run 'echo "$IX"; pwd'
check "shell keeps its state after an interrupt" out_is "$(printf 'kept\n/tmp')"
check "the next call is not marked interrupted" test "$(j .interrupted)" = false
api POST /v1/shell/interrupt '{}'
check "interrupt when idle again: false" test "$(j .interrupted)" = false
kill -9 $(cat "$T/i.bg") 2>/dev/null
sh_run 'wait 2>/dev/null; true'

# /v1/env: exported into the shell.
api POST /v1/env '{"set":{"AGENT_T1":"v 1","AGENT_T2":"x'"'"'y"},"unset":["Y"]}'
check "env set: 200" test "$(status)" = 200
sh_run 'echo "$AGENT_T1|$AGENT_T2|${Y-unset}"; env | grep -c ^AGENT_T1='
check "env applied to the shell (exported)" out_is "$(printf "v 1|x'y|unset\n1")"
api POST /v1/env '{"set":{"BAD-NAME":"x"}}'
check "env: bad name 400" test "$(status)" = 400

# Bad requests.
api POST /v1/shell '{"timeout_ms":5}'
check "shell without command: 400" test "$(status)" = 400 -a "$(j .error.code)" = bad_request
api POST /v1/shell '{"command":"true","timeout_ms":"soon"}'
check "shell bad timeout: 400" test "$(status)" = 400
api POST /v1/shell '{"command":"echo a\u0000b"}'
check "shell NUL in command: 400" test "$(status)" = 400
api GET /v1/nope
check "unknown route: 404" test "$(status)" = 404 -a "$(j .error.code)" = not_found

check "agent still alive" agent_alive
stop_agent TERM
check "SIGTERM: agent exits" bash -c "! kill -0 $AGENT_PID 2>/dev/null"
check "SIGTERM: no leftover shell" bash -c '! pgrep -f "sleep 30$" >/dev/null'
