#!/usr/bin/env bash
# 51-orch-mcp-raw.sh: raw MCP Streamable HTTP with curl: every malformed
# input gets a spec-conformant HTTP status and JSON-RPC error, the daemon
# stays up, and long calls never block other sessions.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

orch_config "allowed_origins: [\"http://localhost:6274\"]" "tools:" "  progress_interval: 1s" \
    "http:" "  max_body: 1MiB"
check "orch starts" orch_start
AUTH="Authorization: Bearer $ORCH_KEY"
CT='Content-Type: application/json'
ACC='Accept: application/json, text/event-stream'
PING='{"jsonrpc":"2.0","id":1,"method":"ping"}'
# Every MCP request carries X-Session-Id (the cases without it test that).
SID='X-Session-Id: raw0'

# req NAME WANT_STATUS JQ_PY [curl args...]: POST /mcp; checks the status and
# a python expression over d (parsed body, None when empty) and h (headers).
REQN=0
req() {
	local name=$1 want=$2 expr=$3; shift 3
	local st
	REQN=$((REQN + 1))
	st=$(curl -s -o "$T/body.$REQN" -D "$T/hdr.$REQN" -w '%{http_code}' --max-time 60 "$@")
	if [ "$st" != "$want" ]; then
		fail "$name" "status $st, want $want: $(head -c 300 "$T/body.$REQN")"
		return
	fi
	printf '%s\t%s\t%s\n' "$REQN" "$name" "$expr" >> "$T/checks"
}
# Evaluates every recorded body check in one python run (python starts
# slowly on a loaded machine).
req_flush() {
	[ -f "$T/checks" ] || return 0
	python3 - "$T" > "$T/flush.out" <<'PY'
import json, sys
T = sys.argv[1]
def code(x): return x['error']['code']
for line in open(T + '/checks', encoding='utf-8'):
    n, name, expr = line.rstrip('\n').split('\t', 2)
    raw = open('%s/body.%s' % (T, n), 'rb').read()
    h = {}
    for l in open('%s/hdr.%s' % (T, n), encoding='latin-1'):
        if ':' in l:
            k, v = l.split(':', 1); h[k.strip().lower()] = v.strip()
    sse = raw.decode('utf-8') if raw.startswith(b'event:') else ''
    try:
        d = json.loads(raw.decode('utf-8')) if raw.strip() and not sse else None
        good = eval(expr)
    except Exception as e:
        good = False
        expr += ' (%r)' % e
    print(('ok %s' % name) if good else ('not ok %s -- check failed: %s -- %s' % (name, expr, raw[:300])))
PY
	cat "$T/flush.out"
	grep -q '^not ok' "$T/flush.out" && _nfail=$((_nfail + 1))
	rm -f "$T/checks"
}
U=$ORCH_URL/mcp

req "ping ok (id 1)" 200 "d=={'jsonrpc':'2.0','id':1,'result':{}}" -H "$SID" -H "$AUTH" -H "$CT" -H "$ACC" -d "$PING" "$U"
req "id 0 echoed" 200 "d['id']==0 and d['result']=={}" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' "$U"
req "unicode string id echoed" 200 "d['id']=='\u00e9\U0001F600'" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":"\u00e9\ud83d\ude00","method":"ping"}' "$U"
req "no key 401" 401 "code(d)==-32000 and h['www-authenticate'].startswith('Bearer')" -H "$SID" -H "$CT" -d "$PING" "$U"
req "wrong key 401" 401 "True" -H "$SID" -H "Authorization: Bearer ${ORCH_KEY}x" -H "$CT" -d "$PING" "$U"
req "key prefix 401" 401 "True" -H "$SID" -H "Authorization: Bearer ${ORCH_KEY:0:10}" -H "$CT" -d "$PING" "$U"
req "empty bearer 401" 401 "True" -H "$SID" -H "Authorization: Bearer " -H "$CT" -d "$PING" "$U"
req "basic scheme 401" 401 "True" -H "$SID" -H "Authorization: Basic $ORCH_KEY" -H "$CT" -d "$PING" "$U"
req "bearer scheme case-insensitive" 200 "d['result']=={}" -H "$SID" -H "Authorization: bearer $ORCH_KEY" -H "$CT" -d "$PING" "$U"
req "key in query string refused" 401 "True" -H "$SID" -H "$CT" -d "$PING" "$U?key=$ORCH_KEY"
req "bad origin 403" 403 "code(d)==-32000" -H "$SID" -H "$AUTH" -H "$CT" -H 'Origin: http://evil.example' -d "$PING" "$U"
req "allowed origin ok" 200 "d['result']=={}" -H "$SID" -H "$AUTH" -H "$CT" -H 'Origin: http://localhost:6274' -d "$PING" "$U"
req "bad json 400 -32700" 400 "code(d)==-32700 and d['id'] is None" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":' "$U"
req "trailing garbage -32700" 400 "code(d)==-32700" -H "$SID" -H "$AUTH" -H "$CT" -d "$PING xyz" "$U"
printf '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xff\xfe"}}' > "$T/badutf8"
req "invalid utf-8 -32700" 400 "code(d)==-32700" -H "$SID" -H "$AUTH" -H "$CT" --data-binary @"$T/badutf8" "$U"
req "empty body -32700" 400 "code(d)==-32700" -H "$SID" -H "$AUTH" -H "$CT" -d '' "$U"
req "not an object -32600" 400 "code(d)==-32600" -H "$SID" -H "$AUTH" -H "$CT" -d '42' "$U"
req "wrong jsonrpc -32600" 400 "code(d)==-32600 and d['id']==1" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"1.0","id":1,"method":"ping"}' "$U"
req "null id -32600" 400 "code(d)==-32600" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":null,"method":"ping"}' "$U"
req "object id -32600" 400 "code(d)==-32600" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}' "$U"
req "numeric method -32600" 400 "code(d)==-32600" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":1,"method":7}' "$U"
req "params array -32602" 200 "code(d)==-32602" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}' "$U"
req "unknown method -32601" 200 "code(d)==-32601 and d['id']==1" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":1,"method":"resources/list"}' "$U"
req "notification 202 empty" 202 "d is None" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$U"
req "response 202 empty" 202 "d is None" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":9,"result":{}}' "$U"
req "cancel notification 202" 202 "d is None" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}' "$U"
req "initialize 2025-03-26" 200 "d['result']['protocolVersion']=='2025-03-26' and 'tools' in d['result']['capabilities']" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' "$U"
req "initialize 2025-11-25" 200 "d['result']['protocolVersion']=='2025-11-25'" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' "$U"
req "initialize unknown version -> latest" 200 "d['result']['protocolVersion']=='2025-11-25'" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' "$U"
req "initialize without version -32602" 200 "code(d)==-32602" -H "$SID" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}' "$U"
req "bad protocol header 400 -32022 listing the versions" 400 "code(d)==-32022 and d['error']['data']['supported'][0]=='2026-07-28' and d['error']['data']['requested']=='2030-01-01'" -H "$SID" -H "$AUTH" -H "$CT" -H 'MCP-Protocol-Version: 2030-01-01' -d "$PING" "$U"
req "2026 discover without _meta: 400 -32602 (tests/e2e/r32-orch-mcp-modern.sh has the rest)" 400 "code(d)==-32602" -H "$SID" -H "$AUTH" -H "$CT" -H 'mcp-protocol-version: 2026-07-28' -H 'mcp-method: server/discover' -d '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}' "$U"
req "lower-case protocol header ok" 200 "d['result']=={}" -H "$SID" -H "$AUTH" -H "$CT" -H 'mcp-protocol-version: 2025-06-18' -d "$PING" "$U"
req "batch 2025-03-26" 200 "isinstance(d,list) and len(d)==2 and d[0]['id']==1 and code(d[1])==-32601" -H "$SID" -H "$AUTH" -H "$CT" -d '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"nope"}]' "$U"
req "batch of notifications 202" 202 "d is None" -H "$SID" -H "$AUTH" -H "$CT" -d '[{"jsonrpc":"2.0","method":"notifications/initialized"}]' "$U"
req "batch rejected in 2025-06-18" 400 "code(d)==-32600" -H "$SID" -H "$AUTH" -H "$CT" -H 'MCP-Protocol-Version: 2025-06-18' -d "[$PING]" "$U"
req "batch rejected in 2025-11-25" 400 "code(d)==-32600" -H "$SID" -H "$AUTH" -H "$CT" -H 'MCP-Protocol-Version: 2025-11-25' -d "[$PING]" "$U"
req "empty batch 400" 400 "code(d)==-32600" -H "$SID" -H "$AUTH" -H "$CT" -d '[]' "$U"
req "initialize in batch refused" 200 "code(d[0])==-32600" -H "$SID" -H "$AUTH" -H "$CT" -d '[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}]' "$U"
big=$(python3 -c "print('[' + ','.join(['{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}' % i for i in range(101)]) + ']')")
req "batch over 100 refused" 400 "code(d)==-32600" -H "$SID" -H "$AUTH" -H "$CT" -d "$big" "$U"
req "batch with tool calls" 200 "len(d)==2 and 'batch-tool' in d[1]['result']['content'][0]['text']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw-batch' -d '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo batch-tool"}}}]' "$U"
req "no content-type 415" 415 "code(d)==-32000" -H "$SID" -H "$AUTH" -H 'Content-Type:' -d "$PING" "$U"
req "text/plain 415" 415 "True" -H "$SID" -H "$AUTH" -H 'Content-Type: text/plain' -d "$PING" "$U"
req "json with charset ok" 200 "d['result']=={}" -H "$SID" -H "$AUTH" -H 'Content-Type: application/json; charset=utf-8' -d "$PING" "$U"
req "accept html 406" 406 "code(d)==-32000" -H "$SID" -H "$AUTH" -H "$CT" -H 'Accept: text/html' -d "$PING" "$U"
req "accept json only -> json" 200 "h['content-type'].startswith('application/json')" -H "$SID" -H "$AUTH" -H "$CT" -H 'Accept: application/json' -d "$PING" "$U"
req "GET 405" 405 "'POST' in h['allow']" -H "$SID" -H "$AUTH" -H 'Accept: text/event-stream' "$U"
req "DELETE 405" 405 "True" -H "$SID" -H "$AUTH" -X DELETE "$U"
req "PUT 405" 405 "True" -H "$SID" -H "$AUTH" -H "$CT" -X PUT -d "$PING" "$U"
req "tools/call without X-Session-Id 400" 400 "code(d)==-32600 and 'X-Session-Id' in d['error']['message'] and d['id'] is None" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"true"}}}' "$U"
req "initialize without X-Session-Id 400" 400 "code(d)==-32600 and 'X-Session-Id header is missing' in d['error']['message']" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' "$U"
req "tools/list without X-Session-Id 400" 400 "code(d)==-32600 and 'X-Session-Id' in d['error']['message']" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' "$U"
req "ping without X-Session-Id 400" 400 "code(d)==-32600" -H "$AUTH" -H "$CT" -d "$PING" "$U"
req "notification without X-Session-Id 400" 400 "code(d)==-32600" -H "$AUTH" -H "$CT" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$U"
req "empty X-Session-Id 400" 400 "code(d)==-32600 and 'missing' in d['error']['message']" -H "$AUTH" -H "$CT" -H 'X-Session-Id;' -d "$PING" "$U"
req "bad X-Session-Id 400" 400 "code(d)==-32600" -H "$AUTH" -H "$CT" -H 'X-Session-Id: ../../etc' -d "$PING" "$U"
req "long X-Session-Id 400" 400 "True" -H "$AUTH" -H "$CT" -H "X-Session-Id: $(head -c 200 /dev/zero | tr '\0' a)" -d "$PING" "$U"
req "bad X-Org-Id 400" 400 "True" -H "$SID" -H "$AUTH" -H "$CT" -H 'X-Org-Id: a b' -d "$PING" "$U"
req "unknown tool -32602" 200 "code(d)==-32602 and 'Unknown tool' in d['error']['message']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}' "$U"
req "tools/call no name -32602" 200 "code(d)==-32602" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}' "$U"
req "arguments not object -32602" 200 "code(d)==-32602" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":"ls"}}' "$U"
req "wrong argument type isError" 200 "d['result']['isError'] is True and 'timeout' in d['result']['content'][0]['text']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"true","timeout":"soon"}}}' "$U"
req "missing argument isError" 200 "d['result']['isError'] is True and 'command' in d['result']['content'][0]['text']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{}}}' "$U"
req "extra argument isError" 200 "d['result']['isError'] is True and 'unknown argument' in d['result']['content'][0]['text']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"true","sudo":true}}}' "$U"
req "bad job id isError" 200 "d['result']['isError'] is True" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell_poll","arguments":{"job_id":"../../x"}}}' "$U"
req "edit unknown command isError" 200 "d['result']['isError'] is True" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"str_replace_based_edit_tool","arguments":{"command":"delete","path":"x"}}}' "$U"
# A file that is not text: the agent's binary_file code turns into the
# orchestrator's own hint (the tools that read and write bytes).
req "make a binary file" 200 "not d['result'].get('isError')" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"printf \"a\\000b\" > blob.bin"}}}' "$U"
req "view binary file: the read_file hint" 200 "d['result']['isError'] is True and 'looks binary' in d['result']['content'][0]['text'] and 'read_file' in d['result']['content'][0]['text']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"str_replace_based_edit_tool","arguments":{"command":"view","path":"blob.bin"}}}' "$U"
req "view missing file isError" 200 "d['result']['isError'] is True" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"str_replace_based_edit_tool","arguments":{"command":"view","path":"/nonexistent/file"}}}' "$U"
req "binary output is valid utf-8 json" 200 "d['result']['content'][0]['text'].startswith('a\ufffd')" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"printf \"a\\377\\001b\\033[1m\\n\""}}}' "$U"
req "structuredContent for 2025-06-18" 200 "d['result']['structuredContent']['exit_code']==7" -H "$AUTH" -H "$CT" -H 'MCP-Protocol-Version: 2025-06-18' -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"exit 7"}}}' "$U"
req "no structuredContent for 2025-03-26" 200 "'structuredContent' not in d['result']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"exit 7"}}}' "$U"
req "SSE when only SSE accepted" 200 "sse.startswith('event: message\ndata: ') and sse.endswith('\n\n') and json.loads(sse.split('data: ',1)[1])['result']['content'][0]['text'].startswith('sse-out')" -H "$AUTH" -H "$CT" -H 'Accept: text/event-stream' -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo sse-out"}}}' "$U"
req "progress notifications over SSE" 200 "sse.count('notifications/progress')>=2 and json.loads(sse.strip().split('\n\n')[-1].split('data: ',1)[1])['id']==5" -H "$AUTH" -H "$CT" -H "$ACC" -H 'X-Session-Id: raw1' -d '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 2.6; echo done"},"_meta":{"progressToken":0}}}' "$U"

req_flush

# Origin and Host (DNS rebinding) on the default loopback listener: pages
# from this machine and allowed_origins pass, any other Origin gets 403; a
# Host that is no loopback name gets 403 on every route, key or no key.
for o in http://localhost http://localhost:3000 http://127.0.0.1 http://127.0.0.1:9 \
    https://localhost https://127.0.0.1:8443 'http://[::1]' 'http://[::1]:6274' HTTP://LOCALHOST:1; do
	req "origin $o accepted" 200 "d['result']=={}" -H "$AUTH" -H "$CT" -H "$SID" -H "Origin: $o" -d "$PING" "$U"
done
for o in http://evil.example http://localhost.evil.example http://127.0.0.1.nip.io 'http://localhost@evil.example' \
    'http://[::1].evil.example' http://127.0.0.2 http://0.0.0.0 null file:// 'http://localhost/x' 'http://localhost:' \
    'http://localhost:99999x' 'ftp://localhost' 'http://localhost:6274/' 'http://[::2]'; do
	req "origin $o refused 403" 403 "code(d)==-32000 and 'Origin' in d['error']['message'] and d['id'] is None" -H "$AUTH" -H "$CT" -H "$SID" -H "Origin: $o" -d "$PING" "$U"
done
for h in localhost localhost:1234 "127.0.0.1:$ORCH_PORT" 127.0.0.1 '[::1]' "[::1]:$ORCH_PORT" LocalHost:80; do
	req "host $h accepted" 200 "d['result']=={}" -H "$AUTH" -H "$CT" -H "$SID" -H "Host: $h" -d "$PING" "$U"
done
for h in evil.example "evil.example:$ORCH_PORT" 127.0.0.1.nip.io localhost.evil.example 0.0.0.0 192.168.1.10 \
    '[::2]' '::1' 'localhost:x' '127.0.0.1:80:80'; do
	req "host $h refused 403" 403 "code(d)==-32000 and 'Host' in d['error']['message']" -H "$AUTH" -H "$CT" -H "$SID" -H "Host: $h" -d "$PING" "$U"
done
req "bad host refused before the key" 403 "code(d)==-32000" -H "$CT" -H "$SID" -H 'Host: evil.example' -d "$PING" "$U"
req "bad host refused on REST" 403 "d['error']['code']=='forbidden_host'" -H "$AUTH" -H 'Host: evil.example' "$ORCH_URL/v1/sessions"
req "bad host refused on /healthz" 403 "d['error']['code']=='forbidden_host'" -H 'Host: evil.example' "$ORCH_URL/healthz"
req "bad origin refused on REST" 403 "d['error']['code']=='forbidden_origin'" -H "$AUTH" -H 'Origin: http://evil.example' "$ORCH_URL/v1/sessions"
req "loopback origin on REST ok" 200 "'sessions' in d" -H "$AUTH" -H 'Origin: http://localhost:5173' "$ORCH_URL/v1/sessions"

# Ids come back byte for byte; ids that are no integer are -32600.
for id in 9007199254740993 12345678901234567890 -9223372036854775809 0 '"s-1"' '"a\u0000b"'; do
	req "id $id echoed exactly" 200 "raw.startswith(b'{\"jsonrpc\":\"2.0\",\"id\":$id,')" -H "$AUTH" -H "$CT" -H "$SID" -d "{\"jsonrpc\":\"2.0\",\"id\":$id,\"method\":\"ping\"}" "$U"
done
for id in 1.5 1e3 1.0 -0.0 007; do
	req "id $id refused -32600" 400 "code(d)==-32600 and d['id'] is None" -H "$AUTH" -H "$CT" -H "$SID" -d "{\"jsonrpc\":\"2.0\",\"id\":$id,\"method\":\"ping\"}" "$U"
done
req "big id of a tools/call echoed" 200 "b'\"id\":12345678901234567891,' in raw and 'big-id' in d['result']['content'][0]['text']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw-ids' -d '{"jsonrpc":"2.0","id":12345678901234567891,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo big-id"}}}' "$U"

# A NUL in a command, path, job id, image or tool name is refused, never
# cut short.
nul_call() { # NAME TOOL ARGS_JSON: the call is a tool error naming the NUL
	req "$1" 200 "d['result']['isError'] is True and 'NUL' in d['result']['content'][0]['text']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw-nul' -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3}}" "$U"
}
nul_call "NUL in a shell command refused" shell '{"command":"touch /tmp/nul-ran-'"$$"'\u0000; touch /tmp/nul-after-'"$$"'"}'
nul_call "NUL in a shell_async command refused" shell_async '{"command":"echo a\u0000b"}'
nul_call "NUL in an edit path refused" str_replace_based_edit_tool '{"command":"create","path":"nul-a.txt\u0000.sh","file_text":"x"}'
nul_call "NUL in edit file text refused" str_replace_based_edit_tool '{"command":"create","path":"nul-b.txt","file_text":"a\u0000b"}'
nul_call "NUL in a job id refused" shell_poll '{"job_id":"j-1\u0000x"}'
nul_call "NUL in an image refused" create_sandbox '{"image":"busybox\u0000x"}'
nul_call "NUL in an argument name refused" shell '{"command\u0000x":"echo hi"}'
req "NUL in a tool name -32602" 200 "code(d)==-32602" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw-nul' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell\u0000x","arguments":{"command":"true"}}}' "$U"
req "NUL in a method -32600" 400 "code(d)==-32600" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw-nul' -d '{"jsonrpc":"2.0","id":1,"method":"ping\u0000x"}' "$U"
printf '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"a\0b"}}' > "$T/rawnul"
req "raw NUL byte -32700" 400 "code(d)==-32700" -H "$AUTH" -H "$CT" -H "$SID" --data-binary @"$T/rawnul" "$U"
req "REST create with a NUL in the id 400" 400 "d['error']['code']=='bad_request'" -H "$AUTH" -H "$CT" -d '{"id":"raw-nul\u0000x"}' "$ORCH_URL/v1/sessions"
req_flush
st=$(curl -s -o /dev/null -w '%{http_code}' -H "$AUTH" "$ORCH_URL/v1/sessions/raw-nul")
check "no session from a cut REST id, none from refused calls" [ "$st" = 404 ]
req "an escaped backslash before u0000 is no NUL" 200 "d['result']['content'][0]['text'].startswith('x\\\\u0000y')" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw-nul' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"printf %s \"x\\\\u0000y\""}}}' "$U"
req_flush
out=$(mcp_tool raw-nul shell '{"command":"ls /tmp/nul-ran-'"$$"' /tmp/nul-after-'"$$"' nul-a.txt nul-b.txt 2>&1 | grep -c No.such"}')
check "no file made from a cut command, path or text" [ "$(head -1 <<<"$out")" = 4 ]

# Output with NUL bytes and invalid UTF-8 comes back escaped, never cut:
# NUL as U+2400, each invalid byte as U+FFFD, in the text and in
# structuredContent; a timeout is exit code 124.
P18='MCP-Protocol-Version: 2025-06-18'
req "NUL in output shown as U+2400, not cut" 200 "d['result']['content'][0]['text'].startswith('before\u2400after\u2400\u2400end\n[exit code 0') and d['result']['structuredContent']['output']=='before\u2400after\u2400\u2400end' and d['result']['structuredContent']['truncated'] is False" -H "$AUTH" -H "$CT" -H "$P18" -H 'X-Session-Id: raw-esc' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"printf \"before\\0after\\0\\0end\""}}}' "$U"
req "invalid UTF-8 in output shown as U+FFFD" 200 "d['result']['structuredContent']['output']=='a\ufffd\ufffdb\u00e9' and d['result']['content'][0]['text'].startswith('a\ufffd\ufffdb\u00e9')" -H "$AUTH" -H "$CT" -H "$P18" -H 'X-Session-Id: raw-esc' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"printf \"a\\377\\376b\\303\\251\""}}}' "$U"
req "a timeout is exit code 124" 200 "d['result']['structuredContent']['exit_code']==124 and d['result']['structuredContent']['timed_out'] is True and 'exit code 124' in d['result']['content'][0]['text'] and d['result']['isError'] is True" -H "$AUTH" -H "$CT" -H "$P18" -H 'X-Session-Id: raw-esc' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 30","timeout":1}}}' "$U"
req_flush
out=$(mcp_post -H 'X-Session-Id: raw-esc' -H "$P18" -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell_async","arguments":{"command":"printf \"job\\0out\\377\\n\""}}}')
jid=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['result']['structuredContent']['job_id'])" "$out")
out=$(mcp_post -H 'X-Session-Id: raw-esc' -H "$P18" -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell_wait","arguments":{"job_id":"'"$jid"'","timeout":20}}}')
check "job output with a NUL and a bad byte comes back escaped" python3 -c "import json,sys; r=json.loads(sys.argv[1])['result']; s=r['structuredContent']; sys.exit(0 if s['output']=='job\u2400out\ufffd\n' and r['content'][0]['text'].startswith('job\u2400out\ufffd\n') and s['state']=='exited' and s['exit_code']==0 and s['eof'] is True and s['output_bytes']==9 else 1)" "$out"

# A session's org and user are fixed when it is created: a later request
# naming another (or naming one where the session has none, or leaving
# one out where it has one) is refused; one naming neither claims nothing.
idc() { # NAME SID ok|err [headers...]
	local name=$1 sid=$2 want=$3 expr; shift 3
	if [ "$want" = err ]; then
		expr="d['result']['isError'] is True and 'differs' in d['result']['content'][0]['text'] and 'new session id' in d['result']['content'][0]['text']"
	else
		expr="d['result'].get('isError') is not True and 'ident-ok' in d['result']['content'][0]['text']"
	fi
	req "$name" 200 "$expr" -H "$AUTH" -H "$CT" -H "X-Session-Id: $sid" "$@" -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo ident-ok"}}}' "$U"
}
idc "identity: created with org o1, user u1" raw-id1 ok -H 'X-Org-Id: o1' -H 'X-User-Id: u1'
idc "identity: created without identity" raw-id2 ok
req_flush
idc "identity: the same org and user" raw-id1 ok -H 'X-Org-Id: o1' -H 'X-User-Id: u1'
idc "identity: no identity headers claim nothing" raw-id1 ok
idc "identity: another org refused" raw-id1 err -H 'X-Org-Id: o2' -H 'X-User-Id: u1'
idc "identity: another user refused" raw-id1 err -H 'X-Org-Id: o1' -H 'X-User-Id: u2'
idc "identity: org left out where set refused" raw-id1 err -H 'X-User-Id: u1'
idc "identity: user left out where set refused" raw-id1 err -H 'X-Org-Id: o1'
idc "identity: org set where unset refused" raw-id2 err -H 'X-Org-Id: o1'
idc "identity: user set where unset refused" raw-id2 err -H 'X-User-Id: u1'
req "identity: the error names X-Org-Id" 200 "'X-Org-Id' in d['result']['content'][0]['text']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw-id1' -H 'X-Org-Id: o2' -H 'X-User-Id: u1' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"true"}}}' "$U"
req "identity: clear_session under another org refused" 200 "d['result']['isError'] is True and 'differs' in d['result']['content'][0]['text']" -H "$AUTH" -H "$CT" -H 'X-Session-Id: raw-id1' -H 'X-Org-Id: o2' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"clear_session","arguments":{}}}' "$U"
req "identity: REST create with another org 409" 409 "d['error']['code']=='identity_mismatch' and 'differs' in d['error']['message']" -H "$AUTH" -H "$CT" -d '{"id":"raw-id1","org":"o2","user":"u1"}' "$ORCH_URL/v1/sessions"
req "identity: REST create leaving the user out 409" 409 "d['error']['code']=='identity_mismatch'" -H "$AUTH" -H "$CT" -d '{"id":"raw-id1","org":"o1"}' "$ORCH_URL/v1/sessions"
req "identity: REST create naming one where none 409" 409 "d['error']['code']=='identity_mismatch'" -H "$AUTH" -H "$CT" -d '{"id":"raw-id2","user":"u9"}' "$ORCH_URL/v1/sessions"
req "identity: REST create with the same identity: 200, nothing changed" 200 "d['org']=='o1' and d['user']=='u1'" -H "$AUTH" -H "$CT" -d '{"id":"raw-id1","org":"o1","user":"u1"}' "$ORCH_URL/v1/sessions"
req "identity: REST create naming none: 200, nothing changed" 200 "d['org']=='o1' and d['user']=='u1'" -H "$AUTH" -H "$CT" -d '{"id":"raw-id1"}' "$ORCH_URL/v1/sessions"
req_flush
req "identity: never re-attributed" 200 "d['org']=='o1' and d['user']=='u1' and d['state']=='running'" -H "$AUTH" "$ORCH_URL/v1/sessions/raw-id1"
req "identity: the session without one keeps none" 200 "d['org']=='' and d['user']==''" -H "$AUTH" "$ORCH_URL/v1/sessions/raw-id2"
req_flush

# A listener on a non-loopback address keeps the plain rules: only
# allowed_origins pass (a localhost page too is refused) and Host is not
# checked (the operator's names for the address are unknown). A second
# daemon on the fake runtime with its own state, for pings only.
P2=$(free_port)
mkdir -p "$T/wild"
cat > "$T/wild.yaml" <<YAML
listen: 0.0.0.0:$P2
key_file: $T/key
runtime: fake
allowed_origins: ["https://app.example"]
log:
  file: $T/wild.log
fake:
  state_dir: $T/wild
  agent: $AGENT_BIN
YAML
"$ORCH_BIN" -f "$T/wild.yaml" >>"$T/wild.stderr" 2>&1 &
wildpid=$!
track_pid "$wildpid"
if wait_for 30 curl -sf "http://127.0.0.1:$P2/readyz"; then
	W=http://127.0.0.1:$P2/mcp
	req "0.0.0.0 listener: a localhost Origin is refused" 403 "code(d)==-32000" -H "$AUTH" -H "$CT" -H "$SID" -H 'Origin: http://localhost:3000' -d "$PING" "$W"
	req "0.0.0.0 listener: an allowed Origin passes" 200 "d['result']=={}" -H "$AUTH" -H "$CT" -H "$SID" -H 'Origin: https://app.example' -d "$PING" "$W"
	req "0.0.0.0 listener: any Host passes" 200 "d['result']=={}" -H "$AUTH" -H "$CT" -H "$SID" -H 'Host: orchestrator.internal.example:8080' -d "$PING" "$W"
	req "0.0.0.0 listener: X-Session-Id still required" 400 "code(d)==-32600" -H "$AUTH" -H "$CT" -d "$PING" "$W"
	req_flush
else
	fail "0.0.0.0 listener starts" "$(tail -5 "$T/wild.stderr")"
fi
kill "$wildpid" 2>/dev/null
wait "$wildpid" 2>/dev/null

# Oversized and hostile bodies.
head -c $((20 * 1024 * 1024)) /dev/zero | tr '\0' ' ' > "$T/huge"
req "20 MB body: 413 with a JSON-RPC error" 413 "d['error']['code']==-32000 and d['id'] is None and 'http.max_body' in d['error']['message']" -H "$SID" -H "$AUTH" -H "$CT" --data-binary @"$T/huge" "$U"
req "20 MB body without Expect: 413 JSON" 413 "d['error']['code']==-32000" -H "$SID" -H "$AUTH" -H "$CT" -H 'Expect:' --data-binary @"$T/huge" "$U"
req "oversized REST body: 413 with the REST error" 413 "d['error']['code']=='too_large'" -H "$AUTH" -H "$CT" --data-binary @"$T/huge" "$ORCH_URL/v1/sessions"
req "oversized body before auth: 413 JSON too" 413 "d['error']['code']==-32000" -H "$SID" -H "$CT" --data-binary @"$T/huge" "$U"
python3 -c "import sys; sys.stdout.write('{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}' + ' ' * (1048576 - 200))" > "$T/nearly"
req "a body just under the limit is served" 200 "d['id']==9" -H "$SID" -H "$AUTH" -H "$CT" --data-binary @"$T/nearly" "$U"
n=$(curl -s -H "$AUTH" -H "$CT" -H "$ACC" --data-binary @"$T/nearly" "$U" --next -H "$AUTH" -H "$CT" -H "$ACC" -d "$PING" "$U" | grep -o '"jsonrpc"' | wc -l)
check "keep-alive: a request after a large body is framed right" [ "$n" = 2 ]
hdr=$(curl -s -D - -o /dev/null -H "$AUTH" -H "$CT" --data-binary @"$T/huge" "$U" | tr -d '\r')
check "413 is application/json and closes the connection" bash -c "grep -qi '^content-type: application/json' <<<'$hdr' && grep -qi '^connection: close' <<<'$hdr'"
python3 -c "print('['*200000 + ']'*200000)" > "$T/deep"
req "deep nesting -32700" 400 "code(d)==-32700" -H "$SID" -H "$AUTH" -H "$CT" --data-binary @"$T/deep" "$U"
req "chunked body ok" 200 "d['result']=={}" -H "$SID" -H "$AUTH" -H "$CT" -H 'Transfer-Encoding: chunked' -d "$PING" "$U"
st=$(curl -s -o /dev/null -w '%{http_code}' -H "$AUTH" -H "$CT" -H "X-Big: $(head -c 100000 /dev/zero | tr '\0' a)" -d "$PING" "$U")
check "huge header refused" [ "$st" -ge 400 ] 2>/dev/null
printf 'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' | timeout 5 nc -q 2 127.0.0.1 "$ORCH_PORT" > "$T/smug" 2>&1
printf 'GARBAGE\r\n\r\n' | timeout 5 nc -q 2 127.0.0.1 "$ORCH_PORT" > /dev/null 2>&1
req_flush
check "daemon up after hostile input" curl -sf "$ORCH_URL/healthz"

# Long calls do not block other sessions.
mcp_tool slow-a shell '{"command":"true"}' >/dev/null
mcp_tool fast-b shell '{"command":"true"}' >/dev/null
( mcp_tool slow-a shell '{"command":"sleep 8; echo slow-done"}' > "$T/slow" ) &
slowpid=$!
wait_for 10 bash -c "curl -s -H 'Authorization: Bearer $ORCH_KEY' $ORCH_URL/v1/sessions/slow-a | grep -q '\"calls_in_flight\":1'"
sleep 0.5
ms=$(mcp_post -H 'X-Session-Id: fast-b' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo fast"}}}' -o "$T/fast" -w '%{time_total}')
ms=$(python3 -c "print(int(float('$ms') * 1000))")
out=$(cat "$T/fast")
if [ "$ms" -lt 1500 ]; then ok "other session answers during a long call (${ms}ms)"; else fail "other session answers during a long call" "${ms}ms"; fi
check "other session result" contains <(echo "$out") fast
# The slow command may not have reached the shell yet on a loaded machine:
# retry while it is still in flight.
for _ in 1 2 3 4 5 6; do
	out=$(mcp_tool slow-a shell '{"command":"echo concurrent"}')
	echo "$out" | grep -q 'another command is still running' && break
	sleep 0.5
done
if echo "$out" | grep -q 'another command is still running'; then ok "same session concurrent call is a clear tool error"; else fail "same session concurrent call is a clear tool error" "$out"; fi
wait $slowpid
check "long call completes" contains "$T/slow" slow-done
check "daemon still up" kill -0 "$ORCH_PID"

# notifications/cancelled stops an in-flight tools/call (same X-Session-Id,
# by requestId): the command and its children are killed, the rest of it
# never runs, the shell keeps its state, and the request gets no JSON-RPC
# response (JSON: 202 with no body; SSE: the stream ends without one).
cancel_case() {
	local mode=$1 acc=$2 sid=cancel-$1 mark=$((100000 + RANDOM))
	mcp_tool "$sid" shell '{"command":"export KEEP=kept-'"$mode"'; cd /tmp"}' >/dev/null
	local t0=$(date +%s%N)
	curl -s -o "$T/cbody.$mode" -w '%{http_code}' --max-time 60 -H "$AUTH" -H "$CT" -H "$acc" \
	    -H "X-Session-Id: $sid" -d '{"jsonrpc":"2.0","id":"c-77","method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 47'"$mark"'; echo never > /tmp/after-'"$mark"'","timeout":120}}}' \
	    "$U" > "$T/cstatus.$mode" &
	local cpid=$!
	if ! wait_for 30 pgrep -xf "sleep 47$mark"; then
		fail "cancel ($mode): the command started"
		wait $cpid
		return
	fi
	st=$(curl -s -o /dev/null -w '%{http_code}' -H "$AUTH" -H "$CT" -H "$ACC" -H "X-Session-Id: $sid" \
	    -d '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-77","reason":"user abort"}}' "$U")
	check "cancel ($mode): the notification gets 202" [ "$st" = 202 ]
	wait $cpid
	local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	if [ "$ms" -lt 20000 ]; then ok "cancel ($mode): the call ends at once (${ms}ms)"; else fail "cancel ($mode): the call ends at once" "${ms}ms"; fi
	if [ "$mode" = json ]; then
		check "cancel (json): 202 and no response body" [ "$(cat "$T/cstatus.$mode")" = 202 ] && [ ! -s "$T/cbody.$mode" ]
	else
		check "cancel (sse): the stream ends without a response" bash -c "[ \"\$(cat $T/cstatus.$mode)\" = 200 ] && ! grep -q '\"id\"' $T/cbody.$mode"
	fi
	check "cancel ($mode): the command's process is gone" wait_for 10 bash -c "! pgrep -xf 'sleep 47$mark'"
	out=$(mcp_tool "$sid" shell '{"command":"echo $KEEP $PWD; ls /tmp/after-'"$mark"' 2>&1 | head -1"}')
	check "cancel ($mode): the shell is free and keeps its state" contains <(echo "$out") "kept-$mode /tmp"
	check "cancel ($mode): the rest of the command never ran" bash -c "grep -q 'No such file' <<<'$out'"
}
U=$ORCH_URL/mcp
cancel_case json 'Accept: application/json, text/event-stream'
cancel_case sse 'Accept: text/event-stream'
st=$(curl -s -o "$T/cx" -w '%{http_code}' -H "$AUTH" -H "$CT" -H "$ACC" -H "X-Session-Id: cancel-json" \
    -d '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"no-such"}}' "$U")
check "cancel of an unknown request id is ignored (202)" [ "$st" = 202 ] && [ ! -s "$T/cx" ]
st=$(curl -s -o "$T/cx" -w '%{http_code}' -H "$AUTH" -H "$CT" -H "$ACC" -H "X-Session-Id: cancel-json" \
    -d '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}' "$U")
check "cancel with an invalid request id is ignored (202)" [ "$st" = 202 ]
check "metrics count cancelled calls" bash -c "curl -s -H 'Authorization: Bearer $ORCH_KEY' $ORCH_URL/metrics | grep -qx 'orch_tool_calls_cancelled_total 2'"
check "daemon up after cancellations" kill -0 "$ORCH_PID"
