#!/usr/bin/env bash
# 38-agent-jobs-exec: jobs run as execs (agent/jobx.c, jobwrap.c): the
# start options ("streams":"split", timeout_ms, cwd, env, stdin,
# max_output, a caller's id), a split job's GET (chunks) and GET
# /v1/jobs/{id}/stream (exec's NDJSON from an offset, live, then exec's
# exit line); a stream's client going away leaves the job running; a job
# started with a caller's id survives an agent kill -9 and its stream
# carries on from the new agent.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/agent.sh"

check "agent starts" start_agent
mkdir -p "$T/ws/sub"
stream() { curl -sN -m 60 --unix-socket "$SOCK" "http://a/v1/jobs/$1/stream${2:+?offset=$2}"; }
dec() { jq -r "select(.s==\"$1\") | .b" | while read -r b; do printf '%s' "$b" | base64 -d; done; }

# --- split streams, cwd, env, stdin; the exit line ---
api POST /v1/jobs "$(jq -cn --arg in "$(printf 'in1\n' | base64)" '{command:"echo o1; echo e1 >&2; cat; pwd; echo $V >&2; exit 4", streams:"split", id:"j-0000000000a1", cwd:"sub", env:{V:"vv"}, stdin:$in}')"
check "split job started with the caller's id" test "$(status) $(j .id)" = "200 j-0000000000a1"
out=$(stream j-0000000000a1)
check "stream: stdout apart" test "$(dec out <<<"$out")" = "$(printf 'o1\nin1\n%s' "$(cd "$T/ws/sub" && pwd -P)")"
check "stream: stderr apart" test "$(dec err <<<"$out")" = "$(printf 'e1\nvv')"
check "stream: exec's exit line, exit 4" test "$(tail -1 <<<"$out" | jq -c '[.exit, .timed_out, .signal, .oom_killed, .dropped_bytes, (.duration_ms >= 0)]')" = '[4,false,null,false,0,true]'
api GET /v1/jobs/j-0000000000a1
check "GET of a split job: streams split, chunks apart" test "$(j '.streams + " " + ([.chunks[] | .s] | join(","))')" = "split out,err,out,out,err"
check "GET of a split job: no raw output member" test "$(j 'has("output")')" = false
n1=$(j '.chunks[0].b | @base64d | length')
api GET "/v1/jobs/j-0000000000a1?max=1"
check "GET max=1: one whole record at least, next_offset after it" test "$(j '[(.chunks | length), .next_offset]' | tr -d ' \n')" = "[1,$((5 + n1))]"
out=$(stream j-0000000000a1 $((5 + n1)))
check "stream from an offset: the records after it" test "$(dec err <<<"$out" | head -1)" = e1
check "stream from an offset: the first record left out" test "$(dec out <<<"$out" | head -1)" = in1

# --- a caller's id starts once ---
api POST /v1/jobs '{"command":"echo again >> '"$T"'/twice","id":"j-0000000000a1"}'
check "a second start of the same id: 409 exists" test "$(status) $(j .error.code)" = "409 exists"
check "... and nothing ran" test ! -e "$T/twice"
api POST /v1/jobs '{"command":"true","id":"x-1"}'
check "a malformed id: 400" test "$(status)" = 400
api POST /v1/jobs '{"command":"true","streams":"both"}'
check "streams other than split/merged: 400" test "$(status)" = 400
api POST /v1/jobs '{"command":"true","cwd":"no/such/dir"}'
check "a cwd that is not a directory: 400" test "$(status)" = 400

# --- timeout: the whole tree, exit 124 ---
api POST /v1/jobs '{"command":"sleep 60 & echo $! > '"$T"'/bg; echo started; sleep 60","streams":"split","timeout_ms":700,"id":"j-0000000000a2"}'
t0=$(date +%s%N)
out=$(stream j-0000000000a2)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "timeout: exit 124, timed_out, signal null (${ms} ms)" test "$(tail -1 <<<"$out" | jq -c '[.exit, .timed_out, .signal]')" = '[124,true,null]'
check "timeout: the output before it kept" test "$(dec out <<<"$out")" = started
check "timeout: the background process of the job is dead too" bash -c "! kill -0 $(cat "$T/bg") 2>/dev/null"
api GET /v1/jobs/j-0000000000a2
check "timeout: the job says timed_out and 124" test "$(j '[.exit_code, .timed_out] | map(tostring) | join(" ")')" = "124 true"

# --- kill_leftovers: the main process's end ends the tree (as /v1/exec) ---
api POST /v1/jobs '{"command":"sleep 60 & echo $! > '"$T"'/left; echo main","streams":"split","kill_leftovers":true,"id":"j-0000000000b1"}'
out=$(stream j-0000000000b1)
check "kill_leftovers: the exit line once the tree is gone" test "$(dec out <<<"$out")|$(tail -1 <<<"$out" | jq .exit)" = "main|0"
check "kill_leftovers: the background process is dead" bash -c "! kill -0 $(cat "$T/left") 2>/dev/null"
api POST /v1/jobs '{"command":"sleep 60 & echo $! > '"$T"'/left2; echo main","streams":"split","id":"j-0000000000b2"}'
out=$(stream j-0000000000b2)
check "without kill_leftovers: a job's background process lives on (as before)" kill -0 "$(cat "$T/left2")"
api POST /v1/jobs/j-0000000000b2/stop
api POST /v1/jobs '{"command":"true","kill_leftovers":1}'
check "kill_leftovers not a boolean: 400" test "$(status)" = 400

# --- the cap's note, at its place, then only counted ---
api POST /v1/jobs '{"command":"head -c 3000 /dev/zero; echo tail","streams":"split","max_output":1024,"id":"j-0000000000a3"}'
out=$(stream j-0000000000a3)
check "max_output: exec's note line" test "$(jq -r 'select(.s=="note") | .m' <<<"$out")" = "output passed max_output (1024 bytes): the rest is dropped"
check "max_output: 1024 bytes kept, the rest counted" test "$(dec out <<<"$out" | wc -c) $(tail -1 <<<"$out" | jq .dropped_bytes)" = "1024 $((3005 - 1024))"

# --- live: the first line before the end; a client that goes leaves the job ---
api POST /v1/jobs '{"command":"echo first; sleep 1.5; echo last; echo done > '"$T"'/ran","streams":"split","id":"j-0000000000a4"}'
t0=$(date +%s%N)
stream j-0000000000a4 | { read -r l; echo "$(( ($(date +%s%N) - t0) / 1000000 ))"; } > "$T/first"
check "stream is live: the first line before the job ends ($(cat "$T/first") ms < 1200)" test "$(cat "$T/first")" -lt 1200
wait_for 10 test -e "$T/ran"
check "the stream's client went away: the job ran to its end" test "$(cat "$T/ran" 2>/dev/null)" = done
out=$(stream j-0000000000a4)
check "... and a new stream has all of it" test "$(dec out <<<"$out")|$(tail -1 <<<"$out" | jq .exit)" = "$(printf 'first\nlast')|0"

# --- merged jobs stream too (bytes as "out") ---
id=$(job_start 'echo m1; echo m2 >&2')
job_wait "$id"
out=$(stream "$id")
check "a merged job's stream: its bytes as out, then the exit line" test "$(dec out <<<"$out")|$(tail -1 <<<"$out" | jq .exit)" = "$(printf 'm1\nm2')|0"
check "stream of an unknown job: 404" test "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" http://a/v1/jobs/j-0000000000ff/stream)" = 404

# --- the agent killed with -9 mid-job: the job lives on, a new agent streams it ---
api POST /v1/jobs '{"command":"echo before; sleep 2; echo after","streams":"split","id":"j-0000000000a5"}'
sleep 0.5
stop_agent KILL
check "agent restarts" start_agent
out=$(stream j-0000000000a5)
check "after an agent kill -9: the whole output and the exit" test "$(dec out <<<"$out")|$(tail -1 <<<"$out" | jq .exit)" = "$(printf 'before\nafter')|0"
