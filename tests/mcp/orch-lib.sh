# tests/mcp/orch-lib.sh: helpers for the orchestrator e2e tests
# (tests/e2e/5x-*.sh). Source after tests/lib/common.sh.
#
#   orch_config [extra yaml...]   writes $T/orch.yaml (+ key file)
#   orch_start                     starts the daemon, waits for /readyz
#   orch_stop / orch_kill9         SIGTERM (drain) / SIGKILL
#   mcp_post [curl args]           raw POST /mcp with the key
#   mcp_tool SID NAME ARGS_JSON [curl args]  tools/call, prints result text
#   mcp_call2 SID BODY             mcp_call with MCP-Protocol-Version $MCP_PROTO
#   mcp_struct SID NAME ARGS_JSON  tools/call: the result's structuredContent,
#                                  or {"error": "..."} for an error
#   sandboxes / running_sandboxes  what the runtime holds
#   sbx_of SESSION / sbx_alive ID / sbx_kill ID / sbx_orphan ID
#
# The runtime is ORCH_TEST_RUNTIME: local (bubblewrap sandboxes with the
# busybox test image; the default when running as root with sandboxctl
# built) or fake (the real agent on the host, no isolation).
ORCH_BIN=$BIN/orchestrator/orchestrator
AGENT_SRC=$BIN/agent/sandbox-agent
SBX=$BIN/orchestrator/sandboxctl
if [ -z "${ORCH_TEST_RUNTIME:-}" ]; then
	if [ "$(id -u)" = 0 ] && [ -x "$SBX" ] && command -v bwrap >/dev/null 2>&1; then
		ORCH_TEST_RUNTIME=local
	else
		ORCH_TEST_RUNTIME=fake
	fi
fi
ORCH_RT=$ORCH_TEST_RUNTIME
ORCH_PORT=$(free_port)
ORCH_URL=http://127.0.0.1:$ORCH_PORT
ORCH_KEY=k-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
# Short state path: agent socket paths must fit in 108 bytes.
ORCH_STATE=$(mktemp -d /tmp/osb.XXXXXX)
chmod 711 "$ORCH_STATE"
ORCH_PID=
ORCH_LOG=$T/orch.log
ORCH_CG=orch-e2e-$$
printf '%s\n' "$ORCH_KEY" > "$T/key"
chmod 600 "$T/key"
chmod 711 "$T"
# a private copy: the agent may be rebuilt while tests run
AGENT_BIN=$T/sandbox-agent
cp "$AGENT_SRC" "$AGENT_BIN" && chmod 755 "$AGENT_BIN"

if [ "$ORCH_RT" = local ]; then
	ORCH_BB=${ORCH_BB:-$BIN/images/busybox}
	mkdir -p "$(dirname "$ORCH_BB")"
	bash "$TOP/scripts/build-image.sh" --busybox "$ORCH_BB" >/dev/null 2>&1 ||
		{ fail "busybox-image" "scripts/build-image.sh --busybox failed"; exit 1; }
	ORCH_LOCAL_YAML="local:
  state_dir: $ORCH_STATE/s
  images_dir: $ORCH_STATE/images
  default_image: busybox
  agent_bin: $AGENT_BIN
  cgroup_name: $ORCH_CG
  mem_bytes: 512MiB
  pids_max: 512
  start_timeout: 30s
  uid_base: $((3200000 + ($$ % 10000) * 256))
  uid_count: 256"
	printf '%s\n' "$ORCH_LOCAL_YAML" > "$T/rt.yaml"
	"$SBX" -c "$T/rt.yaml" image add busybox "$(cd "$ORCH_BB" && pwd)" >/dev/null ||
		{ fail "image-add"; exit 1; }
	ORCH_SBX_DIR=$ORCH_STATE/s
else
	ORCH_SBX_DIR=$ORCH_STATE
fi
sbx() { "$SBX" -c "$T/rt.yaml" "$@"; }

# For scripts that make hundreds of sandboxes (r31-scale-heal, the density
# benchmark): every session deleted through the orchestrator, 8 at once (a
# sandboxctl process costs about 0.5 s of health checks), the orchestrator
# killed, what is left destroyed by sandboxctl 4 at once; orch_cleanup,
# run after it, sweeps the rest. Register with on_exit orch_mass_cleanup.
orch_mass_cleanup() {
	[ -n "$ORCH_PID" ] && kill -0 "$ORCH_PID" 2>/dev/null &&
		python3 "$TOP/tests/bench/density/density.py" delete "$ORCH_URL" \
		    "$ORCH_KEY" 8 >/dev/null 2>&1
	[ -n "$ORCH_PID" ] && kill -9 "$ORCH_PID" 2>/dev/null
	ORCH_PID=
	ls "$ORCH_SBX_DIR" 2>/dev/null | grep -v '^\.' |
	    xargs -r -P 4 -n 1 "$SBX" -c "$T/rt.yaml" destroy >/dev/null 2>&1
	return 0
}

# Removes every sandbox left (fake: kills agents by FAKE_SANDBOX_ID; local:
# sandboxctl destroy), then the state dir and cgroup parents.
orch_cleanup() {
	[ -n "$ORCH_PID" ] && kill -9 "$ORCH_PID" 2>/dev/null
	local id
	for id in $(sandboxes); do
		sbx_kill "$id"
	done
	if [ "$ORCH_RT" = local ]; then
		for d in /sys/fs/cgroup/*/"$ORCH_CG" /sys/fs/cgroup/unified/"$ORCH_CG"; do
			[ -d "$d" ] && rmdir "$d" 2>/dev/null
		done
	fi
	rm -rf "$ORCH_STATE"
	return 0
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
			[ -n "${ORCH_FAKE_EXTRA:-}" ] && echo "  $ORCH_FAKE_EXTRA"
		else
			printf '%s\n' "$ORCH_LOCAL_YAML"
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

# mcp_call SID BODY [curl args...]: BODY posted in session SID.
mcp_call() {
	local sid=$1 body=$2
	shift 2
	mcp_post -H "X-Session-Id: $sid" --max-time 300 "$@" -d "$body"
}

# mcp_tool SID NAME ARGS [curl args...]: the text of the tool result (isError
# prefixed "ERROR: "); curl args such as -H "X-User-Id: U" or --max-time S.
mcp_tool() {
	local sid=$1 name=$2 args=$3
	shift 3
	mcp_call "$sid" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$name\",\"arguments\":$args}}" "$@" |
	    jq -r 'if .result then ((if .result.isError then "ERROR: " else "" end) + ([.result.content[].text] | join(""))) else "RPCERROR: " + (.error | tojson) end'
}

# mcp_call2 SID BODY: like mcp_call, with MCP-Protocol-Version 2025-06-18
# (structuredContent comes with that version or later)
MCP_PROTO=${MCP_PROTO:-2025-06-18}
mcp_call2() {
	mcp_post -H "X-Session-Id: $1" -H "MCP-Protocol-Version: $MCP_PROTO" --max-time 300 -d "$2"
}

# mcp_struct SID NAME ARGS: the structuredContent of a tool result (an error
# result: {"error": its text}; a JSON-RPC error: {"error": the error object}).
mcp_struct() {
	local sid=$1 name=$2 args=$3
	mcp_call2 "$sid" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$name\",\"arguments\":$args}}" |
	    jq -c 'if .result and (.result.isError | not) then .result.structuredContent
	        elif .result then {error: ([.result.content[].text] | join(""))}
	        else {error: (.error | tojson)} end'
}

# The sandbox ids the runtime holds right now.
sandboxes() {
	if [ "$ORCH_RT" = local ]; then
		sbx list --json 2>/dev/null | python3 -c 'import json,sys
for s in json.load(sys.stdin): print(s["id"])'
		return
	fi
	local d
	for d in "$ORCH_STATE"/*/; do
		[ -d "$d" ] && basename "$d"
	done
}

# How many of them run.
running_sandboxes() {
	if [ "$ORCH_RT" = local ]; then
		sbx list --json 2>/dev/null | python3 -c 'import json,sys
print(sum(1 for s in json.load(sys.stdin) if s["state"]=="running"))'
		return
	fi
	local n=0 d
	for d in "$ORCH_STATE"/*/; do
		[ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null && n=$((n + 1))
	done
	echo $n
}

# The sandbox id holding SESSION (its label), or nothing.
sbx_of() {
	if [ "$ORCH_RT" = local ]; then
		sbx list --json 2>/dev/null | python3 -c 'import json,sys
for s in json.load(sys.stdin):
    if s["labels"].get("session")==sys.argv[1]: print(s["id"]); break' "$1"
		return
	fi
	grep -l "\"session\":\"$1\"" "$ORCH_STATE"/*/meta.json 2>/dev/null | head -1 | xargs -r dirname | xargs -r basename
}

# Is sandbox ID running?
sbx_alive() {
	if [ "$ORCH_RT" = local ]; then
		sbx get "$1" 2>/dev/null | grep -q '"state":[[:space:]]*"running"'
		return
	fi
	local d=$ORCH_STATE/$1
	[ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null
}

# Removes sandbox ID behind the orchestrator's back.
sbx_kill() {
	if [ "$ORCH_RT" = local ]; then
		sbx destroy "$1" >/dev/null 2>&1
		return 0
	fi
	local pid
	for pid in $(grep -lx --null-data "FAKE_SANDBOX_ID=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
		kill -9 "$pid" 2>/dev/null
	done
	rm -rf "${ORCH_STATE:?}/$1"
}

# Makes an unlabelled sandbox ID the orchestrator never created.
sbx_orphan() {
	if [ "$ORCH_RT" = local ]; then
		sbx create "$1" >/dev/null 2>&1
		return
	fi
	mkdir -p "$ORCH_STATE/$1"
	echo '{"image":"host","labels":{}}' > "$ORCH_STATE/$1/meta.json"
}

sbx_exists() { sandboxes | grep -qx "$1"; }

rest() {
	local method=$1 path=$2; shift 2
	curl -s -X "$method" -H "Authorization: Bearer $ORCH_KEY" "$@" "$ORCH_URL$path"
}

# wait_until SECONDS cmd...: like wait_for, but in this shell (functions ok).
wait_until() {
	local end=$(( $(date +%s%N) / 1000000 + $1 * 1000 )); shift
	while ! "$@" >/dev/null 2>&1; do
		[ $(( $(date +%s%N) / 1000000 )) -ge $end ] && return 1
		sleep 0.1
	done
}
nsandboxes() { sandboxes | wc -l; }
