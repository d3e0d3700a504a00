# tests/mcp/orch-lib.sh: helpers for the orchestrator e2e tests
# (tests/e2e/5x-*.sh). Source after tests/lib/common.sh.
#
#   orch_config [extra yaml...]   writes $T/orch.yaml (+ key file)
#   orch_start                     starts the daemon, waits for /readyz
#   orch_stop / orch_kill9         SIGTERM (drain) / SIGKILL
#   mcp_call SID JSON              POST /mcp, prints the body
#   mcp_tool SID NAME ARGS_JSON    tools/call, prints result text
#   sandboxes                      ids the runtime holds (count with | wc -l)
#
# The runtime is ORCH_TEST_RUNTIME (fake: real agent on the host, no
# isolation; local: bubblewrap sandboxes). Default: fake.
ORCH_BIN=$BIN/orchestrator/orchestrator
AGENT_BIN=$BIN/agent/sandbox-agent
ORCH_RT=${ORCH_TEST_RUNTIME:-fake}
ORCH_PORT=$(free_port)
ORCH_URL=http://127.0.0.1:$ORCH_PORT
ORCH_KEY=k-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
# Short state path: agent socket paths must fit in 108 bytes.
ORCH_STATE=$(mktemp -d /tmp/osb.XXXXXX)
ORCH_PID=
ORCH_LOG=$T/orch.log
printf '%s\n' "$ORCH_KEY" > "$T/key"
chmod 600 "$T/key"

# Removes every sandbox left in the state dir (fake runtime: kills agents
# by their FAKE_SANDBOX_ID; local: sandboxctl destroy).
orch_cleanup() {
	[ -n "$ORCH_PID" ] && kill -9 "$ORCH_PID" 2>/dev/null
	local id pid
	for d in "$ORCH_STATE"/*/; do
		[ -d "$d" ] || continue
		id=$(basename "$d")
		if [ "$ORCH_RT" = fake ]; then
			for pid in $(grep -lx --null-data "FAKE_SANDBOX_ID=$id" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
				kill -9 "$pid" 2>/dev/null
			done
		elif [ -x "$BIN/orchestrator/sandboxctl" ]; then
			"$BIN/orchestrator/sandboxctl" -f "$T/orch.yaml" destroy "$id" >/dev/null 2>&1
		fi
	done
	rm -rf "$ORCH_STATE"
}
on_exit orch_cleanup

orch_config() {
	{
		echo "listen: 127.0.0.1:$ORCH_PORT"
		echo "key_file: $T/key"
		echo "runtime: $ORCH_RT"
		echo "log:"
		echo "  file: $ORCH_LOG"
		if [ "$ORCH_RT" = fake ]; then
			echo "fake:"
			echo "  state_dir: $ORCH_STATE"
			echo "  agent: $AGENT_BIN"
		else
			echo "local:"
			echo "  state_dir: $ORCH_STATE"
			echo "  agent_bin: $AGENT_BIN"
			[ -n "${ORCH_TEST_IMAGES:-}" ] && echo "  images_dir: $ORCH_TEST_IMAGES"
		fi
		for l in "$@"; do echo "$l"; done
	} > "$T/orch.yaml"
}

orch_start() {
	"$ORCH_BIN" -f "$T/orch.yaml" ${ORCH_ARGS:-} >>"$T/orch.stderr" 2>&1 &
	ORCH_PID=$!
	track_pid "$ORCH_PID"
	wait_for 30 curl -sf "$ORCH_URL/readyz"
}

orch_stop() {
	[ -n "$ORCH_PID" ] || return 0
	kill "$ORCH_PID" 2>/dev/null
	for _ in $(seq 1 200); do kill -0 "$ORCH_PID" 2>/dev/null || break; sleep 0.05; done
	ORCH_PID=
}

orch_kill9() {
	[ -n "$ORCH_PID" ] || return 0
	kill -9 "$ORCH_PID" 2>/dev/null
	wait "$ORCH_PID" 2>/dev/null
	ORCH_PID=
}

# mcp_post [curl args...]: raw POST to /mcp with the key; prints the body.
mcp_post() {
	curl -s -H "Authorization: Bearer $ORCH_KEY" -H 'Content-Type: application/json' \
	    -H 'Accept: application/json, text/event-stream' "$@" "$ORCH_URL/mcp"
}

mcp_call() {
	local sid=$1 body=$2
	mcp_post -H "X-Session-Id: $sid" --max-time 300 -d "$body"
}

# mcp_tool SID NAME ARGS: the text of the tool result (isError prefixed "ERROR: ").
mcp_tool() {
	local sid=$1 name=$2 args=$3
	mcp_call "$sid" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$name\",\"arguments\":$args}}" |
	    python3 -c 'import json,sys
d=json.load(sys.stdin); r=d.get("result")
if r is None: print("RPCERROR:", json.dumps(d.get("error"))); sys.exit(0)
t="".join(c.get("text","") for c in r["content"])
print(("ERROR: " if r.get("isError") else "")+t)'
}

# The sandbox ids the runtime holds right now.
sandboxes() {
	local d
	for d in "$ORCH_STATE"/*/; do
		[ -d "$d" ] && basename "$d"
	done
}

# Running sandbox count (fake: agent alive).
running_sandboxes() {
	local n=0 d
	for d in "$ORCH_STATE"/*/; do
		[ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null && n=$((n + 1))
	done
	echo $n
}

rest() {
	local method=$1 path=$2; shift 2
	curl -s -X "$method" -H "Authorization: Bearer $ORCH_KEY" "$@" "$ORCH_URL$path"
}
