# 18-proxy-vanish: a client that goes away (RST, or FIN with unread bytes)
# while a large intercepted response is being relayed under backpressure
# is released promptly (both sides, admin stats drop), not after
# timeouts.idle (5 min). Blind tunnels and small responses are controls;
# a client that half-closes (TCP FIN, no close_notify) and then reads the
# whole backpressured response still gets every byte.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"
PX_ADDONS="[$FX/addons/inject.lua]"
fx_all || { fail "fixtures start"; exit 1; }
px_config && px_start && px_sandbox || { fail "proxy start"; exit 1; }
truncate -s 8M "$T/www/big/8m.bin"
idle() { [ "$(px_stat sb-e2e tunnels)" = 0 ] && [ "$(px_stat sb-e2e conns)" = 0 ]; }
released() { # name
	if wait_for 20 idle; then ok "$1: released"
	else fail "$1: released" "$(px_admin '{"op":"stats","id":"sb-e2e"}')"; fi
}
BIG="GET /big/256m.bin HTTP/1.1\r\nHost: github.com\r\n\r\n"
hold a --target "127.0.0.1:$SINK_PORT" --n 5 --vanish --read-head --request "GET /big/256m.bin HTTP/1.1\r\nHost: x\r\n\r\n"
release a; released "control: blind tunnel, client RST mid-download"
hold d --target api.github.com:443 --tls --sni api.github.com --cafile "$PX_CA" --n 5 --read-head --request "GET /user HTTP/1.1\r\nHost: api.github.com\r\n\r\n"
release d; released "control: intercepted, small response, client FIN"
hold b --target github.com:443 --tls --sni github.com --cafile "$PX_CA" --n 5 --request "$BIG"
check "slow readers set up" grep -q '^opened 5 ' "$T/hold-b.out"
# the proxy relays until the client's window and its own watermark are full
sleep 2; release b; released "intercepted, slow reader of 256 MiB, then client close with unread bytes"
hold c --target github.com:443 --tls --sni github.com --cafile "$PX_CA" --n 5 --read-head --vanish --request "$BIG"
check "mid-download resets done" grep -q "'vanished': 5" "$T/hold-c.out"
release c; released "intercepted, mid-download, client RST"

# Legitimate half-close: the client sends close_notify and a TCP FIN right
# after its request (TLS over a memory BIO so it can keep reading), reads
# nothing for 1 s (backpressure builds), then reads everything. (A FIN
# without close_notify is an error for OpenSSL 3 and closes at once.)
halfclose() {
	"$PY" - "$PX_PORT" "$PC_ID:$PC_SECRET" "$PX_CA" <<'PY'
import base64, socket, ssl, sys, time
port, auth, ca = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=30)
s.sendall(("CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\nProxy-Authorization: Basic %s\r\n\r\n"
           % base64.b64encode(auth.encode()).decode()).encode())
buf = b""
while b"\r\n\r\n" not in buf:
    d = s.recv(1)
    if not d:
        sys.exit("closed during CONNECT")
    buf += d
assert buf.split(b" ")[1] == b"200", buf
ctx = ssl.create_default_context(cafile=ca)
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
o = ctx.wrap_bio(inc, out, server_hostname="github.com")
def flush():
    d = out.read()
    if d:
        s.sendall(d)
def pull():
    d = s.recv(65536)
    if not d:
        inc.write_eof()
        return False
    inc.write(d)
    return True
while True:
    try:
        o.do_handshake()
        break
    except ssl.SSLWantReadError:
        flush()
        if not pull():
            sys.exit("eof in handshake")
flush()
o.write(b"GET /big/8m.bin HTTP/1.1\r\nHost: github.com\r\n\r\n")
flush()
try:
    o.unwrap()                  # close_notify: TLS half-close
except ssl.SSLWantReadError:
    pass
flush()
s.shutdown(socket.SHUT_WR)      # and the TCP FIN
time.sleep(1)
data = b""
end = "?"
try:
    while True:
        try:
            d = o.read(1 << 20)
            if not d:
                end = "zero-return"
                break
            data += d
            continue
        except ssl.SSLWantReadError:
            pass
        except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
            end = "ssl-eof"
            break
        if not pull():
            end = "tcp-eof"
            try:
                data += o.read(1 << 20)
            except ssl.SSLError:
                pass
            break
except Exception as e:
    end = repr(e)
head, _, body = data.partition(b"\r\n\r\n")
print(head.split(b"\r\n")[0].decode(), len(body), end)
PY
}
out=$(halfclose 2>&1)
echo "# half-close client: $out"
check "half-closed client reads the whole 8 MiB response" test "$out" = "HTTP/1.1 200 OK 8388608 tcp-eof"
released "half-closed client after its response"
check "proxy alive" px_alive
check "no sanitizer report from the proxy" px_san_clean
