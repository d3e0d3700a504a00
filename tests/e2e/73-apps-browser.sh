#!/usr/bin/env bash
# 73-apps-browser: a real browser (Debian's headless chromium) uses an app
# published with expose_port. tests/apps/webapp.py runs in a real sandbox
# (the default image: it has python3), started with shell_async and exposed;
# chromium opens url?token=... and the test asserts on the DOM it ends with
# (through the DevTools protocol, tests/apps/cdp.py, once the page has
# settled: --dump-dom with --virtual-time-budget does not wait for a
# WebSocket in flight):
#   - the page's absolute-path script (/static/app.js) ran: #script
#   - its WebSocket to its own host (/ws) echoed: #ws = ws-ok:ping-from-browser
#   - its fetch of /headers worked on the cookie the ?token= redirect set,
#     and the Cookie header the app saw holds no token (#appcookie)
#   - the address bar lost the token (#loc, the redirect), the cookie is
#     HttpOnly (#doccookie: none)
# and a wrong token (and none) gives the gateway's 401 page instead; then
# tests/apps/webapp-check.py's endpoint checks run through the gateway;
# last, a page of a second app ("other") cannot open a WebSocket to the
# first with the person's cookie (webapp.py /cross).
# Screenshots stay in $B/test-logs/73-apps-browser/ (TEST_LOGDIR).
# First, the browser's floor: the same page served by webapp.py straight
# on the host (and webapp-check.py's checks of the app itself, hostile
# clients included), so a failure there is chromium's or the page's, not the
# gateway's. Without build/gateway/app-gateway the system half fails.
. "$(dirname "$0")/../lib/common.sh"
ART=${TEST_LOGDIR:-$BIN/test-logs}/73-apps-browser
rm -rf "$ART" && mkdir -p "$ART"
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
[ -n "$CHROMIUM" ] || { fail "chromium" "chromium not installed (scripts/install-deps.sh: deps/apps.txt)"; exit 1; }
WEBAPP=$TOP/tests/apps/webapp.py

# browse URL NAME [screenshot [TIMEOUT]]: chromium's DOM, once the page has
# settled (tests/apps/cdp.py: the DevTools protocol, real time; a fresh
# profile each time, so nothing carries over but what the URL brings), into
# $T/NAME.html (a copy in $ART), and a screenshot into $ART/NAME.png
browse() {
	local url=$1 name=$2 png=
	[ "${3:-}" = screenshot ] && png=$ART/$name.png
	timeout -k 5 90 python3 "$TOP/tests/apps/cdp.py" --chromium "$CHROMIUM" --timeout "${4:-20}" \
	    "$url" "$T/$name.html" $png 2>"$T/$name.err"
	[ $? -le 3 ] || echo "browse $name: $(tail -n 2 "$T/$name.err")"
	touch "$T/$name.html"
	cp "$T/$name.html" "$ART/$name.html"
}
# browse_app URL NAME: browse, once more if the WebSocket had not echoed yet
# (a loaded machine)
browse_app() {
	browse "$1" "$2" screenshot
	grep -q 'id="ws">ws-ok:' "$T/$2.html" || browse "$1" "$2" screenshot
}
# webapp_check PREFIX ARGS...: tests/apps/webapp-check.py's lines, names
# prefixed; a run that fails without a "not ok" line (it crashed) fails too
webapp_check() {
	local pre=$1 out rc
	shift
	out=$(python3 "$TOP/tests/apps/webapp-check.py" "$@" 2>&1)
	rc=$?
	sed "s/^\(not \)\{0,1\}ok webapp: /&$pre/" <<<"$out"
	[ $rc -eq 0 ] || grep -q '^not ok' <<<"$out" || fail "webapp-check $pre" "exit $rc: $(tail -n 3 <<<"$out")"
}
urlenc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
el() { sed -n "s|.*id=\"$2\">\([^<]*\)<.*|\1|p" "$T/$1.html" | head -1; }
is_png() { [ "$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] && [ "$(stat -c %s "$1")" -gt 2000 ]; }

# ---- the floor: webapp.py on the host, at a *.localhost name (chromium
# resolves every *.localhost to loopback: the apps domain of `make run`
# needs no DNS) ----
HP=$(free_port)
python3 "$WEBAPP" "$HP" >"$T/host-webapp.log" 2>&1 &
track_pid $!
wait_port "$HP" 10 || { fail "host-webapp-starts" "$(cat "$T/host-webapp.log")"; exit 1; }
webapp_check "" "127.0.0.1:$HP"
browse_app "http://web-s-0123456789abcdef.apps.localhost:$HP/" direct
check "direct: the absolute-path script ran" [ "$(el direct script)" = script-ok ]
check "direct: the WebSocket to its own host echoed" [ "$(el direct ws)" = ws-ok:ping-from-browser ]
check "direct: fetch of /headers worked" [ "$(el direct fetch)" = fetch-ok ]
check "direct: the page ran at its *.localhost address" \
	[ "$(el direct loc)" = "http://web-s-0123456789abcdef.apps.localhost:$HP/" ]
check "direct: a screenshot was kept" is_png "$ART/direct.png"
# The cross-app probe (webapp.py /cross) works: with no gateway in between,
# a page of app b opens a WebSocket to app a (the gateway must refuse that
# one, below)
HP2=$(free_port)
python3 "$WEBAPP" "$HP2" >"$T/host-webapp2.log" 2>&1 &
track_pid $!
wait_port "$HP2" 10
browse "http://b-s-0123456789abcdef.apps.localhost:$HP2/cross?peer=$(urlenc "http://a-s-0123456789abcdef.apps.localhost:$HP/")" cross-direct
check "direct: the cross-app probe's frame ran its WebSocket" [ "$(el cross-direct iframe)" = ws-ok:ping-from-browser ]
check "direct: with no gateway, the cross-app WebSocket goes through" [ "$(el cross-direct cross)" = cross-ws-echo:cross-probe ]
# The checks can fail: the same page from a server with no /static/app.js
# and no /ws leaves both pending.
mkdir -p "$T/static-only"
python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import webapp; open(sys.argv[2], "wb").write(webapp.PAGE)' \
	"$TOP/tests/apps" "$T/static-only/index.html"
SP=$(free_port)
(cd "$T/static-only" && exec python3 -m http.server -b 127.0.0.1 "$SP" >/dev/null 2>&1) &
track_pid $!
wait_port "$SP" 10
browse "http://127.0.0.1:$SP/" broken "" 5
check "checker: a page whose script is missing stays script-pending" [ "$(el broken script)" = script-pending ]
check "checker: ... and its WebSocket never echoes" [ "$(el broken ws)" = ws-pending ]

# ---- the system: orchestrator + gateway + a sandbox ----
GW_BIN=${GW_BIN:-$BIN/gateway/app-gateway}
if [ ! -x "$GW_BIN" ]; then
	fail "system: browser through the gateway" "$GW_BIN is not built (make builds it)"
	exit 1
fi
. "$TOP/tests/mcp/orch-lib.sh"
. "$TOP/tests/apps/apps-lib.sh"
IMG=${SANDBOX_DEFAULT_IMAGE_DIR:-/var/lib/sandbox/images/default}
apps_orch_config
if [ "$ORCH_RT" = local ]; then
	[ -x "$IMG/usr/bin/python3" ] ||
		{ fail "default-image" "default image not built ($IMG; make test builds it)"; exit 1; }
	sbx image add debian "$IMG" >/dev/null || { fail "image-add-debian"; exit 1; }
	sed -i 's/default_image: busybox/default_image: debian/' "$T/orch.yaml"
	APP_PORT=8080
else
	APP_PORT=$(free_port)	# fake runtime: the host's network
fi
orch_start || { fail "orchestrator-starts" "$(tail -5 "$ORCH_LOG")"; exit 1; }
apps_gw_start || { fail "gateway-starts" "$(tail -5 "$T/gw.stderr" "$GW_LOG" 2>/dev/null)"; exit 1; }
SID=browser-1
mcp_tool "$SID" shell '{"command":"true"}' >/dev/null
sbx_put "$SID" "$WEBAPP" webapp.py || { fail "copy-webapp" "no sandbox for $SID"; exit 1; }
out=$(mcp_tool "$SID" shell_async "{\"command\":\"python3 webapp.py $APP_PORT\"}")
listening() { mcp_tool "$SID" shell "{\"command\":\"curl -s --noproxy '*' -o /dev/null -w %{http_code} http://127.0.0.1:$APP_PORT/ || true\"}" | grep -q 200; }
wait_until 30 listening || { fail "webapp-starts-in-sandbox" "$out"; exit 1; }
apps_expose "$SID" "$APP_PORT" web || { fail "expose_port" "no url/token"; exit 1; }
apps_wait_route 20 || { fail "gateway-routes-the-app" "$(tail -n 5 "$GW_LOG")"; exit 1; }
check "expose_port: url is http://web-<sandbox>.$APPS_DOMAIN:$GW_PORT/" \
	grep -qE "^http://web-[sw]-[0-9a-f]{16}\.${APPS_DOMAIN//./\\.}:$GW_PORT/?$" <<<"$APP_URL"
check "expose_port: url carries no token" not_contains <(echo "$APP_URL") "$APP_TOKEN"
sep='?'
case $APP_URL in *\?*) sep='&' ;; esac

browse_app "$APP_URL${sep}token=$APP_TOKEN" gateway
check "gateway: the absolute-path script ran" [ "$(el gateway script)" = script-ok ]
check "gateway: the WebSocket to its own host echoed" [ "$(el gateway ws)" = ws-ok:ping-from-browser ]
check "gateway: fetch of /headers worked (on the cookie)" [ "$(el gateway fetch)" = fetch-ok ]
loc=$(el gateway loc)
check "gateway: the redirect took the token out of the address" \
	bash -c '[[ "$1" == http://*".$2:$3/"* ]] && [[ "$1" != *token=* ]]' _ "$loc" "$APPS_DOMAIN" "$GW_PORT"
check "gateway: the page cannot read the cookie (HttpOnly)" [ "$(el gateway doccookie)" = none ]
ac=$(el gateway appcookie)
check "gateway: the app saw no token in Cookie" bash -c '[ -n "$1" ] && [[ "$1" != *"$2"* ]]' _ "$ac" "$APP_TOKEN"
check "gateway: a screenshot was kept" is_png "$ART/gateway.png"

browse "$APP_URL${sep}token=wrong-$APP_TOKEN" wrong-token screenshot
check "wrong token: the app's page is not shown" not_contains "$T/wrong-token.html" 'id="script"'
check "wrong token: the 401 page says how to authenticate" grep -qi 'token' "$T/wrong-token.html"
check "wrong token: a screenshot was kept" is_png "$ART/wrong-token.png"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$GW_ADDR/?token=wrong-$APP_TOKEN" -H "Host: $APP_HOST")
check "wrong token: HTTP 401" [ "$code" = 401 ]
browse "$APP_URL" no-token
check "no token: the app's page is not shown" not_contains "$T/no-token.html" 'id="script"'
check "no token: the 401 page says how to authenticate" grep -qi 'token' "$T/no-token.html"
# the app's own checks, through the gateway (large bodies both ways, the
# WebSocket frames, pipelining)
webapp_check "through the gateway: " --no-hostile "$GW_ADDR" "$APP_HOST" "$APP_TOKEN"
# Cross-app: a second app of the sandbox, "other", opens the person's app
# "web" in a frame (so the browser holds web's cookie, and the frame's own
# WebSocket works), then its page opens a WebSocket to web's host: the
# browser sends web's cookie (both hosts are one site under the apps
# domain), the Origin is other's, and the gateway refuses it.
WEB_URL=$APP_URL WEB_TOKEN=$APP_TOKEN WEB_HOST=$APP_HOST
APPS_COOKIE=${APPS_COOKIE:-sbx-app}	# the gateway's cookie on plain HTTP
out=$(mcp_tool "$SID" shell_async "{\"command\":\"python3 webapp.py $((APP_PORT + 1))\"}")
APP_PORT2=$((APP_PORT + 1))
listening2() { mcp_tool "$SID" shell "{\"command\":\"curl -s --noproxy '*' -o /dev/null -w %{http_code} http://127.0.0.1:$APP_PORT2/ || true\"}" | grep -q 200; }
if wait_until 30 listening2 && apps_expose "$SID" "$APP_PORT2" other && apps_wait_route 20; then
	browse "${APP_URL%/}/cross?peer=$(urlenc "$WEB_URL${sep}token=$WEB_TOKEN")&token=$APP_TOKEN" cross-gateway screenshot
	check "cross-app: web works in other's frame (the browser holds web's cookie)" \
		[ "$(el cross-gateway iframe)" = ws-ok:ping-from-browser ]
	check "cross-app: other's page cannot open a WebSocket to web" \
		[ "$(el cross-gateway cross)" = cross-ws-refused ]
	# ... refused for its Origin (403), not for a missing cookie (401): the
	# same handshake by curl, with web's cookie
	ws_code() {
		curl -s -o /dev/null -w '%{http_code}' --max-time 3 -H "Host: $WEB_HOST" \
		    -H "Cookie: $APPS_COOKIE=$WEB_TOKEN" -H "Origin: $1" -H 'Upgrade: websocket' \
		    -H 'Connection: Upgrade' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
		    -H 'Sec-WebSocket-Version: 13' "http://$GW_ADDR/ws"
	}
	check "cross-app: web's cookie with other's Origin -> 403" [ "$(ws_code "${APP_URL%/}")" = 403 ]
	check "cross-app: web's cookie with web's own Origin -> 101" [ "$(ws_code "${WEB_URL%/}")" = 101 ]
else
	fail "cross-app: a second app" "$out"
fi
echo "artifacts: $ART"
