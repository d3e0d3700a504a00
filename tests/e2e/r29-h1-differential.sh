#!/usr/bin/env bash
# r29-h1-differential.sh: one hostile corpus of request heads, sent as raw
# bytes to the egress proxy, the app gateway and the orchestrator (each the
# real daemon on loopback) and to the sandbox agent, must get the same verdict from all four: the
# head is refused for its framing or grammar (400, 431, 501, 505, or the
# connection closed without an answer), or it passes the parser (any other
# answer: 407, 401, 404, 200, ...). The rules are common/h1.c's; before
# they were shared, a leading CRLF passed the gateway and not the proxy,
# and "Transfer-Encoding: gzip, chunked" got 400 from one and 501 from the
# other (both refusals; only the first differs in verdict). The agent reads
# heads with the proxy's and the gateway's code (common/h1head.c), so where
# it refuses, its status must be theirs too; on its own parser it answered
# 400 for HTTP/2.0 and a missing version (505) and 501 for a coding that is
# not chunked (400), and took an equal duplicate Content-Length.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"
PY=${PY:-/usr/bin/python3}

# --- the proxy: no sandbox registered, so a head that parses gets 407 ---
PXD=$T/px
mkdir -p "$PXD/export"
PX_PORT=$(free_port)
cat >"$PXD/proxy.yaml" <<EOF
listen: 127.0.0.1:$PX_PORT
workers: 1
anonymous: false
admin:
  socket: $PXD/admin.sock
ca:
  cert: $PXD/ca.crt
  key: $PXD/ca.key
  export: $PXD/export/ca.crt
log:
  file: $PXD/proxy.log
EOF
"$BIN/egress-proxy/egress-proxy" -d -f "$PXD/proxy.yaml" >>"$PXD/stderr" 2>&1 &
PX_PID=$!
track_pid $PX_PID

# --- the gateway: a fake orchestrator with no routes, so a head that parses gets 404 ---
GW_PORT=$(free_port)
: >"$T/routes"
"$PY" "$TOP/tests/fixtures/fakeorch.py" --socket "$T/ctl.sock" --routes "$T/routes" \
	--cmd "$T/cmd" --log "$T/gorch.log" >"$T/gorch.out" 2>&1 &
track_pid $!
wait_for 10 test -S "$T/ctl.sock"
printf 'listen: 127.0.0.1:%s\ndomain: apps.localhost\ncontrol:\n  socket: %s\n' \
	"$GW_PORT" "$T/ctl.sock" >"$T/gw.yaml"
"$BIN/gateway/app-gateway" -d -f "$T/gw.yaml" >>"$T/gw.log" 2>&1 &
GW_PID=$!
track_pid $GW_PID

# --- the agent (static, the sandbox's first process) on TCP with a token:
# a head that parses gets 401 (no Authorization) ---
. "$TOP/tests/lib/agent.sh"
AG_PORT=$(free_port)
mkdir -p "$T/ag-ws" "$T/ag-state"
printf 'tok-0123456789abcdef-secret\n' >"$T/ag-token"
"$AGENT" --listen "tcp:127.0.0.1:$AG_PORT" --token-file "$T/ag-token" --state "$T/ag-state" \
	--workdir "$T/ag-ws" >>"$T/agent.log" 2>&1 &
AG_PID=$!
track_pid $AG_PID

# --- the orchestrator (fake runtime): a head that parses gets 401 or 200 ---
orch_config
check "the orchestrator starts" orch_start
check "the proxy starts" wait_port "$PX_PORT" 20
check "the gateway starts" wait_port "$GW_PORT" 20
check "the agent starts" wait_port "$AG_PORT" 20

cat >"$T/diff.py" <<'EOF'
# The corpus runner (PX GW ORCH AGENT): sends each case to the four daemons, prints one line
# per case: "name verdict-px verdict-gw verdict-orch (statuses)". A case given as
# pipelined(BYTES) carries a keep-alive request, then a plain GET behind it on the same
# connection: it is refused only when the daemon answers with one refusal and closes,
# reading nothing behind it (its status reads "400"; "400,200" is two answers,
# "400,open" a connection left open: both "pass").
import socket, sys

ports = {"proxy": int(sys.argv[1]), "gateway": int(sys.argv[2]), "orch": int(sys.argv[3]),
         "agent": int(sys.argv[4])}
# The request target each daemon takes as a plain request.
target = {"proxy": b"http://a.example/x", "gateway": b"/x", "orch": b"/healthz",
          "agent": b"/v1/health"}
host = {"proxy": b"a.example", "gateway": b"web-s-0123456789abcdef.apps.localhost", "orch": b"127.0.0.1",
        "agent": b"127.0.0.1"}
BAD = {400, 413, 414, 431, 501, 505}

def req(line=b"GET {T} HTTP/1.1", hdrs=(b"Host: {H}",), body=b"", pre=b"", eol=b"\r\n"):
    h = b"".join(x + eol for x in hdrs)
    return pre + line + eol + h + eol + body

class pipelined(bytes):
    """A case's bytes with a plain GET pipelined behind them (see verdict)."""
    def __new__(cls, first):
        return super().__new__(cls, first + req())

CASES = [
    ("plain", "pass", req()),
    ("post-cl", "pass", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Content-Length: 3"), b"abc")),
    ("post-chunked", "pass", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Transfer-Encoding: chunked"), b"3\r\nabc\r\n0\r\n\r\n")),
    ("leading-crlf", "pass", req(pre=b"\r\n")),
    ("leading-crlf-x5", "bad", req(pre=b"\r\n" * 5)),
    ("leading-lf", "bad", req(pre=b"\n")),
    ("bare-lf", "bad", req(eol=b"\n")),
    ("bare-cr-in-value", "bad", req(hdrs=(b"Host: {H}", b"X-A: a\rb"))),
    ("obs-fold", "bad", req(hdrs=(b"Host: {H}", b"X-A: a", b" folded"))),
    ("nul-in-value", "bad", req(hdrs=(b"Host: {H}", b"X-A: a\x00b"))),
    ("ctl-in-value", "bad", req(hdrs=(b"Host: {H}", b"X-A: a\x01b"))),
    ("space-before-colon", "bad", req(hdrs=(b"Host: {H}", b"X-A : b"))),
    ("bad-name-token", "bad", req(hdrs=(b"Host: {H}", b"X(A): b"))),
    ("dup-cl-equal", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Content-Length: 3", b"Content-Length: 3"), b"abc")),
    ("dup-cl-differ", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Content-Length: 3", b"Content-Length: 4"), b"abcd")),
    ("cl-list", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Content-Length: 3, 3"), b"abc")),
    ("cl-plus", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Content-Length: +3"), b"abc")),
    ("cl-te", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Content-Length: 3", b"Transfer-Encoding: chunked"), b"0\r\n\r\n")),
    ("te-cl", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Transfer-Encoding: chunked", b"Content-Length: 3"), b"0\r\n\r\n")),
    ("te-gzip-chunked", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Transfer-Encoding: gzip, chunked"), b"0\r\n\r\n")),
    ("te-chunked-gzip", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Transfer-Encoding: chunked, gzip"), b"0\r\n\r\n")),
    ("te-twice", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked"), b"0\r\n\r\n")),
    ("te-xchunked", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Transfer-Encoding: xchunked"), b"0\r\n\r\n")),
    ("te-space-colon", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Transfer-Encoding : chunked"), b"0\r\n\r\n")),
    ("te-gzip", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Transfer-Encoding: gzip"), b"0\r\n\r\n")),
    ("te-chunked-upper", "pass", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Transfer-Encoding: Chunked"), b"3\r\nabc\r\n0\r\n\r\n")),
    ("te-empty", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Transfer-Encoding: "), b"0\r\n\r\n")),
    ("cl-empty", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Content-Length: "), b"")),
    ("cl-2^64", "bad", req(b"POST {T} HTTP/1.1", (b"Host: {H}", b"Content-Length: 18446744073709551616"), b"")),
    # RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message is faulty framing, answered
    # and closed after, even when the head asks for keep-alive: nothing behind it is read
    # (was: the agent alone refused it; the proxy answered 407 and the gateway 404, each
    # taking the chunked body, and the orchestrator 200 to it and to the GET behind it)
    ("te-http10", "bad", pipelined(req(b"POST {T} HTTP/1.0", (b"Host: {H}", b"Connection: keep-alive", b"Transfer-Encoding: chunked"), b"3\r\nabc\r\n0\r\n\r\n"))),
    ("te-cl-http10", "bad", req(b"POST {T} HTTP/1.0", (b"Host: {H}", b"Transfer-Encoding: chunked", b"Content-Length: 3"), b"abc")),
    ("cl-http10", "pass", req(b"POST {T} HTTP/1.0", (b"Host: {H}", b"Content-Length: 3"), b"abc")),
    ("version-2", "bad", req(b"GET {T} HTTP/2.0")),
    ("version-1.2", "bad", req(b"GET {T} HTTP/1.2")),
    ("version-0.9", "bad", req(b"GET {T} HTTP/0.9")),
    ("version-lower", "bad", req(b"GET {T} http/1.1")),
    ("version-9.9", "bad", req(b"GET {T} HTTP/9.9")),
    ("version-1.2x", "bad", req(b"GET {T} HTTP/1.2x")),
    ("version-3.0", "bad", req(b"GET {T} HTTP/3.0")),
    ("no-version", "bad", b"GET {T}\r\n\r\n"),
    ("bad-method", "bad", req(b"G@T {T} HTTP/1.1")),
    ("space-in-target", "bad", req(b"GET {T}x y HTTP/1.1")),
    ("ctl-in-target", "bad", req(b"GET {T}\x01 HTTP/1.1")),
    ("huge-head", "bad", req(hdrs=(b"Host: {H}",) + tuple(b"X-Pad-%d: " % i + b"a" * 1000 for i in range(300)))),
]

def verdict(port, data, whole=False):
    """A refusal or a pass, and the status. whole: read until the daemon closes
    (5 s quiet: "open"), and count every answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(data)
    except OSError:
        pass
    got, closed = b"", False
    try:
        while whole or (b"\r\n" not in got and len(got) < 4096):
            b = s.recv(4096)
            if not b:
                closed = True
                break
            got += b
    except ConnectionError:
        closed = True
    except OSError:
        pass
    s.close()
    if not got.startswith(b"HTTP/1."):
        return "bad", "closed"
    st = int(got.split(b" ", 2)[1])
    if whole:
        more = [l.split(b" ", 2)[1].decode() for l in got.split(b"\r\n")[1:] if l.startswith(b"HTTP/1.")]
        if more or not closed:
            return "pass", ",".join([str(st)] + more + ([] if closed else ["open"]))
    return ("bad" if st in BAD else "pass"), str(st)

for name, want, raw in CASES:
    v = {}
    for d, p in ports.items():
        v[d] = verdict(p, raw.replace(b"{T}", target[d]).replace(b"{H}", host[d]),
                       isinstance(raw, pipelined))
    print(name, want, " ".join("%s=%s:%s" % (d, v[d][0], v[d][1]) for d in ports))
EOF
"$PY" "$T/diff.py" "$PX_PORT" "$GW_PORT" "$ORCH_PORT" "$AG_PORT" >"$T/diff.out" 2>&1
cat "$T/diff.out"
check "the corpus ran" test "$(wc -l <"$T/diff.out")" -ge 39
while read -r name want px gw orch ag; do
	v1=${px#*=}; v2=${gw#*=}; v3=${orch#*=}; v4=${ag#*=}
	# The agent takes a chunked body only on its streaming routes (conn.c
	# answers 501 elsewhere: a route's rule, not the head's), so those cases
	# are checked for their own answer and not compared.
	case $name in
	post-chunked|te-chunked-upper)
		check "$name: the agent's non-streaming route answers 501" test "$v4" = bad:501
		v4=$v3 ;;
	esac
	check "$name: the same verdict everywhere ($px $gw $orch $ag)" \
		test "${v1%%:*}" = "${v2%%:*}" -a "${v2%%:*}" = "${v3%%:*}" -a "${v3%%:*}" = "${v4%%:*}"
	# The agent reads heads with the proxy's and the gateway's code
	# (common/h1head.c on llhttp): a refusal is the same status in all three.
	if [ "${v4%%:*}" = bad ]; then
		check "$name: the agent refuses with the proxy's and the gateway's status ($v1 $v2 $v4)" \
			test "$v4" = "$v1" -a "$v4" = "$v2"
	fi
	# The orchestrator still reads heads with its own llhttp callbacks, under
	# the same rules: a refusal is the proxy's status too (was: 505 for
	# HTTP/1.2 and 9.9, which llhttp cannot read, where the others said 400).
	if [ "${v3%%:*}" = bad ]; then
		check "$name: the orchestrator refuses with the proxy's status ($v1 $v3)" test "$v3" = "$v1"
	fi
	check "$name: $want" test "${v1%%:*}" = "$want"
done <"$T/diff.out"
check "the proxy is up after the corpus" kill -0 "$PX_PID"
check "the gateway is up after the corpus" kill -0 "$GW_PID"
check "the orchestrator is up after the corpus" kill -0 "$ORCH_PID"
check "the agent is up after the corpus" kill -0 "$AG_PID"
