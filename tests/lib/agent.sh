# tests/lib/agent.sh: helpers for the agent's e2e tests (tests/e2e/3x-agent-*.sh).
# Source after tests/lib/common.sh. Runs the agent directly on the host (no
# sandbox) with a unix socket in $T, and talks to it with curl and jq.
AGENT=$BIN/agent/sandbox-agent
if [ -n "${SANITIZER:-}" ] && [ -x "$BIN/agent/sandbox-agent-san" ]; then
	AGENT=$BIN/agent/sandbox-agent-san
fi
SOCK=$T/agent.sock
AGENT_PID=

# start_agent [extra args...]: starts the agent, waits until healthy.
start_agent() {
	mkdir -p "$T/ws" "$T/state"
	if [ -n "${AGENT_CGROUP:-}" ]; then
		# Join a cgroup first (memory limit tests), then become the agent.
		sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$AGENT_CGROUP" \
		    "$AGENT" -d --listen "unix:$SOCK" --state "$T/state" --workdir "$T/ws" "$@" \
		    >>"$T/agent.log" 2>&1 &
	else
		"$AGENT" -d --listen "unix:$SOCK" --state "$T/state" --workdir "$T/ws" "$@" \
		    >>"$T/agent.log" 2>&1 &
	fi
	AGENT_PID=$!
	track_pid "$AGENT_PID"
	wait_for 20 curl -sf --unix-socket "$SOCK" http://a/v1/health
}

# stop_agent [signal]: stops it and waits for it to be gone.
stop_agent() {
	kill -"${1:-TERM}" "$AGENT_PID" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.05; done
	wait "$AGENT_PID" 2>/dev/null
	return 0
}

agent_alive() { kill -0 "$AGENT_PID" 2>/dev/null && curl -sf -m 10 --unix-socket "$SOCK" http://a/v1/health >/dev/null; }

# api METHOD PATH [JSON]: response body in $T/body, status in $T/status.
api() {
	local m=$1 p=$2
	shift 2
	if [ $# -gt 0 ]; then
		curl -s -m 120 --unix-socket "$SOCK" -X "$m" -H 'Content-Type: application/json' \
		    --data-binary "$1" -o "$T/body" -w '%{http_code}' "http://a$p" >"$T/status"
	else
		curl -s -m 120 --unix-socket "$SOCK" -X "$m" -o "$T/body" -w '%{http_code}' \
		    "http://a$p" >"$T/status"
	fi
}

# sh_run COMMAND [TIMEOUT_MS] [MAX_OUTPUT]: POST /v1/shell; result in $T/body.
sh_run() {
	local body
	body=$(jq -cn --arg c "$1" --argjson t "${2:-60000}" --argjson m "${3:-1048576}" \
	    '{command:$c, timeout_ms:$t, max_output:$m}')
	api POST /v1/shell "$body"
}

# j FILTER: jq -r on the last body.
j() { jq -r "$1" "$T/body"; }
status() { cat "$T/status"; }
# out_is STRING: the last shell output is exactly STRING.
out_is() { [ "$(j .output)" = "$1" ]; }

# job_start COMMAND: POST /v1/jobs; prints the id.
job_start() {
	api POST /v1/jobs "$(jq -cn --arg c "$1" '{command:$c}')"
	j .id
}
# job_wait ID [TIMEOUT_MS]: POST /v1/jobs/ID/wait; {job} in $T/body.
job_wait() { api POST "/v1/jobs/$1/wait" "{\"timeout_ms\":${2:-30000}}"; }
# job_output ID [MAX]: polls the whole output of a finished job into
# $T/jobout in pieces of MAX bytes; fails if the job is still running.
job_output() {
	local off=0 max=${2:-100000}
	: >"$T/jobout"
	while :; do
		api GET "/v1/jobs/$1?offset=$off&max=$max"
		[ "$(status)" = 200 ] || return 1
		jq -j .output "$T/body" >>"$T/jobout"
		[ "$(j .eof)" = true ] && return 0
		[ "$(j .next_offset)" = "$off" ] && return 1
		off=$(j .next_offset)
	done
}
