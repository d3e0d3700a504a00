# tests/apps/apps-lib.sh: the whole apps system for tests and benchmarks
# (tests/e2e/73-apps-browser.sh, tests/bench/gateway/run.sh). Source after
# tests/lib/common.sh and tests/mcp/orch-lib.sh.
#
#   apps_have_gateway          is the gateway built ($GW_BIN)?
#   apps_orch_config [yaml...] orch_config with the apps.* settings
#   apps_gw_start              writes $T/gw.yaml, starts the gateway, waits
#                              until it listens and the orchestrator has it
#   apps_expose SID PORT NAME  expose_port; sets APP_URL APP_TOKEN APP_HOST
#                              (the URL's host[:port]) and APP_NAME
#   apps_wait_route [SECS]     until the gateway has the app's route and
#                              reaches the app (a request with the token
#                              answers neither 404 nor 503)
#   sbx_pid SID                the host pid of the session's sandbox pid 1
#                              (local runtime), for nsenter -t PID -n
#   sbx_put SID FILE NAME      copies a host file into the session's
#                              sandbox's workspace (the shell's starting
#                              directory: run it as ./NAME)
#
# Every detail of the system's shape is a variable, so the lead can fix one
# at merge without touching the tests:
GW_BIN=${GW_BIN:-$BIN/gateway/app-gateway}
APPS_DOMAIN=${APPS_DOMAIN:-apps.localhost}
GW_PORT=${GW_PORT:-$(free_port)}
GW_ADDR=127.0.0.1:$GW_PORT
# the control socket: short path (sun_path is 108 bytes)
APPS_SOCK=${APPS_SOCK:-$ORCH_STATE/apps.sock}
GW_LOG=$T/gw.log
GW_PID=
# orchestrator settings (orchestrator/conf.c apps.*), one YAML line each
if [ -z "${APPS_ORCH_YAML+x}" ]; then
	APPS_ORCH_YAML=("apps:" "  domain: $APPS_DOMAIN" "  port: $GW_PORT"
	    "  control_socket: $APPS_SOCK")
fi
# the gateway's configuration (its keys: app-gateway --print-docs)
GW_YAML=${GW_YAML:-"listen: $GW_ADDR
domain: $APPS_DOMAIN
control:
  socket: $APPS_SOCK
log:
  file: $GW_LOG"}
# more top-level YAML for the gateway (a benchmark's limits, say)
GW_YAML_EXTRA=${GW_YAML_EXTRA:-}

apps_have_gateway() { [ -x "$GW_BIN" ]; }

apps_orch_config() { orch_config "${APPS_ORCH_YAML[@]}" "$@"; }

apps_gw_start() {
	printf '%s\n' "$GW_YAML" >"$T/gw.yaml"
	[ -z "$GW_YAML_EXTRA" ] || printf '%s\n' "$GW_YAML_EXTRA" >>"$T/gw.yaml"
	"$GW_BIN" -f "$T/gw.yaml" ${GW_ARGS:-} >>"$T/gw.stderr" 2>&1 &
	GW_PID=$!
	track_pid "$GW_PID"
	wait_port "$GW_PORT" 20 || return 1
	# connected to the orchestrator: an unknown host is answered (404), not 503
	wait_for 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: none-s-0000000000000000.$APPS_DOMAIN' http://$GW_ADDR/)\" = 404 ]"
}

# apps_expose SID PORT [NAME]
apps_expose() {
	local sid=$1 port=$2 name=${3:-} args raw out
	args="{\"port\":$port${name:+,\"name\":\"$name\"}}"
	raw=$(mcp_call2 "$sid" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"expose_port\",\"arguments\":$args}}")
	out=$(jq -c '.result.structuredContent // {}' <<<"$raw" 2>/dev/null)
	APP_URL=$(jq -r '.url // empty' <<<"$out")
	APP_TOKEN=$(jq -r '.token // empty' <<<"$out")
	APP_NAME=$(jq -r '.name // empty' <<<"$out")
	APP_HOST=$(sed -E 's|^[a-z]+://([^/]+).*|\1|' <<<"$APP_URL")
	[ -n "$APP_URL" ] && [ -n "$APP_TOKEN" ] || { echo "expose_port answered: $raw" >&2; return 1; }
}

# apps_code [curl args]: the HTTP status of GET / through the gateway with
# the app's Host and token
apps_code() {
	curl -s -o /dev/null -w '%{http_code}' -H "Host: $APP_HOST" \
	    -H "Authorization: Bearer $APP_TOKEN" "$@" "http://$GW_ADDR/"
}
apps_wait_route() {
	local end=$(( $(date +%s) + ${1:-20} )) c
	while :; do
		c=$(apps_code)
		case $c in 404|503|000) ;; *) return 0 ;; esac
		[ "$(date +%s)" -ge "$end" ] && { echo "through the gateway: still HTTP $c" >&2; return 1; }
		sleep 0.1
	done
}

sbx_pid() {
	local id
	id=$(sbx_of "$1") && [ -n "$id" ] && awk '{print $3}' "$ORCH_SBX_DIR/$id/pid"
}

sbx_put() {
	local sid=$1 src=$2 name=$3 id pid ws
	if [ "$ORCH_RT" = local ]; then
		# through the sandbox's pid 1: its root, with /workspace mounted
		# (also when the workspace lives in a disk image)
		pid=$(sbx_pid "$sid") && [ -n "$pid" ] || return 1
		ws=/proc/$pid/root/workspace
	else
		# fake runtime: the agent runs on the host in its state dir
		id=$(sbx_of "$sid") && [ -n "$id" ] || return 1
		ws=$ORCH_STATE/$id/workspace
	fi
	install -m 0755 "$src" "$ws/$name"
}
