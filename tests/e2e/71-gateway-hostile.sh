# 71-gateway-hostile: the app gateway against hostile clients, apps and
# control peers: oversized and malformed heads, slow clients, a WebSocket that
# never reads while the app floods, an app that sends garbage, 1,000 idle
# WebSockets (memory per idle WebSocket measured), garbage on the control
# channel, connection caps, descriptor exhaustion, an app that closes or
# hangs up on the gateway's kept upstream connections, an orchestrator that
# answers open late or never (a sandbox waking), a client that leaves while
# its request is held. After each, the gateway is up and serves a normal
# request.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/gateway.sh"

UP_PORT=$(free_port)
GW_PORT=$(free_port)
gw_start_up "$UP_PORT"
GARB_PORT=$(free_port)
gw_start_up "$GARB_PORT" --garbage
{ gw_route "$HOST" "$UP_PORT" "$TOK"; gw_route "garb-$SB.apps.localhost" "$GARB_PORT" "$TOK"; } >"$T/routes"
gw_start_orch
gw_start_gw <<EOF || { fail "gateway starts"; cat "$T/gw.log"; exit 1; }
timeouts:
  head: 2s
  idle: 3s
  wake: 2s
  upstream_idle: 4s
activity_interval: 500ms
EOF
U=http://$HOST:$GW_PORT
A="Authorization: Bearer $TOK"
nfds() { ls "/proc/$1/fd" | wc -l; }
fd0=$(nfds "$GW_PID")
raw() { $PY "$TOP/tests/fixtures/rawhttp.py" "$GW_PORT" "$@"; }
status_of() { raw "$1" | head -1 | cut -d' ' -f2; }
alive() { gw_alive; }

# --- oversized and malformed heads
big=$(head -c 40000 /dev/zero | tr '\0' a)
check "a 40 KB header: 431" test "$(status_of "GET / HTTP/1.1\r\nHost: $HOST\r\nX-Big: $big\r\n\r\n")" = 431
many=$(for i in $(seq 1 150); do printf 'X-H%d: v\\r\\n' "$i"; done)
check "150 header lines: 431" test "$(status_of "GET / HTTP/1.1\r\nHost: $HOST\r\n$many\r\n")" = 431
long=$(head -c 9000 /dev/zero | tr '\0' a)
check "a 9 KB request target: 414" test "$(status_of "GET /$long HTTP/1.1\r\nHost: $HOST\r\n\r\n")" = 414
check "a head that never ends, larger than the cap: 431" test "$(status_of "GET / HTTP/1.1\r\nHost: $HOST\r\nX: $big$big")" = 431
check "gateway up after the oversized heads" alive
for m in "GET / HTTP/1.1\nHost: $HOST\n\n|bare LF" \
	"GARBAGE\r\n\r\n|garbage request line" \
	"GET / HTTP/1.1\r\nHost: $HOST\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n|two Content-Length" \
	"POST / HTTP/1.1\r\nHost: $HOST\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n|Content-Length with Transfer-Encoding" \
	"GET / HTTP/1.1\r\nHost: $HOST\r\nX: a\0b\r\n\r\n|NUL in a header" \
	"GET / HTTP/1.1\r\nHost: $HOST\r\n folded\r\n\r\n|obs-fold" \
	"CONNECT x:443 HTTP/1.1\r\nHost: $HOST\r\n\r\n|CONNECT" \
	"GET http://$HOST/ HTTP/1.1\r\nHost: $HOST\r\n\r\n|absolute-form target" \
	"GET / HTTP/1.1\r\nHost: $HOST\r\nHost: $HOST2\r\n\r\n|two Host headers"; do
	check "malformed (${m#*|}): 400" test "$(status_of "${m%|*}")" = 400
done
# The rules of common/h1.c (the same in every daemon): a version other than
# 1.x is 505 (was 400 here), chunked not last 400 (was 501), a coding before
# chunked 501.
check "HTTP/2.0 request line: 505" test "$(status_of "GET / HTTP/2.0\r\nHost: $HOST\r\n\r\n")" = 505
check "Transfer-Encoding: gzip (chunked not last): 400" test "$(status_of "POST / HTTP/1.1\r\nHost: $HOST\r\nTransfer-Encoding: gzip\r\n\r\n")" = 400
check "Transfer-Encoding: gzip, chunked: 501" test "$(status_of "POST / HTTP/1.1\r\nHost: $HOST\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")" = 501
raw "POST /upload HTTP/1.1\r\nHost: $HOST\r\n$A\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" >"$T/badchunk"
check "a malformed chunked body: 400" grep -q '^HTTP/1.1 400 ' "$T/badchunk"
check "gateway up after the malformed requests" alive
check "the malformed requests were logged, rate-limited" test "$(grep -c 'bad request' "$T/gw.log")" -le 12

# --- slow clients
cat >"$T/slow.py" <<'PY'
import socket, sys, time
port, host = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
t0 = time.time()
msg = ("GET / HTTP/1.1\r\nHost: %s\r\nX-Slow: " % host).encode()
out = b""
s.settimeout(0.3)
for i in range(100):
    try:
        s.send(msg[i:i + 1] if i < len(msg) else b"a")
    except OSError:
        break
    try:
        d = s.recv(4096)
        if not d:
            break
        out += d
    except socket.timeout:
        pass
print("%.1f %s" % (time.time() - t0, out.split(b"\r\n")[0].decode()))
PY
$PY "$T/slow.py" "$GW_PORT" "$HOST" >"$T/slow.out"
check "slowloris: 408 within timeouts.head (2 s) + slack" awk '{exit !($1 < 5 && $3 == "408")}' "$T/slow.out"
idle_closed() {
	$PY - "$GW_PORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t0 = time.time(); s.settimeout(15)
d = s.recv(10)
sys.exit(0 if d == b"" and 2 < time.time() - t0 < 8 else 1)
PY
}
check "a connection that sends nothing: closed after timeouts.idle (3 s)" idle_closed
check "gateway up after the slow clients" alive

# --- an app that sends garbage; a response head too large
gwc_garb() { curl -sS --max-time 10 --resolve "garb-$SB.apps.localhost:$GW_PORT:127.0.0.1" -H "$A" "$@" "http://garb-$SB.apps.localhost:$GW_PORT/"; }
check "an app that sends garbage: 502" test "$(gwc_garb -o "$T/bgarb" -w '%{http_code}')" = 502
check "502 page: not an HTTP response" grep -q 'not an HTTP response' "$T/bgarb"
check "a response head over limits.header_bytes: 502" test "$(gw_status "$U/bighead" -H "$A")" = 502
check "gateway up after the bad apps" alive

# --- a WebSocket that never reads while the app floods
rss0=$(rss_kib "$GW_PID")
$PY "$TOP/tests/fixtures/wsclient.py" --port "$GW_PORT" --host "$HOST:$GW_PORT" --auth "$A" \
	--ready "$T/nr-ready" --stop "$T/nr-stop" noread >"$T/nr.out" 2>&1 &
nrp=$!; track_pid $nrp
wait_for 10 test -s "$T/nr-ready"
check "flooding WebSocket: upgraded" grep -q ' 101 ' "$T/nr-ready"
sleep 3
rss1=$(rss_kib "$GW_PID")
check "flooding WebSocket: served meanwhile" alive
sleep 3
rss2=$(rss_kib "$GW_PID")
echo "# RSS KiB: before $rss0, after 3 s $rss1, after 6 s $rss2"
# Memory figures mean nothing under ASan (redzones, quarantine): reported, not asserted.
case $B in *-san*) SAN=1 ;; *) SAN=0 ;; esac
if [ $SAN = 1 ]; then skip "flooding WebSocket: RSS bound" "sanitizer build"; else
check "flooding WebSocket: gateway RSS bounded (< 8 MiB growth, flat)" \
	test $((rss2 - rss0)) -lt 8192 -a $((rss2 - rss1)) -lt 2048
fi
touch "$T/nr-stop"; wait $nrp

# --- 1,000 idle WebSockets, on a gateway of their own (a heap that earlier
# tests grew and freed would hide the growth)
WS_PORT=$(free_port)
printf 'listen: 127.0.0.1:%s\ndomain: apps.localhost\ncontrol:\n  socket: %s\nlimits:\n  max_conns_per_addr: 3000\ntimeouts:\n  idle: 3s\n' \
	"$WS_PORT" "$T/ctl.sock" >"$T/ws.yaml"
"$GWBIN" -f "$T/ws.yaml" >"$T/ws.log" 2>&1 &
WS_PID=$!; track_pid $WS_PID
wait_port "$WS_PORT" 10; wait_for 10 grep -q synced "$T/ws.log"
wsrun() { # NAME N
	$PY "$TOP/tests/fixtures/wsclient.py" --port "$WS_PORT" --host "$HOST:$WS_PORT" --auth "$A" \
		--ready "$T/$1-ready" --stop "$T/$1-stop" hold "$2" >"$T/$1.out" 2>&1 &
	eval "$1_pid=\$!"; track_pid $!
	wait_for 120 test -s "$T/$1-ready"
}
wsrun w0 20
sleep 1
rssa=$(rss_kib "$WS_PID")
wsrun w1 1000
check "1,000 WebSockets upgraded" grep -qx 1000 "$T/w1-ready"
sleep 4	# longer than timeouts.idle: upgraded connections have timeouts.upgraded
rssb=$(rss_kib "$WS_PID")
per=$(( (rssb - rssa) * 1024 / 1000 ))
echo "# gateway RSS: $rssa KiB with 20 WebSockets, $rssb KiB with 1,020: $per bytes per idle WebSocket"
if [ $SAN = 1 ]; then skip "memory per idle WebSocket" "sanitizer build"; else
check "memory per idle WebSocket <= 16 KiB ($per bytes)" test "$per" -le 16384
fi
check "served with 1,000 idle WebSockets open" test "$(curl -sS --max-time 10 --resolve "$HOST:$WS_PORT:127.0.0.1" -o /dev/null -w '%{http_code}' -H "$A" "http://$HOST:$WS_PORT/echo")" = 200
touch "$T/w1-stop" "$T/w0-stop"; wait "$w1_pid"; wait "$w0_pid"
check "all 1,000 stayed open and echo" grep -q 'open 1000 echoed 1000' "$T/w1.out"
kill "$WS_PID"

# --- control channel garbage
synced() { grep -c 'control channel synced' "$T/gw.log"; }
cpu() { awk '{print $14 + $15}' "/proc/$GW_PID/stat"; }
s0=$(synced)
gw_cmd "send this is not json"
more_synced() { [ "$(synced)" -gt "$1" ]; }
check "control garbage: the gateway reconnects and re-syncs" wait_for 10 more_synced "$s0"
check "control garbage: logged" grep -q 'lost: protocol error' "$T/gw.log"
s1=$(synced)
gw_cmd "send {\"op\":\"route\",\"host\":\"x\",\"port\":\"nan\"}"
check "control: a malformed route is a protocol error, re-sync" wait_for 10 more_synced "$s1"
s2=$(synced)
gw_cmd "long 70000"
check "control: a line over 64 KiB: dropped and reconnected" wait_for 10 more_synced "$s2"
check "control: the oversized line logged" grep -q 'longer than 64 KiB' "$T/gw.log"
c0=$(cpu); sleep 2; c1=$(cpu)
check "control: no spin afterwards (< 0.3 s CPU in 2 s idle)" test $((c1 - c0)) -lt 30
check "gateway serves after the control garbage" wait_for 10 alive
check "control: no log flood" test "$(grep -c 'control channel' "$T/gw.log")" -lt 30

# --- kept upstream connections (upstream.keepalive), waking sandboxes (timeouts.wake)
P1=$(free_port); P2=$(free_port); P3=$(free_port)
for p in "$P1:--idle-close 1000" "$P2:" "$P3:"; do
	# shellcheck disable=SC2086
	$PY "$FX/poolapp.py" --port "${p%%:*}" --log "$T/p${p%%:*}.log" ${p#*:} >/dev/null 2>&1 &
	track_pid $!
	wait_port "${p%%:*}" 10
done
gw_cmd "route $(gw_route "pool-$SB.apps.localhost" "$P1" "$TOK")"
gw_cmd "route $(gw_route "keep-$SB.apps.localhost" "$P2" "$TOK")"
gw_cmd "route $(gw_route "late-$SB.apps.localhost" "$P2" "$TOK" ',"delay":1000')"
gw_cmd "route $(gw_route "never-$SB.apps.localhost" "$P2" "$TOK" ',"delay":5000')"
gw_cmd "route $(gw_route "start-$SB.apps.localhost" "$P2" "$TOK" ',"mode":"starting","retry_after":7')"
gw_cmd "route $(gw_route "gone-$SB.apps.localhost" "$P3" "$TOK" ',"delay":1000')"
sleep 0.3
# pc NAME PATH [curl args]: a request on a new client connection to NAME-$SB
pc() { curl -sS --max-time 20 --resolve "$1-$SB.apps.localhost:$GW_PORT:127.0.0.1" -H "$A" "${@:3}" "http://$1-$SB.apps.localhost:$GW_PORT$2"; }
opens_of() { grep -c "\"op\": \"open\", \"id\": [0-9]*, \"host\": \"$1-$SB" "$T/orch.log"; }
jconn() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["conn"])' "$1"; }
seen() { grep -c " $1\$" "$T/p$2.log"; }	# seen TARGET PORT: times the app got it
# established connections to the app's port (the gateway holds the upstream ends)
ups() { ss -Htn state established "( dport = :$1 )" | wc -l; }
up0() { [ "$(ups "$1")" = 0 ]; }
up1() { [ "$(ups "$1")" -ge 1 ]; }

pc pool "/echo?n=1" -o "$T/pool1"
pc pool "/echo?n=2" -o "$T/pool2"
check "pool: a new client connection reuses the app connection the last one left" \
	test "$(jconn "$T/pool1")" = "$(jconn "$T/pool2")"
check "pool: and costs no open (1 open for 2 client connections)" test "$(opens_of pool)" = 1
sleep 1.8	# the app closes its idle connection after 1 s (the gateway keeps it 4 s)
pc pool "/echo?n=3" -o "$T/pool3"
check "pool: the app closed the kept connection: a fresh one is opened, the request served" \
	bash -c "[ \"\$(jconn $T/pool3)\" != \"$(jconn "$T/pool2")\" ] && [ $(opens_of pool) = 2 ]"
check "pool: each request reached the app once" \
	bash -c "[ $(seen '/echo?n=1' "$P1") = 1 ] && [ $(seen '/echo?n=2' "$P1") = 1 ] && [ $(seen '/echo?n=3' "$P1") = 1 ]"
o=$(opens_of pool)
code=$(pc pool "/hangup?x=1" -o /dev/null -w '%{http_code}')
check "pool: an app that hangs up on a request sent on a kept connection: 502" test "$code" = 502
check "pool: it went on the kept connection (no open)" test "$(opens_of pool)" = "$o"
sleep 0.5
check "pool: the request that was sent is never replayed" test "$(seen '/hangup?x=1' "$P1")" = 1
check "pool: served after the hang-up" test "$(pc pool "/echo?n=4" -o /dev/null -w '%{http_code}')" = 200

pc keep "/echo?k=1" -o "$T/keep1"
check "pool: the kept connection stays open between client connections" wait_for 3 up1 "$P2"
gw_cmd "unroute keep-$SB.apps.localhost"
check "unroute: the kept app connections are closed at once" wait_for 2 up0 "$P2"
gw_cmd "route $(gw_route "keep-$SB.apps.localhost" "$P2" "$TOK")"
sleep 0.3
pc keep "/echo?k=2" -o "$T/keep2"
o=$(opens_of keep)
check "pool: kept again after the route came back" wait_for 3 up1 "$P2"
# the same token and port under another app name: the connections stay, the pool goes
gw_cmd "route $(gw_route "keep-$SB.apps.localhost" "$P2" "$TOK" ',"app":"renamed"')"
check "route replacement: the kept app connections are closed at once" wait_for 2 up0 "$P2"
pc keep "/echo?k=3" -o "$T/keep3"
check "route replacement: the next client connection opens afresh (never the old route's)" \
	bash -c "[ $(opens_of keep) = $((o + 1)) ] && [ \"\$(jconn $T/keep3)\" != \"$(jconn "$T/keep2")\" ]"

t0=$(date +%s%N)
code=$(pc late "/echo?late=1" -o /dev/null -w '%{http_code}')
t1=$(date +%s%N)
check "held: the orchestrator answers open after 1 s (waking the sandbox): 200" test "$code" = 200
check "held: and the request was held that long (>= 0.9 s)" test $(( (t1 - t0) / 1000000 )) -ge 900
t0=$(date +%s%N)
pc never "/echo?never=1" -D "$T/hnever" -o "$T/bnever" -w '%{http_code}' >"$T/cnever"
t1=$(date +%s%N)
check "held: no answer within timeouts.wake (2 s): 503" grep -qx 503 "$T/cnever"
check "held: after timeouts.wake, not at once (1.8-5 s)" test $(( (t1 - t0) / 1000000 )) -ge 1800 -a $(( (t1 - t0) / 1000000 )) -lt 5000
check "held: 503 with Retry-After" grep -qix $'Retry-After: 5\r' "$T/hnever"
check "held: the page says the sandbox is starting" grep -q 'sandbox is starting' "$T/bnever"
pc start "/" -D "$T/hstart" -o "$T/bstart" -w '%{http_code}' >"$T/cstart"
check "the orchestrator says the sandbox is starting: 503" grep -qx 503 "$T/cstart"
check "starting: Retry-After as the orchestrator said (7)" grep -qix $'Retry-After: 7\r' "$T/hstart"
check "starting: the page says so" grep -q 'sandbox is starting' "$T/bstart"
# A client that leaves while its request is held: the open is cancelled, the
# late connection closed, the request never reaches the app.
$PY - "$GW_PORT" "gone-$SB.apps.localhost" "$TOK" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(("GET /echo?gone=1 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n" % (sys.argv[2], sys.argv[3])).encode())
time.sleep(0.3)
s.close()
PY
sleep 2	# the orchestrator's answer comes at 1 s
check "held, client gone: the open was asked" test "$(opens_of gone)" = 1
check "held, client gone: the request never reached the app" test ! -s "$T/p$P3.log"
check "held, client gone: the late app connection closed" up0 "$P3"
check "gateway up after the pool and wake cases" alive

# activity: a host with an open idle connection is listed though it carries nothing
$PY "$TOP/tests/fixtures/wsclient.py" --port "$GW_PORT" --host "$HOST:$GW_PORT" --auth "$A" \
	--ready "$T/act-ready" --stop "$T/act-stop" hold 1 >"$T/act.out" 2>&1 &
actp=$!; track_pid $actp
wait_for 10 test -s "$T/act-ready"
sleep 1.2	# two activity intervals: the handshake's traffic reported
n0=$(wc -l <"$T/orch.log")
act_lists() { tail -n +"$((n0 + 1))" "$T/orch.log" | grep '"op": "activity"' | grep -q "\"$HOST\""; }
check "activity: an idle WebSocket keeps its host listed" wait_for 3 act_lists
touch "$T/act-stop"; wait $actp
sleep 1.2
n0=$(wc -l <"$T/orch.log")
sleep 1.5
act_gone() { ! act_lists; }
check "activity: no longer listed once the connection closed" act_gone

# --- caps: per address and in total, descriptor exhaustion
CAP_PORT=$(free_port)
printf 'listen: 127.0.0.1:%s\ndomain: apps.localhost\ncontrol:\n  socket: %s\nlimits:\n  max_conns_per_addr: 20\n  max_conns: 40\ntimeouts:\n  response: 1s\n' \
	"$CAP_PORT" "$T/ctl.sock" >"$T/cap.yaml"
"$GWBIN" -f "$T/cap.yaml" >"$T/cap.log" 2>&1 &
CAP_PID=$!; track_pid $CAP_PID
wait_port "$CAP_PORT" 10; wait_for 10 grep -q synced "$T/cap.log"
# hold PORT N SRC NAME &: N idle connections from SRC, held until $T/NAME-stop;
# $T/NAME-ready says how many of them the gateway closed at once (the
# background job is the python process itself: exec)
hold() { exec $PY "$FX/idleconns.py" --port "$1" --n "$2" --src "$3" --settle 0.5 --secs 300 --ready "$T/$4-ready" --stop "$T/$4-stop" >/dev/null; }
hold "$CAP_PORT" 30 127.0.0.1 h1 &
h1=$!; track_pid $h1
wait_for 10 test -s "$T/h1-ready"
check "per-address cap: 10 of 30 connections from one address closed" grep -qx 'opened 30 closed 10' "$T/h1-ready"
capc() { curl -sS --max-time 10 --interface "$1" --resolve "$HOST:$CAP_PORT:127.0.0.1" -o /dev/null -w '%{http_code}' -H "$A" "http://$HOST:$CAP_PORT/echo"; }
check "per-address cap: another address is served" test "$(capc 127.0.0.2)" = 200
hold "$CAP_PORT" 19 127.0.0.3 h2 &
h2=$!; track_pid $h2
wait_for 10 test -s "$T/h2-ready"
check "total cap reached with idle connections: a new request still served (oldest idle closed)" test "$(capc 127.0.0.4)" = 200
touch "$T/h1-stop" "$T/h2-stop"; wait $h1; wait $h2
slowc() { curl -sS --max-time 10 --resolve "$HOST:$CAP_PORT:127.0.0.1" -o "$T/b504" -w '%{http_code}' -H "$A" "http://$HOST:$CAP_PORT/slow"; }
check "an app that answers later than timeouts.response (1 s): 504" test "$(slowc)" = 504
check "504 page: the app did not answer in time" grep -q 'did not answer in time' "$T/b504"

EMF_PORT=$(free_port)
printf 'listen: 127.0.0.1:%s\ndomain: apps.localhost\ncontrol:\n  socket: %s\n' "$EMF_PORT" "$T/ctl.sock" >"$T/emf.yaml"
prlimit --nofile=64:64 "$GWBIN" -f "$T/emf.yaml" >"$T/emf.log" 2>&1 &
EMF_PID=$!; track_pid $EMF_PID
wait_port "$EMF_PORT" 10; wait_for 10 grep -q synced "$T/emf.log"
hold "$EMF_PORT" 100 127.0.0.5 h3 &
h3=$!; track_pid $h3
wait_for 20 test -s "$T/h3-ready"
e0=$(awk '{print $14 + $15}' "/proc/$EMF_PID/stat"); sleep 2; e1=$(awk '{print $14 + $15}' "/proc/$EMF_PID/stat")
check "descriptor exhaustion: logged" grep -q 'accept: Too many open files' "$T/emf.log"
check "descriptor exhaustion: no spin (< 0.5 s CPU in 2 s)" test $((e1 - e0)) -lt 50
check "descriptor exhaustion: no log flood" test "$(grep -c 'accept:' "$T/emf.log")" -le 3
emfc() { curl -sS --max-time 15 --resolve "$HOST:$EMF_PORT:127.0.0.1" -o /dev/null -w '%{http_code}' -H "$A" "http://$HOST:$EMF_PORT/echo"; }
emf_ok() { [ "$(emfc)" = 200 ]; }
check "descriptor exhaustion: a request is served (idle ones shed)" wait_for 10 emf_ok
touch "$T/h3-stop"; wait $h3
fds_back() { [ "$(nfds "$GW_PID")" -le $((fd0 + 1)) ]; }
check "no descriptor leaked (passed upstream fds included): back to $fd0" wait_for 15 fds_back
check "all gateways still running" bash -c "kill -0 $GW_PID && kill -0 $CAP_PID && kill -0 $EMF_PID"
