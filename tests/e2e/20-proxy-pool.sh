# 20-proxy-pool: the upstream connection pool. A clean idle upstream TLS
# connection of an intercepted connection is parked when its client goes
# away and reused by the next intercepted connection of the SAME sandbox to
# the same target and address: never across sandboxes or targets, never
# after the upstream closed it, dropped on expiry and on deregistration; a
# credential is still injected exactly once per request; a request that
# races the upstream's idle close is retried once on a fresh connection; an
# open client connection idle between requests lends its upstream to a new
# connection of the same sandbox. Idle client connections sleep without a
# bufferevent and wake on the next bytes; ctx.sandbox is shared per sandbox
# registration.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"
fx_pki && fx_tokens || { fail "fixtures"; exit 1; }

# The upstream: TLS (leaf chosen by SNI), keep-alive, one line per event in
# $T/up.log; every response body names the upstream connection that served it.
# /flaky closes without answering unless it is the connection's first
# request; /bye answers with Connection: close; /junk answers, then sends
# a second, unsolicited response 0.5 s later.
UP=$(free_port)
cat >"$T/upsrv.py" <<'PY'
import socket, ssl, sys, threading, time
port, pki, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lock = threading.Lock()
lf = open(log, "a", buffering=1)
def ev(s):
    with lock:
        lf.write(s + "\n")
ctxs = {}
for h in ("github.com", "gitlab.com"):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    c.load_cert_chain("%s/%s.pem" % (pki, h), "%s/%s.key" % (pki, h))
    ctxs[h] = c
def sni(sock, name, ctx):
    sock.sni_seen = name
    if name in ctxs:
        sock.context = ctxs[name]
base = ctxs["github.com"]
base.sni_callback = sni
ntls = 0
def serve(c):
    global ntls
    try:
        try:
            c = base.wrap_socket(c, server_side=True)
        except (OSError, ssl.SSLError):
            return   # wait_port's probe
        with lock:
            ntls += 1
            k = ntls
        ev("tls %d sni=%s" % (k, getattr(c, "sni_seen", None)))
        buf, n = b"", 0
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    ev("close %d" % k)
                    return
                buf += d
            head, _, buf = buf.partition(b"\r\n\r\n")
            n += 1
            lines = head.decode("latin-1").split("\r\n")
            auths = [l.split(":", 1)[1].strip() for l in lines[1:] if l.lower().startswith("authorization:")]
            ev("req %d #%d %s auths=%d auth=%s" % (k, n, lines[0], len(auths), "|".join(auths)))
            path = lines[0].split(" ")[1]
            if path.startswith("/flaky") and n > 1:
                ev("hangup %d" % k)
                c.close()
                return
            body = ("conn=%d\n" % k).encode()
            if path.startswith("/records"):
                # many small TLS records in quick succession: they reach the
                # proxy together, so most of them sit in its read-ahead
                # buffer, and nothing more comes on the socket
                rec = b"r" * 100
                c.sendall(("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (300 * len(rec) + len(body))).encode())
                for _ in range(300):
                    c.sendall(rec)
                c.sendall(body)
                continue
            extra = "Connection: close\r\n" if path.startswith("/bye") else ""
            c.sendall(("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n" % (len(body), extra)).encode() + body)
            if extra:
                c.close()
                ev("close %d" % k)
                return
            if path.startswith("/fastjunk"):
                # a second, unsolicited "response" right behind the real
                # one, in its own TLS record: it reaches the proxy in the
                # same read, so it waits inside OpenSSL, not on the socket
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nEVIL!\n")
                ev("fastjunk %d" % k)
            if path.startswith("/junk"):
                # unsolicited bytes on the idle connection: a smuggled
                # "response" that must never reach a later request
                time.sleep(0.5)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nEVIL!\n")
                ev("junk %d" % k)
    except Exception as e:
        ev("error %s" % e)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(64)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
up_start() { # [log]
	UPLOG=$T/${1:-up.log}
	"$PY" "$T/upsrv.py" "$UP" "$PKI" "$UPLOG" >>"$T/upsrv.out" 2>&1 &
	UP_PID=$!
	track_pid $UP_PID
	wait_port "$UP" 20
}
up_start || { fail "upstream start"; exit 1; }

PX_ADDONS="[$FX/addons/inject.lua]"
PX_NORESOLVE=1
PX_RESOLVE="  \"github.com:443\": \"127.0.0.1:$UP\"
  \"gitlab.com:443\": \"127.0.0.1:$UP\""
PX_EXTRA="timeouts:
  pool_idle: 600s"
px_config || { fail "config"; exit 1; }
# one worker: the pool is per worker thread
sed -i 's/^workers: .*/workers: 1/' "$PX_DIR/proxy.yaml"
px_start && px_sandbox || { fail "proxy start"; exit 1; }
SA_ID=$PC_ID SA_SECRET=$PC_SECRET
SB_SECRET=sec-b-$RANDOM$RANDOM
px_register sb-other "$SB_SECRET"

metric() { # event -> value of egress_proxy_upstream_pool_total{event=...} (or the gauge: "idle")
	if [ "$1" = idle ]; then px_metric egress_proxy_upstream_pool; else px_metric "egress_proxy_upstream_pool_total{event=\"$1\"}"; fi
}
metric_is() { [ "$(metric "$1")" = "$2" ]; }
accepts() { grep -c '^tls ' "$UPLOG"; }
# get NAME HOST PATH [extra header line]: one intercepted GET on a new client
# connection as sandbox $PC_ID; output in $T/get-NAME
get() {
	local h=$2 p=$3 x=${4:-}
	pci "$h" "GET $p HTTP/1.1\r\nHost: $h\r\n${x:+$x\r\n}\r\n" --responses 1 --wait 20 >"$T/get-$1" 2>&1
}
served_by() { sed -n 's/^conn=\([0-9]*\)$/\1/p' "$T/get-$1"; }

get one github.com /one
check "first request answered" st_in "$T/get-one" 200
check "upstream parked when the client left" wait_for 20 metric_is parked 1
get two github.com /two "Authorization: Basic c3RvbGVuOnN0b2xlbg=="
check "second request answered" st_in "$T/get-two" 200
check "same sandbox, same target: the upstream connection is reused" \
	test "$(served_by one)" = 1 -a "$(served_by two)" = 1
check "reuse counted" metric_is reused 1
check "upstream saw one TCP connection for two client connections" test "$(accepts)" = 1
check "exactly one credential per request (client's own stripped)" \
	test "$(grep -c '^req 1 .* auths=1 auth=Basic ' "$T/up.log")" = 2 -a "$(grep -c '^req ' "$T/up.log")" = 2
check "the client's credential never reached the upstream" not_contains "$T/up.log" c3RvbGVuOnN0b2xlbg
wait_for 20 metric_is parked 2

# the client's Connection: close is hop-by-hop: the upstream is still parked
get cc github.com /cc "Connection: close"
check "client Connection: close answered on the pooled connection" test "$(served_by cc)" = 1
check "client Connection: close: the upstream is parked again" wait_for 20 metric_is parked 3
check "client Connection: close: not sent upstream" not_contains "$T/up.log" "Connection: close"

# another sandbox never gets that connection
PC_ID=sb-other PC_SECRET=$SB_SECRET get other github.com /other
check "other sandbox answered" st_in "$T/get-other" 200
check "other sandbox: a new upstream connection, not the parked one" \
	test "$(served_by other)" = 2 -a "$(accepts)" = 2
check "other sandbox: nothing reused" metric_is reused 2
wait_for 20 metric_is parked 4

# another target at the same address never gets it either
get gl gitlab.com /gl
check "other target: a new upstream connection (SNI gitlab.com)" \
	test "$(served_by gl)" = 3 -a "$(accepts)" = 3
check "other target: its own certificate" grep -q '^tls 3 sni=gitlab.com' "$T/up.log"
wait_for 20 metric_is parked 5

# Connection: close from the upstream: not parked
get bye github.com /bye
check "Connection: close answered on the pooled connection" test "$(served_by bye)" = 1
sleep 0.5
check "a closed upstream is not parked" metric_is parked 5
get after-bye github.com /after
check "after Connection: close: a new connection" test "$(served_by after-bye)" = 4
wait_for 20 metric_is parked 6

# a request that races the upstream's idle close is retried once, fresh
get flaky github.com /flaky
check "raced request answered" st_in "$T/get-flaky" 200
check "raced request: the pooled connection hung up" grep -q '^hangup 4' "$T/up.log"
check "raced request: retried on a new connection" test "$(served_by flaky)" = 5
check "retry counted" metric_is retried 1
check "retried request: still exactly one credential" \
	test "$(grep '^req .* /flaky ' "$T/up.log" | grep -vc 'auths=1 auth=Basic ')" = 0
wait_for 20 metric_is parked 7

# unsolicited bytes from a parked upstream: dropped, never handed on
dropped0=$(metric dropped)
get junk github.com /junk
check "junk: answered" st_in "$T/get-junk" 200
junk_conn=$(served_by junk)
check "junk: the upstream sent its unsolicited bytes" wait_for 20 grep -q "^junk $junk_conn\$" "$UPLOG"
check "junk: the connection that sent them is dropped" wait_for 20 test "$(metric dropped)" -gt "$dropped0"
get after-junk github.com /after-junk
check "junk: the next request is answered by the upstream, not by the smuggled bytes" \
	bash -c "! grep -q EVIL '$T/get-after-junk' && grep -q '^conn=' '$T/get-after-junk'"
check "junk: served on another connection" test "$(served_by after-junk)" != "$junk_conn"

# the upstream goes away: parked connections are dropped, never used
idle_before=$(metric idle)
kill "$UP_PID"; wait "$UP_PID" 2>/dev/null
check "parked connections dropped when the upstream closed them" wait_for 20 metric_is idle 0
up_start up2.log
get fresh github.com /fresh
check "after the upstream restarted: answered on a new connection" \
	test "$(st_in "$T/get-fresh" 200 && served_by fresh)" = 1
echo "# parked before the upstream restart: $idle_before"
wait_for 20 metric_is idle 1
PC_ID=sb-other PC_SECRET=$SB_SECRET get other2 github.com /other2
wait_for 20 metric_is idle 2

# deregistering a sandbox drops its parked connections (only its own)
px_admin '{"op":"deregister","id":"sb-e2e"}' >/dev/null
check "deregister drops the sandbox's parked connections" wait_for 20 metric_is idle 1
check "the other sandbox's parked connection stays" metric_is idle 1
check "upstream saw the dropped connection close" wait_for 20 grep -q '^close 1$' "$T/up2.log"
check "the other sandbox's connection stays open" not_contains "$T/up2.log" "close 2"

# expiry: timeouts.pool_idle
PX_EXTRA="timeouts:
  pool_idle: 1s" px_config px2
sed -i 's/^workers: .*/workers: 1/' "$PX_DIR/proxy.yaml"
px_start px2 && px_sandbox || { fail "second proxy start"; exit 1; }
get exp github.com /exp
check "expiry: parked" wait_for 20 metric_is parked 1
check "expiry: dropped after timeouts.pool_idle" wait_for 20 metric_is idle 0
get exp2 github.com /exp2
check "expiry: the next connection dials anew" metric_is reused 0
# pool_max: 0 disables the pool
PX_EXTRA= px_config px3
sed -i 's/^workers: .*/workers: 1/; s/^upstream:$/upstream:\n  pool_max: 0/' "$PX_DIR/proxy.yaml"
check "pool_max 0 in the config" grep -q '^  pool_max: 0$' "$PX_DIR/proxy.yaml"
px_start px3 && px_sandbox || { fail "third proxy start"; exit 1; }
get off1 github.com /off1
get off2 github.com /off2
check "pool_max 0: nothing parked or reused" test "$(metric parked)$(metric reused)" = 00
check "proxy alive" px_alive
# An intercepted client connection that is open but idle between requests
# lends its upstream to a new connection of the SAME sandbox to the same
# target (timeouts.upstream_idle is long here, so nothing is parked meanwhile);
# never to another sandbox, never while a request head is arriving.
PX_EXTRA="timeouts:
  pool_idle: 600s
  upstream_idle: 60s" px_config px4
sed -i 's/^workers: .*/workers: 1/' "$PX_DIR/proxy.yaml"
px_start px4 && px_sandbox || { fail "fourth proxy start"; exit 1; }
px_register sb-other "$SB_SECRET"
kill "$UP_PID"; wait "$UP_PID" 2>/dev/null
up_start up4.log
pci github.com "GET /a1 HTTP/1.1\r\nHost: github.com\r\n\r\n" \
	--send "GET /a2 HTTP/1.1\r\nHost: github.com\r\n\r\n" --pause 6 --responses 2 --wait 30 \
	>"$T/get-A" 2>&1 &
A_PID=$!
check "lend: the idle connection's first request served" wait_for 20 grep -q '^req 1 #1 GET /a1 ' "$UPLOG"
PC_ID=sb-other PC_SECRET=$SB_SECRET get lend-other github.com /lend-other
check "lend: another sandbox dials its own upstream" \
	test "$(served_by lend-other)" = 2 -a "$(accepts)" = 2 -a "$(metric lent)" = 0
get lend-b github.com /lend-b
check "lend: the same sandbox takes over the idle connection's upstream" \
	test "$(served_by lend-b)" = 1 -a "$(accepts)" = 2
check "lend: counted" metric_is lent 1
check "lend: the lender went to sleep at once (no upstream left to keep it awake)" \
	test "$(px_metric egress_proxy_connections_asleep)" = 1
wait "$A_PID"
check "lend: the lending connection's next request answered" \
	test "$(grep -c '^HTTP/1.1 200' "$T/get-A")" = 2
check "lend: ... on the connection parked meanwhile, no new dial" test "$(accepts)" = 2
check "lend: one credential per request throughout" \
	test "$(grep '^req ' "$UPLOG" | grep -vc 'auths=1 auth=Basic ')" = 0 -a "$(grep -c '^req ' "$UPLOG")" = 4
# a request head arriving on the idle connection: its upstream is not lent
pci gitlab.com "GET /g1 HTTP/1.1\r\nHost: gitlab.com\r\n\r\n" --send "GET /g2 HTTP/1.1\r\nHo" \
	--send "st: gitlab.com\r\n\r\n" --pause 3 --responses 2 --wait 30 >"$T/get-G" 2>&1 &
G_PID=$!
check "lend: gitlab.com first request served" wait_for 20 grep -q ' #1 GET /g1 ' "$UPLOG"
g_conn=$(sed -n 's/^req \([0-9]*\) #1 GET \/g1 .*/\1/p' "$UPLOG")
sleep 4	# the partial head went out at 3 s, the rest goes at 6 s
get lend-g gitlab.com /lend-g
check "lend: not taken while a request head is arriving" \
	test "$(served_by lend-g)" != "$g_conn" -a "$(metric lent)" = 1
wait "$G_PID"
check "lend: the half-sent request completes on its own upstream" \
	grep -q "^req $g_conn #2 GET /g2 " "$UPLOG"
check "lend: both gitlab.com responses arrived" test "$(grep -c '^HTTP/1.1 200' "$T/get-G")" = 2

# Idle intercepted client connections sleep: after timeouts.upstream_idle
# with nothing buffered they drop their TLS bufferevent and wait on a bare
# read event; the next bytes (or EOF) wake them around the same TLS session.
# ctx.sandbox is shared by the connections of one registration (attribute
# snapshot) and set before each request: a re-registration shows on new
# connections and on the next request of one already open, asleep or not.
cat >"$T/sbattrs.lua" <<'LUA'
return { name = "sbattrs",
	on_connect = function(ctx) if ctx.host == "github.com" then return "intercept" end end,
	on_request = function(req, ctx)
		local s = ctx.sandbox
		req:inject("Authorization", "Sandbox " .. s.id .. "/" .. (s.org or "-") .. "/" ..
			(s.labels.team or "-"), "sbattrs")
	end }
LUA
PX_ADDONS="[$T/sbattrs.lua]" PX_EXTRA="timeouts:
  pool_idle: 600s
  upstream_idle: 1s" px_config px5
sed -i 's/^workers: .*/workers: 1/' "$PX_DIR/proxy.yaml"
px_start px5 || { fail "fifth proxy start"; exit 1; }
SL_SECRET=sec-sl-$RANDOM$RANDOM
px_register sb-sl "$SL_SECRET" '{"org":"o1","labels":{"team":"t1"}}'
kill "$UP_PID"; wait "$UP_PID" 2>/dev/null
up_start up5.log
asleep_is() { [ "$(px_metric egress_proxy_connections_asleep)" = "$1" ]; }
none_open() { [ "$(px_metric egress_proxy_connections)" = 0 ] && asleep_is 0; }
PC_ID=sb-sl PC_SECRET=$SL_SECRET pci github.com "GET /s1 HTTP/1.1\r\nHost: github.com\r\n\r\n" \
	--send "GET /s2 HTTP/1.1\r\nHo" --send "st: github.com\r\n\r\n" --pause 4 \
	--responses 2 --wait 30 >"$T/get-S" 2>&1 &
S_PID=$!
check "sleep: first request served" wait_for 20 grep -q ' #1 GET /s1 ' "$UPLOG"
check "sleep: the idle connection goes to sleep" wait_for 10 asleep_is 1
check "sleep: its upstream was parked first" test "$(metric parked)" = 1
# a re-registration meanwhile: new connections see it, and so does the sleeper's next request
px_register sb-sl "$SL_SECRET" '{"org":"o2","labels":{"team":"t2"}}'
PC_ID=sb-sl PC_SECRET=$SL_SECRET get sl-new github.com /sl-new
PC_ID=sb-sl PC_SECRET=$SL_SECRET get sl-new2 github.com /sl-new2
check "ctx.sandbox: new connections see the re-registered attributes" \
	test "$(grep -c ' GET /sl-new[2]* .*auth=Sandbox sb-sl/o2/t2$' "$UPLOG")" = 2
wait "$S_PID"
check "sleep: woken by a split request head, both responses arrived" \
	test "$(grep -c '^HTTP/1.1 200' "$T/get-S")" = 2
check "sleep: the woken connection's first request was judged under the first attributes" \
	grep -q ' GET /s1 .*auth=Sandbox sb-sl/o1/t1$' "$UPLOG"
check "sleep: its next request sees the re-registered attributes" \
	grep -q ' GET /s2 .*auth=Sandbox sb-sl/o2/t2$' "$UPLOG"
check "sleep: one credential per request throughout" \
	test "$(grep '^req ' "$UPLOG" | grep -vc 'auths=1 auth=Sandbox ')" = 0 -a "$(grep -c '^req ' "$UPLOG")" = 4
check "sleep: no longer counted once woken and closed" wait_for 10 asleep_is 0
# a client that goes away while its connection sleeps
PC_ID=sb-sl PC_SECRET=$SL_SECRET pci github.com "GET /s3 HTTP/1.1\r\nHost: github.com\r\n\r\n" \
	--send "" --pause 4 --responses 1 --wait 30 >"$T/get-S3" 2>&1 &
S_PID=$!
check "sleep: a second connection sleeps" wait_for 10 asleep_is 1
wait "$S_PID"
check "sleep: its response had arrived before it slept" st_in "$T/get-S3" 200
check "sleep: closed by the client while asleep: gone" wait_for 10 none_open
check "proxy alive after the sleepers" px_alive
# unsolicited bytes right behind a response, read ahead into OpenSSL: the
# client's next request never gets them as its response
PC_ID=sb-sl PC_SECRET=$SL_SECRET pci github.com "GET /fastjunk HTTP/1.1\r\nHost: github.com\r\n\r\n" \
	--send "GET /after-fastjunk HTTP/1.1\r\nHost: github.com\r\n\r\n" --pause 1 --wait 10 >"$T/get-FJ" 2>&1
check "fast junk: the upstream sent it" grep -q '^fastjunk ' "$UPLOG"
check "fast junk: never relayed to the client" not_contains "$T/get-FJ" EVIL
check "fast junk: the first response arrived" st_in "$T/get-FJ" 200
# a response in 300 small records that arrive together: all of it reaches
# the client at once (records read ahead are drained, none wait for more
# bytes on the socket)
t0=$(date +%s%N)
PC_ID=sb-sl PC_SECRET=$SL_SECRET get records github.com /records
check "small records: the whole response arrived" \
	test "$(tr -cd r <"$T/get-records" | wc -c)" = 30000 -a "$(tail -n 1 "$T/get-records")" = complete
check "small records: promptly ($(( ($(date +%s%N) - t0) / 1000000 )) ms)" \
	test $(( ($(date +%s%N) - t0) / 1000000 )) -lt 5000

# the pool keys are checked like every other key
for bad in "pool_max: -1" "pool_max: 100001" "pool_per_target: 0"; do
	PX_EXTRA= px_config px-bad
	sed -i "s/^upstream:\$/upstream:\n  $bad/" "$PX_DIR/proxy.yaml"
	out=$("$PROXY_BIN" -n -f "$PX_DIR/proxy.yaml" 2>&1); rc=$?
	check "config refuses upstream.$bad (naming the key)" \
		bash -c "[ $rc -ne 0 ] && grep -q 'upstream.${bad%%:*}' <<<'$out'"
done
PX_EXTRA="timeouts:
  pool_idle: 20m" px_config px-bad
out=$("$PROXY_BIN" -n -f "$PX_DIR/proxy.yaml" 2>&1); rc=$?
check "config refuses timeouts.pool_idle above 10m" bash -c "[ $rc -ne 0 ] && grep -q 'timeouts.pool_idle' <<<'$out'"
check "no sanitizer report from the proxy" px_san_clean
