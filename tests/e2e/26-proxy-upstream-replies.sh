# 26-proxy-upstream-replies: what the proxy does with an upstream's reply
# (egress-proxy/proxy.c resp_head, up_read): the head is read by
# common/h1head.c (llhttp strict and the rules of common/h1.c, the same
# code that reads every request head) and relayed verbatim; the body is
# framed by that reader. A reply whose framing the proxy and the client
# could read two ways, or that breaks the grammar, is never passed on: a
# 502 when nothing of it reached the client yet, else the connection is
# cut. Each case is an upstream (tests/fixtures/rawreply.py) sending
# scripted bytes, and the assertion is on what a byte-exact client
# (pclient.py) or curl received, on the intercepted (TLS) path and the
# plain-HTTP path.
. "$(dirname "$0")/../lib/common.sh"
PY=${PY:-/usr/bin/python3}
FX=$TOP/tests/fixtures

. "$TOP/tests/lib/upca.sh"
upca_mk "$T/upca.crt" "$T/upca.key" "$T/srv.crt" "$T/srv.key" raw.test

BIGHDR=$("$PY" -c 'print("X-Big: " + "a" * 40000)')
MANY=$("$PY" -c 'print("".join("X-H%d: v\\r\\n" % i for i in range(150)), end="")')
cat >"$T/cases.py" <<'EOF'
import json, sys
big, many = sys.argv[1], sys.argv[2]
ok = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
C = {
  # relayed
  "cl": {"parts": [ok]},
  "chunked": {"parts": ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "6;ext=1\r\nhello \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n"]},
  "close": {"parts": ["HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the close"], "close": True},
  "http10": {"parts": ["HTTP/1.0 200 OK\r\n\r\nold style"], "close": True},
  "interim": {"parts": ["HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n", ok]},
  "nocontent": {"parts": ["HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"]},
  "notmod": {"parts": ["HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"]},
  "headlen": {"parts": ["HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"]},
  "trickle": {"parts": ["HTTP/1.1 200 Fine", " Thanks\r\nX-Sp", "lit: yes\r\nContent-Length: 5\r\n\r", "\nhel", "lo"], "pause": 0.15},
  "obstext": {"parts": ["HTTP/1.1 200 OK\r\nX-Latin: caf\xe9\r\nContent-Length: 2\r\n\r\nok"]},
  "big": {"parts": ["HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n" + "x" * 1048576]},
  "junk": {"parts": [ok + "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil"]},
  # refused before anything reaches the client: 502
  "obsfold": {"parts": ["HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 5\r\n\r\nhello"]},
  "barelf": {"parts": ["HTTP/1.1 200 OK\nContent-Length: 5\n\nhello"]},
  "nul": {"parts": ["HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 5\r\n\r\nhello"]},
  "badname": {"parts": ["HTTP/1.1 200 OK\r\nX A: 1\r\nContent-Length: 5\r\n\r\nhello"]},
  "spacecolon": {"parts": ["HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello"]},
  "ctlvalue": {"parts": ["HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 5\r\n\r\nhello"]},
  "http2": {"parts": ["HTTP/2.0 200 OK\r\nContent-Length: 5\r\n\r\nhello"]},
  "http09": {"parts": ["hello\r\n\r\n"]},
  "status4": {"parts": ["HTTP/1.1 2000 OK\r\nContent-Length: 5\r\n\r\nhello"]},
  "twocl": {"parts": ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 9\r\n\r\nhello"]},
  "samecl": {"parts": ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello"]},
  "clte": {"parts": ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]},
  "gzipchunked": {"parts": ["HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]},
  "twote": {"parts": ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]},
  "te10": {"parts": ["HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"]},
  "gzipclose": {"parts": ["HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nnot really gzip"], "close": True},
  "chunkedgzip": {"parts": ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nxx"], "close": True},
  "manylines": {"parts": ["HTTP/1.1 200 OK\r\n" + many + "Content-Length: 5\r\n\r\nhello"]},
  "bighead": {"parts": ["HTTP/1.1 200 OK\r\n" + big + "\r\nContent-Length: 5\r\n\r\nhello"]},
  "switch": {"parts": ["HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\nraw bytes"]},
  "badchunk": {"parts": ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"]},
  "badclval": {"parts": ["HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\nhello"]},
  "empty": {"parts": [""], "close": True},
  "partial": {"parts": ["HTTP/1.1 200 OK\r\nContent-"], "close": True},
  # the head went out; the connection is cut, never a short message taken for whole
  "latechunk": {"parts": ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", "zz\r\nworld\r\n0\r\n\r\n"], "pause": 0.3},
  "short": {"parts": ["HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", "only this"], "pause": 0.3, "close": True},
}
json.dump(C, open(sys.argv[3], "w"))
EOF
"$PY" "$T/cases.py" "$BIGHDR" "$MANY" "$T/cases.json"

UP=$(free_port); PLAIN=$(free_port); PP=$(free_port)
"$PY" "$FX/rawreply.py" --listen "$UP" --cases "$T/cases.json" --cert "$T/srv.crt" \
	--key "$T/srv.key" --log "$T/up.jsonl" >"$T/up.out" 2>&1 & track_pid $!
"$PY" "$FX/rawreply.py" --listen "$PLAIN" --cases "$T/cases.json" --log "$T/plain.jsonl" \
	>"$T/plain.out" 2>&1 & track_pid $!

cat >"$T/raw.lua" <<'EOF'
return {
  name = "raw",
  on_connect = function(ctx)
    if ctx.host == "raw.test" then return "intercept" end
    return nil
  end,
}
EOF
mkdir -p "$T/export"
cat >"$T/p.yaml" <<EOF
listen: 127.0.0.1:$PP
workers: 1
anonymous: true
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key, export: $T/export/ca.crt}
upstream:
  ca_bundle: $T/upca.crt
  allow_cidrs: [127.0.0.0/8]
resolve:
  "raw.test:443": "127.0.0.1:$UP"
  "raw.test:80": "127.0.0.1:$PLAIN"
addons: [$T/raw.lua]
audit:
  log: $T/audit.jsonl
log:
  file: $T/proxy.log
EOF
. "$TOP/tests/lib/pxsolo.sh"
px_solo
wait_port "$UP" 10; wait_port "$PLAIN" 10

# raw NAME [METHOD]: one intercepted exchange, byte-exact, into $T/r-NAME
raw() {
	"$PY" "$FX/pclient.py" --proxy "127.0.0.1:$PP" --connect raw.test:443 --tls --sni raw.test \
		--cafile "$T/export/ca.crt" --wait 1.5 \
		--send "${2:-GET} /r/$1 HTTP/1.1\r\nHost: raw.test\r\n\r\n" >"$T/r-$1" 2>&1
}
# plain NAME: the same through the plain-HTTP path
plain() {
	"$PY" "$FX/pclient.py" --proxy "127.0.0.1:$PP" --wait 1.5 \
		--raw "GET http://raw.test/r/$1 HTTP/1.1\r\nHost: raw.test\r\n\r\n" >"$T/p-$1" 2>&1
}
after() { sed -n '/^----$/,$p' "$1" | sed '1d;$d'; }	# what the proxy sent back

# ---- 1. well-formed replies: relayed verbatim ----
for n in cl chunked close http10 interim nocontent notmod trickle obstext junk; do raw "$n"; done
raw headlen HEAD
check "Content-Length reply: the bytes the upstream sent, verbatim" \
	test "$(after "$T/r-cl" | head -c 200)" = "$(printf 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello')"
check "chunked reply: chunk extensions and the trailer relayed as sent" \
	contains "$T/r-chunked" "$(printf '6;ext=1\r\nhello \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n')"
check "a reply delimited by the close: all of it, then the close" \
	sh -c "grep -q 'until the close' '$T/r-close' && tail -n 1 '$T/r-close' | grep -qx eof"
check "HTTP/1.0 reply without a length: relayed to the close" contains "$T/r-http10" "old style"
check "interim 100 and 103 relayed, then the final reply" \
	sh -c "grep -q '100 Continue' '$T/r-interim' && grep -q '103 Early Hints' '$T/r-interim' && grep -q '^hello' '$T/r-interim'"
check "204: its head alone, the connection kept" \
	sh -c "grep -q '204 No Content' '$T/r-nocontent' && tail -n 1 '$T/r-nocontent' | grep -qx timeout"
check "304: its head alone, the connection kept" \
	sh -c "grep -q '304 Not Modified' '$T/r-notmod' && tail -n 1 '$T/r-notmod' | grep -qx timeout"
check "HEAD with Content-Length: 100: no body waited for, the connection kept" \
	sh -c "grep -q 'Content-Length: 100' '$T/r-headlen' && tail -n 1 '$T/r-headlen' | grep -qx timeout"
check "a head that arrives in five pieces: read whole, its reason kept" \
	sh -c "grep -q '^HTTP/1.1 200 Fine Thanks' '$T/r-trickle' && grep -q 'X-Split: yes' '$T/r-trickle' && grep -q '^hello' '$T/r-trickle'"
check "obs-text (a byte >= 0x80) in a value passes" contains "$T/r-obstext" "X-Latin: caf"
check "bytes after a whole reply (a second, unasked reply) never reach the client" \
	sh -c "grep -q '^hello' '$T/r-junk' && ! grep -q evil '$T/r-junk'"

# Two requests on one client connection: the reply's framing decides where
# the first ends, and the kept upstream connection serves the second.
"$PY" "$FX/pclient.py" --proxy "127.0.0.1:$PP" --connect raw.test:443 --tls --sni raw.test \
	--cafile "$T/export/ca.crt" --wait 3 \
	--send 'GET /r/chunked HTTP/1.1\r\nHost: raw.test\r\n\r\n' --pause 0.5 \
	--send 'GET /r/cl HTTP/1.1\r\nHost: raw.test\r\n\r\n' >"$T/r-two" 2>&1
check "a chunked reply then a Content-Length one on one connection: both whole" \
	sh -c "grep -q 'X-Trailer: t' '$T/r-two' && grep -q '^hello\$' '$T/r-two'"
check "... over one upstream connection" \
	"$PY" -c "import json,sys; L=[json.loads(l) for l in open(sys.argv[1])]; c=[r['conn'] for r in L if r['path'] in ('/r/chunked','/r/cl')]; assert len(c)>=2 and c[-1]==c[-2], L" "$T/up.jsonl"

# 1 MiB through curl: the body path over many reads
curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://127.0.0.1:$PP" \
	-o "$T/big.out" -w '%{http_code} %{size_download}' https://raw.test/r/big >"$T/big.w" 2>"$T/big.err"
check "1 MiB body: 200 and every byte" test "$(cat "$T/big.w")" = "200 1048576"

# ---- 2. refused: a 502 and nothing of the upstream's bytes ----
BAD="obsfold barelf nul badname spacecolon ctlvalue http2 http09 status4 twocl samecl clte gzipchunked twote te10 gzipclose chunkedgzip manylines bighead switch badchunk badclval empty partial"
for n in $BAD; do raw "$n"; done
for n in $BAD; do
	case $n in
	empty|partial) code=upstream_closed ;;
	*) code=bad_upstream_response ;;
	esac
	if after "$T/r-$n" | head -n 1 | grep -q '^HTTP/1.1 502 ' && ! grep -q hello "$T/r-$n" &&
	    ! grep -q 'raw bytes' "$T/r-$n" &&
	    grep "\"path\":\"/r/$n\"" "$T/audit.jsonl" | grep -q "\"status\":502.*\"reason\":\"$code\""; then
		ok "$n: 502, nothing of the upstream's reply relayed"
	else
		fail "$n: 502, nothing of the upstream's reply relayed" "$(after "$T/r-$n" | head -c 300)"
	fi
done
check "the 502 names why (X-Proxy-Deny-Reason): two lengths" \
	sh -c "grep -i 'X-Proxy-Deny-Reason: bad response from upstream' '$T/r-twocl'"
check "... more header lines than limits.headers" grep -q "more than 100 header lines" "$T/r-manylines"
check "... an unasked switch of protocols" grep -q "switched protocols unasked" "$T/r-switch"
check "... HTTP/2.0 in an HTTP/1 reply" grep -q "HTTP version 2.0 is not served" "$T/r-http2"

# ---- 3. the head went out, then the body broke: the connection is cut ----
raw latechunk; raw short
check "a bad chunk after the head was relayed: the connection is cut, the rest never sent" \
	sh -c "grep -q '^hello' '$T/r-latechunk' && ! grep -q world '$T/r-latechunk' && tail -n 1 '$T/r-latechunk' | grep -qx eof"
check "a body the upstream's close cut short: the client's connection closes too" \
	sh -c "grep -q 'only this' '$T/r-short' && tail -n 1 '$T/r-short' | grep -qx eof"
curl -sS --max-time 10 --cacert "$T/export/ca.crt" -x "http://127.0.0.1:$PP" \
	https://raw.test/r/short >/dev/null 2>"$T/short.err"; rc=$?
check "... which curl reports as a partial transfer (exit 18), not a whole reply" test "$rc" = 18

# ---- 4. the plain-HTTP path reads replies the same way ----
for n in cl chunked twocl clte gzipchunked obsfold manylines; do plain "$n"; done
check "plain: a Content-Length reply relayed" \
	test "$(after "$T/p-cl" | head -c 200)" = "$(printf 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello')"
check "plain: a chunked reply relayed" grep -q 'X-Trailer: t' "$T/p-chunked"
for n in twocl clte gzipchunked obsfold manylines; do
	check "plain: $n refused with a 502" sh -c "sed -n '/^----\$/,\$p' '$T/p-$n' | sed -n 2p | grep -q '^HTTP/1.1 502 ' && ! grep -q hello '$T/p-$n'"
done

# ---- 5. the app gateway reads an app's replies with the same code: same verdicts ----
# (gateway/conn.c resp_head, on common/h1head.c; the gateway rewrites the head
# it relays, the proxy relays it verbatim, but where one refuses, so does the other)
. "$TOP/tests/lib/gateway.sh"
GW_PORT=$(free_port)
gw_route "$HOST" "$PLAIN" "$TOK" >"$T/routes"
gw_start_orch
gw_start_gw </dev/null || fail "gateway start" "$(tail -3 "$T/gw.log")"
DIFF="cl chunked close http10 interim nocontent notmod obstext obsfold barelf nul badname spacecolon ctlvalue http2 http09 status4 twocl samecl clte gzipchunked twote te10 gzipclose chunkedgzip switch badchunk badclval"
for n in $DIFF; do
	plain "$n"
	p=$(sed -n '/^----$/,$p' "$T/p-$n" | sed -n 2p | awk '{print $2}')
	g=$(gw_curl -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOK" \
		"http://$HOST:$GW_PORT/r/$n" 2>/dev/null)
	pv=pass; [ "$p" = 502 ] && pv=refused
	# 000: the gateway sent its rewritten head, then cut the connection at the
	# bad body bytes (it writes the head before reading the body; the proxy
	# checks the body bytes that came with the head first, so it can still 502)
	gv=pass; case $g in 502|000) gv=refused ;; esac
	if [ "$pv" = "$gv" ]; then
		ok "$n: the proxy and the gateway agree ($pv: $p, $g)"
	else
		fail "$n: the proxy and the gateway agree" "proxy $p, gateway $g"
	fi
done

# ---- 6. the proxy: alive, counted, not flooding its log ----
check "the proxy survived every case" kill -0 "$PX_PID"
check "... and the gateway" test "$(gw_status "http://$HOST:$GW_PORT/r/cl" -H "Authorization: Bearer $TOK")" = 200
# 200 bad replies at once (curl --parallel): the refusal log is bounded
# (20 lines a second, conn.c), the rest counted
n0=$(grep -c 'bad response from upstream' "$T/proxy.log")
i=0; : >"$T/many.cfg"
while [ $i -lt 200 ]; do echo 'url = "https://raw.test/r/twocl"' >>"$T/many.cfg"; echo 'output = "/dev/null"' >>"$T/many.cfg"; i=$((i + 1)); done
t0=$(date +%s)
curl -sS --max-time 60 --parallel --parallel-max 20 --cacert "$T/export/ca.crt" \
	-x "http://127.0.0.1:$PP" -w '%{http_code}\n' -K "$T/many.cfg" >"$T/many.codes" 2>/dev/null
el=$(($(date +%s) - t0 + 1))
n=$(($(grep -c 'bad response from upstream' "$T/proxy.log") - n0))
check "200 bad replies at once: each a 502" test "$(grep -c '^502$' "$T/many.codes")" = 200
check "... the log bounded: $n lines in ${el}s (at most 20 a second, windows straddled)" test "$n" -le $((20 * (el + 1))) -a "$n" -lt 200
m=$("$PY" "$FX/padmin.py" "$T/admin.sock" '{"op":"metrics"}' 2>/dev/null | grep -o 'egress_proxy_refused_total{reason=\\"upstream_response\\"} [0-9]*' | awk '{print $2}')
check "egress_proxy_refused_total{reason=\"upstream_response\"} counts them (${m:-none})" \
	test "${m:-0}" -ge 228
