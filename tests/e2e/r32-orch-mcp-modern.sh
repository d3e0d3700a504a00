#!/usr/bin/env bash
# r32-orch-mcp-modern.sh: MCP 2026-07-28 beside the 2025 versions on the
# same /mcp endpoint (issue 32, part 1). Raw HTTP probes for every MUST of
# that version (headers against the body, _meta members, versions,
# removed methods, resultType, caching fields, server identity, listen
# streams), a 2025 initialize followed by 2026-07-28 requests on one
# connection, then the official TypeScript client 2.x pinned to
# 2026-07-28, in its dual-era mode and in its legacy mode.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ ! -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/client" ]; then
	bash "$TOP/scripts/deps-npm.sh" >/dev/null 2>&1
fi
orch_config "tools:" "  progress_interval: 1s" "apps:" "  domain: apps.localhost" \
    "  control_socket: $T/gw.sock"
check "orch starts" orch_start

python3 - "$ORCH_URL" "$ORCH_KEY" <<'PY'
import base64, http.client, json, socket, sys, time, urllib.parse
url, key = sys.argv[1], sys.argv[2]
u = urllib.parse.urlparse(url)
V = '2026-07-28'
META = {'io.modelcontextprotocol/protocolVersion': V,
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/clientInfo': {'name': 'raw', 'version': '1'}}
failed = 0
def ok(name, cond, why=''):
    global failed
    if cond:
        print('ok ' + name)
    else:
        failed += 1
        print('not ok %s -- %s' % (name, str(why)[:600]))

def post(body, hdrs=None, conn=None, raw=None):
    c = conn or http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    h = {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json',
         'Accept': 'application/json, text/event-stream'}
    h.update(hdrs or {})
    h = {k: v for k, v in h.items() if v is not None}
    c.request('POST', '/mcp', body=raw if raw is not None else json.dumps(body), headers=h)
    r = c.getresponse()
    data = r.read()
    if conn is None:
        c.close()
    txt = data.decode('utf-8', 'replace')
    if r.getheader('Content-Type', '').startswith('text/event-stream'):
        msgs = [json.loads(l[6:]) for l in txt.splitlines() if l.startswith('data: ')]
        d = msgs[-1] if msgs else None
    else:
        d = json.loads(txt) if txt.strip() else None
    return r.status, d, r

def modern(method, params=None, meta=None, hdrs=None, sid='raw-m', name=None, idv=1):
    p = dict(params or {})
    p['_meta'] = dict(META) if meta is None else meta
    h = {'MCP-Protocol-Version': V, 'Mcp-Method': method, 'X-Session-Id': sid}
    if name is not None:
        h['Mcp-Name'] = name
    h.update(hdrs or {})
    return post({'jsonrpc': '2.0', 'id': idv, 'method': method, 'params': p}, h)

def code(d):
    return d['error']['code'] if d and 'error' in d else None

SI = 'io.modelcontextprotocol/serverInfo'
# server/discover
st, d, r = modern('server/discover')
res = d.get('result', {}) if d else {}
ok('discover 200, resultType complete', st == 200 and res.get('resultType') == 'complete', d)
ok('discover lists 2026-07-28 first and the 2025 versions',
   res.get('supportedVersions') == [V, '2025-11-25', '2025-06-18', '2025-03-26'], d)
ok('discover: capabilities tools, instructions, ttlMs, cacheScope',
   'tools' in res.get('capabilities', {}) and res.get('instructions') and
   isinstance(res.get('ttlMs'), int) and res.get('cacheScope') in ('public', 'private'), d)
ok('discover: serverInfo in _meta', res.get('_meta', {}).get(SI, {}).get('name') == 'sandbox-orchestrator', d)
ok('no Mcp-Session-Id minted', r.getheader('Mcp-Session-Id') is None, r.getheaders())
st, d, _ = modern('server/discover', sid=None, hdrs={'X-Session-Id': None})
ok('discover without X-Session-Id works', st == 200 and d['result']['resultType'] == 'complete', (st, d))

# tools/list
st, d, _ = modern('tools/list')
res = d['result']
names = [t['name'] for t in res['tools']]
ok('tools/list: resultType, ttlMs >= 0, cacheScope, serverInfo',
   res.get('resultType') == 'complete' and res.get('ttlMs', -1) >= 0 and
   res.get('cacheScope') == 'public' and SI in res.get('_meta', {}), res.keys())
st, d2, _ = modern('tools/list')
ok('tools/list is deterministic', [t['name'] for t in d2['result']['tools']] == names, names)
cs = [t['description'] for t in res['tools'] if t['name'] == 'create_sandbox'][0]
ok('create_sandbox says how long a sandbox lives and what happens when it expires',
   'lifetime' in cs and 'idle' in cs and 'stopped' in cs and 'deleted' in cs, cs)

# tools/call
st, d, _ = modern('tools/call', {'name': 'shell', 'arguments': {'command': 'echo raw-$((6*7))'}}, name='shell')
res = d.get('result', {}) if d else {}
ok('tools/call: result, resultType complete, serverInfo',
   st == 200 and 'raw-42' in json.dumps(res) and res.get('resultType') == 'complete' and
   SI in res.get('_meta', {}), d)
st, d, _ = modern('tools/call', {'name': 'shell', 'arguments': {'command': 'echo b64'}},
                  name='=?base64?' + base64.b64encode(b'shell').decode() + '?=')
ok('Mcp-Name in the base64 form is decoded and matches', st == 200 and 'b64' in json.dumps(d), d)
st, d, _ = modern('tools/call', {'name': 'shell', 'arguments': {'command': 'true'}}, sid=None,
                  hdrs={'X-Session-Id': None}, name='shell')
ok('tools/call without X-Session-Id: 400 -32602 naming the header',
   st == 400 and code(d) == -32602 and 'X-Session-Id' in d['error']['message'], (st, d))

# header checks: 400 -32020
cases = [
    ('MCP-Protocol-Version missing', 'tools/list', {}, {'MCP-Protocol-Version': None}, None),
    ('MCP-Protocol-Version differs from _meta', 'tools/list', {}, {'MCP-Protocol-Version': '2025-11-25'}, None),
    ('Mcp-Method missing', 'tools/list', {}, {'Mcp-Method': None}, None),
    ('Mcp-Method differs', 'tools/list', {}, {'Mcp-Method': 'tools/call'}, None),
    ('Mcp-Method case differs (values are case-sensitive)', 'tools/list', {}, {'Mcp-Method': 'Tools/List'}, None),
    ('Mcp-Name missing on tools/call', 'tools/call', {'name': 'shell', 'arguments': {'command': 'true'}}, {}, None),
    ('Mcp-Name differs', 'tools/call', {'name': 'shell', 'arguments': {'command': 'true'}}, {}, 'sandbox_status'),
    ('Mcp-Name bad base64', 'tools/call', {'name': 'shell', 'arguments': {'command': 'true'}}, {}, '=?base64?!!!?='),
    ('Mcp-Name base64 of another name', 'tools/call', {'name': 'shell', 'arguments': {'command': 'true'}}, {},
     '=?base64?' + base64.b64encode(b'shell ').decode() + '?='),
]
for label, m, params, h, nm in cases:
    st, d, _ = modern(m, params, hdrs=h, name=nm)
    ok('header check: %s -> 400 -32020' % label, st == 400 and code(d) == -32020 and d.get('id') == 1, (st, d))
# what ran: nothing (a mismatched call must not reach the sandbox)
st, d, _ = modern('tools/call', {'name': 'shell', 'arguments': {'command': 'echo ran >> /tmp/mismatch'}}, name='shell_async')
st, d, _ = modern('tools/call', {'name': 'shell', 'arguments': {'command': 'cat /tmp/mismatch 2>/dev/null | wc -l'}}, name='shell')
ok('a call refused for its headers ran nothing', '0' in json.dumps(d['result']['content']), d)

# _meta checks: 400 -32602
def meta_without(k):
    m = dict(META); m.pop(k); return m
mcases = [
    ('no _meta at all, 2026 header', None),
    ('_meta without clientCapabilities', meta_without('io.modelcontextprotocol/clientCapabilities')),
    ('clientCapabilities not an object', dict(META, **{'io.modelcontextprotocol/clientCapabilities': []})),
    ('protocolVersion not a string', dict(META, **{'io.modelcontextprotocol/protocolVersion': 20260728})),
    ('clientInfo not an object', dict(META, **{'io.modelcontextprotocol/clientInfo': 'me'})),
    ('logLevel unknown', dict(META, **{'io.modelcontextprotocol/logLevel': 'loud'})),
]
for label, meta in mcases:
    if meta is None:
        st, d, _ = post({'jsonrpc': '2.0', 'id': 1, 'method': 'tools/list', 'params': {}},
                        {'MCP-Protocol-Version': V, 'Mcp-Method': 'tools/list', 'X-Session-Id': 'raw-m'})
    else:
        st, d, _ = modern('tools/list', meta=meta,
                          hdrs={'MCP-Protocol-Version': meta.get('io.modelcontextprotocol/protocolVersion')
                                if isinstance(meta.get('io.modelcontextprotocol/protocolVersion'), str) else V})
    ok('_meta check: %s -> 400 -32602' % label, st == 400 and code(d) == -32602, (st, d))

# unsupported versions: 400 -32022 with the versions served
st, d, _ = modern('tools/list', meta=dict(META, **{'io.modelcontextprotocol/protocolVersion': '1900-01-01'}),
                  hdrs={'MCP-Protocol-Version': '1900-01-01'})
ok('unknown version in _meta: 400 -32022, supported and requested',
   st == 400 and code(d) == -32022 and d['error']['data']['supported'][0] == V and
   d['error']['data']['requested'] == '1900-01-01' and d['id'] == 1, (st, d))
st, d, _ = post({'jsonrpc': '2.0', 'id': 5, 'method': 'ping'}, {'MCP-Protocol-Version': '2031-01-01', 'X-Session-Id': 'raw-m'})
ok('unknown version header on a 2025-shaped request: 400 -32022 too',
   st == 400 and code(d) == -32022 and d['error']['data']['requested'] == '2031-01-01', (st, d))

# removed and unknown methods: 404 -32601
for m in ('initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/list', 'prompts/list', 'x/y'):
    st, d, _ = modern(m)
    ok('%s in 2026-07-28: 404 -32601' % m, st == 404 and code(d) == -32601, (st, d))
# batches and notifications
st, d, _ = post([{'jsonrpc': '2.0', 'id': 1, 'method': 'tools/list', 'params': {'_meta': META}}],
                {'MCP-Protocol-Version': V, 'Mcp-Method': 'tools/list', 'X-Session-Id': 'raw-m'})
ok('a batch in 2026-07-28: 400 -32600', st == 400 and code(d) == -32600, (st, d))
st, d, _ = post({'jsonrpc': '2.0', 'method': 'notifications/cancelled', 'params': {'_meta': META, 'requestId': 1}},
                {'MCP-Protocol-Version': V, 'Mcp-Method': 'notifications/cancelled', 'X-Session-Id': 'raw-m'})
ok('a notification: 202 without a body', st == 202 and d is None, (st, d))
# GET and DELETE
for meth in ('GET', 'DELETE'):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request(meth, '/mcp', headers={'Authorization': 'Bearer ' + key, 'MCP-Protocol-Version': V,
                                     'X-Session-Id': 'raw-m', 'Accept': 'text/event-stream'})
    r = c.getresponse(); r.read(); c.close()
    ok('%s /mcp: 405' % meth, r.status == 405, r.status)
# Mcp-Session-Id and Last-Event-ID sent by an old client are ignored
st, d, r = modern('tools/list', hdrs={'Mcp-Session-Id': 'abc', 'Last-Event-ID': '7'})
ok('Mcp-Session-Id and Last-Event-ID ignored', st == 200 and r.getheader('Mcp-Session-Id') is None, (st, d))

# a 2025 initialize then 2026-07-28 requests on one connection: each by its own rules
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
st, d, _ = post({'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': {'protocolVersion': '2025-11-25',
                'capabilities': {}, 'clientInfo': {'name': 'c', 'version': '1'}}}, {'X-Session-Id': 'raw-m'}, conn=c)
ok('legacy initialize answers 2025-11-25', st == 200 and d['result']['protocolVersion'] == '2025-11-25', d)
st, d, _ = post({'jsonrpc': '2.0', 'id': 1, 'method': 'tools/list'}, {'MCP-Protocol-Version': '2025-11-25', 'X-Session-Id': 'raw-m'}, conn=c)
ok('legacy tools/list: no resultType, no ttlMs', st == 200 and 'resultType' not in d['result'] and 'ttlMs' not in d['result'], d)
st, d, _ = post({'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list', 'params': {'_meta': META}},
                {'MCP-Protocol-Version': V, 'Mcp-Method': 'tools/list', 'X-Session-Id': 'raw-m'}, conn=c)
ok('then a modern tools/list on the same connection: modern result', st == 200 and d['result']['resultType'] == 'complete', d)
st, d, _ = post({'jsonrpc': '2.0', 'id': 3, 'method': 'ping'}, {'MCP-Protocol-Version': '2025-11-25', 'X-Session-Id': 'raw-m'}, conn=c)
ok('and a legacy ping after it still works', st == 200 and d['result'] == {}, d)
c.close()

# subscriptions/listen: acknowledged (nothing granted), held open with keep-alives
s = socket.create_connection((u.hostname, u.port), timeout=30)
body = json.dumps({'jsonrpc': '2.0', 'id': 'L1', 'method': 'subscriptions/listen',
                   'params': {'_meta': META, 'notifications': {'toolsListChanged': True}}})
s.sendall(('POST /mcp HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n'
           'Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: %s\r\nMcp-Method: subscriptions/listen\r\n'
           'Content-Length: %d\r\n\r\n%s' % (u.hostname, u.port, key, V, len(body), body)).encode())
buf = b''
t0 = time.time()
while b'acknowledged' not in buf or not buf.rstrip().endswith(b'}') and time.time() - t0 < 10:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
head = buf.split(b'\r\n\r\n', 1)[0].decode()
ok('listen: 200 text/event-stream', ' 200 ' in head.splitlines()[0] and 'text/event-stream' in head, head)
ack = None
for l in buf.decode('utf-8', 'replace').splitlines():
    if l.startswith('data: ') and 'acknowledged' in l:
        ack = json.loads(l[6:])
ok('listen: acknowledged first, with the subscription id, granting nothing',
   ack and ack['params']['_meta']['io.modelcontextprotocol/subscriptionId'] == 'L1' and
   ack['params']['notifications'] == {}, buf[-400:])
s.settimeout(20)
more = b''
t0 = time.time()
while b':\n\n' not in more and time.time() - t0 < 20:
    try:
        chunk = s.recv(4096)
    except socket.timeout:
        break
    if not chunk:
        break
    more += chunk
ok('listen: keep-alive comments while quiet (stream still open)', b':\n\n' in more, more[:200])
s.close()
st, d, _ = modern('subscriptions/listen', {'notifications': {}}, hdrs={'Accept': 'application/json'})
ok('listen from a client that takes only JSON: 406', st == 406, (st, d))
print('raw probes: %d failed' % failed)
sys.exit(1 if failed else 0)
PY

(cd "$TOP/tests/mcp" && timeout 300 node modern-test.mjs "$ORCH_URL/mcp" "$ORCH_KEY")

# The W3C trace context of a call is in its log line.
tp=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
curl -s -o /dev/null -H "Authorization: Bearer $ORCH_KEY" -H 'Content-Type: application/json' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: shell' \
    -H 'X-Session-Id: raw-m' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"true"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"'$tp'"}}}' \
    "$ORCH_URL/mcp"
check "a call's traceparent is in its log line" grep -q "session=raw-m tool=shell .*traceparent=$tp" "$ORCH_LOG"

# A listen stream is ended with its graceful result when the orchestrator drains.
python3 - "$ORCH_URL" "$ORCH_KEY" > "$T/listen.out" 2>&1 <<'PY' &
import json, socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); key = sys.argv[2]
V = '2026-07-28'
META = {'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {}}
s = socket.create_connection((u.hostname, u.port), timeout=60)
body = json.dumps({'jsonrpc': '2.0', 'id': 9, 'method': 'subscriptions/listen', 'params': {'_meta': META}})
s.sendall(('POST /mcp HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n'
           'Accept: text/event-stream\r\nMCP-Protocol-Version: %s\r\nMcp-Method: subscriptions/listen\r\n'
           'Content-Length: %d\r\n\r\n%s' % (u.hostname, u.port, key, V, len(body), body)).encode())
buf = b''
while True:
    c = s.recv(65536)
    if not c:
        break
    buf += c
    if b'acknowledged' in buf and not buf.startswith(b'READY'):
        print('READY', flush=True)
        buf = b'READY' + buf
for l in buf.decode('utf-8', 'replace').splitlines():
    if l.startswith('data: ') and '"result"' in l:
        print('RESULT ' + l[6:])
PY
lp=$!
for _ in $(seq 50); do grep -q READY "$T/listen.out" && break; sleep 0.1; done
t0=$(date +%s%N)
kill -TERM "$ORCH_PID"
wait "$lp"
t1=$(date +%s%N)
check "drain ends a listen stream with its graceful result" grep -q 'RESULT .*"id":9.*"resultType":"complete"' "$T/listen.out"
check "and does not wait for the drain deadline (under 5 s)" test $(( (t1 - t0) / 1000000 )) -lt 5000
for _ in $(seq 100); do kill -0 "$ORCH_PID" 2>/dev/null || break; sleep 0.1; done
check "the orchestrator exited after the drain" sh -c "! kill -0 $ORCH_PID 2>/dev/null"
