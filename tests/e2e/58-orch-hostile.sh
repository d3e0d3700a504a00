#!/usr/bin/env bash
# 58-orch-hostile.sh: the orchestrator's HTTP under hostile load (issue 13):
# malformed and oversized requests answered in the route's JSON shape,
# connection caps (per address, idle keep-alive time), descriptor
# exhaustion at a soft limit of 1024 without a busy loop or a log flood,
# the per-session call cap and fair threads (one session's 520 calls do
# not delay another's), a client that disconnects cancels its call, and
# drain answers (503 + Retry-After; calls past the deadline get an error).
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"
H="python3 $TOP/tests/mcp/hostile.py"
AUTH="Authorization: Bearer $ORCH_KEY"

# ms of CPU (user + system) the daemon used so far.
cpu_ms() { awk '{print int(($14 + $15) * 1000 / '"$(getconf CLK_TCK)"')}' /proc/$ORCH_PID/stat; }
# The slowest of 5 `echo` calls of session $1, in ms (the first one is the
# one that would wait for a thread).
echo_ms() {
	local i t all=""
	for i in 1 2 3 4 5; do
		t=$(mcp_post -H "X-Session-Id: $1" -o /dev/null -w '%{time_total}' --max-time 60 \
		    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo hi"}}}')
		all="$all $(python3 -c "print(int(float('$t') * 1000))")"
	done
	echo $all | tr ' ' '\n' | sort -n | tail -1
}

orch_config "http:" "  max_body: 1MiB" "  request_timeout: 2s" "  idle_timeout: 2s" \
    "  max_conns_per_addr: 40" "limits:" "  session_calls: 16" "drain_timeout: 3s"
check "orch starts" orch_start

# --- malformed and hostile requests: JSON in the route's shape, never HTML ---
$H proto 127.0.0.1 "$ORCH_PORT" "$ORCH_KEY"
check "daemon up after the hostile requests" curl -sf "$ORCH_URL/healthz"
check "no HTML in any error" not_contains "$T/orch.stderr" "<html"
# a runtime failure over REST: JSON, 4xx/503, no host path in the message
st=$(curl -s -o "$T/rt-err" -w '%{http_code}' -H "$AUTH" -H 'Content-Type: application/json' \
    -d '{"id":"rt-err","image":"no-such-image"}' "$ORCH_URL/v1/sessions")
if { [ "$st" = 503 ] || [ "$st" = 400 ]; } && jq -e '.error.code and .error.message' "$T/rt-err" >/dev/null &&
    ! grep -q "$ORCH_STATE\|/tmp/\|/var/" "$T/rt-err"; then
	ok "a failed create answers $st JSON without host paths"
else
	fail "a failed create answers JSON without host paths" "$st $(head -c 400 "$T/rt-err")"
fi

# --- connection caps: per address, and the idle keep-alive time ---
exec 7> >($H hold 127.0.0.1 "$ORCH_PORT" 60 30 idle > "$T/hold1" 2>&1)
hold1=$!
wait_for 10 grep -q '^held' "$T/hold1"
sleep 0.3
n=$(curl -s -H "$AUTH" "$ORCH_URL/metrics" | awk '/^orch_http_conns_evicted_total/ {print $2}')
check "past max_conns_per_addr the oldest idle connections were closed" [ "${n:-0}" -ge 20 ]
check "a new client of that address still gets in" curl -sf "$ORCH_URL/healthz"
sleep 2.5
n=$(curl -s -H "$AUTH" "$ORCH_URL/metrics" | awk '/^orch_http_idle_closed_total/ {print $2}')
check "idle keep-alive connections closed after http.idle_timeout" [ "${n:-0}" -ge 30 ]
exec 7>&-
wait $hold1 2>/dev/null
# connections that are all busy (heads arriving): the next one gets 429 JSON
exec 7> >($H hold 127.0.0.1 "$ORCH_PORT" 40 30 partial > "$T/hold2" 2>&1)
hold2=$!
wait_for 10 grep -q '^held' "$T/hold2"
sleep 0.3
st=$(curl -s -D "$T/h429" -o "$T/b429" -w '%{http_code}' -H "$AUTH" "$ORCH_URL/v1/sessions")
check "past max_conns_per_addr with none idle: 429 in the REST shape" \
    bash -c "[ $st = 429 ] && jq -e '.error.code == \"too_many_connections\"' $T/b429 >/dev/null"
check "the 429 carries Retry-After" grep -qi '^retry-after:' "$T/h429"
st=$(mcp_post -o "$T/b429m" -w '%{http_code}' -H 'X-Session-Id: x' -d '{"jsonrpc":"2.0","id":1,"method":"ping"}')
check "the same on /mcp: a JSON-RPC error" bash -c "[ $st = 429 ] && jq -e '.error.code == -32000' $T/b429m >/dev/null"
exec 7>&-
wait $hold2 2>/dev/null
wait_for 5 curl -sf "$ORCH_URL/healthz"
check "heads that never end are timed out (http.request_timeout); clients get in again" curl -sf "$ORCH_URL/healthz"

# --- a long call keeps its connection past http.idle_timeout ---
out=$(mcp_tool long-s shell '{"command":"sleep 3.2; echo long-done"}')
check "a 3.2 s call on a 2 s idle_timeout completes" contains <(echo "$out") long-done

# --- a client that disconnects mid-call cancels the call ---
mcp_tool gone-s shell '{"command":"true"}' >/dev/null
mcp_post -H 'X-Session-Id: gone-s' --max-time 1 -o /dev/null \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 30.77; echo late"}}}'
wait_for 10 grep -q "session=gone-s tool=shell cancelled (the client disconnected)" "$ORCH_LOG"
check "disconnect logged as a cancel" contains "$ORCH_LOG" "session=gone-s tool=shell cancelled (the client disconnected)"
t0=$(date +%s%N)
out=$(mcp_tool gone-s shell '{"command":"echo after-gone"}')
t1=$(date +%s%N)
check "the next call is not busy" contains <(echo "$out") after-gone
check "the next call came soon (<8 s, not after the 30 s command)" [ $(( (t1 - t0) / 1000000 )) -lt 8000 ]
check "the abandoned command was killed" bash -c "! pgrep -fx 'sleep 30.77' >/dev/null"

# --- per-session cap and fair threads: 520 calls of one session ---
mcp_tool fair-a shell '{"command":"true"}' >/dev/null
mcp_tool fair-b shell '{"command":"true"}' >/dev/null
out=$(mcp_tool fair-a shell_async '{"command":"sleep 40"}')
jid=$(echo "$out" | sed -n 's/^Started job \([^ ]*\).*/\1/p')
check "fair: background job started" [ -n "$jid" ]
base=$(echo_ms fair-b)
# 520 shell_wait calls from fair-a: 6 batches of up to 87 (2025-03-26)
python3 - "$jid" "$T" <<'PY'
import json, sys
jid, t = sys.argv[1], sys.argv[2]
for b in range(6):
    n = 87 if b < 5 else 520 - 87 * 5
    msgs = [{"jsonrpc": "2.0", "id": b * 100 + i, "method": "tools/call",
             "params": {"name": "shell_wait", "arguments": {"job_id": jid, "timeout": 20}}}
            for i in range(n)]
    open("%s/batch%d" % (t, b), "w").write(json.dumps(msgs))
PY
bpids=()
for b in 0 1 2 3 4 5; do
	mcp_post -H 'X-Session-Id: fair-a' --max-time 60 -o "$T/bout$b" --data-binary @"$T/batch$b" &
	bpids+=($!)
done
sleep 2	# the batches are in (on the old code: 512 threads held, the rest queued)
loaded=$(echo_ms fair-b)
# Old code: the first echo waited ~18 s for one of 512 threads. No retry:
# by then the calls have ended; the bound is generous against load spikes.
if [ "$loaded" -le $((base + 250)) ]; then
	ok "fair: another session's echo is not delayed (slowest of 5: ${base} ms idle, ${loaded} ms under 520 calls)"
else
	fail "fair: another session's echo is not delayed" "slowest of 5: ${base} ms idle, ${loaded} ms under 520 calls"
fi
n=$(curl -s -H "$AUTH" "$ORCH_URL/metrics" | awk '/^orch_tool_calls_refused_total/ {print $2}')
check "fair: 504 of the 520 calls refused at limits.session_calls (${n:-none})" [ "${n:-0}" = 504 ]
st=$(curl -s -o "$T/rest429" -w '%{http_code}' -X POST -H "$AUTH" "$ORCH_URL/v1/sessions/fair-a/start")
check "fair: a REST call over the session's cap is 429 in the REST shape" \
    bash -c "[ $st = 429 ] && jq -e '.error.code == \"too_many_calls\"' $T/rest429 >/dev/null"
kill "${bpids[@]}" 2>/dev/null
wait "${bpids[@]}" 2>/dev/null
wait_for 20 bash -c "curl -s -H '$AUTH' $ORCH_URL/metrics | grep -qx 'orch_inflight_requests 0'"
mcp_post -H 'X-Session-Id: fair-a' --max-time 60 -o "$T/bsmall" --data-binary @"$T/batch5"
python3 - "$T/bsmall" <<'PY' && ok "fair: beyond limits.session_calls, clear tool errors (isError)" || fail "fair: beyond limits.session_calls, clear tool errors (isError)" "$(head -c 400 "$T/bsmall")"
import json, sys
d = json.load(open(sys.argv[1]))
errs = [r for r in d if r.get("result", {}).get("isError") and
        "limits.session_calls" in r["result"]["content"][0]["text"]]
ok = [r for r in d if not r.get("result", {}).get("isError")]
sys.exit(0 if len(errs) == len(d) - 16 and len(ok) == 16 else 1)
PY
mcp_post -H 'X-Session-Id: fair-a' -o /dev/null -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell_stop\",\"arguments\":{\"job_id\":\"$jid\"}}}"

# --- drain: calls past the deadline get a JSON-RPC error before the exit ---
mcp_tool drain-s shell '{"command":"true"}' >/dev/null
( mcp_post -H 'X-Session-Id: drain-s' --max-time 30 -D "$T/dh" -o "$T/dlong" \
    -d '{"jsonrpc":"2.0","id":"long-1","method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 20.31"}}}' ) &
dpid=$!
wait_for 20 pgrep -fx "sleep 20.31" || true
( curl -s --max-time 30 -N -H "$AUTH" -H 'Content-Type: application/json' -H 'Accept: text/event-stream' \
    -H 'X-Session-Id: drain-t' -H 'MCP-Protocol-Version: 2025-06-18' -o "$T/dsse" \
    -d '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 20.32"},"_meta":{"progressToken":"p1"}}}' \
    "$ORCH_URL/mcp" ) &
spid=$!
wait_for 40 pgrep -fx "sleep 20.32" || true
t0=$(date +%s%N)
kill -TERM "$ORCH_PID"
sleep 0.3
st=$(curl -s -o "$T/dready" -D "$T/dreadyh" -w '%{http_code}' --max-time 3 "$ORCH_URL/readyz")
check "drain: /readyz is 503 (listener open)" [ "$st" = 503 ]
check "drain: /readyz has Retry-After" grep -qi '^retry-after:' "$T/dreadyh"
wait $dpid
wait $spid
t1=$(date +%s%N)
check "drain: the long call got a JSON-RPC error with its id" jq -e '.id == "long-1" and .error.code == -32000 and (.error.message | test("drain deadline"))' "$T/dlong"
check "drain: the SSE call got its error event" grep -q '"id":5,"error"' "$T/dsse"
check "drain: answered at the deadline (3 s), not at the command's end" [ $(( (t1 - t0) / 1000000 )) -lt 9000 ]
wait_for 10 bash -c "! kill -0 $ORCH_PID 2>/dev/null"
check "drain: the daemon exited" bash -c "! kill -0 $ORCH_PID 2>/dev/null"
check "drain deadline logged" contains "$ORCH_LOG" "answered with an error"
ORCH_PID=

# --- descriptors: soft limit 1024, ~1100 idle connections ---
orch_config "http:" "  idle_timeout: 60s" "  request_timeout: 5s" "  max_conns_per_addr: 5000"
(ulimit -Sn 1024; ulimit -Hn 4096; orch_start) || true
ORCH_PID=$(pgrep -f -n "orchestrator -f $T/orch.yaml")
track_pid "$ORCH_PID"
wait_for 30 curl -sf "$ORCH_URL/readyz"
check "fd: soft limit raised to the hard one, both logged" contains "$ORCH_LOG" "descriptors: soft limit 4096 (was 1024), hard limit 4096"
# Now take the limit back to 1024 under the daemon: accept() will hit EMFILE.
prlimit --pid "$ORCH_PID" --nofile=1024:4096
nlog() { cat "$ORCH_LOG" "$T/orch.stderr" 2>/dev/null | wc -l; }
l0=$(nlog)
c0=$(cpu_ms)
exec 7> >(ulimit -n 4096; $H hold 127.0.0.1 "$ORCH_PORT" 1100 60 idle > "$T/hold3" 2>&1)
hold3=$!
wait_for 30 grep -q '^held' "$T/hold3"
sleep 3
c1=$(cpu_ms)
check "fd: a client still gets in with 1100 idle connections at 1024 descriptors" curl -sf --max-time 5 "$ORCH_URL/healthz"
check "fd: CPU stays low (${c1}-${c0} ms over ~3 s)" [ $((c1 - c0)) -lt 400 ]
check "fd: the log stays bounded ($(( $(nlog) - l0 )) lines)" [ $(( $(nlog) - l0 )) -lt 50 ]
exec 7>&-
wait $hold3 2>/dev/null
# every connection mid-request (nothing idle to close): accepts pause
exec 7> >(ulimit -n 4096; $H hold 127.0.0.1 "$ORCH_PORT" 1100 60 partial > "$T/hold4" 2>&1)
hold4=$!
wait_for 30 grep -q '^held' "$T/hold4"
c0=$(cpu_ms); l0=$(wc -l < "$ORCH_LOG")
sleep 3
c1=$(cpu_ms)
check "fd: no busy loop while out of descriptors (${c1}-${c0} ms over 3 s)" [ $((c1 - c0)) -lt 300 ]
check "fd: out of descriptors logged, at most once per interval" \
    [ "$(tail -n +$((l0 + 1)) "$ORCH_LOG" | grep -c 'accept:')" -le 2 ]
wait_for 15 curl -sf --max-time 3 "$ORCH_URL/healthz"
check "fd: a client gets in after the stuck heads time out" curl -sf --max-time 5 "$ORCH_URL/healthz"
exec 7>&-
wait $hold4 2>/dev/null
orch_stop

# --- the total cap (http.max_conns): oldest idle closed, else 503 JSON ---
orch_config "http:" "  max_conns: 16" "  request_timeout: 3s"
check "orch starts with max_conns 16" orch_start
exec 7> >($H hold 127.0.0.1 "$ORCH_PORT" 24 30 idle 127.0.0.2 127.0.0.3 > "$T/hold5" 2>&1)
hold5=$!
wait_for 10 grep -q '^held' "$T/hold5"
sleep 0.3
check "total cap: a client gets in past 24 idle connections" curl -sf --max-time 3 "$ORCH_URL/healthz"
n=$(curl -s -H "$AUTH" "$ORCH_URL/metrics" | awk '/^orch_http_connections / {print $2}')
check "total cap: at most 16 connections open (${n})" [ "${n:-99}" -le 16 ]
exec 7>&-
wait $hold5 2>/dev/null
exec 7> >($H hold 127.0.0.1 "$ORCH_PORT" 16 30 partial 127.0.0.2 127.0.0.3 > "$T/hold6" 2>&1)
hold6=$!
wait_for 10 grep -q '^held' "$T/hold6"
sleep 0.3
st=$(mcp_post -D "$T/h503" -o "$T/b503" -w '%{http_code}' -H 'X-Session-Id: x' -d '{"jsonrpc":"2.0","id":1,"method":"ping"}')
check "total cap with none idle: 503 JSON-RPC error with Retry-After" \
    bash -c "[ $st = 503 ] && jq -e '.error.code == -32000' $T/b503 >/dev/null && grep -qi '^retry-after:' $T/h503"
exec 7>&-
wait $hold6 2>/dev/null
wait_for 10 curl -sf --max-time 2 "$ORCH_URL/healthz"
check "total cap: clients get in once the heads time out" curl -sf --max-time 3 "$ORCH_URL/healthz"
orch_stop
