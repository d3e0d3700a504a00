#!/usr/bin/env bash
# r32-orch-mcp-tasks.sh: the Tasks extension of MCP 2026-07-28 (issue 32,
# part 2) on real sandboxes. A shell call from a client that declares the
# extension and runs past tools.task_after is answered with a task; the
# command runs on in the persistent shell (its cd and exports stay); the
# task is polled to its result, survives a kill -9 and restart of the
# orchestrator (the command ran once), is cancelled, and is answered only
# to its own session. A client without the extension never gets a task.
# shell_wait becomes a task on its job. The official client 2.x calls a
# tool whose command outlives its 5 s timeout and polls the task.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ ! -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/client" ]; then
	bash "$TOP/scripts/deps-npm.sh" >/dev/null 2>&1
fi
orch_config "tools:" "  task_after: 1s"
check "orch starts" orch_start

cat > "$T/mtasks.py" <<'PY'
# The steps below, one per run: STEP URL KEY [args]
import base64, http.client, json, sys, time, urllib.parse
step, url, key = sys.argv[1], sys.argv[2], sys.argv[3]
args = sys.argv[4:]
u = urllib.parse.urlparse(url)
V = '2026-07-28'
TASKS = {'extensions': {'io.modelcontextprotocol/tasks': {}}}
def meta(tasks=True):
    return {'io.modelcontextprotocol/protocolVersion': V,
            'io.modelcontextprotocol/clientCapabilities': TASKS if tasks else {}}
failed = 0
def ok(name, cond, why=''):
    global failed
    if cond:
        print('ok ' + name)
    else:
        failed += 1
        print('not ok %s -- %s' % (name, str(why)[:700]))
def rpc(method, params, sid='tk-1', name=None, tasks=True, hdrs=None, timeout=120, meta_over=None):
    p = dict(params); p['_meta'] = meta_over if meta_over is not None else meta(tasks)
    h = {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json',
         'Accept': 'application/json, text/event-stream', 'MCP-Protocol-Version': V,
         'Mcp-Method': method}
    if sid is not None:
        h['X-Session-Id'] = sid
    if name is not None:
        h['Mcp-Name'] = name
    h.update(hdrs or {})
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    c.request('POST', '/mcp', body=json.dumps({'jsonrpc': '2.0', 'id': 7, 'method': method, 'params': p}), headers=h)
    r = c.getresponse(); b = r.read(); c.close()
    return r.status, (json.loads(b) if b.strip() else None)
def shell(cmd, key=None, **kw):
    m = None
    if key is not None:
        m = dict(meta(kw.get('tasks', True)), **{'dev.sandbox-orchestrator/idempotencyKey': key})
    return rpc('tools/call', {'name': 'shell', 'arguments': {'command': cmd, 'timeout': 120}}, name='shell', meta_over=m, **kw)
def get(tid, sid='tk-1', method='tasks/get', name=None):
    return rpc(method, {'taskId': tid}, sid=sid, name=tid if name is None else name)
def poll(tid, secs=60, sid='tk-1'):
    t0 = time.time()
    while time.time() - t0 < secs:
        st, d = get(tid, sid=sid)
        r = d.get('result', {}) if d else {}
        if r.get('status') in ('completed', 'cancelled', 'failed'):
            return st, d
        time.sleep(0.3)
    return st, d
def text(res):
    return ''.join(c.get('text', '') for c in res.get('content', []))

if step == 'basic':
    st, d = rpc('server/discover', {})
    ok('discover offers the tasks extension',
       'io.modelcontextprotocol/tasks' in d['result']['capabilities'].get('extensions', {}), d)
    t0 = time.time()
    st, d = shell('sleep 0.1; echo quick')
    r = d['result']
    ok('a short command: the result itself (resultType complete)', r.get('resultType') == 'complete' and 'quick' in text(r), d)
    t0 = time.time()
    st, d = shell('cd /tmp; export TV=9; echo run >> /workspace/count; sleep 4; echo done-$TV')
    r = d['result']
    took = time.time() - t0
    ok('a long command: a task handle after tools.task_after (1 s), not after the command (4 s)',
       r.get('resultType') == 'task' and r.get('status') == 'working' and took < 3.5, (took, d))
    tid = r.get('taskId', '')
    ok('the handle: taskId, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs, serverInfo',
       tid.endswith('~tk-1') and r.get('createdAt', '').endswith('Z') and r.get('ttlMs', 0) > 0 and
       r.get('pollIntervalMs', 0) > 0 and 'io.modelcontextprotocol/serverInfo' in r.get('_meta', {}), r)
    st, d = get(tid)
    r = d['result']
    ok('tasks/get while it runs: working, resultType complete, a status message',
       st == 200 and r.get('status') == 'working' and r.get('resultType') == 'complete' and r.get('statusMessage'), d)
    st, d = shell('echo busy?')
    ok('the shell is taken by the task meanwhile (a clear error, nothing queued twice)',
       d and 'result' in d and d['result'].get('isError') and 'still running' in text(d['result']), d)
    st, d = poll(tid)
    r = d['result']
    res = r.get('result', {})
    ok('polled to completed: the same result the tool gives (output, exit code, structured)',
       r.get('status') == 'completed' and 'done-9' in text(res) and 'exit code 0' in text(res) and
       res.get('structuredContent', {}).get('exit_code') == 0, d)
    st, d = shell('echo "$PWD $TV"; wc -l < /workspace/count')
    ok('the command ran in the persistent shell: its cd and export stay; it ran once',
       '/tmp 9' in text(d['result']) and text(d['result']).split('\n')[1].strip() == '1', d)
    st, d = get(tid)
    ok('a completed task stays readable', d['result'].get('status') == 'completed', d)
    # a client without the extension never gets a task
    st, d = shell('sleep 2.5; echo plain', tasks=False)
    ok('no extension declared: the result after 2.5 s, never a task',
       d['result'].get('resultType') == 'complete' and 'plain' in text(d['result']), d)
    # isolation and errors
    st, d = get(tid, sid='tk-other')
    ok('another session asking for the task: unknown task (-32602)', d.get('error', {}).get('code') == -32602, d)
    st, d = get('s-0123456789abcdef01234567~tk-1')
    ok('a made-up task id: -32602', d.get('error', {}).get('code') == -32602, d)
    st, d = get('../../etc~tk-1')
    ok('a hostile task id: -32602', d.get('error', {}).get('code') == -32602, d)
    st, d = rpc('tasks/get', {'taskId': tid}, sid=None, name=tid)
    ok('tasks/get without X-Session-Id: 400', st == 400 and d['error']['code'] == -32602, (st, d))
    st, d = get(tid, name='other')
    ok('Mcp-Name other than the taskId: 400 -32020', st == 400 and d['error']['code'] == -32020, (st, d))
    st, d = get(tid, method='tasks/update')
    ok('tasks/update: an empty acknowledgement', st == 200 and d['result'].get('resultType') == 'complete' and
       set(d['result']) <= {'resultType', '_meta'}, d)
    st, d = rpc('subscriptions/listen', {'notifications': {'taskIds': [tid]}}, tasks=False)
    ok('listen for task ids without the extension: 400 -32021',
       st == 400 and d['error']['code'] == -32021 and
       'io.modelcontextprotocol/tasks' in d['error']['data']['requiredCapabilities']['extensions'], (st, d))
    # cancel
    st, d = shell('sleep 30; echo never')
    tid2 = d['result'].get('taskId')
    st, d = get(tid2, method='tasks/cancel')
    ok('tasks/cancel: acknowledged', st == 200 and d['result'].get('resultType') == 'complete', d)
    st, d = poll(tid2, 20)
    ok('then the task reads cancelled', d['result'].get('status') == 'cancelled', d)
    t0 = time.time()
    st, d = shell('echo free')
    ok('and the shell is free again at once', 'free' in text(d['result']) and time.time() - t0 < 3, d)
    # shell_wait on a job becomes a task on that job
    st, d = rpc('tools/call', {'name': 'shell_async', 'arguments': {'command': 'sleep 3; echo jobdone'}}, name='shell_async')
    jid = d['result']['structuredContent']['job_id']
    st, d = rpc('tools/call', {'name': 'shell_wait', 'arguments': {'job_id': jid, 'timeout': 20}}, name='shell_wait')
    r = d['result']
    ok('shell_wait on a running job: a task', r.get('resultType') == 'task' and jid in r.get('taskId', ''), d)
    st, d = poll(r.get('taskId', ''), 30)
    ok('polled to the job\'s output', d['result'].get('status') == 'completed' and 'jobdone' in text(d['result']['result']), d)
elif step == 'idem':
    # an idempotency key in _meta (shell): a re-issue gets the first run's result
    st, d = shell('echo run >> /workspace/k1; echo first-$RANDOM$RANDOM', key='k-1', tasks=False)
    t1 = text(d['result'])
    st, d = shell('echo run >> /workspace/k1; echo first-$RANDOM$RANDOM', key='k-1', tasks=False)
    t2 = text(d['result'])
    ok('key: the re-issue answers the first run\'s output', t1.split('\n')[0] == t2.split('\n')[0] and 'first-' in t2, (t1, t2))
    ok('key: and says it did not run again', 'did not run again' in t2, t2)
    st, d = shell('wc -l < /workspace/k1', tasks=False)
    ok('key: the command ran once', text(d['result']).split('\n')[0].strip() == '1', d)
    st, d = shell('echo other', key='k-1', tasks=False)
    ok('key: the same key with another command is refused, nothing runs',
       d['result'].get('isError') and 'another command' in text(d['result']), d)
    st, d = rpc('tools/call', {'name': 'shell_async', 'arguments': {'command': 'true'}}, name='shell_async',
                meta_over=dict(meta(False), **{'dev.sandbox-orchestrator/idempotencyKey': 'k-2'}))
    ok('key: on another tool it is refused (-32602)', d.get('error', {}).get('code') == -32602, d)
    st, d = shell('true', key='bad\u0001key', tasks=False)
    ok('key: a control character is refused (-32602)', d.get('error', {}).get('code') == -32602, d)
    st, d = shell('true', key='k-1', sid='tk-2', tasks=False)
    ok('key: keys are per session (the same key runs in another)', 'result' in d and not d['result'].get('isError'), d)
    # a re-issue while the first still runs waits for it
    import threading
    res = {}
    def first():
        res['a'] = shell('sleep 3; echo run >> /workspace/k3; echo conc-$RANDOM$RANDOM', key='k-3', tasks=False)
    th = threading.Thread(target=first); th.start()
    time.sleep(1)
    st, d = shell('sleep 3; echo run >> /workspace/k3; echo conc-$RANDOM$RANDOM', key='k-3', tasks=False)
    th.join()
    ta, tb = text(res['a'][1]['result']), text(d['result'])
    ok('key: a re-issue during the run waits and gets the same output', ta.split('\n')[0] == tb.split('\n')[0] and 'conc-' in tb, (ta, tb))
    st, d = shell('wc -l < /workspace/k3', tasks=False)
    ok('key: concurrent calls ran it once', text(d['result']).split('\n')[0].strip() == '1', d)
elif step == 'idem-start':
    try:
        shell('echo run >> /workspace/k4; sleep 4; echo killed-run-$((6*7))', key='k-4', tasks=False, timeout=2)
    except Exception as e:
        print('# first call cut: %r' % e)
elif step == 'idem-after':
    st, d = shell('echo run >> /workspace/k4; sleep 4; echo killed-run-$((6*7))', key='k-4', tasks=False)
    ok('key after kill -9 and restart: the re-issue gets the first run\'s result', 'killed-run-42' in text(d['result']), d)
    st, d = shell('wc -l < /workspace/k4', tasks=False)
    ok('key after the restart: the command ran once', text(d['result']).split('\n')[0].strip() == '1', d)
elif step == 'lost-start':
    st, d = shell('sleep 30; echo never-seen')
    print('TASK ' + d['result'].get('taskId', 'none'))
elif step == 'lost-after':
    st, d = poll(args[0], 60)
    r = d['result'] if d else {}
    ok('a task whose sandbox died under it: completed with an error saying the outcome is unknown',
       r.get('status') == 'completed' and r.get('result', {}).get('isError') and
       'unknown' in text(r.get('result', {})), d)
elif step == 'start':
    st, d = shell('echo run >> /workspace/count2; sleep 6; echo survived-$((40+2))')
    print('TASK ' + d['result'].get('taskId', 'none'))
elif step == 'after':
    tid = args[0]
    st, d = poll(tid, 60)
    r = d['result'] if d else {}
    ok('after kill -9 and a restart: tasks/get gives the completed result',
       r.get('status') == 'completed' and 'survived-42' in text(r.get('result', {})), d)
    st, d = shell('wc -l < /workspace/count2')
    ok('the command ran once (one line, not two)', text(d['result']).split('\n')[0].strip() == '1', d)
sys.exit(1 if failed else 0)
PY

python3 "$T/mtasks.py" basic "$ORCH_URL" "$ORCH_KEY"

# Durable: a task's command started, the orchestrator killed with -9 and
# started again, the task polled to its result.
out=$(python3 "$T/mtasks.py" start "$ORCH_URL" "$ORCH_KEY")
tid=$(echo "$out" | sed -n 's/^TASK //p')
check "a task started for the restart" test -n "$tid" -a "$tid" != none
orch_kill9
check "orch restarts" orch_start
python3 "$T/mtasks.py" after "$ORCH_URL" "$ORCH_KEY" "$tid"
check "the restart was logged as such (the agent kept the result)" grep -q "became task" "$ORCH_LOG"

# The idempotency key of a shell call (_meta), then across a kill -9.
python3 "$T/mtasks.py" idem "$ORCH_URL" "$ORCH_KEY"
python3 "$T/mtasks.py" idem-start "$ORCH_URL" "$ORCH_KEY"
orch_kill9
check "orch restarts (keyed call cut)" orch_start
python3 "$T/mtasks.py" idem-after "$ORCH_URL" "$ORCH_KEY"

# A task whose sandbox dies while its command runs: lost, and said so.
out=$(python3 "$T/mtasks.py" lost-start "$ORCH_URL" "$ORCH_KEY")
tid=$(echo "$out" | sed -n 's/^TASK //p')
# stopped behind the orchestrator's back (sandboxctl): the command dies with it
if [ "$ORCH_RT" = local ]; then sbx stop "$(sbx_of tk-1)" >/dev/null 2>&1; else sbx_kill "$(sbx_of tk-1)"; fi
python3 "$T/mtasks.py" lost-after "$ORCH_URL" "$ORCH_KEY" "$tid"

# The official client 2.x, pinned to 2026-07-28, polls a task that outlived
# its 5 s timeout.
(cd "$TOP/tests/mcp" && timeout 120 node tasks-test.mjs "$ORCH_URL/mcp" "$ORCH_KEY")
