#!/usr/bin/env bash
# 54-orch-load.sh: 50 sessions make concurrent MCP calls for a while: no
# error, one sandbox per session, nothing leaked after they are deleted, no
# fd growth in the daemon.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

orch_config "limits:" "  max_running: 80" "  max_creating: 16"
check "orch starts" orch_start
fds0=$(ls /proc/$ORCH_PID/fd | wc -l)
out=$(cd "$TOP/tests/mcp" && timeout 300 node load.mjs "$ORCH_URL/mcp" "$ORCH_KEY" ${ORCH_LOAD_N:-50} ${ORCH_LOAD_SECONDS:-15} 2>&1)
rc=$?
echo "$out"
check "50 sessions x concurrent calls without error" [ $rc -eq 0 ]
check "one sandbox per session" [ "$(nsandboxes)" = ${ORCH_LOAD_N:-50} ]
check "all running" [ "$(running_sandboxes)" = ${ORCH_LOAD_N:-50} ]
n=$(rest GET /v1/sessions | jq '.sessions | length')
check "all sessions listed" [ "$n" = ${ORCH_LOAD_N:-50} ]
dp=()
for i in $(seq 0 $((${ORCH_LOAD_N:-50} - 1))); do rest DELETE "/v1/sessions/load-$i" -o /dev/null & dp+=($!); done
wait "${dp[@]}"
check "all deleted" [ "$(rest GET /v1/sessions | jq '.sessions | length')" = 0 ]
check "no sandbox leaked" [ "$(nsandboxes)" = 0 ]
sleep 1
fds1=$(ls /proc/$ORCH_PID/fd | wc -l)
if [ "$fds1" -le $((fds0 + 5)) ]; then ok "no fd leak ($fds0 -> $fds1)"; else fail "no fd leak" "$fds0 -> $fds1"; fi
rss=$(awk '/VmRSS/ {print $2}' /proc/$ORCH_PID/status)
echo "orchestrator rss ${rss} kB after the load"
check "daemon still up" kill -0 "$ORCH_PID"
