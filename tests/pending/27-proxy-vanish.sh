# 27b-proxy-vanish (PENDING: fails against the proxy at 13:05 UTC): a client
# that goes away (FIN or RST) while a large intercepted response is being
# relayed must have its connection released promptly, not after
# timeouts.idle (5 min). Blind tunnels and small responses are the controls.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"
PX_ADDONS="[$FX/addons/inject.lua]"
fx_all || { fail "fixtures start"; exit 1; }
px_config && px_start && px_sandbox || { fail "proxy start"; exit 1; }
tunnels_are() { [ "$(px_stat sb-e2e tunnels)" = "$1" ]; }
released() { # name
	if wait_for 20 tunnels_are 0; then ok "$1: released"
	else fail "$1: released" "$(px_admin '{"op":"stats","id":"sb-e2e"}')"; fi
}
BIG="GET /big/256m.bin HTTP/1.1\r\nHost: github.com\r\n\r\n"
hold a --target "127.0.0.1:$SINK_PORT" --n 5 --vanish --read-head --request "GET /big/256m.bin HTTP/1.1\r\nHost: x\r\n\r\n"
release a; released "control: blind tunnel, client RST mid-download"
hold d --target api.github.com:443 --tls --sni api.github.com --cafile "$PX_CA" --n 5 --read-head --request "GET /user HTTP/1.1\r\nHost: api.github.com\r\n\r\n"
release d; released "control: intercepted, small response, client FIN"
hold b --target github.com:443 --tls --sni github.com --cafile "$PX_CA" --n 5 --request "$BIG"
sleep 2; release b; released "intercepted, slow reader of 256 MiB, then client FIN"
hold c --target github.com:443 --tls --sni github.com --cafile "$PX_CA" --n 5 --read-head --vanish --request "$BIG"
release c; released "intercepted, mid-download, client RST"
check "proxy alive" px_alive
