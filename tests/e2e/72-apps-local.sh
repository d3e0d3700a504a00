#!/usr/bin/env bash
# 72-apps-local.sh: expose_port on the local runtime, end to end. A web
# server started in a real sandbox is published with the MCP tools; the
# orchestrator's control channel (played first by tests/mcp/gwprobe.py, then
# the real app-gateway with curl) routes it, hands out connections made
# inside the sandbox's network namespace only for the right token, and drops
# it on unexpose, clear_session and re-provisioning. REST for the same.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

PROBE="python3 $TOP/tests/mcp/gwprobe.py"
orch_alive_ok() { curl -sf "$ORCH_URL/healthz" >/dev/null; }
CTL=$T/gw.sock
DOMAIN=apps.localhost	# curl and browsers resolve *.localhost to loopback
orch_config "apps:" "  domain: $DOMAIN" "  port: 8081" "  control_socket: $CTL" \
    "  max_per_sandbox: 3" "  reserved_ports: [\"9999\"]"
check "orch starts with apps on" orch_start
check "control socket is there, mode 0660" [ "$(stat -c %a "$CTL")" = 660 ]

# tool_sc SID NAME ARGS: a tool call's structuredContent (or the error text)
tool_sc() { mcp_struct "$@"; }

check "tools/list has the app tools" bash -c "$(declare -f mcp_post); ORCH_KEY=$ORCH_KEY ORCH_URL=$ORCH_URL; \
    mcp_post -H 'X-Session-Id: a1' -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}' |
    jq -e '[.result.tools[].name] | index(\"expose_port\") and index(\"list_apps\") and index(\"unexpose_port\")'"

# The app: busybox httpd serving a page from /workspace.
out=$(mcp_tool a1 shell '{"command":"mkdir -p /workspace/www && echo hello-from-app-a1 > /workspace/www/index.html && (busybox httpd -p 127.0.0.1:8000 -h /workspace/www &) && sleep 0.3 && echo started"}')
check "app started in the sandbox" contains <(echo "$out") started
sb=$(rest GET /v1/sessions/a1 | jq -r .sandbox_id)

r=$(tool_sc a1 expose_port '{"port":8000,"name":"web"}')
echo "expose: $r" | sed 's/"token":"[^"]*"/"token":"…"/'
tok=$(echo "$r" | jq -r .token)
host=web-$sb.$DOMAIN
check "expose_port answers name, port, url, token" \
    [ "$(echo "$r" | jq -r '[.name,.port,.url] | join(" ")')" = "web 8000 http://$host:8081/" ]
check "token is 43 base64url characters (256 bits)" bash -c "[[ '$tok' =~ ^[A-Za-z0-9_-]{43}\$ ]]"
check "url carries no secret" bash -c "! echo '$r' | jq -r .url | grep -qF -- '$tok'"
check "the record keeps only the token's hash" bash -c "! grep -rqF -- '$tok' $ORCH_SBX_DIR/$sb/record.json && \
    grep -q \"web:8000:\$(printf %s '$tok' | sha256sum | cut -c1-64)\" $ORCH_SBX_DIR/$sb/record.json"
check "the token is not in the orchestrator's log" bash -c "! grep -qF -- '$tok' $ORCH_LOG"

routes=$($PROBE "$CTL" routes)
check "the gateway gets the route" [ "$(echo "$routes" | jq -r --arg h "$host" '.[] | select(.host == $h) | [.port, .sandbox, .session, .public] | join(" ")')" = "8000 $sb a1 false" ]
check "the route has the token's hash, not the token" bash -c "echo '$routes' | grep -q \"\$(printf %s '$tok' | sha256sum | cut -c1-64)\" && ! echo '$routes' | grep -qF -- '$tok'"

out=$($PROBE "$CTL" open "$host" "$tok" /index.html)
check "open with the token: a connection to the app in the sandbox" contains <(echo "$out") hello-from-app-a1
out=$($PROBE "$CTL" open "$host" "WRONG$tok")
check "open with a wrong token: 401" [ "$(echo "$out" | jq -r .status)" = 401 ]
out=$($PROBE "$CTL" open "$host" -)
check "open without a token: 401" [ "$(echo "$out" | jq -r .status)" = 401 ]
out=$($PROBE "$CTL" open "nope-$sb.$DOMAIN" "$tok")
check "open of an unknown host: 404" [ "$(echo "$out" | jq -r .status)" = 404 ]
out=$($PROBE "$CTL" open "WEB-$sb.$DOMAIN" "$tok" /index.html)
check "hosts match case-insensitively" contains <(echo "$out") hello-from-app-a1

# Nothing listening: the tool says so, open answers 502.
r=$(tool_sc a1 expose_port '{"port":8001}')
check "default name p<port>" [ "$(echo "$r" | jq -r .name)" = p8001 ]
out=$(mcp_tool a1 expose_port '{"port":8001}')
check "the model is told nothing listens yet" contains <(echo "$out") "Nothing listens on port 8001"
tok2=$(tool_sc a1 expose_port '{"port":8001}' | jq -r .token)
out=$($PROBE "$CTL" open "p8001-$sb.$DOMAIN" "$tok2")
check "open of a port nothing listens on: 502" [ "$(echo "$out" | jq -r .status)" = 502 ]
check "the 502 says which port" contains <(echo "$out") "Nothing listens on port 8001"
out=$($PROBE "$CTL" open "web-$sb.$DOMAIN" "$tok2")
check "one app's token does not open another" [ "$(echo "$out" | jq -r .status)" = 401 ]

# Bad input.
for a in '{"port":0}' '{"port":65536}' '{"port":"80"}' '{"port":8000,"name":"Web"}' \
    '{"port":8000,"name":"-web"}' '{"port":8000,"name":"a.b"}' '{"port":8000,"extra":1}' \
    "{\"port\":8000,\"name\":\"$(printf 'a%.0s' $(seq 1 41))\"}"; do
	out=$(mcp_tool a1 expose_port "$a")
	check "expose_port $a refused" contains <(echo "$out") "ERROR:"
done
for p in 3128 7070 9999; do
	out=$(mcp_tool a1 expose_port "{\"port\":$p}")
	check "reserved port $p refused" contains <(echo "$out") "is reserved"
done
tool_sc a1 expose_port '{"port":8002}' >/dev/null
out=$(mcp_tool a1 expose_port '{"port":8003}')
check "at most apps.max_per_sandbox apps" contains <(echo "$out") "already publishes 3 apps"
check "expose with an existing name replaces it (no new slot)" bash -c "$(declare -f mcp_call mcp_post); \
    ORCH_KEY=$ORCH_KEY ORCH_URL=$ORCH_URL; mcp_call a1 '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"expose_port\",\"arguments\":{\"port\":8003,\"name\":\"p8002\"}}}' | jq -e '.result.isError != true'"

l=$(tool_sc a1 list_apps '{}')
check "list_apps: three apps, no tokens" [ "$(echo "$l" | jq -r '[.apps[].name] | sort | join(",")')" = "p8001,p8002,web" ]
check "list_apps shows no token" bash -c "! echo '$l' | grep -q token"

# Re-expose gives a new token; the old one stops working.
tok3=$(tool_sc a1 expose_port '{"port":8000,"name":"web"}' | jq -r .token)
check "re-expose gives a new token" [ "$tok3" != "$tok" ]
out=$($PROBE "$CTL" open "$host" "$tok")
check "the old token no longer opens it" [ "$(echo "$out" | jq -r .status)" = 401 ]
out=$($PROBE "$CTL" open "$host" "$tok3" /index.html)
check "the new token opens it" contains <(echo "$out") hello-from-app-a1

# Another session cannot see or use a1's apps.
mcp_tool b1 shell '{"command":"true"}' >/dev/null
check "another session lists no apps" [ "$(tool_sc b1 list_apps '{}' | jq -r '.apps | length')" = 0 ]
out=$(mcp_tool b1 unexpose_port '{"name":"web"}')
check "another session cannot unexpose a1's app" contains <(echo "$out") "no app named"

# A gateway holding the channel sees unroute before unexpose_port returns.
$PROBE "$CTL" hold 6 "$T/hold.log" &
hp=$!
sleep 1
out=$(mcp_tool a1 unexpose_port '{"name":"p8001"}')
check "unexpose_port answers" contains <(echo "$out") "no longer published"
check "the held gateway got the unroute before the tool returned" grep -q "\"unroute\".*p8001-$sb" "$T/hold.log"
check "and a ping to acknowledge" grep -q '"op": "ping"' "$T/hold.log"
out=$($PROBE "$CTL" open "p8001-$sb.$DOMAIN" "$tok2")
check "unexposed app: 404" [ "$(echo "$out" | jq -r .status)" = 404 ]
out=$(mcp_tool a1 unexpose_port '{"name":"p8001"}')
check "unexpose of an unknown name is an error" contains <(echo "$out") "ERROR: no app named"
wait "$hp"

# REST for trusted clients.
r=$(rest POST /v1/sessions/a1/apps -H 'Content-Type: application/json' -d '{"port":8000,"name":"rest"}')
check "REST expose: 201 body with token" [ "$(echo "$r" | jq -r '.name + " " + (.token | length | tostring)')" = "rest 43" ]
check "REST list" [ "$(rest GET /v1/sessions/a1/apps | jq -r '[.apps[].name] | sort | join(",")')" = "p8002,rest,web" ]
check "REST get one" [ "$(rest GET /v1/sessions/a1/apps/rest | jq -r .port)" = 8000 ]
check "REST get unknown: 404" [ "$(rest GET /v1/sessions/a1/apps/zzz -o /dev/null -w '%{http_code}')" = 404 ]
check "REST bad name: 404" [ "$(rest GET /v1/sessions/a1/apps/a.b -o /dev/null -w '%{http_code}')" = 404 ]
check "REST expose bad body: 400" [ "$(rest POST /v1/sessions/a1/apps -H 'Content-Type: application/json' -d '{"port":1,"x":2}' -o /dev/null -w '%{http_code}')" = 400 ]
check "REST expose not JSON: 400" [ "$(rest POST /v1/sessions/a1/apps -H 'Content-Type: application/json' -d '[1]' -o /dev/null -w '%{http_code}')" = 400 ]
check "REST expose on an unknown session: 404" [ "$(rest POST /v1/sessions/nobody/apps -H 'Content-Type: application/json' -d '{"port":8000}' -o /dev/null -w '%{http_code}')" = 404 ]
check "REST PUT: 405" [ "$(rest PUT /v1/sessions/a1/apps -o /dev/null -w '%{http_code}')" = 405 ]
check "REST delete" [ "$(rest DELETE /v1/sessions/a1/apps/rest | jq -r .unexposed)" = rest ]
check "REST delete again: 404" [ "$(rest DELETE /v1/sessions/a1/apps/rest -o /dev/null -w '%{http_code}')" = 404 ]

# ---- the real gateway, driven with the MCP SDK client and curl ----
GW=$BIN/gateway/app-gateway
GWP=$(free_port)
cat > "$T/gw.yaml" <<EOF
listen: 127.0.0.1:$GWP
domain: $DOMAIN
control:
  socket: $CTL
EOF
"$GW" -f "$T/gw.yaml" >>"$T/gw.log" 2>&1 &
gwpid=$!
track_pid "$gwpid"
SDK() { (cd "$TOP/tests/mcp" && timeout 120 node apps-sdk.mjs "$ORCH_URL/mcp" "$ORCH_KEY" "$@"); }
r=$(SDK e1 shell_async '{"command":"mkdir -p /tmp/www && echo e1-page > /tmp/www/index.html && exec busybox httpd -f -p 0.0.0.0:8080 -h /tmp/www"}')
check "SDK: the app started with shell_async" [ -n "$(echo "$r" | jq -r '.job_id // empty')" ]
r=$(SDK e1 expose_port '{"port":8080,"name":"site"}')
esb=$(rest GET /v1/sessions/e1 | jq -r .sandbox_id)
etok=$(echo "$r" | jq -r .token)
eurl=$(echo "$r" | jq -r .url)
check "SDK: expose_port's structuredContent passed the client's outputSchema check" \
    [ "$eurl" = "http://site-$esb.$DOMAIN:8081/" ]
U=http://site-$esb.$DOMAIN:$GWP
check "the gateway connects and serves the app" wait_until 10 bash -c \
    "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $etok' $U/)\" = 200 ]"
code=$(curl -s -o "$T/b" -w '%{http_code}' "$U/")
check "curl without a token: 401" [ "$code" = 401 ]
check "the 401 page says how to authenticate" grep -q "token" "$T/b"
curl -s -D "$T/h" -o /dev/null "$U/index.html?token=$etok&x=1"
check "?token=: 302" grep -q "^HTTP/1.1 302" "$T/h"
check "the redirect drops the token and keeps the rest" grep -qiE "^location: (http://[^/]+)?/index.html\?x=1.?$" "$T/h"
check "the cookie is HttpOnly, SameSite=Lax, for this host only" \
    grep -qiE "^set-cookie: sbx-app=$etok; *Path=/; *HttpOnly; *SameSite=Lax" "$T/h"
check "Referrer-Policy: no-referrer on the redirect" grep -qi "^referrer-policy: no-referrer" "$T/h"
check "the cookie opens the app" [ "$(curl -s -b "sbx-app=$etok" "$U/index.html")" = e1-page ]
check "a browser-style follow of the redirect lands on the page" \
    [ "$(curl -s -L -c "$T/jar" -b "$T/jar" "$U/index.html?token=$etok")" = e1-page ]
check "Bearer opens the app" [ "$(curl -s -H "Authorization: Bearer $etok" "$U/index.html")" = e1-page ]
check "a wrong Bearer: 401" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer x$etok" "$U/")" = 401 ]
check "another session's token: 401" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok3" "$U/")" = 401 ]
check "this token on another session's app: 401" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $etok" "http://web-$sb.$DOMAIN:$GWP/")" = 401 ]
check "a1's app with its own token, through the gateway" \
    [ "$(curl -s -H "Authorization: Bearer $tok3" "http://web-$sb.$DOMAIN:$GWP/index.html")" = hello-from-app-a1 ]
check "an unknown app: 404" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $etok" "http://zz-$esb.$DOMAIN:$GWP/")" = 404 ]
r=$(SDK e1 shell '{"command":"busybox wget -q -T 3 -O- http://127.0.0.1:'"$GWP"'/ 2>&1; echo rc=$?; ls '"$CTL"' 2>&1"}')
check "the sandbox cannot reach the gateway (its own network)" bash -c "echo '$r' | jq -r .output | grep -q 'rc=[1-9]'"
check "nor the control socket (its own filesystem)" bash -c "echo '$r' | jq -r .output | grep -qi 'no such file'"
r=$(SDK e1 unexpose_port '{"name":"site"}')
check "SDK: unexpose_port" [ "$(echo "$r" | jq -r .unexposed)" = true ]
check "unexposed: 404 at once" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $etok" "$U/")" = 404 ]
r=$(SDK e1 expose_port '{"port":8080,"name":"site"}')
etok2=$(echo "$r" | jq -r .token)
check "re-exposed: the new token opens it" [ "$(curl -s -H "Authorization: Bearer $etok2" "$U/index.html")" = e1-page ]
check "re-exposed: the old token is refused" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $etok" "$U/")" = 401 ]
r=$(SDK e1 list_apps '{}')
check "SDK: list_apps" [ "$(echo "$r" | jq -r '[.apps[].name] | join(",")')" = site ]
check "the gateway never logged a token" bash -c "! grep -qF -- '$etok' $T/gw.log && ! grep -qF -- '$etok2' $T/gw.log"
kill "$gwpid" 2>/dev/null; wait "$gwpid" 2>/dev/null

# A bad gateway: wrong lines, oversized lines, no hello.
out=$($PROBE "$CTL" raw 'not json' '{"op":"open"}' '{"op":"zzz"}' '{"op":"activity","hosts":[1,"x"]}')
check "junk on the channel: the orchestrator keeps serving" orch_alive_ok
check "the channel stays up after junk lines" bash -c "$PROBE $CTL routes | jq -e 'length >= 1' >/dev/null"
python3 - "$CTL" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b'{"op":"hello","version":1}\n' + b"x" * (70 * 1024))
s.settimeout(5)
try:
    while s.recv(65536): pass
except Exception: pass
EOF
check "an oversized line closes that channel, logged" contains "$ORCH_LOG" "over 65536 bytes: channel closed"
check "orchestrator still answers" orch_alive_ok

# Survives an orchestrator restart: the record has the apps.
orch_kill9
check "orch restarts" orch_start
routes=$($PROBE "$CTL" routes)
check "after a restart the apps are announced again" [ "$(echo "$routes" | jq -r --arg h "$host" '.[] | select(.host == $h) | .port')" = 8000 ]
out=$($PROBE "$CTL" open "$host" "$tok3" /index.html)
check "and the token still opens it" contains <(echo "$out") hello-from-app-a1

# Opens run concurrently on the orchestrator's work queue (a slow one, a
# sandbox waking, never delays another): 12 at once on one channel, each
# answered once with its own connection to the app, a wrong token among them.
args=()
for i in $(seq 1 12); do args+=("$host:$tok3"); done
args+=("$host:WRONG$tok3")
$PROBE "$CTL" opens "${args[@]}" >"$T/opens.out"
ids_once() { jq -se '[.[].id] | sort == [range(1; 14)]' "$T/opens.out" >/dev/null; }
check "12 concurrent opens: each answered once" ids_once
check "12 concurrent opens: each a connection to the app (descriptors paired with their replies)" \
    [ "$(jq -s '[.[] | select(.id <= 12 and .ok and (.got | test("^HTTP/1.[01] 200")))] | length' "$T/opens.out")" = 12 ]
check "the wrong token among them: 401" [ "$(jq -s '.[] | select(.id == 13) | .status' "$T/opens.out")" = 401 ]

# Stopped: the route stays, and a request starts the sandbox again (its
# workspace kept). The server process did not survive the stop: 502 saying
# nothing listens, not a 503 at once.
rest POST /v1/sessions/a1/stop >/dev/null
check "the route stays while stopped" [ "$($PROBE "$CTL" routes | jq -r --arg h "$host" '[.[] | select(.host == $h)] | length')" = 1 ]
out=$($PROBE "$CTL" open "$host" "$tok3")
check "a stopped sandbox's app: the request started it" [ "$(rest GET /v1/sessions/a1 | jq -r .state)" = running ]
check "... and its server is gone: 502 saying nothing listens" eval \
	'[ "$(echo "$out" | jq -r .status)" = 502 ] && echo "$out" | grep -q "Nothing listens"'
check "the wake logged as a resume" contains "$ORCH_LOG" "session=a1 sandbox=$sb resumed"

# The app ends with its sandbox.
mcp_tool a1 clear_session '{}' >/dev/null
check "clear_session: the route is gone" [ "$($PROBE "$CTL" routes | jq -r --arg s "$sb" '[.[] | select(.sandbox == $s)] | length')" = 0 ]
check "clear_session: no apps listed" [ "$(tool_sc a1 list_apps '{}' | jq -r '.apps | length')" = 0 ]

# Re-provisioning: a new sandbox has none of the old one's apps.
mcp_tool c1 shell '{"command":"true"}' >/dev/null
tool_sc c1 expose_port '{"port":8000}' >/dev/null
check "c1 has an app" [ "$(tool_sc c1 list_apps '{}' | jq -r '.apps | length')" = 1 ]
mcp_tool c1 create_sandbox '{"writable_root":true}' >/dev/null
check "after create_sandbox the new sandbox publishes nothing" [ "$(tool_sc c1 list_apps '{}' | jq -r '.apps | length')" = 0 ]
check "and the gateways lost its route" [ "$($PROBE "$CTL" routes | jq -r '[.[] | select(.session == "c1")] | length')" = 0 ]

orch_stop
check "control socket removed at exit" [ ! -e "$CTL" ]

# Traffic to an app counts as activity for the idle reaper (apps.activity).
for act in true false; do
	orch_config "apps:" "  domain: $DOMAIN" "  control_socket: $CTL" "  activity: $act" \
	    "reap:" "  interval: 300ms" "  idle: 2s"
	orch_start || { fail "orch starts (activity $act)"; continue; }
	mcp_tool d-$act shell '{"command":"true"}' >/dev/null
	dsb=$(rest GET /v1/sessions/d-$act | jq -r .sandbox_id)
	tool_sc d-$act expose_port '{"port":8000,"name":"a"}' >/dev/null
	$PROBE "$CTL" activity "a-$dsb.$DOMAIN" 4
	st=$(rest GET /v1/sessions/d-$act | jq -r .state)
	if [ $act = true ]; then
		check "app traffic kept the sandbox from the idle reaper" [ "$st" = running ]
		wait_until 10 bash -c "[ \"\$(curl -s -H 'Authorization: Bearer $ORCH_KEY' $ORCH_URL/v1/sessions/d-$act | jq -r .state)\" = frozen ]"
		check "without traffic it is frozen as idle" [ "$(rest GET /v1/sessions/d-$act | jq -r .state)" = frozen ]
	else
		check "apps.activity false: app traffic does not count" [ "$st" = frozen ]
	fi
	orch_stop
done

# A client connection open through the gateway is activity even when no byte
# moves (a request the app takes long to answer, an idle WebSocket): the
# gateway lists its host in every activity message, so the sandbox is not
# reaped while it is open (docs/gateway.md, Activity).
orch_config "apps:" "  domain: $DOMAIN" "  control_socket: $CTL" "  activity: true" \
    "reap:" "  interval: 300ms" "  idle: 2s"
if orch_start; then
	cmd=$(cat <<'SH'
mkdir -p /tmp/w/cgi-bin && echo h1-page > /tmp/w/index.html &&
cat > /tmp/w/cgi-bin/slow <<'CGI' &&
#!/bin/sh
sleep 8
printf 'Content-Type: text/plain\r\n\r\nslow-done\n'
CGI
chmod +x /tmp/w/cgi-bin/slow && (busybox httpd -p 127.0.0.1:8000 -h /tmp/w &) && sleep 0.3
SH
)
	mcp_tool h1 shell "$(jq -nc --arg c "$cmd" '{command: $c}')" >/dev/null
	hsb=$(rest GET /v1/sessions/h1 | jq -r .sandbox_id)
	htok=$(tool_sc h1 expose_port '{"port":8000,"name":"h"}' | jq -r .token)
	GWP2=$(free_port)
	printf 'listen: 127.0.0.1:%s\ndomain: %s\ncontrol:\n  socket: %s\nactivity_interval: 500ms\ntimeouts:\n  upstream_idle: 1s\n' \
	    "$GWP2" "$DOMAIN" "$CTL" >"$T/gw2.yaml"
	"$BIN/gateway/app-gateway" -f "$T/gw2.yaml" >>"$T/gw2.log" 2>&1 &
	gw2=$!
	track_pid "$gw2"
	HU=http://h-$hsb.$DOMAIN:$GWP2
	check "activity: the app served through the gateway" wait_until 10 bash -c \
	    "[ \"\$(curl -s -H 'Authorization: Bearer $htok' $HU/index.html)\" = h1-page ]"
	curl -s --max-time 30 -H "Authorization: Bearer $htok" "$HU/cgi-bin/slow" >"$T/slow.out" &
	slowp=$!
	sleep 5	# the reaper's idle is 2 s: without the open connection it would be reaped by now
	check "activity: an open client connection with no traffic keeps the sandbox running" \
	    [ "$(rest GET /v1/sessions/h1 | jq -r .state)" = running ]
	wait "$slowp"
	check "activity: the held request completed" grep -q slow-done "$T/slow.out"
	check "activity: once no connection is open, the sandbox is reaped as idle" wait_until 15 bash -c \
	    "[ \"\$(curl -s -H 'Authorization: Bearer $ORCH_KEY' $ORCH_URL/v1/sessions/h1 | jq -r .state)\" != running ]"
	# Frozen, then stopped: a request through the gateway wakes it.
	check "idle with no connection: frozen" [ "$(rest GET /v1/sessions/h1 | jq -r .state)" = frozen ]
	out=$(curl -s --max-time 20 -w ' %{http_code}' -H "Authorization: Bearer $htok" "$HU/index.html")
	check "a request to the frozen app through the gateway: 200 (${out##* })" \
	    eval '[ "${out##* }" = 200 ] && echo "$out" | grep -q h1-page'
	check "... which thawed its sandbox" contains "$ORCH_LOG" "session=h1 sandbox=$hsb thawed"
	rest POST /v1/sessions/h1/stop >/dev/null
	out=$(curl -s --max-time 40 -w ' %{http_code}' -H "Authorization: Bearer $htok" "$HU/index.html")
	check "a request to a stopped app is held while its sandbox starts (it runs after)" \
	    [ "$(rest GET /v1/sessions/h1 | jq -r .state)" = running ]
	check "... and answers 502 saying the server is gone, not 503 at once ($(echo "$out" | tail -c 4))" \
	    eval '[ "${out##* }" = 502 ] && echo "$out" | grep -qi "nothing listens"'
	kill "$gw2" 2>/dev/null; wait "$gw2" 2>/dev/null
	orch_stop
else
	fail "orch starts (activity with an open connection)"
fi

# Remote gateways (Kubernetes) connect over TCP with a token.
CPORT=$(free_port)
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/ctltok"
orch_config "apps:" "  domain: $DOMAIN" "  control_listen: 127.0.0.1:$CPORT" \
    "  control_token_file: $T/ctltok"
check "orch starts with a TCP control listener" orch_start
mcp_tool t1 shell '{"command":"true"}' >/dev/null
tool_sc t1 expose_port '{"port":8000,"name":"t"}' >/dev/null
check "TCP with the token: routes" [ "$($PROBE "tcp:127.0.0.1:$CPORT:$T/ctltok" routes | jq -r '.[] | select(.session == "t1") | .app')" = t ]
echo wrong-token-wrong-token > "$T/badtok"
check "TCP with a wrong token: closed, nothing sent" [ "$($PROBE "tcp:127.0.0.1:$CPORT:$T/badtok" routes)" = "[]" ]
check "the refusal is logged" contains "$ORCH_LOG" "no valid hello"
tsb=$(rest GET /v1/sessions/t1 | jq -r .sandbox_id)
out=$($PROBE "tcp:127.0.0.1:$CPORT:$T/ctltok" open "t-$tsb.$DOMAIN" "$(tool_sc t1 expose_port '{"port":8000,"name":"t"}' | jq -r .token)")
check "a local sandbox's socket is never sent over TCP" [ "$(echo "$out" | jq -r .status)" = 502 ]
orch_stop
echo short > "$T/shorttok"
orch_config "apps:" "  domain: $DOMAIN" "  control_listen: 127.0.0.1:$CPORT" \
    "  control_token_file: $T/shorttok"
check "a token under 16 bytes is refused at start" bash -c "! timeout 10 $ORCH_BIN -f $T/orch.yaml >$T/short.out 2>&1"
