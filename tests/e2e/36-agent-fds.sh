#!/usr/bin/env bash
# 36-agent-fds: the agent and descriptor exhaustion. It raises its soft
# RLIMIT_NOFILE to the hard limit at start (and gives what it runs the
# original back); out of descriptors (EMFILE) it pauses accept, closes its
# oldest idle connections and logs at most once per interval: no busy loop,
# no log flood, and a new client is served while the flood is held open.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/agent.sh"

# start_lim SOFT:HARD [ARGS...]: the agent under that fd limit, waits until
# healthy.
start_lim() {
	local lim=$1; shift
	mkdir -p "$T/ws" "$T/state"
	: >"$T/agent.log"
	prlimit --nofile="$lim" "$AGENT" -d --listen "unix:$SOCK" --state "$T/state" \
	    --workdir "$T/ws" "$@" >>"$T/agent.log" 2>&1 &
	AGENT_PID=$!
	track_pid "$AGENT_PID"
	wait_for 20 curl -sf --unix-socket "$SOCK" http://a/v1/health
}
soft_limit() { awk '/^Max open files/ {print $4}' "/proc/$AGENT_PID/limits"; }
# CPU ticks (user + system) the agent has used.
ticks() { awk '{print $14 + $15}' "/proc/$AGENT_PID/stat"; }

# (the script's first lines say what it covers; the spool total is here too,
# the other way a sandbox's agent could be made to fill a disk)
# 1. the soft limit is raised to the hard one; commands get the original.
check "agent starts under nofile 64:4096" start_lim 64:4096
check "soft limit raised to the hard limit" test "$(soft_limit)" = 4096
check "both limits logged" grep -q 'fd limit soft=64 raised to hard=4096' "$T/agent.log"
sh_run 'ulimit -n'
check "a command gets the original soft limit" out_is 64
api POST /v1/jobs '{"command":"ulimit -n"}'
jid=$(j .id)
job_wait "$jid" 10000
job_output "$jid"
check "a job gets the original soft limit" test "$(cat "$T/jobout")" = 64
stop_agent

# 2. soft = hard = 48: 200 idle connections held open exhaust it.
check "agent starts under nofile 48:48" start_lim 48:48
python3 "$TOP/tests/fixtures/idleconns.py" --unix "$SOCK" --n 200 --ready "$T/nflood" --secs 12 >/dev/null &
fpid=$!
track_pid "$fpid"
wait_for 10 test -s "$T/nflood"
sleep 0.5
t0=$(ticks)
sleep 3
t1=$(ticks)
hz=$(getconf CLK_TCK)
echo "# held $(cat "$T/nflood") connections; agent used $((t1 - t0)) ticks (hz $hz) in 3 s"
# a busy loop would take 3 s x hz; the pauses cost a few ticks
check "out of fds: no busy loop (< 10% of a core)" test $((t1 - t0)) -lt $((hz * 3 / 10))
n=$(grep -c 'pausing accept' "$T/agent.log")
echo "# 'pausing accept' lines: $n; log $(wc -c <"$T/agent.log") bytes"
check "out of fds: at most one line per 10 s" test "$n" -ge 1 -a "$n" -le 2
check "out of fds: the log stays small" test "$(wc -c <"$T/agent.log")" -lt 20000
# a new client gets in while the flood is still open (idle ones are shed)
check "a new client is served during the flood" \
    curl -sf -m 8 --unix-socket "$SOCK" http://a/v1/health -o /dev/null
check "flood still held while served" kill -0 "$fpid"
sh_run 'echo alive'
check "shell works during the flood" out_is alive
kill "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null
check "agent healthy after the flood" agent_alive
stop_agent

# 3. a caller that goes away mid-command (the orchestrator killed, a client
# gone): the command is stopped, the next call is not refused as busy and
# says plainly what happened.
check "agent starts" start_lim 1024:4096
curl -s -m 1 --unix-socket "$SOCK" -H 'Content-Type: application/json' \
    --data-binary '{"command":"echo started; sleep 307; echo late","timeout_ms":60000}' \
    http://a/v1/shell -o /dev/null
check "the abandoned command is stopped" wait_for 10 bash -c '! pgrep -f "sleep 30[7]" >/dev/null'
sh_run 'echo next'
echo "# next call: $(cat "$T/body")"
check "next call: not busy (200)" test "$(status)" = 200
check "next call: runs" test "$(j '.output | endswith("next\n")')" = true
check "next call: says the previous command was interrupted" test "$(j '.output | startswith("[the previous command (echo started; sleep 307; echo late) was interrupted: the call that ran it went away")')" = true
check "next call: previous_interrupted" test "$(j .previous_interrupted)" = true
sh_run 'echo again'
check "the call after: no note" test "$(j '.output == "again\n" and .previous_interrupted == false')" = true
# a call that arrives while the abandoned command is still being stopped
# waits for it instead of failing busy
curl -s -m 1 --unix-socket "$SOCK" -H 'Content-Type: application/json' \
    --data-binary '{"command":"trap \"\" USR1 TERM; sleep 308","timeout_ms":60000}' \
    http://a/v1/shell -o /dev/null
sh_run 'echo waited'
check "a call during the stop waits, not 409" test "$(status) $(j '.output | endswith("waited\n")')" = "200 true"
check "no sleep left" bash -c '! pgrep -f "sleep 30[78]" >/dev/null'
stop_agent

# 4. the job spools together stay within --job-spool-total
check "agent starts with a 1 MiB spool total" start_lim 1024:4096 \
    --job-output-cap 256KiB --job-spool-total 1MiB
for i in 1 2 3 4 5 6 7 8; do
	jid=$(job_start 'head -c 300000 /dev/zero | tr "\\0" y')
	job_wait "$jid" 20000
	echo "$jid" >>"$T/jids"
done
total=$(du -cb "$T"/state/jobs/*/output | tail -1 | cut -f1)
echo "# 8 jobs of 300 kB, cap 256 KiB each, 1 MiB in all: $total bytes kept in $(ls -d "$T"/state/jobs/*/ | wc -l) spools"
check "spools stay within the total" test "$total" -le $((1024 * 1024 + 8192))
job_output "$(tail -1 "$T/jids")"
check "the newest job has its output (capped)" test "$(tr -cd y <"$T/jobout" | wc -c)" -ge $((200 * 1024))
api GET "/v1/jobs/$(head -1 "$T/jids")"
check "the oldest finished jobs made room" test "$(status)" = 404
check "removal logged" grep -q 'removed (spool total' "$T/agent.log"
stop_agent
