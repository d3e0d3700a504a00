# 24-proxy-audit: the audit log is complete and true (issue 13). Every CONNECT
# decision and every refusal (deny, address policy, resolve failure, upstream
# certificate failure, 400, 407, 429, 431) writes exactly one line with the
# connection id and a reason; "injected" says what the recording upstream
# actually received; a client's Connection header cannot strip the injected
# credential; credentials fail closed (an empty injection, a failing GitHub App
# token endpoint that is not hammered); allow_cidrs ports and a registered
# listener's address as the proxy's own.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"

fx_pki && fx_tokens && fx_api_start || { fail "fixtures start"; exit 1; }
fx_recorder expired --cert "$PKI/github.com-expired.pem" --key "$PKI/github.com-expired.key"
EXP_PORT=$REC_PORT
fx_recorder tun; TUN_PORT=$REC_PORT
fx_recorder other; OTHER_PORT=$REC_PORT
SBL_PORT=$(free_port)

# The addon: intercept and inject for api.github.com (an empty credential on
# /empty), intercept github.com (its upstream has an expired certificate),
# deny denied.test, tunnel the rest.
cat >"$T/audit.lua" <<'EOF'
local M = { name = "audit-e2e" }
function M.on_connect(ctx)
	if ctx.plain then return nil end
	if ctx.host == "api.github.com" or ctx.host == "github.com" then return "intercept" end
	if ctx.host == "denied.test" then return "deny", "denied.test is not allowed", 403 end
	return "tunnel"
end
function M.on_request(req, ctx)
	if req.path == "/empty" then
		req:inject("Authorization", "Bearer ", "empty-rule")
	else
		req:inject("Authorization", "token " .. assert(proxy.secret(proxy.config.github_token)), "audit-rule")
	end
	return nil
end
return M
EOF
PX_ADDONS="[$T/audit.lua]" PX_NORESOLVE=1 \
PX_ALLOW="[127.0.0.1/32:$API_PORT, 127.0.0.1/32:$EXP_PORT, 127.0.0.1/32:$TUN_PORT, \"[::1]/128:$TUN_PORT\", 127.0.0.1/32:$SBL_PORT]" \
PX_RESOLVE="  \"api.github.com:443\": \"127.0.0.1:$API_PORT\"
  \"github.com:443\": \"127.0.0.1:$EXP_PORT\"
  \"tun.test:80\": \"127.0.0.1:$TUN_PORT\"
  \"other.test:80\": \"127.0.0.1:$OTHER_PORT\"
  \"denied.test:443\": \"127.0.0.1:$TUN_PORT\"" \
PX_EXTRA="limits:
  header_bytes: 4KiB
  tunnels_per_sandbox: 2
timeouts:
  connect: 3s" px_config && px_start && px_sandbox || { fail "proxy start"; exit 1; }
ok "proxy start"
A=$PX_DIR/audit.jsonl
R=$T/r; mkdir -p "$R"
: >"$A"

alines() { [ -f "$A" ] && wc -l <"$A" || echo 0; }
# case_n N NAME CMD...: runs CMD (output in $R/NAME) and then checks that exactly N new
# audit lines were written; the last is left in $R/NAME.line.
before=0
case_n() {
	local n=$1 name=$2; shift 2
	before=$(alines)
	"$@" >"$R/$name" 2>&1
	wait_for 5 test "$(alines)" -ge $((before + n))
	sleep 0.3	# a line too many, if any, is written by the same or the next loop pass
	check "$name: exactly $n audit line(s)" test "$(alines)" -eq $((before + n))
	tail -n 1 "$A" >"$R/$name.line"
}
case_run() { case_n 1 "$@"; }
# aline NAME 'python condition over a (the line)': the line says so.
aline() {
	"$PY" - "$R/$1.line" "$2" <<'PY'
import json, re, sys
a = json.loads(open(sys.argv[1]).read())
ok = bool(eval(sys.argv[2])) and re.fullmatch(r"[0-9a-f]+", a.get("conn", "")) is not None
if not ok:
    print("line: %s" % json.dumps(a), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
# the connection id of a line is the one the proxy log names
conn_logged() { local id; id=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["conn"])' "$R/$1.line"); grep -q "conn=$id " "$PX_DIR/proxy.log"; }

# ---- CONNECT decisions: intercept (with its request), tunnel ----
# the connect line (200), then the tunnel's own line when it closes
case_n 2 tunnel pc --connect tun.test:80 --send 'GET /tun HTTP/1.1\r\nHost: tun.test\r\nConnection: close\r\n\r\n' --responses 1
check "tunnel works" st_in "$R/tunnel" 200
tail -n 2 "$A" | head -n 1 >"$R/tunnel.line"
check "tunnel: connect line, decision tunnel, 200" aline tunnel \
	'a["type"]=="connect" and a["sandbox"]=="sb-e2e" and a["host"]=="tun.test:80" and a["status"]==200 and a["decision"]=="tunnel" and a["reason"] is None and a["injected"] is False'
wait_for 5 grep -q '"type":"tunnel"' "$A"
check "tunnel close line has the same conn id" "$PY" -c '
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
c = [x for x in l if x["type"] == "connect" and x["host"] == "tun.test:80"][0]["conn"]
t = [x for x in l if x["type"] == "tunnel"]
sys.exit(0 if len(t) == 1 and t[0]["conn"] == c else 1)' "$A"

# ---- the trace context of the orchestrator's call in flight (admin "trace") ----
TP=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
px_admin '{"op":"trace","id":"sb-e2e","traceparent":"00-xyz"}' >"$R/tr1" 2>&1
check "trace: a malformed traceparent is refused" grep -q 'must be W3C' "$R/tr1"
px_admin '{"op":"trace","id":"sb-e2e","traceparent":"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}' >"$R/tr2" 2>&1
check "trace: an all-zero trace id is refused" grep -q 'must be W3C' "$R/tr2"
px_admin "{\"op\":\"trace\",\"id\":\"sb-none\",\"traceparent\":\"$TP\"}" >"$R/tr3" 2>&1
check "trace: an unknown sandbox is refused" grep -q 'no such sandbox' "$R/tr3"
px_admin "{\"op\":\"trace\",\"id\":\"sb-e2e\",\"traceparent\":\"$TP\"}" >"$R/tr4" 2>&1
check "trace: set" grep -q '"ok":true' "$R/tr4"
case_n 2 traced pci api.github.com 'GET /user?m=traced HTTP/1.1\r\nHost: api.github.com\r\nConnection: close\r\n\r\n' --responses 1
check "trace: the request's line carries it" aline traced "a.get('traceparent')=='$TP' and a['path']=='/user?m=traced'"
px_admin '{"op":"trace","id":"sb-e2e"}' >/dev/null
case_n 2 untraced pci api.github.com 'GET /user?m=untraced HTTP/1.1\r\nHost: api.github.com\r\nConnection: close\r\n\r\n' --responses 1
check "trace: cleared, the next line has none" aline untraced "'traceparent' not in a and a['path']=='/user?m=untraced'"

before=$(alines)
pci api.github.com 'GET /user?m=ok HTTP/1.1\r\nHost: api.github.com\r\nConnection: close\r\n\r\n' --responses 1 >"$R/icpt" 2>&1
check "intercepted request: 200" st_in "$R/icpt" 200
wait_for 5 test "$(alines)" -ge $((before + 2))
sleep 0.3
check "intercept: a connect line and a request line, nothing else" test "$(alines)" -eq $((before + 2))
check "intercept: both lines carry the same conn id, injected true upstream" "$PY" -c '
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])][-2:]
c, r = l
ok = (c["type"] == "connect" and c["decision"] == "intercept" and c["status"] == 200
      and r["type"] == "intercept" and r["path"] == "/user?m=ok" and r["status"] == 200
      and r["injected"] is True and r["rule"] == "audit-rule" and c["conn"] == r["conn"])
sys.exit(0 if ok else 1)' "$A"
check "intercept: upstream got the credential" test "$(fx_api_q "r['path']=='/user?m=ok' and h.get('authorization')==['token $GH_TOKEN_REAL']")" = 1

# ---- Connection: close, Authorization cannot strip the injected credential ----
case_n 2 hop pci api.github.com 'GET /user?m=hop HTTP/1.1\r\nHost: api.github.com\r\nConnection: close, Authorization\r\nAuthorization: token client-own\r\n\r\n' --responses 1
check "hop: 200" st_in "$R/hop" 200
check "hop: the upstream received the injected credential" \
	test "$(fx_api_q "r['path']=='/user?m=hop' and h.get('authorization')==['token $GH_TOKEN_REAL']")" = 1
check "hop: the client's own credential never upstream" bash -c "! grep -q client-own $T/api.log"
check "hop: audit says injected, and it was" aline hop \
	'a["type"]=="intercept" and a["path"]=="/user?m=hop" and a["injected"] is True and a["rule"]=="audit-rule"'

# ---- an injection without a credential fails closed, audited injected:false ----
case_n 2 empty pci api.github.com 'GET /empty HTTP/1.1\r\nHost: api.github.com\r\nConnection: close\r\n\r\n' --responses 1
check "empty credential: refused" st_in "$R/empty" 502
check "empty credential: nothing forwarded" test "$(fx_api_q "r['path']=='/empty'")" = 0
check "empty credential: one line, injected false" aline empty \
	'a["type"]=="intercept" and a["path"]=="/empty" and a["status"]==502 and a["injected"] is False and a["rule"] is None and a["reason"] in ("empty_credential", "addon_error")'

# ---- refusals of a CONNECT ----
case_run deny pc --connect denied.test:443
check "deny: 403" st_in "$R/deny" 403
check "deny: one connect line, reason deny" aline deny \
	'a["type"]=="connect" and a["host"]=="denied.test:443" and a["status"]==403 and a["decision"]=="deny" and a["reason"]=="deny" and "denied.test is not allowed" in a["detail"]'
check "deny: conn id is the log's" conn_logged deny
check "deny: nothing reached the tunnel upstream" bash -c "! grep -q denied $T/rec-tun.bytes"

case_run policy pc --connect "127.0.0.1:$OTHER_PORT"
check "address policy (port not allowed): 403" st_in "$R/policy" 403
check "address policy: one connect line" aline policy \
	'a["type"]=="connect" and a["status"]==403 and a["decision"]=="tunnel" and a["reason"]=="address_policy" and ("loopback" in a["detail"] or "proxy-address" in a["detail"])'
check "address policy: the other port was never dialled" rec_noconn other
check "address policy: conn id is the log's" conn_logged policy
case_run policy-name pc --connect other.test:80
check "address policy via a name: 403" st_in "$R/policy-name" 403
check "address policy via a name: one line" aline policy-name 'a["reason"]=="address_policy" and a["host"]=="other.test:80"'
check "allowed port on the same address still works" st_in "$R/tunnel" 200

# a registered sandbox listener's address is the proxy's own, even when allowed
"$PY" "$FX/padmin.py" "$PX_ADMIN" '{"op":"register","id":"sb-l","attrs":{}}' --listen "$SBL_PORT" >"$R/reg-l" 2>&1
check "register a sandbox with a listener" grep -q '"ok": *true' "$R/reg-l"
case_run own pc --connect "127.0.0.1:$SBL_PORT"
check "CONNECT to a sandbox listener: 403" st_in "$R/own" 403
check "CONNECT to a sandbox listener: reason address_policy (proxy-listener)" aline own \
	'a["reason"]=="address_policy" and "proxy-listener" in a["detail"]'
px_admin '{"op":"deregister","id":"sb-l"}' >/dev/null

case_run resolve pc --connect nosuch.invalid:443 --wait 8
check "resolve failure: 502" st_in "$R/resolve" 502 504
check "resolve failure: one connect line" aline resolve \
	'a["type"]=="connect" and a["host"]=="nosuch.invalid:443" and a["status"] in (502, 504) and a["reason"] in ("resolve_failed", "connect_timeout")'

case_run cert pc --connect github.com:443
check "upstream certificate failure: 502" st_in "$R/cert" 502
check "upstream certificate failure: one connect line" aline cert \
	'a["type"]=="connect" and a["host"]=="github.com:443" and a["status"]==502 and a["decision"]=="intercept" and a["reason"]=="upstream_certificate" and "verif" in a["detail"]'
check "upstream certificate failure: no request byte sent" rec_empty expired

PC_ID_SAVE=$PC_ID; PC_ID=
case_run noauth pc --connect tun.test:80
PC_ID=$PC_ID_SAVE
check "407 without a credential" st_in "$R/noauth" 407
check "407: one connect line, sandbox null, reason auth" aline noauth \
	'a["type"]=="connect" and a["sandbox"] is None and a["status"]==407 and a["reason"]=="auth"'
"$PY" "$FX/pclient.py" --proxy "127.0.0.1:$PX_PORT" --proxy-auth "sb-e2e:wrong" --connect tun.test:80 >"$R/badauth" 2>&1
check "407 with a bad credential" st_in "$R/badauth" 407

# 429: two tunnels held open, the third refused
pc --connect tun.test:80 --wait 6 >"$R/hold1" 2>&1 &
H1=$!
pc --connect tun.test:80 --wait 6 >"$R/hold2" 2>&1 &
H2=$!
wait_for 5 test "$(grep -c '"host":"tun.test:80","type":"connect"' "$A")" -ge 3
case_run limit pc --connect tun.test:80
check "429 beyond tunnels_per_sandbox" st_in "$R/limit" 429
check "429: one connect line, reason tunnel_limit" aline limit \
	'a["type"]=="connect" and a["status"]==429 and a["reason"]=="tunnel_limit"'
kill $H1 $H2 2>/dev/null; wait $H1 $H2 2>/dev/null
# their tunnel lines come when the proxy sees them close
wait_for 5 test "$(grep -c '"host":"tun.test:80","type":"tunnel"' "$A")" -ge 3
sleep 0.3

# ---- malformed and oversized heads: 400 / 431, one line each ----
case_run bare-lf pc --raw 'GET http://tun.test/ HTTP/1.1\nHost: tun.test\n\n'
check "bare LF head: 400" st_in "$R/bare-lf" 400
check "bare LF head: one refused line" aline bare-lf \
	'a["type"]=="refused" and a["status"]==400 and a["reason"]=="malformed_head" and a["sandbox"] is None'
case_run big pc --raw "GET http://tun.test/ HTTP/1.1\r\nHost: tun.test\r\nX-Big: $(head -c 6000 /dev/zero | tr '\0' a)\r\n\r\n"
check "oversized head: 431" st_in "$R/big" 431
check "oversized head: one refused line" aline big \
	'a["type"]=="refused" and a["status"]==431 and a["reason"]=="head_too_large"'
# inside an intercepted tunnel: its connect line (200), then the refusal's
case_n 2 big-in pci api.github.com "GET /user HTTP/1.1\r\nHost: api.github.com\r\nX-Big: $(head -c 6000 /dev/zero | tr '\0' a)\r\n\r\n" --responses 1
check "oversized head inside the tunnel: 431" st_in "$R/big-in" 431
check "oversized head inside the tunnel: a refusal line of the sandbox" aline big-in \
	'a["type"]=="refused" and a["status"]==431 and a["reason"]=="head_too_large" and a["sandbox"]=="sb-e2e" and a["host"]=="api.github.com:443"'
case_n 2 bad-in pci api.github.com 'GET /user?m=badin HTTP/1.1\r\nHost: api.github.com\r\nX-A: a\rB: 1\r\n\r\n' --responses 1
check "malformed head inside the tunnel: 400, not forwarded" bash -c "grep -q '^HTTP/1.1 400' $R/bad-in && ! grep -q m=badin $T/api.log"
check "malformed head inside the tunnel: a 400 line" aline bad-in \
	'a["status"]==400 and a["reason"]=="malformed_head" and a["sandbox"]=="sb-e2e"'


# every line of the log has a conn id and no line holds a secret
check "every audit line has a conn id and a reason field" "$PY" -c '
import json, sys
sys.exit(0 if all("conn" in json.loads(x) and "reason" in json.loads(x) for x in open(sys.argv[1])) else 1)' "$A"
check "no secret in the audit log" bash -c "! grep -qF -- '$GH_TOKEN_REAL' '$A' && ! grep -qF -- '$SECRET' '$A'"

# ---- a flood of malformed heads: no log flood, the proxy lives ----
l0=$(wc -l <"$PX_DIR/proxy.log")
"$PY" - "$PX_PORT" <<'PY'
import socket, sys
for i in range(400):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GET / HTTP/1.1\nHost: x\n\n")
    try:
        s.recv(100)
    except OSError:
        pass
    s.close()
PY
l1=$(wc -l <"$PX_DIR/proxy.log")
check "400 malformed heads: the proxy log grew by a bounded number of lines ($((l1 - l0)) for 400 heads)" test $((l1 - l0)) -le 150
check "proxy alive after the flood" px_alive

# ---- metrics for dial failures ----
rf=$(px_metric 'egress_proxy_upstream_failures_total{stage="resolve"}')
cf=$(px_metric 'egress_proxy_upstream_failures_total{stage="connect"}')
check "metrics: the resolve failure counted (resolve $rf, connect $cf)" test $((rf + cf)) -ge 1

# ---- GitHub App tokens: a failing token endpoint is not hammered ----
kill "$PX_PID" 2>/dev/null; wait "$PX_PID" 2>/dev/null
# a second fake API (same log) whose token endpoint answers 500
fx_api_start --app-mode 500
APPCONF="  github_app_id: \"$APP_ID\"
  github_app_installation_id: \"$APP_INST\"
  github_app_private_key: $PKI/app.key"
PX_ADDONS="[$TOP/addons/github.lua]" PX_NORESOLVE=1 PX_ALLOW="[127.0.0.0/8]" \
PX_RESOLVE="  \"api.github.com:443\": \"127.0.0.1:$API_PORT\"" \
PX_ADDON_CONFIG=$APPCONF PX_EXTRA="" px_config app && px_start app && px_sandbox || fail "app proxy start"
tok_reqs() { fx_api_q "r['role']=='app-token'"; }
t0=$(tok_reqs)
for i in $(seq 1 20); do
	pci api.github.com "GET /user?m=app$i HTTP/1.1\r\nHost: api.github.com\r\nConnection: close\r\n\r\n" --responses 1 >"$R/app$i" 2>&1
done
t1=$(tok_reqs)
check "failing token endpoint: every request refused, fail closed" bash -c "for i in \$(seq 1 20); do grep -q '^HTTP/1.1 502' $R/app\$i || exit 1; done"
check "failing token endpoint: nothing forwarded" test "$(fx_api_q "r['path'].startswith('/user?m=app')")" = 0
check "failing token endpoint: at most 4 token requests for 20 client requests (saw $((t1 - t0)))" test $((t1 - t0)) -ge 1 -a $((t1 - t0)) -le 4
check "metrics: token requests counted as failed" test "$(px_metric 'egress_proxy_token_requests_total{result="failed"}')" = $((t1 - t0))
check "metrics: requests refused while backing off counted" test "$(px_metric egress_proxy_token_backoff_total)" -ge 1
check "no sanitizer report" px_san_clean
