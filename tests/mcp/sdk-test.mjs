// sdk-test.mjs: drives the orchestrator with the official MCP TypeScript SDK
// client (StreamableHTTPClientTransport). Prints "ok NAME" / "not ok NAME".
//
//   node sdk-test.mjs URL KEY
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ok, fail, check, failed } from './tap.mjs';

const [url, key] = process.argv.slice(2);

// Every request carries X-Session-Id (the server refuses any without it).
// The client validates each structuredContent against the tool's
// outputSchema once listTools() has run (callTool throws when it does not
// match), so every call below checks the server's results too.
async function connect(sid, k = key, extra = { 'X-Org-Id': 'acme', 'X-User-Id': 'alice' }) {
  const headers = { Authorization: `Bearer ${k}`, ...extra };
  if (sid !== null) headers['X-Session-Id'] = sid;
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'orchestrator-e2e', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

function text(r) { return r.content.map((c) => c.text || '').join(''); }
async function sh(c, command, extra = {}) {
  return c.callTool({ name: 'shell', arguments: { command, ...extra } }, undefined, { timeout: 120000 });
}

const sidA = `sdk-a-${process.pid}`;
const sidB = `sdk-b-${process.pid}`;
const a = await connect(sidA);

await check('sdk negotiated version and server info', async () => {
  const v = a.getServerVersion();
  const caps = a.getServerCapabilities();
  return v.name === 'sandbox-orchestrator' && !!caps.tools || { v, caps };
});

await check('sdk list tools', async () => {
  const { tools } = await a.listTools();
  const names = tools.map((t) => t.name).sort();
  const want = ['clear_session', 'create_sandbox', 'delete_file', 'expose_port', 'list_apps', 'list_files',
    'read_file', 'sandbox_status', 'shell', 'shell_async', 'shell_poll', 'shell_stop', 'shell_wait',
    'str_replace_based_edit_tool', 'unexpose_port', 'write_file'];
  const schemasOk = tools.every((t) => t.inputSchema && t.inputSchema.type === 'object' && t.description.length > 40);
  return (JSON.stringify(names) === JSON.stringify(want) && schemasOk) || names;
});

await check('sdk every tool declares an outputSchema the client validates with', async () => {
  const { tools } = await a.listTools();
  const bad = tools.filter((t) => !t.outputSchema || t.outputSchema.type !== 'object' ||
    typeof a.getToolOutputValidator(t.name) !== 'function');
  return bad.length === 0 || bad.map((t) => t.name);
});

await check('sdk shell echo', async () => {
  const r = await sh(a, 'echo hello-from-sandbox');
  const st = r.structuredContent || {};
  return (!r.isError && text(r).includes('hello-from-sandbox') && text(r).includes('exit code 0') &&
    st.exit_code === 0 && st.output === 'hello-from-sandbox\n' && st.timed_out === false &&
    st.truncated === false && st.dropped_bytes === 0 && Number.isInteger(st.duration_ms)) || r;
});

await check('sdk shell output with NUL and invalid UTF-8 comes back escaped', async () => {
  const r = await sh(a, "printf 'before\\0after \\377 end'");
  const st = r.structuredContent || {};
  return (st.output === 'before\u2400after \ufffd end' && text(r).startsWith('before\u2400after \ufffd end') &&
    st.truncated === false) || r;
});

await check('sdk shell nonzero exit is a result', async () => {
  const r = await sh(a, 'echo oops >&2; exit 3');
  return (!r.isError && text(r).includes('oops') && text(r).includes('exit code 3')) || r;
});

await check('sdk shell state persists', async () => {
  await sh(a, 'mkdir -p /tmp/x-$PPID && cd /tmp && export SDKVAR=persisted && myfn() { echo fn-$1; }');
  const r = await sh(a, 'echo $SDKVAR; pwd; myfn ok');
  const t = text(r);
  return (t.includes('persisted') && t.includes('/tmp') && t.includes('fn-ok')) || t;
});

await check('sdk shell timeout reported', async () => {
  const r = await sh(a, 'sleep 30', { timeout: 1 });
  const r2 = await sh(a, 'echo $SDKVAR');
  const st = r.structuredContent || {};
  return (r.isError === true && text(r).includes('timed out') && text(r2).includes('persisted') &&
    st.exit_code === 124 && st.timed_out === true && text(r).includes('exit code 124')) || [r, r2];
});

await check('sdk AbortSignal cancels a running shell call', async () => {
  const mark = `sdk-cancel-${process.pid}`;
  const ac = new AbortController();
  const t0 = Date.now();
  const p = a.callTool({ name: 'shell', arguments: { command: `touch /tmp/${mark}.started; sleep 60; touch /tmp/${mark}.after`, timeout: 120 } },
    undefined, { timeout: 120000, signal: ac.signal });
  // abort once the call is in flight in the orchestrator (REST says so)
  const rest = new URL(`/v1/sessions/${sidA}`, url);
  for (let i = 0; i < 300; i++) {
    const s = await (await fetch(rest, { headers: { Authorization: `Bearer ${key}` } })).json();
    if (s.calls_in_flight === 1) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  await new Promise((res) => setTimeout(res, 300));
  ac.abort('test abort');
  let rejected = false;
  try { await p; } catch (e) { rejected = true; }
  // the shell is free again at once (the command was stopped, not left running)
  const r = await sh(a, `ls /tmp/${mark}.after 2>&1 | head -1; echo $SDKVAR`);
  const ms = Date.now() - t0;
  const t = text(r);
  return (rejected && ms < 30000 && t.includes('No such file') && t.includes('persisted') &&
    !t.includes('another command is still running')) || [rejected, ms, t];
});

await check('sdk async job', async () => {
  const s = await a.callTool({ name: 'shell_async', arguments: { command: 'for i in 1 2 3; do echo line$i; sleep 0.2; done; exit 4' } });
  const m = text(s).match(/Started job (\S+)/);
  if (!m) return s;
  const id = m[1];
  const w = await a.callTool({ name: 'shell_wait', arguments: { job_id: id, timeout: 30 } });
  const p = await a.callTool({ name: 'shell_poll', arguments: { job_id: id, offset: 0 } });
  const t = text(w);
  const ws = w.structuredContent || {}, ps = p.structuredContent || {};
  return (t.includes('line1') && t.includes('line3') && t.includes('exit code 4') &&
    text(p).includes('line2') && text(p).includes('eof') &&
    s.structuredContent.job_id === id && Number.isInteger(s.structuredContent.pid) &&
    ws.job_id === id && ws.state === 'exited' && ws.exit_code === 4 && ws.output === 'line1\nline2\nline3\n' &&
    ps.eof === true && ps.next_offset === 18 && ps.output_bytes === 18) || [t, text(p), ws, ps];
});

await check('sdk async job stop', async () => {
  const s = await a.callTool({ name: 'shell_async', arguments: { command: 'sleep 300' } });
  const id = text(s).match(/Started job (\S+)/)[1];
  const st = await a.callTool({ name: 'shell_stop', arguments: { job_id: id } });
  const t = text(st);
  const ss = st.structuredContent || {};
  return (!t.includes(': running') && ss.job_id === id && ss.state !== 'running' && !('output' in ss)) || [t, ss];
});

await check('sdk unknown job id is a tool error', async () => {
  const r = await a.callTool({ name: 'shell_poll', arguments: { job_id: 'j-doesnotexist' } });
  return (r.isError === true && text(r).includes('no job')) || r;
});

await check('sdk file edits', async () => {
  const ed = (args) => a.callTool({ name: 'str_replace_based_edit_tool', arguments: args });
  const c = await ed({ command: 'create', path: 'notes/a.txt', file_text: 'one\ntwo\nthree\n' });
  if (c.isError) return c;
  const r = await ed({ command: 'str_replace', path: 'notes/a.txt', old_str: 'two', new_str: 'TWO' });
  if (r.isError) return r;
  const i = await ed({ command: 'insert', path: 'notes/a.txt', insert_line: 0, insert_text: 'zero\n' });
  if (i.isError) return i;
  const v = await ed({ command: 'view', path: 'notes/a.txt', view_range: [2, 3] });
  const whole = await ed({ command: 'view', path: 'notes/a.txt' });
  const dup = await ed({ command: 'str_replace', path: 'notes/a.txt', old_str: 'e', new_str: 'E' });
  const t = text(v);
  const sc = (x) => x.structuredContent || {};
  return (t.includes('one') && t.includes('TWO') && !t.includes('zero') && !t.includes('three') &&
    /zero\n\s*2\tone\n\s*3\tTWO\n\s*4\tthree/.test(text(whole)) && dup.isError === true &&
    sc(c).command === 'create' && sc(c).path === 'notes/a.txt' && sc(c).bytes === 14 &&
    sc(r).command === 'str_replace' && sc(r).snippet.includes('TWO') &&
    sc(i).command === 'insert' && sc(i).insert_line === 0 &&
    sc(whole).command === 'view' && sc(whole).content === text(whole)) || [t, text(whole), dup, c, r, i, whole];
});

const b = await connect(sidB);
await b.listTools();	// the client validates results from here on
await check('sdk two sessions isolated', async () => {
  await sh(a, 'echo secret-a > /workspace/only-a.txt 2>/dev/null || echo secret-a > only-a.txt; export ONLYA=1');
  const r = await sh(b, 'ls; cat only-a.txt 2>&1; echo "var=[$ONLYA]"');
  const ra = await sh(a, 'pwd');
  const rb = await sh(b, 'pwd');
  const t = text(r);
  return (!t.includes('secret-a') && t.includes('var=[]') && text(ra) !== text(rb)) || [t, text(ra), text(rb)];
});

await check('sdk clear_session gives a fresh sandbox', async () => {
  await sh(b, 'echo keep > marker.txt');
  const c = await b.callTool({ name: 'clear_session', arguments: {} });
  const again = await b.callTool({ name: 'clear_session', arguments: {} });
  const r = await sh(b, 'cat marker.txt 2>&1 || echo gone');
  return (!c.isError && text(r).includes('gone') && c.structuredContent.cleared === true &&
    c.structuredContent.had_sandbox === true && again.structuredContent.had_sandbox === false) || [c, text(r), again];
});

await check('sdk create_sandbox returns its sandbox id', async () => {
  const c = await b.callTool({ name: 'create_sandbox', arguments: {} }, undefined, { timeout: 120000 });
  const st = c.structuredContent || {};
  const r = await sh(b, 'echo fresh');
  return (!c.isError && typeof st.sandbox_id === 'string' && st.sandbox_id.length > 0 &&
    typeof st.image === 'string' && st.image.length > 0 && st.image !== 'default' &&
    text(c).includes(st.sandbox_id) && text(r).includes('fresh')) || c;
});

await check('sdk client without X-Session-Id is refused, the header named', async () => {
  try {
    const c = await connect(null);
    await c.close();
    return 'connected without X-Session-Id';
  } catch (e) {
    return String(e).includes('X-Session-Id header is missing') || String(e);
  }
});

await check('sdk another org on the same session is refused', async () => {
  const c = await connect(sidA, key, { 'X-Org-Id': 'other-org', 'X-User-Id': 'alice' });
  const r = await sh(c, 'echo should-not-run');
  await c.close();
  return (r.isError === true && text(r).includes('differs') && !text(r).includes('should-not-run')) || r;
});

await check('sdk bad arguments are tool errors', async () => {
  const r = await a.callTool({ name: 'shell', arguments: { command: 5 } });
  return (r.isError === true && text(r).includes("'command'")) || r;
});

await check('sdk unknown tool rejected', async () => {
  try {
    const r = await a.callTool({ name: 'no_such_tool', arguments: {} });
    return r.isError === true || r;
  } catch (e) {
    return String(e).includes('Unknown tool') || String(e);
  }
});

await check('sdk wrong key rejected', async () => {
  try {
    const c = await connect('sdk-wrongkey', key + 'x');
    await c.close();
    return 'connected with a wrong key';
  } catch (e) {
    return /401|nauthorized/.test(String(e)) || String(e);
  }
});

await a.close();
await b.close();
process.exit(failed() ? 1 : 0);
