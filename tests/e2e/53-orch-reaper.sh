#!/usr/bin/env bash
# 53-orch-reaper.sh: idle and lifetime reaping happen on time, never under a
# running command or job; stopped sandboxes resume with their workspace and
# are purged after stopped_ttl; every reap is logged with its reason.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

# reap.freeze off: this is the stop path (runtimes that cannot freeze, and
# the operator's choice); freezing is r31-orch-freeze.sh's.
orch_config "reap:" "  interval: 200ms" "  idle: 3s" "  lifetime: 12s" "  stopped_ttl: 10s" \
	"  freeze: false"
check "orch starts" orch_start

alive() { sbx_alive "$@"; }
quick() { mcp_post -H "X-Session-Id: $1" -o /dev/null -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"true"}}}'; }
# ms between the first log line matching A and the first matching B.
log_gap() {
	python3 - "$ORCH_LOG" "$1" "$2" <<'PY'
import sys, datetime
log, a, b = sys.argv[1:4]
def ts(pat):
    for line in open(log):
        if pat in line:
            return datetime.datetime.strptime(line[:23], '%Y-%m-%dT%H:%M:%S.%f')
ta, tb = ts(a), ts(b)
print(-1 if ta is None or tb is None else int((tb - ta).total_seconds() * 1000))
PY
}

# Idle: stopped ~3 s after the last call ended.
mcp_tool idle-s shell '{"command":"echo data > kept.txt"}' >/dev/null
sb=$(rest GET /v1/sessions/idle-s | jq -r .sandbox_id)
wait_for 20 grep -q "session=idle-s sandbox=$sb stopped" "$ORCH_LOG"
dt=$(log_gap "session=idle-s tool=shell" "session=idle-s sandbox=$sb stopped reason=idle")
if [ "$dt" -ge 2950 ] && [ "$dt" -le 4500 ]; then ok "idle reap on time (${dt}ms after the last call)"; else fail "idle reap on time" "${dt}ms"; fi
check "idle reap stopped the sandbox" eval '! alive $sb'
out=$(rest GET /v1/sessions/idle-s)
check "reaped session shows stopped" contains <(echo "$out") '"state":"stopped"'
out=$(mcp_tool idle-s shell '{"command":"cat kept.txt"}')
check "stopped session resumes with its workspace" contains <(echo "$out") data
check "resume logged" contains "$ORCH_LOG" "session=idle-s sandbox=$sb resumed"

# Long command and running job: no reap while they run (6 s > idle 3 s).
# Each command starts right after its session's last call, so no idle
# time passes before it (a loaded machine must not make this flaky).
quick job-s
mcp_tool job-s shell_async '{"command":"sleep 6; echo job-done"}' > "$T/job"
quick long-s
( mcp_tool long-s shell '{"command":"sleep 6; echo long-done"}' > "$T/long" ) &
lp=$!
lsb=$(rest GET /v1/sessions/long-s | jq -r .sandbox_id); jsb=$(rest GET /v1/sessions/job-s | jq -r .sandbox_id)
jid=$(sed -n 's/^Started job \([^ ]*\).*/\1/p' "$T/job")
wait $lp
check "long command completed" contains "$T/long" long-done
check "not reaped under a long command" alive "$lsb"
check "not reaped under a running job" alive "$jsb"
out=$(mcp_tool job-s shell_poll "{\"job_id\":\"$jid\"}")
check "job finished in place" contains <(echo "$out") job-done

# Lifetime: stopped 12 s after start although it is used all the time.
quick life-s
lsb2=$(rest GET /v1/sessions/life-s | jq -r .sandbox_id)
t_end=$(( $(date +%s) + 25 ))
while [ "$(date +%s)" -lt $t_end ] && ! grep -q "session=life-s sandbox=$lsb2 stopped" "$ORCH_LOG"; do
	quick life-s
	sleep 0.2
done
check "lifetime reap logged with reason" contains "$ORCH_LOG" "session=life-s sandbox=$lsb2 stopped reason=lifetime"
dt=$(log_gap "session=life-s sandbox=$lsb2 created" "session=life-s sandbox=$lsb2 stopped reason=lifetime")
if [ "$dt" -ge 11950 ] && [ "$dt" -le 14000 ]; then ok "lifetime reap on time (${dt}ms after start)"; else fail "lifetime reap on time" "${dt}ms"; fi

# Stopped TTL: idle-s stops again and is purged 10 s later.
wait_until 40 eval "! sbx_exists $sb"
check "stopped sandbox purged after stopped_ttl" eval "! sbx_exists $sb"
check "purge logged with reason" contains "$ORCH_LOG" "session=idle-s sandbox=$sb destroyed reason=stopped_ttl"
dt=$(log_gap "session=idle-s sandbox=$sb stopped reason=idle" "session=idle-s sandbox=$sb destroyed reason=stopped_ttl")
check "purge not before stopped_ttl" [ "$dt" -ge 9950 ]
out=$(rest GET /v1/sessions/idle-s -w ' %{http_code}')
check "purged session is gone" contains <(echo "$out") ' 404'
out=$(rest GET /metrics)
check "reap metrics" python3 -c "import sys,re; t=sys.argv[1]; sys.exit(0 if re.search(r'orch_reaped_total\{reason=\"idle\"\} [1-9]', t) and re.search(r'orch_reaped_total\{reason=\"lifetime\"\} [1-9]', t) and re.search(r'orch_reaped_total\{reason=\"stopped_ttl\"\} [1-9]', t) else 1)" "$out"
