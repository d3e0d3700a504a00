#!/usr/bin/env bash
# tests/bench/gateway/run.sh: the app gateway's figures (not a pass/fail
# gate), side by side in one run: a client to the app's port directly (in
# the sandbox's network namespace: nsenter -t <sandbox pid 1> -n) and the
# same client through the gateway (the app's Host, its token as Bearer):
#   - keep-alive small requests: req/s, p50, p99 (wrk, BENCH_CONNS
#     connections over 2 threads; tests/bench/gateway/loadgen.c rps when wrk
#     is missing)
#   - one request per new connection: req/s, p50, p99 (wrk with
#     Connection: close, which reconnects after each answer; needs wrk)
#   - 8 MiB responses: MiB/s (loadgen big, one connection)
#   - WebSocket echo round trip: p50, p99 (loadgen ws, one WebSocket)
#   - gateway RSS per idle WebSocket (loadgen idle, BENCH_IDLE_WS of them:
#     the RSS delta / their number)
# The app is tests/bench/gateway/appd.c (static, epoll), started in a real
# sandbox with shell_async and published with expose_port. When nginx is
# installed, the first three figures are also taken through nginx as a
# reverse proxy in front of the same app (run in the sandbox's network
# namespace, as the client that drives it: worker_processes
# BENCH_NGINX_WORKERS (1, the gateway's one thread), upstream keepalive 32,
# proxy_http_version 1.1, access log off), and Caddy likewise when it is
# installed (reverse_proxy, its defaults).
#   B=build bash tests/bench/gateway/run.sh
# Settings: BENCH_SECS (5), BENCH_CONNS (16), BENCH_WS_ROUNDS (5000),
# BENCH_IDLE_WS (1000), BENCH_NGINX_WORKERS (1); the system's shape as in tests/apps/apps-lib.sh
# (GW_BIN, APPS_DOMAIN, APPS_ORCH_YAML, GW_YAML).
set -u
cd "$(dirname "$0")/../../.."
export TOP=$PWD
. tests/lib/common.sh
. tests/mcp/orch-lib.sh
. tests/apps/apps-lib.sh
SECS=${BENCH_SECS:-5}
CONNS=${BENCH_CONNS:-16}
ROUNDS=${BENCH_WS_ROUNDS:-5000}
NIDLE=${BENCH_IDLE_WS:-1000}
NGX_WORKERS=${BENCH_NGINX_WORKERS:-1}
SID=bench-gw
# every idle WebSocket comes from 127.0.0.1: above the per-address default
GW_YAML_EXTRA=${GW_YAML_EXTRA:-"limits:
  max_conns: $((NIDLE * 2 + 1024))
  max_conns_per_addr: $((NIDLE * 2 + 1024))"}

CFLAGS="-O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra"
cc $CFLAGS -static tests/bench/gateway/appd.c -o "$T/appd" ||
	{ echo "cannot build appd"; exit 1; }
cc $CFLAGS -pthread tests/bench/gateway/loadgen.c -o "$T/loadgen" ||
	{ echo "cannot build loadgen"; exit 1; }
HAVE_GW=0
apps_have_gateway && HAVE_GW=1
if [ $HAVE_GW = 1 ]; then
	apps_orch_config
else
	orch_config
fi
orch_start || { echo "orchestrator did not start: $(tail -3 "$ORCH_LOG")"; exit 1; }
mcp_tool "$SID" shell '{"command":"true"}' >/dev/null
if [ "$ORCH_RT" = local ]; then
	APP_PORT=8080
	PID=$(sbx_pid "$SID")
	[ -n "$PID" ] || { echo "no sandbox for $SID"; exit 1; }
	NS=(nsenter -t "$PID" -n)
else
	APP_PORT=$(free_port)	# fake runtime: the app shares the host's network
	NS=()
fi
sbx_put "$SID" "$T/appd" appd || { echo "cannot copy appd into the sandbox"; exit 1; }
out=$(mcp_tool "$SID" shell_async "{\"command\":\"./appd $APP_PORT\"}")
wait_for 20 "${NS[@]}" bash -c "exec 3<>/dev/tcp/127.0.0.1/$APP_PORT" ||
	{ echo "appd did not start in the sandbox: $out"; exit 1; }

# rps WHERE [close]: "req/s p50 p99 non-2xx" (ms) of small requests, kept
# alive or (close) one per new connection. WHERE: direct, gateway, nginx,
# caddy (the proxies listen in the sandbox's network namespace).
rps() {
	local o cl=()
	[ "${2:-}" = close ] && cl=(-H "Connection: close")
	if [ "${2:-}" = close ] && ! command -v wrk >/dev/null 2>&1; then
		echo "? ? ? 0"	# loadgen has no such mode
		return
	fi
	if command -v wrk >/dev/null 2>&1; then
		case $1 in
		direct) o=$("${NS[@]}" wrk -t2 -c"$CONNS" -d"$SECS"s --latency "${cl[@]}" "http://127.0.0.1:$APP_PORT/") ;;
		nginx) o=$("${NS[@]}" wrk -t2 -c"$CONNS" -d"$SECS"s --latency "${cl[@]}" "http://127.0.0.1:$NGX_PORT/") ;;
		caddy) o=$("${NS[@]}" wrk -t2 -c"$CONNS" -d"$SECS"s --latency "${cl[@]}" "http://127.0.0.1:$CADDY_PORT/") ;;
		*) o=$(wrk -t2 -c"$CONNS" -d"$SECS"s --latency -H "Host: $APP_HOST" "${cl[@]}" \
			    -H "Authorization: Bearer $APP_TOKEN" "http://$GW_ADDR/") ;;
		esac
		# wrk prints latencies as 123.45us / 1.23ms / 1.23s
		awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
			if (v ~ /s$/) return v * 1000; return v }
			/Requests\/sec/ { r = $2 } /^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
			/Non-2xx/ { bad = $NF }
			END { printf "%.0f %.3f %.3f %s\n", r, p50, p99, bad + 0 }' <<<"$o"
	else
		if [ "$1" = direct ]; then
			o=$("${NS[@]}" "$T/loadgen" rps -a "127.0.0.1:$APP_PORT" -c "$CONNS" -d "$SECS")
		elif [ "$1" = nginx ] || [ "$1" = caddy ]; then
			o=$("${NS[@]}" "$T/loadgen" rps -a "127.0.0.1:$([ "$1" = nginx ] && echo "$NGX_PORT" || echo "$CADDY_PORT")" -c "$CONNS" -d "$SECS")
		else
			o=$("$T/loadgen" rps -a "$GW_ADDR" -H "$APP_HOST" -T "$APP_TOKEN" -c "$CONNS" -d "$SECS")
		fi
		field_line "$o" rps p50_us p99_us errors
	fi
}
# field_line LINE KEYS...: the values of loadgen's key=value pairs (µs -> ms)
field_line() {
	local line=$1 k v out=()
	shift
	for k in "$@"; do
		v=$(grep -o "$k=[0-9.]*" <<<"$line" | cut -d= -f2)
		case $k in *_us) v=$(awk -v v="${v:-0}" 'BEGIN { printf "%.3f", v / 1000 }') ;; esac
		out+=("${v:-?}")
	done
	echo "${out[*]}"
}
lg() {	# lg WHERE MODE ARGS...: loadgen to the app or through the gateway
	local where=$1 mode=$2
	shift 2
	if [ "$where" = direct ]; then
		"${NS[@]}" "$T/loadgen" "$mode" -a "127.0.0.1:$APP_PORT" "$@"
	elif [ "$where" = nginx ]; then
		"${NS[@]}" "$T/loadgen" "$mode" -a "127.0.0.1:$NGX_PORT" "$@"
	elif [ "$where" = caddy ]; then
		"${NS[@]}" "$T/loadgen" "$mode" -a "127.0.0.1:$CADDY_PORT" "$@"
	else
		"$T/loadgen" "$mode" -a "$GW_ADDR" -H "$APP_HOST" -T "$APP_TOKEN" "$@"
	fi
}
# app_pid: the host pid of appd (in the sandbox's netns on the local runtime)
app_pid() {
	local p want
	for p in $(pgrep -f "appd $APP_PORT\$"); do
		if [ "$ORCH_RT" = local ]; then
			want=$(readlink "/proc/$PID/ns/net")
			[ "$(readlink "/proc/$p/ns/net")" = "$want" ] && { echo "$p"; return; }
		else
			case $(readlink "/proc/$p/cwd") in "$ORCH_STATE"/*) echo "$p"; return ;; esac
		fi
	done
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# idle_per_ws WHERE PID: KiB of PID's RSS per idle WebSocket
idle_per_ws() {
	local where=$1 pid=$2 r0 r1 fifo=$T/idle.fifo line
	rm -f "$fifo" && mkfifo "$fifo"
	r0=$(rss_kb "$pid")
	lg "$where" idle -n "$NIDLE" <"$fifo" >"$T/idle.out" &
	local lp=$!
	exec 7>"$fifo"
	wait_for 120 grep -q '^idle ready' "$T/idle.out"
	sleep 1
	r1=$(rss_kb "$pid")
	line=$(cat "$T/idle.out")
	exec 7>&-
	wait "$lp"
	local n
	n=$(sed -n 's/^idle ready \([0-9]*\).*/\1/p' <<<"$line")
	[ "${n:-0}" -gt 0 ] || { echo "? (no idle WebSocket: $line)"; return; }
	awk -v a="$r0" -v b="$r1" -v n="$n" 'BEGIN { printf "%.1f (%d WebSockets, RSS %d -> %d KiB)\n", (b - a) / n, n, a, b }'
}

# nginx_start / caddy_start: the reverse proxy in front of appd, in the
# sandbox's network namespace (0: listening on NGX_PORT / CADDY_PORT)
NGX_PORT=$(free_port)
CADDY_PORT=$(free_port)
nginx_start() {
	command -v nginx >/dev/null 2>&1 || return 1
	mkdir -p "$T/nginx"
	cat >"$T/nginx/nginx.conf" <<NGX
user $(id -un);
worker_processes $NGX_WORKERS;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log;
events { worker_connections 8192; }
http {
	access_log off;
	client_body_temp_path $T/nginx/body;
	proxy_temp_path $T/nginx/proxy;
	fastcgi_temp_path $T/nginx/fcgi;
	uwsgi_temp_path $T/nginx/uwsgi;
	scgi_temp_path $T/nginx/scgi;
	upstream app { server 127.0.0.1:$APP_PORT; keepalive 32; }
	server {
		listen 127.0.0.1:$NGX_PORT;
		location / {
			proxy_pass http://app;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
NGX
	"${NS[@]}" nginx -c "$T/nginx/nginx.conf" -e "$T/nginx/error.log" || return 1
	wait_for 10 "${NS[@]}" bash -c "exec 3<>/dev/tcp/127.0.0.1/$NGX_PORT"
}
nginx_stop() { [ -s "$T/nginx/nginx.pid" ] && kill "$(cat "$T/nginx/nginx.pid")" 2>/dev/null; }
caddy_start() {
	command -v caddy >/dev/null 2>&1 || return 1
	printf '{\n\tadmin off\n}\nhttp://:%s {\n\tbind 127.0.0.1\n\treverse_proxy 127.0.0.1:%s\n}\n' \
	    "$CADDY_PORT" "$APP_PORT" >"$T/Caddyfile"
	"${NS[@]}" caddy run --config "$T/Caddyfile" --adapter caddyfile >"$T/caddy.log" 2>&1 &
	CADDY_PID=$!
	track_pid "$CADDY_PID"
	wait_for 10 "${NS[@]}" bash -c "exec 3<>/dev/tcp/127.0.0.1/$CADDY_PORT"
}

echo "runtime: $ORCH_RT   machine: $(nproc) cores   uptime: $(uptime)"
echo "app: appd on port $APP_PORT in sandbox $(sbx_of "$SID"); $SECS s per figure, $CONNS connections"
read -r d_rps d_p50 d_p99 d_bad <<<"$(rps direct)"
read -r d_nrps d_np50 d_np99 d_nbad <<<"$(rps direct close)"
d_big=$(field_line "$(lg direct big -c 1 -d "$SECS")" mibps)
read -r d_ws50 d_ws99 <<<"$(field_line "$(lg direct ws -n "$ROUNDS")" p50_us p99_us)"
AP=$(app_pid)
d_idle=$( [ -n "$AP" ] && idle_per_ws direct "$AP" || echo "? (appd not found)")

if [ $HAVE_GW = 1 ]; then
	apps_gw_start || { echo "gateway did not start: $(tail -3 "$T/gw.stderr" "$GW_LOG" 2>/dev/null)"; HAVE_GW=0; }
fi
if [ $HAVE_GW = 1 ]; then
	apps_expose "$SID" "$APP_PORT" bench || HAVE_GW=0
fi
if [ $HAVE_GW = 1 ]; then
	apps_wait_route 20
	code=$(apps_code)
	[ "$code" = 200 ] || { echo "through the gateway: HTTP $code, not 200"; HAVE_GW=0; }
fi
HAVE_NGX=0 HAVE_CADDY=0
nginx_start && HAVE_NGX=1
caddy_start && HAVE_CADDY=1
# CPU ticks (1/100 s) used so far by the processes of WHERE
cpu_ticks() {
	local pids=()
	case $1 in
	gateway) pids=("$GW_PID") ;;
	nginx) pids=("$(cat "$T/nginx/nginx.pid")"); pids+=($(pgrep -P "${pids[0]}")) ;;
	caddy) pids=("$CADDY_PID") ;;
	esac
	for p in "${pids[@]}"; do sed 's/.*) //' "/proc/$p/stat" 2>/dev/null; done |
	    awk '{ t += $12 + $13 } END { print t + 0 }'
}
# cmp WHERE [close]: "req/s p99 non-2xx cpu-us-per-request", one wrk run
cmp() {
	local c0 c1 r p50 p99 bad
	c0=$(cpu_ticks "$1")
	read -r r p50 p99 bad <<<"$(rps "$@")"
	c1=$(cpu_ticks "$1")
	echo "$r $p99 $bad $(awk -v c=$((c1 - c0)) -v r="$r" -v s="$SECS" 'BEGIN { if (r > 0) printf "%.0f", c * 10000 / (r * s); else print "?" }')"
}
# The comparison: BENCH_ROUNDS rounds, the gateway and the proxies in turn
# (so that a burst of load elsewhere on the machine hits each alike); the
# best round of each is kept, with its CPU per request (load-independent).
best() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); print (x[1] + 0 >= y[1] + 0 ? a : b) }'; }
CMP_ROUNDS=${BENCH_ROUNDS:-3}
if [ $HAVE_GW = 1 ]; then
	read -r g_rps g_p50 g_p99 g_bad <<<"$(rps gateway)"
	read -r g_nrps g_np50 g_np99 g_nbad <<<"$(rps gateway close)"
	g_big=$(field_line "$(lg gateway big -c 1 -d "$SECS")" mibps)
	if [ $HAVE_NGX = 1 ] || [ $HAVE_CADDY = 1 ]; then
		for _ in $(seq 1 "$CMP_ROUNDS"); do
			for w in gateway nginx caddy; do
				case $w in nginx) [ $HAVE_NGX = 1 ] || continue ;; caddy) [ $HAVE_CADDY = 1 ] || continue ;; esac
				eval "k_$w=\$(best \"\${k_$w:-}\" \"\$(cmp $w)\")"
				eval "n_$w=\$(best \"\${n_$w:-}\" \"\$(cmp $w close)\")"
			done
		done
		[ $HAVE_NGX = 1 ] && x_big=$(field_line "$(lg nginx big -c 1 -d "$SECS")" mibps)
		[ $HAVE_CADDY = 1 ] && y_big=$(field_line "$(lg caddy big -c 1 -d "$SECS")" mibps)
	fi
	read -r g_ws50 g_ws99 <<<"$(field_line "$(lg gateway ws -n "$ROUNDS")" p50_us p99_us)"
	g_idle=$(idle_per_ws gateway "$GW_PID")
fi

[ $HAVE_NGX = 1 ] && nginx_stop
[ $HAVE_CADDY = 1 ] && kill "$CADDY_PID" 2>/dev/null
echo "uptime after: $(uptime)"
printf '%-34s %-22s %-22s %s\n' "figure" "$([ "$ORCH_RT" = local ] && echo "direct (in the netns)" || echo "direct (fake: host)")" \
    "through the gateway" "target"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.0f%%", 100 * b / a; else print "?" }'; }
if [ $HAVE_GW = 1 ]; then
	printf '%-34s %-22s %-22s %s\n' "keep-alive small requests, req/s" "$d_rps" "$g_rps ($(ratio "$d_rps" "$g_rps"))" ">= 50% of direct"
	printf '%-34s %-22s %-22s %s\n' "  latency p50 / p99, ms" "$d_p50 / $d_p99" "$g_p50 / $g_p99" ""
	[ "${g_bad:-0}" != 0 ] && echo "  (through the gateway: $g_bad answers were not 2xx)"
	printf '%-34s %-22s %-22s %s\n' "one request per new connection, req/s" "$d_nrps" "$g_nrps ($(ratio "$d_nrps" "$g_nrps"))" ">= nginx"
	printf '%-34s %-22s %-22s %s\n' "  latency p50 / p99, ms" "$d_np50 / $d_np99" "$g_np50 / $g_np99" ""
	[ "${g_nbad:-0}" != 0 ] && echo "  (through the gateway: $g_nbad answers were not 2xx)"
	printf '%-34s %-22s %-22s %s\n' "8 MiB responses, MiB/s" "$d_big" "$g_big ($(ratio "$d_big" "$g_big"))" ">= 60% of direct"
	printf '%-34s %-22s %-22s %s\n' "WebSocket echo RTT p50 / p99, ms" "$d_ws50 / $d_ws99" "$g_ws50 / $g_ws99" "p50 within 1 ms of direct"
	printf '%-34s %-22s %-22s %s\n' "KiB RSS per idle WebSocket" "app: ${d_idle%% *}" "gateway: $g_idle" "<= 16 KiB (gateway)"
	awk -v dr="$d_rps" -v gr="$g_rps" -v db="$d_big" -v gb="$g_big" -v dw="$d_ws50" -v gw="$g_ws50" \
	    -v gi="${g_idle%% *}" 'BEGIN {
		m = ""
		if (gr < 0.5 * dr) m = m " req/s"
		if (gb < 0.6 * db) m = m " MiB/s"
		if (gw - dw > 1) m = m " ws-rtt"
		if (gi > 16) m = m " idle-ws-memory"
		print (m == "" ? "targets: all met" : "targets missed:" m)
	}'
	if [ $HAVE_NGX = 1 ] || [ $HAVE_CADDY = 1 ]; then
		echo
		echo "against reverse proxies in front of the same app (nginx: $NGX_WORKERS worker(s), upstream keepalive 32)"
		printf '%-34s %-14s %-14s %-14s %s\n' "figure" "gateway" "nginx" "caddy" "gateway / nginx, / caddy"
		pr() { printf '%-34s %-14s %-14s %-14s %s / %s\n' "$1" "$2" "${3:--}" "${4:--}" \
		    "$(awk -v a="${3:-0}" -v b="$2" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "-" }')" \
		    "$(awk -v a="${4:-0}" -v b="$2" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "-" }')"; }
		f() { awk -v s="$1" -v i="$2" 'BEGIN { split(s, x, " "); print x[i] }'; }
		pr "keep-alive small requests, req/s" "$(f "$k_gateway" 1)" "$(f "${k_nginx:-}" 1)" "$(f "${k_caddy:-}" 1)"
		pr "  CPU per request, us" "$(f "$k_gateway" 4)" "$(f "${k_nginx:-}" 4)" "$(f "${k_caddy:-}" 4)"
		pr "one request per new conn, req/s" "$(f "$n_gateway" 1)" "$(f "${n_nginx:-}" 1)" "$(f "${n_caddy:-}" 1)"
		pr "  p99 latency, ms" "$(f "$n_gateway" 2)" "$(f "${n_nginx:-}" 2)" "$(f "${n_caddy:-}" 2)"
		pr "  CPU per request, us" "$(f "$n_gateway" 4)" "$(f "${n_nginx:-}" 4)" "$(f "${n_caddy:-}" 4)"
		pr "8 MiB responses, MiB/s" "$g_big" "${x_big:-}" "${y_big:-}"
		echo "  (req/s: the best of $CMP_ROUNDS rounds taken in turn; CPU: the server's processes, user + system, in that round)"
		for v in "$k_gateway" "$n_gateway" "${k_nginx:-}" "${n_nginx:-}" "${k_caddy:-}" "${n_caddy:-}"; do
			[ "$(f "$v" 3)" = 0 ] || [ -z "$v" ] || echo "  (a round had non-2xx answers: $v)"
		done
		awk -v g="$(f "$k_gateway" 1)" -v gn="$(f "$n_gateway" 1)" -v gb="$g_big" -v x="$(f "${k_nginx:-}" 1)" \
		    -v xn="$(f "${n_nginx:-}" 1)" -v xb="${x_big:-0}" -v yb="${y_big:-0}" 'BEGIN {
			m = ""
			if (x > 0 && g < x) m = m " keep-alive<nginx"
			if (xn > 0 && gn < xn) m = m " new-conn<nginx"
			if (yb > 0 && gb < yb) m = m " 8MiB<caddy"
			if (yb == 0 && xb > 0 && gb < xb) m = m " 8MiB<nginx"
			print (m == "" ? "proxy targets: all met" : "proxy targets missed:" m)
		}'
	fi
else
	printf '%-34s %-22s %-22s %s\n' "keep-alive small requests, req/s" "$d_rps" "-" ">= 50% of direct"
	printf '%-34s %-22s %-22s %s\n' "  latency p50 / p99, ms" "$d_p50 / $d_p99" "-" ""
	printf '%-34s %-22s %-22s %s\n' "8 MiB responses, MiB/s" "$d_big" "-" ">= 60% of direct"
	printf '%-34s %-22s %-22s %s\n' "WebSocket echo RTT p50 / p99, ms" "$d_ws50 / $d_ws99" "-" "p50 within 1 ms of direct"
	printf '%-34s %-22s %-22s %s\n' "KiB RSS per idle WebSocket" "app: ${d_idle%% *}" "-" "<= 16 KiB (gateway)"
	echo "gateway half skipped: $([ -x "$GW_BIN" ] && echo "the gateway did not start, expose_port failed or the app did not answer through it (see above)" ||
	    echo "$GW_BIN is not built (the app gateway, issue 14)")"
fi
echo "(req/s and latency: $(command -v wrk >/dev/null && echo "wrk -t2 -c$CONNS" || echo "loadgen rps -c $CONNS"); the rest: tests/bench/gateway/loadgen.c)"
orch_stop
