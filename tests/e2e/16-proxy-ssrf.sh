# 16-proxy-ssrf: destinations in loopback, link-local (cloud metadata),
# private, CGNAT, ULA and the proxy's own addresses are refused BEFORE any
# dial unless allowed. Everything runs inside a network namespace this test
# creates (loopback only, no routes), so even a bug could not send a packet
# off this machine. Loopback cases come first: they prove the refusal with a
# recorder that would see the connection.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"

NS=e2e-ssrf-$$
ip netns add "$NS" || { fail "netns add"; exit 1; }
on_exit "ip netns del $NS"
ip netns exec "$NS" ip link set lo up
check "netns has no route off the machine" bash -c "! ip netns exec $NS ip route get 169.254.169.254 >/dev/null 2>&1 && ! ip netns exec $NS ip route get 10.1.2.3 >/dev/null 2>&1"
in_ns() { ip netns exec "$NS" "$@"; }

fx_pki && fx_tokens || { fail "pki"; exit 1; }
# Recorder inside the namespace (its 127.0.0.1 is the namespace's).
REC_PORT=$(free_port)
: >"$T/rec-lo.bytes"; : >"$T/rec-lo.events"
ip netns exec "$NS" "$PY" "$FX/recorder.py" --port "$REC_PORT" --out "$T/rec-lo.bytes" --events "$T/rec-lo.events" \
	--ready "$T/rec-lo.ready" >>"$T/rec-lo.out" 2>&1 &
track_pid $!
wait_for 20 test -f "$T/rec-lo.ready" || { fail "recorder in netns"; exit 1; }
cat >"$T/hosts" <<HOSTS
127.0.0.1 localhost
127.0.0.2 hostsloop.test
10.9.9.9 hostsprivate.test
169.254.169.254 metadata.google.internal
HOSTS

# Proxy: NO allow_cidrs, anonymous, resolve map pointing names at forbidden addresses.
API_PORT=1 GH_PORT=1 GL_PORT=1
PX_ALLOW="[]" PX_ANON=true PX_NORESOLVE=1 PX_ADDONS="[]" PX_RESOLVE="  \"loopy.test:443\": \"127.0.0.1:$REC_PORT\"
  \"loopy.test:80\": \"127.0.0.1:$REC_PORT\"
  \"v6loop.test:443\": \"[::1]:$REC_PORT\"
  \"meta.test:80\": \"169.254.169.254:80\"
  \"internal.test:443\": \"10.1.2.3:443\"
  \"cgnat.test:443\": \"100.64.1.1:443\"
  \"github.com:443\": \"127.0.0.1:$REC_PORT\"" px_config
PX_DIR=$T/proxy PX_ADMIN=$T/proxy/admin.sock PX_CA=$T/proxy/export/ca.crt
ip netns exec "$NS" sh -c "mount --bind $T/hosts /etc/hosts && exec $PROXY_BIN -d -v -f $PX_DIR/proxy.yaml" >>"$PX_DIR/stderr" 2>&1 &
PX_PID=$!
track_pid $PX_PID
wait_for 20 in_ns bash -c "exec 3<>/dev/tcp/127.0.0.1/$PX_PORT" && wait_for 10 test -s "$PX_CA" || { fail "proxy start in netns"; tail "$PX_DIR/stderr"; exit 1; }
ok "proxy start in netns"
R=$T/r; mkdir -p "$R"
npc() { in_ns "$PY" "$FX/pclient.py" --proxy "127.0.0.1:$PX_PORT" "$@"; }

# refused TARGET: 403 on the CONNECT, decided before dialling.
refused() {
	local t=$1 f=$R/$(echo "$1" | tr -c 'a-zA-Z0-9.\n' _)
	npc --connect "$t" --send "GET / HTTP/1.1\r\nHost: x\r\n\r\n" --wait 5 >"$f" 2>&1
	check "CONNECT $t refused with 403" grep -q '^connect: HTTP/1.[01] 403' "$f"
}
# 1. Loopback spellings, resolve-map and hosts-file names: the recorder would see a connection.
for t in "127.0.0.1:$REC_PORT" "0x7f.1:$REC_PORT" "2130706433:$REC_PORT" "0177.0.0.1:$REC_PORT" \
	"127.1:$REC_PORT" "127.0.0.2:$REC_PORT" "[::1]:$REC_PORT" "[::ffff:127.0.0.1]:$REC_PORT" \
	"[::ffff:7f00:1]:$REC_PORT" "[0:0:0:0:0:0:0:1]:$REC_PORT" "localhost:$REC_PORT" "LOCALHOST.:$REC_PORT" \
	"loopy.test:443" "v6loop.test:443" "hostsloop.test:$REC_PORT" "github.com:443" \
	"0.0.0.0:$REC_PORT" "0:$REC_PORT" "127.0.0.1:$PX_PORT"; do
	refused "$t"
done
check "recorder on loopback never saw a connection" rec_noconn lo
check "recorder on loopback got no byte" rec_empty lo
# Absolute-form plain HTTP to loopback is refused the same way.
npc --raw "GET http://127.0.0.1:$REC_PORT/x HTTP/1.1\r\nHost: 127.0.0.1:$REC_PORT\r\n\r\n" --wait 5 >"$R/plainlo" 2>&1
check "plain GET http://127.0.0.1 refused (403)" grep -q '^HTTP/1.[01] 403' "$R/plainlo"
npc --raw "GET http://loopy.test/x HTTP/1.1\r\nHost: loopy.test\r\n\r\n" --wait 5 >"$R/plainlo2" 2>&1
check "plain GET via a resolve-map name to loopback refused (403)" grep -q '^HTTP/1.[01] 403' "$R/plainlo2"
npc --raw "GET http://hostsloop.test:$REC_PORT/x HTTP/1.1\r\nHost: hostsloop.test:$REC_PORT\r\n\r\n" --wait 5 >"$R/plainlo3" 2>&1
check "plain GET via a hosts-file name to loopback refused (403)" grep -q '^HTTP/1.[01] 403' "$R/plainlo3"
check "recorder still untouched" rec_noconn lo

# 2. Non-loopback forbidden ranges: must be 403 (refused before dialling), not 502/504
#    (which would mean a dial was attempted; in this namespace it cannot leave anyway).
for t in "169.254.169.254:80" "169.254.169.254:443" "0xa9fea9fe:80" "2852039166:80" "meta.test:80" \
	"metadata.google.internal:80" "10.0.0.1:443" "10.1.2.3:443" "012.1:443" "internal.test:443" \
	"hostsprivate.test:443" "172.16.0.1:443" "172.31.255.254:443" "192.168.1.1:443" \
	"100.64.0.1:443" "100.127.255.254:443" "cgnat.test:443" "[fe80::1]:443" "[fc00::1]:443" \
	"[fd12:3456::1]:443" "[::ffff:169.254.169.254]:80" "[::ffff:10.0.0.1]:443" "[64:ff9b::a9fe:a9fe]:80" \
	"[2002:a9fe:a9fe::1]:80" "224.0.0.1:443" "255.255.255.255:443"; do
	refused "$t"
done
npc --raw "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n" --wait 5 >"$R/plainmeta" 2>&1
check "plain GET http://169.254.169.254/ refused (403)" grep -q '^HTTP/1.[01] 403' "$R/plainmeta"
npc --raw "GET http://meta.test/latest/ HTTP/1.1\r\nHost: meta.test\r\n\r\n" --wait 5 >"$R/plainmeta2" 2>&1
check "plain GET via name mapped to metadata refused (403)" grep -q '^HTTP/1.[01] 403' "$R/plainmeta2"
check "refusals counted as ssrf" bash -c "$PY $FX/padmin.py $PX_ADMIN '{\"op\":\"metrics\"}' | grep -q 'ssrf'"
check "proxy alive" px_alive
check "no sanitizer report from the proxy" px_san_clean
