# 70-gateway-basic: the app gateway (docs/gateway.md) between real curl /
# WebSocket clients and a real app, its routes from a fake orchestrator on the
# control socket (tests/fixtures/fakeorch.py): the three ways to authenticate,
# what the app receives, keep-alive, routing errors, unroute and a new token,
# 502/503 pages, WebSocket, 100 MiB both ways, public routes, TLS.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/gateway.sh"

check "docs: gateway.md's key table matches app-gateway --print-docs" \
	python3 "$TOP/tests/lib/docsync.py" "$GWBIN" "$TOP/docs/gateway.md"
check "-n checks a configuration" bash -c "printf 'domain: apps.localhost\ncontrol:\n  socket: /x\n' >$T/n.yaml && $GWBIN -n -f $T/n.yaml | grep -q 'configuration OK'"
check "a configuration without domain is refused" bash -c "printf 'control:\n  socket: /x\n' >$T/bad.yaml; ! $GWBIN -n -f $T/bad.yaml 2>$T/bad.err && grep -q domain $T/bad.err"

gw_setup || { fail "gateway starts"; cat "$T/gw.log"; exit 1; }
ok "gateway starts and syncs its routes"
U=http://$HOST:$GW_PORT
st_is() { local want=$1; shift; [ "$(gw_status "$@")" = "$want" ]; }
opens() { grep -c '"op": "open"' "$T/orch.log"; }

# --- 1. ?token= -> 302 + cookie, nothing forwarded
n0=$(opens)
gw_curl -D "$T/h302" -o "$T/b302" "$U/echo?a=1&token=$TOK&b=2#frag"
check "query token: 302" grep -q '^HTTP/1.1 302 Found' "$T/h302"
check "query token: Location keeps path and query, drops the token" grep -qx $'Location: /echo?a=1&b=2\r' "$T/h302"
check "query token: the exact Set-Cookie" grep -qx "Set-Cookie: sbx-app=$TOK; Path=/; HttpOnly; SameSite=Lax"$'\r' "$T/h302"
check "query token: Referrer-Policy: no-referrer" grep -qix $'Referrer-Policy: no-referrer\r' "$T/h302"
check "query token: Cache-Control: no-store" grep -qix $'Cache-Control: no-store\r' "$T/h302"
check "query token: nothing forwarded to the app" test "$(opens)" = "$n0"
gw_curl -D "$T/h302b" -o /dev/null "$U/?token=$TOK"
check "query token alone: Location /" grep -qx $'Location: /\r' "$T/h302b"
enc=$($PY -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$TOK")
check "query token: %-encoded name and value accepted" test "$(gw_status "$U/x?%74oken=$enc")" = 302
check "query token: two different token params refused" test "$(gw_status "$U/x?token=$TOK&token=$TOK2")" = 401
check "query token: wrong token 401" test "$(gw_status "$U/echo?token=nope")" = 401

# --- 2. Bearer; what the app sees
gw_curl -o "$T/e1" -H "Authorization: Bearer $TOK" -H "X-Forwarded-For: 6.6.6.6" \
	-H "X-Forwarded-Host: evil" -H "Connection: X-Secret" -H "X-Secret: hop" -H "Keep-Alive: 5" \
	-H "Forwarded: for=6.6.6.6;host=evil;proto=https" -H "X-Real-IP: 6.6.6.6" -H "X-Client-IP: 6.6.6.6" \
	-H "True-Client-IP: 6.6.6.6" -H "X-Forwarded-Port: 6666" -H "X-Forwarded-Prefix: /evil" \
	-H "X_Forwarded_For: 6.6.6.6" -H "X_Real_IP: 6.6.6.6" -H "X-Original-URL: /evil" "$U/echo?q=1"
jq_e1() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); h={k.lower():v for k,v in d["headers"]}; sys.exit(0 if eval(sys.argv[2]) else 1)' "$T/e1" "$1"; }
check "Bearer: authenticated" jq_e1 'd["target"] == "/echo?q=1"'
check "Bearer: Authorization not forwarded" jq_e1 '"authorization" not in h'
check "X-Forwarded-For replaced by the client address" jq_e1 'h["x-forwarded-for"] == "127.0.0.1" and [k for k,v in d["headers"] if k.lower()=="x-forwarded-for"] == ["X-Forwarded-For"]'
check "X-Forwarded-Proto http" jq_e1 'h["x-forwarded-proto"] == "http"'
check "X-Forwarded-Host is the Host as sent" jq_e1 'h["x-forwarded-host"] == "'"$HOST:$GW_PORT"'"'
check "no client-sent forwarding header reaches the app (Forwarded, X-Real-IP, X-Client-IP, '_' spellings, ...)" \
	jq_e1 'not any("6.6.6" in v or "evil" in v or "6666" in v for k,v in d["headers"])'
check "X-Real-IP and Forwarded are the gateway's own, once each" jq_e1 '[v for k,v in d["headers"] if k.lower()=="x-real-ip"] == ["127.0.0.1"] and [v for k,v in d["headers"] if k.lower()=="forwarded"] == ["for=\"127.0.0.1\";host=\"'"$HOST:$GW_PORT"'\";proto=http"]'
check "Host preserved" jq_e1 'h["host"] == "'"$HOST:$GW_PORT"'"'
check "hop-by-hop headers (Connection-listed, Keep-Alive) removed" jq_e1 '"x-secret" not in h and "keep-alive" not in h and "connection" not in h'
check "Bearer of another app refused" test "$(gw_status "$U/echo" -H "Authorization: Bearer $TOK2")" = 401
check "the app's own Authorization (Basic) passes with the cookie" bash -c \
	"$(declare -f gw_curl); HOST=$HOST HOST2=$HOST2 SB=$SB GW_PORT=$GW_PORT; gw_curl -H 'Cookie: sbx-app=$TOK' -H 'Authorization: Basic dTpw' '$U/echo' | grep -q 'Basic dTpw'"

# --- 3. cookie
gw_curl -o "$T/e2" -H "Cookie: a=1; sbx-app=$TOK; b=2" "$U/echo"
check "cookie: authenticated" grep -q '"target": "/echo"' "$T/e2"
check "cookie: the gateway's cookie removed, the others kept" grep -q '"Cookie", "a=1; b=2"' "$T/e2"
check "the token reaches the app nowhere" not_contains "$T/e2" "$TOK"
check "cookie: any of several with that name" test "$(gw_status "$U/echo" -H "Cookie: sbx-app=bad; sbx-app=$TOK")" = 200
gw_curl -o "$T/e3" -H "Cookie: sbx-app=$TOK" "$U/echo"
check "cookie: a Cookie header left empty is dropped" not_contains "$T/e3" '"Cookie"'
check "cookie of another app refused" test "$(gw_status "$U/echo" -H "Cookie: sbx-app=$TOK2")" = 401
gw_curl -D "$T/h401" -o "$T/b401" "$U/echo"
check "missing: 401 with WWW-Authenticate: Bearer" grep -qx $'WWW-Authenticate: Bearer\r' "$T/h401"
check "401 page says how to authenticate" grep -q 'token=' "$T/b401"
check "401 not cached" grep -qix $'Cache-Control: no-store\r' "$T/h401"
gw_curl -o "$T/e4" -H "Cookie: sbx-app=wrong; c=3" -H "Authorization: Bearer $TOK" "$U/echo"
check "a wrong gateway cookie is removed even when Bearer authenticates" grep -q '"Cookie", "c=3"' "$T/e4"

# --- Origin
check "cookie + Origin of another app: 403" test "$(gw_status "$U/echo" -H "Cookie: sbx-app=$TOK" -H "Origin: http://$HOST2:$GW_PORT")" = 403
check "cookie + Origin with another port: 403" test "$(gw_status "$U/echo" -H "Cookie: sbx-app=$TOK" -H "Origin: http://$HOST:1")" = 403
check "cookie + Origin null: 403" test "$(gw_status "$U/echo" -H "Cookie: sbx-app=$TOK" -H "Origin: null")" = 403
check "cookie + own Origin: 200" test "$(gw_status "$U/echo" -H "Cookie: sbx-app=$TOK" -H "Origin: http://$HOST:$GW_PORT")" = 200
check "Bearer + another Origin: 200 (not a browser's ambient credential)" test "$(gw_status "$U/echo" -H "Authorization: Bearer $TOK" -H "Origin: http://x.example")" = 200
check "WebSocket with the cookie from another origin: 403" bash -c \
	"$PY $TOP/tests/fixtures/wsclient.py --port $GW_PORT --host $HOST:$GW_PORT --auth 'Cookie: sbx-app=$TOK' --auth 'Origin: http://evil.example' status | grep -q ' 403 '"

# --- keep-alive, pipelining, routing
gw_curl -o "$T/k" -w '%{num_connects}\n' -H "Authorization: Bearer $TOK" "$U/echo" -o "$T/k2" "$U/echo" >"$T/knc"
check "keep-alive: the second request reuses the client connection" test "$(tail -1 "$T/knc")" = 0
check "keep-alive: and the upstream connection" test "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["conn"] == json.load(open(sys.argv[2]))["conn"])' "$T/k" "$T/k2")" = True
raw() { $PY "$TOP/tests/fixtures/rawhttp.py" "$GW_PORT" "$1"; }
A="Authorization: Bearer $TOK"
raw "GET /echo?one HTTP/1.1\r\nHost: $HOST\r\n$A\r\n\r\nGET /echo?two HTTP/1.1\r\nHost: $HOST\r\n$A\r\nConnection: close\r\n\r\n" >"$T/pipe"
check "pipelining: both answered, in order" $PY -c 'import sys; t=open(sys.argv[1]).read(); i=t.find("/echo?one"); j=t.find("/echo?two"); sys.exit(0 if 0 <= i < j else 1)' "$T/pipe"
raw "GET /echo HTTP/1.1\r\nHost: $HOST\r\n$A\r\n\r\nGET /echo HTTP/1.1\r\nHost: $HOST2\r\nAuthorization: Bearer $TOK2\r\n\r\n" >"$T/misdir"
raw "GET /echo?v10 HTTP/1.0\r\nHost: $HOST\r\n$A\r\n\r\n" >"$T/v10"
check "HTTP/1.0: answered, Connection: close, then closed" bash -c "grep -q '^HTTP/1.0 200 ' $T/v10 && grep -qix 'Connection: close'$'\r' $T/v10 && grep -q 'GET' $T/v10"
raw "GET /echo?a HTTP/1.0\r\nHost: $HOST\r\n$A\r\nConnection: keep-alive\r\n\r\nGET /echo?b HTTP/1.0\r\nHost: $HOST\r\n$A\r\n\r\n" >"$T/v10ka"
check "HTTP/1.0 keep-alive: Connection: keep-alive, the second request on the same connection" \
	bash -c "grep -qix 'Connection: keep-alive'$'\r' $T/v10ka && grep -q '/echo?b' $T/v10ka"
check "another app's Host on the same connection: 421" grep -q 'HTTP/1.1 421 ' "$T/misdir"
check "unknown host: 404" test "$(gw_status "http://nope-$SB.apps.localhost:$GW_PORT/")" = 404
gw_curl -o "$T/b404" "http://nope-$SB.apps.localhost:$GW_PORT/"
check "404 page: no app at this address" grep -qi 'no app at this address' "$T/b404"
raw "GET / HTTP/1.0\r\n\r\n" >"$T/nohost"
check "no Host: 404" grep -q '^HTTP/1.1 404 ' "$T/nohost"
check "Host in upper case with a trailing dot routes" test "$(gw_status "$U/echo" -H "Host: ${HOST^^}.:$GW_PORT" -H "$A")" = 200
gw_curl -D "$T/hsc" -o /dev/null -H "$A" "$U/setcookie"
check "the app's Set-Cookie of the gateway's cookie is dropped" not_contains "$T/hsc" "sbx-app=evil"
check "the app's other Set-Cookie passes" grep -q 'Set-Cookie: other=1' "$T/hsc"
gw_curl -o "$T/close" -H "$A" "$U/close"
check "a body delimited by the app's close arrives whole" grep -qx 'until the end' "$T/close"
# The app's head, then its close with no body byte: an empty body, the head
# flushed before the gateway closes (20 times: the close used to race it).
close_empty() {
	local i
	for i in $(seq 1 20); do
		"$@" -D "$T/hce" -o "$T/bce" -H "$A" || return 1
		grep -q '^HTTP/1.1 200 ' "$T/hce" && grep -qi '^X-Empty: 1' "$T/hce" && [ ! -s "$T/bce" ] || return 1
	done
}
check "a body delimited by the app's close with no byte: the head, an empty body" close_empty gw_curl "$U/close-empty"
check "HEAD: headers only" test "$(gw_curl -I -o /dev/null -w '%{http_code}' -H "$A" "$U/download?n=1000")" = 200

# --- WebSocket
check "WebSocket echo through the gateway (Bearer)" bash -c \
	"$PY $TOP/tests/fixtures/wsclient.py --port $GW_PORT --host $HOST:$GW_PORT --auth '$A' echo 60 | grep -q 'echoed 60'"
check "WebSocket echo with the cookie and its own Origin" bash -c \
	"$PY $TOP/tests/fixtures/wsclient.py --port $GW_PORT --host $HOST:$GW_PORT --auth 'Cookie: sbx-app=$TOK' --auth 'Origin: http://$HOST:$GW_PORT' echo 5 | grep -q 'echoed 5'"

# --- 100 MiB both ways
head -c $((100 << 20)) /dev/urandom >"$T/big"
want=$(sha256sum "$T/big" | cut -d' ' -f1)
gw_curl --max-time 120 -o "$T/up.json" -H "$A" --data-binary @"$T/big" "$U/upload"
check "100 MiB upload (Content-Length): sha256 equal" grep -q "\"sha256\": \"$want\"" "$T/up.json"
head -c $((20 << 20)) "$T/big" >"$T/big20"
want20=$(sha256sum "$T/big20" | cut -d' ' -f1)
gw_curl --max-time 120 -o "$T/up2.json" -H "$A" -H "Transfer-Encoding: chunked" --data-binary @"$T/big20" "$U/upload"
check "20 MiB upload (chunked): sha256 equal" grep -q "\"sha256\": \"$want20\"" "$T/up2.json"
rm -f "$T/big" "$T/big20"
blobsha() { $PY "$FX/appupstream.py" --blob-sha "$1"; }
wantd=$(blobsha $((100 << 20)))
check "100 MiB download (Content-Length): sha256 equal" test "$(gw_curl --max-time 120 -H "$A" "$U/download?n=$((100 << 20))" | sha256sum | cut -d' ' -f1)" = "$wantd"
check "100 MiB download (chunked): sha256 equal" test "$(gw_curl --max-time 120 -H "$A" "$U/download?n=$((100 << 20))&chunked=1" | sha256sum | cut -d' ' -f1)" = "$wantd"

# --- activity
check "activity names the host that carried traffic" wait_for 15 grep -q "\"op\": \"activity\", \"hosts\": \[[^]]*\"$HOST\"" "$T/orch.log"

# --- unroute, a new token
WSR=$T/ws-ready WSS=$T/ws-stop
$PY "$TOP/tests/fixtures/wsclient.py" --port "$GW_PORT" --host "$HOST:$GW_PORT" --auth "$A" --ready "$WSR" --stop "$WSS" hold 3 >"$T/ws-hold" 2>&1 &
wsp=$!; track_pid $wsp
wait_for 10 test -s "$WSR"
gw_cmd "unroute $HOST"
check "unroute: new requests 404" wait_for 5 st_is 404 "$U/echo" -H "$A"
touch "$WSS"; wait $wsp
check "unroute: open WebSockets closed" grep -q 'open 3 echoed 0' "$T/ws-hold"
TOK3=$($PY -c 'import secrets; print(secrets.token_urlsafe(32))')
gw_cmd "route $(gw_route "$HOST" "$UP_PORT" "$TOK")"
check "route back: 200" wait_for 5 st_is 200 "$U/echo" -H "$A"
rm -f "$WSR" "$WSS"
$PY "$TOP/tests/fixtures/wsclient.py" --port "$GW_PORT" --host "$HOST:$GW_PORT" --auth "$A" --ready "$WSR" --stop "$WSS" hold 2 >"$T/ws-hold2" 2>&1 &
wsp=$!; track_pid $wsp
wait_for 10 test -s "$WSR"
gw_cmd "route $(gw_route "$HOST" "$UP_PORT" "$TOK3")"
check "new token: it works" wait_for 5 st_is 200 "$U/echo" -H "Authorization: Bearer $TOK3"
check "new token: the old one refused" test "$(gw_status "$U/echo" -H "$A")" = 401
check "new token: the old cookie refused" test "$(gw_status "$U/echo" -H "Cookie: sbx-app=$TOK")" = 401
touch "$WSS"; wait $wsp
check "new token: connections authenticated with the old one closed" grep -q 'open 2 echoed 0' "$T/ws-hold2"
A="Authorization: Bearer $TOK3"

# --- 502, 503, addr, public
DEAD=$(free_port)
gw_cmd "route $(gw_route "dead-$SB.apps.localhost" "$DEAD" "$TOK")"
gw_cmd "route $(gw_route "stop-$SB.apps.localhost" "$UP_PORT" "$TOK" ',"mode":"stopped"')"
gw_cmd "route $(gw_route "addr-$SB.apps.localhost" "$UP_PORT" "$TOK" ',"mode":"addr"')"
gw_cmd "route $(gw_route "pub-$SB.apps.localhost" "$UP_PORT" "x" ',"public":true')"
sleep 0.3
r() { curl -sS --max-time 20 --resolve "$1-$SB.apps.localhost:$GW_PORT:127.0.0.1" "${@:2}" "http://$1-$SB.apps.localhost:$GW_PORT/echo"; }
r dead -o "$T/b502" -w '%{http_code}' -H "Authorization: Bearer $TOK" >"$T/c502"
check "app not listening: 502" grep -qx 502 "$T/c502"
check "502 page: nothing listens on port N" grep -q "Nothing listens on port $DEAD in the sandbox" "$T/b502"
r stop -o "$T/b503" -w '%{http_code}' -H "Authorization: Bearer $TOK" >"$T/c503"
check "stopped sandbox: 503 with the orchestrator's text" bash -c "grep -qx 503 $T/c503 && grep -q 'next tool call' $T/b503"
check "an address answer: the gateway connects itself" test "$(r addr -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOK")" = 200
r pub -o "$T/pub" -H "Cookie: sbx-app=zzz; k=v"
check "public route: served without a token" grep -q '"target": "/echo"' "$T/pub"
check "public route: the gateway's cookie still removed" grep -q '"Cookie", "k=v"' "$T/pub"

# --- orchestrator down
gw_cmd "down"
check "orchestrator down: 503" wait_for 5 st_is 503 "$U/echo" -H "$A"
gw_curl -o "$T/bdown" -H "$A" "$U/echo"
check "503 page: the orchestrator is unavailable" grep -q 'orchestrator is unavailable' "$T/bdown"
check "orchestrator down: the gateway logs it" grep -q 'control channel .* lost' "$T/gw.log"
gw_cmd "up"
check "orchestrator back: served again (reconnect with back-off)" wait_for 10 st_is 200 "$U/echo" -H "$A"

# --- TLS with a wildcard certificate made here
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=*.apps.localhost" \
	-addext "subjectAltName=DNS:*.apps.localhost" -keyout "$T/tls.key" -out "$T/tls.crt" 2>/dev/null
TLS_PORT=$(free_port)
printf 'listen: 127.0.0.1:%s\ndomain: apps.localhost\ncontrol:\n  socket: %s\ntls:\n  cert: %s\n  key: %s\n' \
	"$TLS_PORT" "$T/ctl.sock" "$T/tls.crt" "$T/tls.key" >"$T/gwtls.yaml"
"$GWBIN" -f "$T/gwtls.yaml" >"$T/gwtls.log" 2>&1 &
TLS_PID=$!; track_pid $TLS_PID
wait_port "$TLS_PORT" 10
wait_for 10 grep -q synced "$T/gwtls.log"
tc() { curl -sS --max-time 20 --cacert "$T/tls.crt" --resolve "$HOST:$TLS_PORT:127.0.0.1" "$@"; }
tc -D "$T/htls" -o /dev/null "https://$HOST:$TLS_PORT/echo?token=$TOK3"
check "TLS: 302 with the __Host- cookie, Secure" grep -qx "Set-Cookie: __Host-sbx-app=$TOK3; Path=/; HttpOnly; SameSite=Lax; Secure"$'\r' "$T/htls"
tc -o "$T/etls" -H "Cookie: __Host-sbx-app=$TOK3; z=1" "https://$HOST:$TLS_PORT/echo"
check "TLS: the cookie authenticates and is removed" grep -q '"Cookie", "z=1"' "$T/etls"
check "TLS: X-Forwarded-Proto https" grep -q '"X-Forwarded-Proto", "https"' "$T/etls"
check "TLS: the plain-HTTP cookie name does not authenticate" test "$(tc -o /dev/null -w '%{http_code}' -H "Cookie: sbx-app=$TOK3" "https://$HOST:$TLS_PORT/echo")" = 401
check "TLS: cookie + https Origin of this host: 200" test "$(tc -o /dev/null -w '%{http_code}' -H "Cookie: __Host-sbx-app=$TOK3" -H "Origin: https://$HOST:$TLS_PORT" "https://$HOST:$TLS_PORT/echo")" = 200
check "TLS: cookie + http Origin of this host: 403" test "$(tc -o /dev/null -w '%{http_code}' -H "Cookie: __Host-sbx-app=$TOK3" -H "Origin: http://$HOST:$TLS_PORT" "https://$HOST:$TLS_PORT/echo")" = 403
check "TLS: a body delimited by the app's close with no byte: the head, an empty body" close_empty tc "https://$HOST:$TLS_PORT/close-empty"
wantd=$(blobsha $((8 << 20)))
check "TLS: 8 MiB download intact" test "$(tc -H "$A" "https://$HOST:$TLS_PORT/download?n=$((8 << 20))" | sha256sum | cut -d' ' -f1)" = "$wantd"
check "TLS: WebSocket echo" bash -c \
	"$PY $TOP/tests/fixtures/wsclient.py --cafile $T/tls.crt --port $TLS_PORT --host $HOST:$TLS_PORT --auth '$A' echo 20 | grep -q 'echoed 20'"

# --- TLS ended before the gateway (an Ingress): scheme: https on a plain listener
ING_PORT=$(free_port)
printf 'listen: 127.0.0.1:%s\ndomain: apps.localhost\nscheme: https\ncontrol:\n  socket: %s\n' \
	"$ING_PORT" "$T/ctl.sock" >"$T/gwing.yaml"
"$GWBIN" -f "$T/gwing.yaml" >"$T/gwing.log" 2>&1 &
track_pid $!
wait_port "$ING_PORT" 10
wait_for 10 grep -q synced "$T/gwing.log"
ic() { curl -sS --max-time 20 --resolve "$HOST:$ING_PORT:127.0.0.1" "$@"; }
ic -D "$T/hing" -o /dev/null "http://$HOST:$ING_PORT/echo?token=$TOK3"
check "scheme https behind an Ingress: the __Host- cookie, Secure" grep -qx "Set-Cookie: __Host-sbx-app=$TOK3; Path=/; HttpOnly; SameSite=Lax; Secure"$'\r' "$T/hing"
ic -o "$T/eing" -H "Cookie: __Host-sbx-app=$TOK3" "http://$HOST:$ING_PORT/echo"
check "scheme https: X-Forwarded-Proto https for the app" grep -q '"X-Forwarded-Proto", "https"' "$T/eing"
check "scheme https: cookie + the browser's https Origin: 200" test "$(ic -o /dev/null -w '%{http_code}' -H "Cookie: __Host-sbx-app=$TOK3" -H "Origin: https://$HOST:$ING_PORT" "http://$HOST:$ING_PORT/echo")" = 200
check "scheme https: cookie + an http Origin: 403" test "$(ic -o /dev/null -w '%{http_code}' -H "Cookie: __Host-sbx-app=$TOK3" -H "Origin: http://$HOST:$ING_PORT" "http://$HOST:$ING_PORT/echo")" = 403
printf 'listen: 127.0.0.1:1\ndomain: d\nscheme: gopher\ncontrol:\n  socket: /x\n' >"$T/gwbad.yaml"
check "scheme other than http or https: refused" bash -c "! '$GWBIN' -n -f '$T/gwbad.yaml' 2>&1 | grep -q 'configuration OK'"

# --- control over TCP with a token (Kubernetes shape): the gateway connects to addresses itself
CTL_PORT=$(free_port); TCP_PORT=$(free_port)
echo "ctl-secret-$TOK" >"$T/ctl.token"
"$PY" "$TOP/tests/fixtures/fakeorch.py" --listen "127.0.0.1:$CTL_PORT" --token "ctl-secret-$TOK" \
	--routes "$T/routes" --log "$T/orch-tcp.log" >"$T/orch-tcp.out" 2>&1 &
track_pid $!
wait_port "$CTL_PORT" 10
printf 'listen: 127.0.0.1:%s\ndomain: apps.localhost\ncontrol:\n  connect: 127.0.0.1:%s\n  token_file: %s\nuser: nobody\n' \
	"$TCP_PORT" "$CTL_PORT" "$T/ctl.token" >"$T/gwtcp.yaml"
[ "$(id -u)" = 0 ] || sed -i "/^user:/d" "$T/gwtcp.yaml"
"$GWBIN" -f "$T/gwtcp.yaml" >"$T/gwtcp.log" 2>&1 &
TCP_PID=$!; track_pid $TCP_PID
wait_port "$TCP_PORT" 10
check "TCP control: hello carries the token, synced" wait_for 10 grep -q synced "$T/gwtcp.log"
check "TCP control: an address answer is served" test "$(curl -sS --max-time 10 --resolve "$HOST:$TCP_PORT:127.0.0.1" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOK" "http://$HOST:$TCP_PORT/echo")" = 200
if [ "$(id -u)" = 0 ]; then
	check "user: the gateway runs as nobody after binding and reading the token" \
		bash -c "awk '/^Uid:/ {exit !(\$2 == $(id -u nobody) && \$3 == $(id -u nobody))}' /proc/$TCP_PID/status"
else
	skip "user: drops to nobody" "not root"
fi
echo "wrong-token" >"$T/ctl.bad"
sed "s|$T/ctl.token|$T/ctl.bad|; s|127.0.0.1:$TCP_PORT|127.0.0.1:$(free_port)|; /^user:/d" "$T/gwtcp.yaml" >"$T/gwbad.yaml"
"$GWBIN" -f "$T/gwbad.yaml" >"$T/gwbad.log" 2>&1 &
BAD_PID=$!; track_pid $BAD_PID
sleep 1.5
check "TCP control: a wrong token is refused (never synced, retried with back-off)" \
	bash -c "! grep -q synced $T/gwbad.log && grep -q 'control channel .* lost' $T/gwbad.log && [ \$(grep -c lost $T/gwbad.log) -le 4 ]"

# --- signals
kill -HUP "$GW_PID"; sleep 0.2
check "SIGHUP: logged, still serving" bash -c "grep -q SIGHUP $T/gw.log && kill -0 $GW_PID"
t0=$(date +%s%N); kill -TERM "$GW_PID"
for _ in $(seq 1 40); do kill -0 "$GW_PID" 2>/dev/null || break; sleep 0.05; done
t1=$(date +%s%N)
check "SIGTERM: exits within 1 s" bash -c "! kill -0 $GW_PID 2>/dev/null && [ $(( (t1 - t0) / 1000000 )) -lt 1000 ]"
check "the log never holds a token" bash -c "! grep -qF -e '$TOK' -e '$TOK3' $T/gw.log $T/gwtls.log"
