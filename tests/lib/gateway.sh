# tests/lib/gateway.sh: start the pieces of a gateway test (source after
# tests/lib/common.sh; 70-gateway-basic, 71-gateway-hostile). gw_setup
# starts the app (tests/fixtures/appupstream.py), the fake orchestrator
# (tests/fixtures/fakeorch.py) and the gateway, all on loopback, and sets:
#   UP_PORT GW_PORT HOST (the app's host) TOK (its token) GWC (curl args)
#   GW_PID ORCH_PID UP_PID, $T/cmd (the fake orchestrator's command fifo)
# gw_curl ARGS...: curl to the gateway with the app host resolved.
PY=${PY:-/usr/bin/python3}
FX=$TOP/tests/fixtures
GWBIN=$BIN/gateway/app-gateway
SB=s-0123456789abcdef
HOST=web-$SB.apps.localhost
HOST2=other-$SB.apps.localhost
TOK=$($PY -c 'import secrets; print(secrets.token_urlsafe(32))')
TOK2=$($PY -c 'import secrets; print(secrets.token_urlsafe(32))')

gw_route() { # HOST PORT TOKEN [extra json]
	printf '{"host":"%s","app":"%s","port":%s,"sandbox":"%s","session":"s1","token":"%s"%s}\n' \
		"$1" "${1%%-*}" "$2" "$SB" "$3" "${4:-}"
}

gw_start_up() { # PORT [args] -> UP_PID
	"$PY" "$FX/appupstream.py" --port "$@" >"$T/up-$1.log" 2>&1 &
	UP_PID=$!
	track_pid $UP_PID
	wait_port "$1" 10
}

gw_start_orch() {
	"$PY" "$FX/fakeorch.py" --socket "$T/ctl.sock" --routes "$T/routes" \
		--cmd "$T/cmd" --log "$T/orch.log" "$@" >"$T/orch.out" 2>&1 &
	ORCH_PID=$!
	track_pid $ORCH_PID
	wait_for 10 test -S "$T/ctl.sock"
}

gw_cmd() { echo "$*" >"$T/cmd"; }

gw_start_gw() { # extra yaml lines on stdin (optional)
	{
		echo "listen: 127.0.0.1:$GW_PORT"
		echo "domain: apps.localhost"
		echo "control:"
		echo "  socket: $T/ctl.sock"
		[ -t 0 ] || cat
	} >"$T/gw.yaml"
	"$GWBIN" -d -f "$T/gw.yaml" >>"$T/gw.log" 2>&1 &
	GW_PID=$!
	track_pid $GW_PID
	wait_port "$GW_PORT" 10 && wait_for 10 grep -q "control channel synced" "$T/gw.log"
}

gw_setup() {
	UP_PORT=$(free_port)
	GW_PORT=$(free_port)
	gw_start_up "$UP_PORT"
	{ gw_route "$HOST" "$UP_PORT" "$TOK"; gw_route "$HOST2" "$UP_PORT" "$TOK2"; } >"$T/routes"
	gw_start_orch
	gw_start_gw </dev/null
}

gw_curl() {
	curl -sS --max-time 20 --resolve "$HOST:$GW_PORT:127.0.0.1" --resolve "$HOST2:$GW_PORT:127.0.0.1" \
		--resolve "nope-$SB.apps.localhost:$GW_PORT:127.0.0.1" "$@"
}

# gw_status URL [curl args]: the HTTP status code only
gw_status() { local u=$1; shift; gw_curl -o /dev/null -w '%{http_code}' "$@" "$u"; }

gw_alive() { kill -0 "$GW_PID" 2>/dev/null && [ "$(gw_status "http://$HOST:$GW_PORT/echo" -H "Authorization: Bearer $TOK")" = 200 ]; }

# RSS of a pid in KiB
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
