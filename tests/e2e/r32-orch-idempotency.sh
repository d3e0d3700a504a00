#!/usr/bin/env bash
# r32-orch-idempotency.sh: issue 32 part 3, REST side: an exec or session
# create with an Idempotency-Key runs once. Against a real orchestrator on
# the local runtime: a keyed exec re-issued after the orchestrator is
# killed with -9 and restarted runs nothing new (its command appended one
# line to a file: one line, not two) and returns the first run's output
# and exit code; a re-issue during the run attaches live; the same key
# with other arguments is 422; bad keys 400; stdout and stderr apart; a
# keyed timeout is 124; a client that goes leaves a keyed command running
# and a re-issue gets all its output; keys are per session; the records
# are bounded (429); after idempotency.ttl the key is new again; a keyed
# create returns its first result; without a key nothing changes.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"
if [ "$ORCH_RT" != local ]; then skip "keyed REST exec needs the local runtime (root, bwrap): the fake one has no confinement"; exit 0; fi

orch_config "exec:" "  max_concurrent: 6"
check "orch starts" orch_start
S=idem-1
A=(-H "Authorization: Bearer $ORCH_KEY")
code=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d "{\"id\":\"$S\"}" -o /dev/null -w '%{http_code}')
check "session created" test "$code" = 201
X="$ORCH_URL/v1/sessions/$S/exec"
# kex KEY BODY [curl args]: a keyed exec; prints the NDJSON
kex() { local k=$1 b=$2; shift 2; curl -sN "${A[@]}" -H "Idempotency-Key: $k" -H 'Content-Type: application/json' -d "$b" "$@" "$X"; }
ex() { curl -sN "${A[@]}" -H 'Content-Type: application/json' -d "$1" "$X"; }
dec() { jq -r "select(.s==\"$1\") | .b" | while read -r b; do printf '%s' "$b" | base64 -d; done; }
lines() { ex "{\"command\":\"wc -l < $1 2>/dev/null || echo 0\"}" | dec out | tr -d ' \n'; }

# --- the issue's case: kill -9 of the orchestrator mid-command, restart,
# the same request again: nothing new runs, the first run's output ---
B1='{"command":"echo run >> /workspace/count; sleep 3; echo done"}'
kex k-crash "$B1" > "$T/c1" &
cp=$!
sleep 1
orch_kill9
wait "$cp" 2>/dev/null
check "kill -9: the first request's stream was cut (no exit line)" test "$(jq -r 'select(.exit != null) | .exit' < "$T/c1" | wc -l)" = 0
check "orch restarts" orch_start
t0=$(date +%s%N)
kex k-crash "$B1" > "$T/c2"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "re-issue after kill -9: the first run's exit code (0)" test "$(jq -r 'select(.exit != null) | .exit' < "$T/c2")" = 0
check "re-issue after kill -9: the first run's output, whole" test "$(dec out < "$T/c2")" = done
check "re-issue after kill -9: the command ran once (one line, not two)" test "$(lines /workspace/count)" = 1
check "re-issue after kill -9: followed the first run to its end, did not rerun it (${ms} ms < 3000)" test "$ms" -lt 3000
kex k-crash "$B1" > "$T/c3"
check "a third issue after the end: the same output and exit" test "$(dec out < "$T/c3") $(tail -1 "$T/c3" | jq -r .exit)" = "done 0"
check "... and still one line" test "$(lines /workspace/count)" = 1
check "the exit line has exec's members" test "$(tail -1 "$T/c3" | jq -r '[has("exit"),has("timed_out"),has("duration_ms"),has("dropped_bytes"),has("signal"),has("oom_killed")] | all')" = true

# --- a re-issue while the first is streaming attaches, live ---
B2='{"command":"echo x >> /workspace/c2; echo a; sleep 2; echo b; exit 5"}'
kex k-live "$B2" > "$T/l1" &
p1=$!
sleep 0.7
t0=$(date +%s%N)
kex k-live "$B2" | { read -r l; echo "$(( ($(date +%s%N) - t0) / 1000000 ))" > "$T/l2.first"; echo "$l"; cat; } > "$T/l2"
wait "$p1"
check "live re-issue: the first line came before the end ($(cat "$T/l2.first") ms < 1000)" test "$(cat "$T/l2.first")" -lt 1000
check "live re-issue: both streams have a and b" test "$(dec out < "$T/l1")|$(dec out < "$T/l2")" = "$(printf 'a\nb')|$(printf 'a\nb')"
check "live re-issue: both exit 5" test "$(tail -1 "$T/l1" | jq -r .exit) $(tail -1 "$T/l2" | jq -r .exit)" = "5 5"
check "live re-issue: ran once" test "$(lines /workspace/c2)" = 1

# --- the same key with other arguments: 422, naming the key ---
out=$(kex k-live '{"command":"echo other"}' -w ' %{http_code}')
check "same key, other command: 422" contains <(echo "$out") ' 422'
check "422 is idempotency_mismatch" contains <(echo "$out") 'idempotency_mismatch'
check "422 names the key" contains <(echo "$out") 'k-live'
out=$(kex k-live '{"command":"echo x >> /workspace/c2; echo a; sleep 2; echo b; exit 5","timeout":9}' -o /dev/null -w '%{http_code}')
check "same key, same command, another timeout: 422" test "$out" = 422
# the same members in another order (canonical body): the same request
out=$(kex k-order '{"command":"echo o","timeout":30}')
out2=$(kex k-order '{"timeout":30,"command":"echo o"}' -w '\n%{http_code}')
check "members in another order are the same request" test "$(tail -1 <<<"$out2") $(head -n -1 <<<"$out2" | dec out)" = "200 o"

# --- bad keys: 400 ---
long=$(head -c 256 /dev/zero | tr '\0' k)
check "a 256-byte key: 400" test "$(kex "$long" '{"command":"true"}' -o /dev/null -w '%{http_code}')" = 400
check "a 255-byte key: fine" test "$(kex "${long:1}" '{"command":"true"}' -o /dev/null -w '%{http_code}')" = 200
check "a non-ASCII key: 400" test "$(kex "clé" '{"command":"true"}' -o /dev/null -w '%{http_code}')" = 400
out=$(kex "$long" '{"command":"true"}')
check "400 is bad_idempotency_key" contains <(echo "$out") bad_idempotency_key

# --- stdout and stderr apart, stdin, env, cwd; timeout 124 ---
out=$(kex k-split '{"command":"echo o1; echo e1 >&2; echo o2; cat; echo $V; pwd >&2","stdin":"aW4K","env":{"V":"vv"},"cwd":"/tmp"}')
check "keyed: stdout apart" test "$(dec out <<<"$out")" = "$(printf 'o1\no2\nin\nvv')"
check "keyed: stderr apart" test "$(dec err <<<"$out")" = "$(printf 'e1\n/tmp')"
out=$(kex k-tmo '{"command":"sleep 30 & echo $! > /tmp/tmo.pid; sleep 30","timeout":1}')
check "keyed: timeout is 124, timed_out, signal null" test "$(tail -1 <<<"$out" | jq -r '"\(.exit) \(.timed_out) \(.signal)"')" = "124 true null"
bg=$(ex '{"command":"cat /tmp/tmo.pid"}' | dec out)
check "keyed timeout: the whole tree was killed" test "$(ex "{\"command\":\"kill -0 $bg 2>/dev/null && echo alive || echo dead\"}" | dec out)" = dead
out=$(kex k-tmo '{"command":"sleep 30 & echo $! > /tmp/tmo.pid; sleep 30","timeout":1}')
check "keyed timeout re-issued: 124 again, not rerun" test "$(tail -1 <<<"$out" | jq -r .exit)" = 124

out=$(kex k-left '{"command":"sleep 300 & echo $! > /tmp/left.pid; echo main"}')
bg=$(ex '{"command":"cat /tmp/left.pid"}' | dec out)
check "keyed: the command's end kills what it left running (as without a key)" test "$(ex "{\"command\":\"kill -0 $bg 2>/dev/null && echo alive || echo dead\"}" | dec out)" = dead

# --- a client that goes does not end a keyed command; a re-issue gets it all ---
B3='{"command":"echo start; sleep 2; echo end >> /workspace/d; echo fin >&2"}'
# (curl gives up after 0.7 s: the client's connection closes mid-command)
kex k-gone "$B3" -m 0.7 > "$T/g1"
check "client gone: it went before the end (no exit line)" test "$(jq -r 'select(.exit != null) | .exit' < "$T/g1" | wc -l)" = 0
sleep 2.5
check "client gone: the keyed command ran on to its end" test "$(lines /workspace/d)" = 1
out=$(kex k-gone "$B3")
check "client gone: a re-issue gets the full output" test "$(dec out <<<"$out")|$(dec err <<<"$out")|$(tail -1 <<<"$out" | jq -r .exit)" = "start|fin|0"
check "client gone: ran once" test "$(lines /workspace/d)" = 1

# --- without a key: as before ---
out=$(ex '{"command":"echo out1; echo err1 >&2; exit 3"}')
check "no key: stdout, stderr, exit as before" test "$(dec out <<<"$out")|$(dec err <<<"$out")|$(tail -1 <<<"$out" | jq -r .exit)" = "out1|err1|3"
ex '{"command":"echo n >> /workspace/nk"}' >/dev/null
ex '{"command":"echo n >> /workspace/nk"}' >/dev/null
check "no key: every request runs" test "$(lines /workspace/nk)" = 2
curl -sN "${A[@]}" -H 'Content-Type: application/json' -o /dev/null \
    -d '{"command":"sleep 300 & echo $! > /tmp/bgpid; sleep 300"}' "$X" &
cp=$!
sleep 1.5
kill "$cp"; wait "$cp" 2>/dev/null
sleep 1.5
bg=$(ex '{"command":"cat /tmp/bgpid"}' | dec out)
check "no key: a client that goes still kills the tree" test "$(ex "{\"command\":\"kill -0 $bg 2>/dev/null && echo alive || echo dead\"}" | dec out)" = dead

# --- what a key costs: 10 execs of `true` each way (a figure, printed) ---
ms_of() { local t0; t0=$(date +%s%N); "$@" >/dev/null; echo $(( ($(date +%s%N) - t0) / 1000000 )); }
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
plain=$(for i in $(seq 10); do ms_of ex '{"command":"true"}'; done | med)
keyed=$(for i in $(seq 10); do ms_of kex "k-cost-$i" '{"command":"true"}'; done | med)
again=$(for i in $(seq 10); do ms_of kex "k-cost-$i" '{"command":"true"}'; done | med)
echo "exec of true, median of 10: no key ${plain} ms, a new key ${keyed} ms, a re-issue ${again} ms (load $(cut -d' ' -f1 /proc/loadavg))"
check "a keyed exec of true answers within 1 s (${keyed} ms)" test "$keyed" -lt 1000

# --- keys are per session ---
S2=idem-2
rest POST /v1/sessions -H 'Content-Type: application/json' -d "{\"id\":\"$S2\"}" -o /dev/null
out=$(curl -sN "${A[@]}" -H "Idempotency-Key: k-crash" -H 'Content-Type: application/json' -d '{"command":"echo other session"}' "$ORCH_URL/v1/sessions/$S2/exec")
check "the same key in another session is another record" test "$(dec out <<<"$out")" = "other session"

# --- a keyed create: the first result, not a new one ---
C='{"id":"idem-c1"}'
o1=$(rest POST /v1/sessions -H 'Content-Type: application/json' -H 'Idempotency-Key: c-1' -d "$C" -w '\n%{http_code}')
o2=$(rest POST /v1/sessions -H 'Content-Type: application/json' -H 'Idempotency-Key: c-1' -d "$C" -w '\n%{http_code}')
o3=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d "$C" -w '\n%{http_code}')
check "keyed create: 201" test "$(tail -1 <<<"$o1")" = 201
check "keyed create re-issued: 201 and the first body" test "$o2" = "$o1"
check "unkeyed create of the same id: 200 (as before)" test "$(tail -1 <<<"$o3")" = 200
o4=$(rest POST /v1/sessions -H 'Content-Type: application/json' -H 'Idempotency-Key: c-1' -d '{"id":"idem-c1","org":"x"}' -o /dev/null -w '%{http_code}')
check "keyed create, other body: 422" test "$o4" = 422

# --- the records are on disk, written before the command ran ---
check "records are files in the state directory" test "$(ls "$ORCH_STATE/idempotency" | grep -c '\.json$')" -ge 8

# --- a tiny idempotency.ttl, and idempotency.max_per_session ---
orch_stop
orch_config "exec:" "  max_concurrent: 6" "idempotency:" "  ttl: 2s" "  max_per_session: 2"
check "orch restarts with ttl 2s" orch_start
S3=idem-3
rest POST /v1/sessions -H 'Content-Type: application/json' -d "{\"id\":\"$S3\"}" -o /dev/null
X="$ORCH_URL/v1/sessions/$S3/exec"
kex k-ttl '{"command":"echo r >> /workspace/ttl"}' >/dev/null
kex k-ttl '{"command":"echo r >> /workspace/ttl"}' >/dev/null
check "within the ttl: ran once" test "$(lines /workspace/ttl)" = 1
check "a second key: fine" test "$(kex k-two '{"command":"true"}' -o /dev/null -w '%{http_code}')" = 200
out=$(kex k-three '{"command":"true"}' -w ' %{http_code}')
check "a third key beyond idempotency.max_per_session: 429" contains <(echo "$out") ' 429'
check "429 names idempotency.max_per_session" contains <(echo "$out") 'idempotency.max_per_session'
sleep 2.2
kex k-ttl '{"command":"echo r >> /workspace/ttl"}' >/dev/null
check "after the ttl the key is new: it ran again" test "$(lines /workspace/ttl)" = 2
check "after the ttl: the key takes other arguments" test "$(kex k-two '{"command":"echo new"}' | dec out)" = new
check "expired records are removed from disk" test "$(ls "$ORCH_STATE/idempotency" | grep -c '\.json$')" -le 3
