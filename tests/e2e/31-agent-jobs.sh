#!/usr/bin/env bash
# 31-agent-jobs: async jobs: start/poll/wait/stop/list, exit codes and
# signals, the tree killed by stop, OOM reported as OOM, and survival of the
# client going away and of an agent kill -9 + restart.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/agent.sh"

check "agent starts" start_agent

# The job inherits the shell's cwd and exported env, and /v1/env.
sh_run 'mkdir -p sub && cd sub && export JOBV=from-shell; NOTEXP=x'
api POST /v1/env '{"set":{"CLAIMV":"from-env"}}'
id=$(job_start 'pwd; echo "$JOBV|$CLAIMV|${NOTEXP-}"; for i in 1 2 3; do echo "line $i"; done; while [ ! -e "'"$T"'/go" ]; do sleep 0.05; done; echo err >&2; exit 3')
check "job start returns an id and pid" test "$(j '(.id | test("^j-[0-9a-f]+$")) and .pid > 0')" = true
api GET /v1/jobs/$id
check "job is running" test "$(j .state)" = running
api GET /v1/health
check "health counts the running job" test "$(j .running_jobs)" = 1
touch "$T/go"
job_wait "$id" 20000
check "wait returns when it ends: exited 3" test "$(j '.state == "exited" and .exit_code == 3 and .signal == null and .ended_ms != null')" = true
job_output "$id" 7
check "output complete (polled in 7-byte pieces), cwd + env" test "$(cat "$T/jobout")" = "$(printf '%s\nfrom-shell|from-env|\nline 1\nline 2\nline 3\nerr' "$(cd "$T/ws/sub" && pwd -P)")"
api GET "/v1/jobs/$id?offset=999999"
check "poll past the end: empty, eof" test "$(j '.output == "" and .eof == true and .next_offset == 999999')" = true
api GET "/v1/jobs/$id?offset=-1"
check "poll bad offset: 400" test "$(status)" = 400

# A job started while the shell is busy starts at once (with the env the
# shell reported last time).
curl -s -m 60 --unix-socket "$SOCK" -d '{"command":"export LATE=1; while [ ! -e '"$T"'/go3 ]; do sleep 0.05; done"}' http://a/v1/shell >/dev/null &
bpid=$!
wait_for 10 bash -c "curl -s --unix-socket '$SOCK' http://a/v1/health | grep -q '\"busy\":true'"
id=$(job_start 'echo "busy-shell:$JOBV:${LATE-none}"')
check "job start while the shell is busy: does not wait for it" test "$(status)" = 200 -a -n "$id"
touch "$T/go3"
job_wait "$id"
job_output "$id"
check "job start while the shell is busy: last known env" test "$(cat "$T/jobout")" = "busy-shell:from-shell:none"
wait $bpid
id=$(job_start 'echo "idle-shell:${LATE-none}"')
job_wait "$id"; job_output "$id"
check "job start with the shell idle: current env" test "$(cat "$T/jobout")" = "idle-shell:1"

# Incremental poll while running, and wait timeouts.
id=$(job_start 'echo first; while [ ! -e "'"$T"'/go2" ]; do sleep 0.05; done; echo second')
wait_for 10 bash -c "curl -s --unix-socket '$SOCK' 'http://a/v1/jobs/$id' | jq -e '.output_bytes > 0' >/dev/null"
api GET "/v1/jobs/$id?offset=0"
check "poll while running: partial output, not eof" test "$(j '.output == "first\n" and .eof == false and .next_offset == 6 and .state == "running"')" = true
job_wait "$id" 200
check "wait with a short timeout returns running" test "$(j .state)" = running
touch "$T/go2"
job_wait "$id" 20000
api GET "/v1/jobs/$id?offset=6"
check "poll from offset after the end" test "$(j '.output == "second\n" and .eof == true')" = true

# UTF-8 is never split between polls.
id=$(job_start 'printf "\xc3\xa9\xc3\xa9\xe2\x82\xac"')
job_wait "$id" >/dev/null
api GET "/v1/jobs/$id?offset=0&max=3"
check "poll does not cut a UTF-8 character" test "$(j '.output == "é" and .next_offset == 2')" = true

# Signals.
id=$(job_start 'kill -TERM $$')
job_wait "$id"
check "signaled job: state signaled, signal 15" test "$(j '.state == "signaled" and .signal == 15 and .exit_code == null')" = true

# Stop kills the whole tree: TERM-ignoring and setsid'd descendants.
id=$(job_start 'trap "" TERM; (trap "" TERM; sleep 311) & setsid sh -c "trap \"\" TERM; sleep 312" & sleep 313; wait')
wait_for 10 pgrep -f "sleep 313"
wait_for 10 pgrep -f "sleep 312"
t0=$(date +%s%N)
api POST /v1/jobs/$id/stop
t1=$(date +%s%N)
check "stop: state stopped" test "$(j .state)" = stopped
check "stop: within a few seconds" test $(( (t1 - t0) / 1000000 )) -lt 8000
check "stop: whole tree gone" bash -c '! pgrep -f "sleep 31[123]" >/dev/null'
api POST /v1/jobs/$id/stop
check "stop of a stopped job: 200, still stopped" test "$(status)" = 200 -a "$(j .state)" = stopped

# Unknown and hostile ids.
api GET /v1/jobs/j-0000
check "unknown job: 404" test "$(status)" = 404 -a "$(j .error.code)" = not_found
api GET "/v1/jobs/..%2f..%2fetc"
check "hostile id: 404" test "$(status)" = 404
api GET "/v1/jobs/../../etc/passwd"
check "path traversal id: 404" test "$(status)" = 404
api POST /v1/jobs '{"command":""}'
check "empty command: 400" test "$(status)" = 400
api POST /v1/jobs '{"cmd":"x"}'
check "missing command: 400" test "$(status)" = 400
# A command over 128 KiB (the limit of one exec argument) still runs, and
# lists show only its first 4 KiB.
python3 -c 'import json; print(json.dumps({"command": "# " + "\"'"'"'\u0001" * 100000 + "\necho big-command-ran $#"}))' >"$T/bigcmd.json"
curl -s -m 60 --unix-socket "$SOCK" --data-binary @"$T/bigcmd.json" -o "$T/body" http://a/v1/jobs
bigid=$(j .id)
job_wait "$bigid" 30000
check "300 KB job command: runs (exit 0)" test "$(j '.state == "exited" and .exit_code == 0 and (.command | length) == 300026')" = true
job_output "$bigid"
check "300 KB job command: its output" test "$(cat "$T/jobout")" = "big-command-ran 0"
api GET /v1/jobs
check "list cuts a long command to 4 KiB and says so" \
    test "$(jq --arg id "$bigid" '.jobs[] | select(.id == $id) | (.command | length) == 4096 and .command_truncated == true' "$T/body")" = true
id=$(job_start 'echo "unterminated')
job_wait "$id"
check "job with a syntax error: exit 2, the shell's message" test "$(j .exit_code)" = 2
job_output "$id"
check "job syntax error message in its output" grep -q "unexpected EOF\|syntax error" "$T/jobout"

# The client going away: a waiting client disconnects; the job goes on.
id=$(job_start 'sleep 1; echo survived-client; exit 4')
curl -s -m 0.3 --unix-socket "$SOCK" -d '{"timeout_ms":20000}' "http://a/v1/jobs/$id/wait" >/dev/null 2>&1
check "agent fine after a waiter disconnected" agent_alive
job_wait "$id" 20000
check "job finished after its client went away" test "$(j .exit_code)" = 4
job_output "$id"
check "its output is complete" test "$(cat "$T/jobout")" = survived-client

# Agent kill -9 and restart: a running job keeps going, its output and exit
# status are complete and known to the new agent.
id=$(job_start 'for i in $(seq 1 20); do echo "n=$i"; sleep 0.1; done; exit 6')
sleep 0.4
stop_agent KILL
check "agent killed with -9" bash -c "! kill -0 $AGENT_PID 2>/dev/null"
check "agent restarts on the same state" start_agent
api GET /v1/jobs
check "restarted agent lists the job" test "$(jq -r --arg id "$id" '[.jobs[] | select(.id == $id)] | length' "$T/body")" = 1
job_wait "$id" 20000
check "job ran to its end: exit 6 known after restart" test "$(j '.state == "exited" and .exit_code == 6')" = true
job_output "$id"
check "output complete across the restart" test "$(cat "$T/jobout")" = "$(seq 1 20 | sed 's/^/n=/')"
api GET /v1/jobs
check "list has all jobs" test "$(jq '.jobs | length' "$T/body")" -ge 9

# OOM: a job in a memory-limited cgroup (v1 or v2) is reported as OOM-killed.
CGV1=/sys/fs/cgroup/memory$(grep ':memory:' /proc/self/cgroup | cut -d: -f3)
CG=
if [ -w "$CGV1" ] && mkdir "$CGV1/agent-e2e-$$" 2>/dev/null; then
	CG=$CGV1/agent-e2e-$$
	echo $((192 * 1024 * 1024)) >"$CG/memory.limit_in_bytes"
	echo $((192 * 1024 * 1024)) >"$CG/memory.memsw.limit_in_bytes" 2>/dev/null || true
	on_exit "for p in \$(cat $CG/cgroup.procs 2>/dev/null); do kill -9 \$p 2>/dev/null; done; sleep 0.2; rmdir $CG 2>/dev/null"
fi
if [ -n "$CG" ]; then
	stop_agent TERM
	rm -f "$SOCK"
	AGENT_CGROUP=$CG start_agent
	id=$(job_start '/usr/bin/python3 -c "x = b\"y\" * (1024 << 20); print(len(x))"')
	job_wait "$id" 60000
	check "OOM: job reported oom_killed" test "$(j '.oom_killed == true and .state != "running"')" = true
	sh_run '/usr/bin/python3 -c "x = b\"y\" * (1024 << 20); print(len(x))"' 60000
	check "OOM: shell command reported oom_killed" test "$(j '.oom_killed == true and .exit_code == 137')" = true
	sh_run 'echo still-usable'
	check "OOM: shell usable afterwards" out_is still-usable
else
	skip "OOM reporting" "cannot create a memory cgroup here"
fi

check "agent still alive" agent_alive
stop_agent TERM

# Spool cap and retention: restart on the same state with small limits.
njobs_before=$(ls "$T/state/jobs" | wc -l)
rm -f "$SOCK"
check "agent restarts with --job-output-cap/--job-keep" \
    start_agent --job-output-cap 100000 --job-keep 3 --job-keep-ms 0
check "retention at start: $njobs_before finished jobs cut to the newest 3" \
    test "$(ls "$T/state/jobs" | wc -l)" = 3 -a "$njobs_before" -gt 3
api GET /v1/jobs
check "list shows the 3 kept" test "$(jq '.jobs | length' "$T/body")" = 3

# A finite job over the cap: head kept, a marker, the rest counted.
id=$(job_start 'head -c 300000 /dev/zero | tr "\0" x; echo end')
job_wait "$id" 30000
check "capped job: exited, truncated, dropped_bytes counted" \
    test "$(j '.state == "exited" and .truncated == true and .dropped_bytes == 200004')" = true
job_output "$id" 65536
check "capped job: output is the first 100000 bytes, then the marker" \
    test "$(head -c 100000 "$T/jobout" | tr -d x | wc -c)" = 0 -a \
    "$(tail -c +100001 "$T/jobout" | grep -c 'reached the cap of 100000 bytes')" = 1
check "capped job: output_bytes = cap + marker" \
    test "$(j .output_bytes)" = "$(stat -c %s "$T/state/jobs/$id/output")" -a "$(j .output_bytes)" -lt 100300
api GET "/v1/jobs/$id?offset=100000&max=1000"
check "poll at the cap: the marker, eof" test "$(j '(.output | test("reached the cap")) and .eof == true')" = true
# A job printing forever: the spool stops growing, dropped_bytes keeps counting.
id=$(job_start 'yes spool-forever')
wait_for 20 bash -c "curl -s --unix-socket '$SOCK' 'http://a/v1/jobs/$id?max=0' | jq -e '.dropped_bytes > 1000000' "
api GET "/v1/jobs/$id?max=0"
d1=$(j .dropped_bytes); s1=$(j .output_bytes)
check "endless job: running, truncated, spool at the cap" \
    test "$(j '.state == "running" and .truncated == true and .output_bytes < 100300')" = true
wait_for 20 bash -c "curl -s --unix-socket '$SOCK' 'http://a/v1/jobs/$id?max=0' | jq -e '.dropped_bytes > $d1'"
api GET "/v1/jobs/$id?max=0"
check "endless job: dropped_bytes grows, the file does not" \
    test "$(j .dropped_bytes)" -gt "$d1" -a "$(j .output_bytes)" = "$s1" -a \
    "$(stat -c %s "$T/state/jobs/$id/output")" = "$s1"
api POST "/v1/jobs/$id/stop"
check "endless job: stopped" test "$(j .state)" = stopped
endless=$id

# Retention by age: a running job is never removed, finished ones go.
stop_agent TERM
rm -f "$SOCK"
check "agent restarts with --job-keep-ms 6000" \
    start_agent --job-output-cap 100000 --job-keep 3 --job-keep-ms 6000
long=$(job_start 'sleep 14; echo long-done')
quick=$(job_start 'echo quick')
job_wait "$quick" 10000
check "quick job finished and present" test "$(status)" = 200 -a "$(j .state)" = exited
check "finished jobs expire after --job-keep-ms" \
    wait_for 30 bash -c "[ ! -e '$T/state/jobs/$quick' ] && [ ! -e '$T/state/jobs/$endless' ]"
api GET "/v1/jobs/$quick"
check "an expired job is 404, saying what retention keeps" test "$(status)" = 404 -a \
    "$(j '.error.message | test("removed: the newest 3 finished jobs are kept, for 6 s")')" = true
api GET "/v1/jobs/$long"
check "the running job (older than --job-keep-ms) is kept" \
    test "$(status)" = 200 -a "$(j .state)" = running -a -e "$T/state/jobs/$long/output"
job_wait "$long" 20000
job_output "$long"
check "the long job completes with its output" test "$(cat "$T/jobout")" = long-done
check "agent alive after retention" agent_alive
stop_agent TERM
